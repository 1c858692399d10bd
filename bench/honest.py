"""Honest players beside an attack: pairs of real-move bots, each pair from its own loopback
address, playing game after game, and everything they went through.

A pair's first bot creates each game on its node and joins it; the second joins it by id,
through another node when the arena has several (every turn then crosses nodes). Tavern bots
move every dwarf one step in a random direction; Thud bots play a random move of the turn's
``moves`` list. A set-up that gets no ``ready`` or ``game-info`` within ``SETUP_TIMEOUT_S`` (or
an error instead) is refused, and the pair tries again a moment later. A create that a draining
node turns away (``Server draining``) is sent again on a new connection, as the protocol tells a
bot to (a load balancer sends it to another node), within the same ``SETUP_TIMEOUT_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import time
from collections import Counter
from dataclasses import dataclass, field

import orjson

from bench.common import connect_from
from bench.load import ENDS, TURN, random_thud_move, tavern_moves

SETUP_TIMEOUT_S = 10.0
SILENCE_S = 60.0  # a game whose server says nothing for this long is lost
RETRY_PAUSE_S = 0.2  # after a refused set-up
DRAINING = "Server draining"
DRAINING_PAUSE_S = 0.05  # before connecting again after a create a draining node turned away
STOP_GRACE_S = 3.0
ERROR = b'{"type":"error"'
# How a game that did not finish normally ended: lost to the arena (these errors close the
# connection; "Player disconnected": the other bot's connection was cut) or forfeited on time.
LOST_ERRORS = frozenset({"Arena link lost", "Arena node lost", "Server shutting down"})
LOST_REASONS = frozenset({"Player disconnected"})
FORFEIT_REASONS = frozenset({"Too many timeouts", "Turn timeout"})
OUTCOMES = ("finished", "forfeited", "lost", "refused")


class Refused(Exception):
    """A set-up the server answered with something else than the next step."""


class Lost(Exception):
    """A game that ended badly for the honest bots: ``outcome`` (forfeited or lost), why."""

    def __init__(self, outcome: str, reason: str) -> None:
        super().__init__(reason)
        self.outcome, self.reason = outcome, reason


@dataclass
class GameEnd:
    when: float  # perf_counter
    outcome: str  # one of OUTCOMES
    reason: str


@dataclass
class Record:
    """What every honest bot saw, with the time of each event (``time.perf_counter``)."""

    turns: list[float] = field(default_factory=list)  # each turn received
    latencies: list[tuple[float, float]] = field(default_factory=list)  # (when, reply latency)
    waits: list[tuple[float, float]] = field(default_factory=list)  # (when, a bot's wait)
    ends: list[GameEnd] = field(default_factory=list)
    setups: list[float] = field(default_factory=list)  # each set-up that succeeded
    errors: Counter[str] = field(default_factory=Counter)  # other errors the bots were sent
    bots: set[Bot] = field(default_factory=set)  # those playing now

    def ended(self, outcome: str, reason: str) -> None:
        self.ends.append(GameEnd(time.perf_counter(), outcome, reason))

    def outcomes(self, start: float, end: float) -> Counter[str]:
        return Counter(e.outcome for e in self.ends if start <= e.when <= end)

    def reasons(self, start: float, end: float) -> Counter[str]:
        return Counter(
            f"{e.outcome}: {e.reason}"
            for e in self.ends
            if start <= e.when <= end and e.outcome != "finished"
        )

    def turns_between(self, start: float, end: float) -> list[float]:
        return [when for when in self.turns if start <= when <= end]

    def latencies_between(self, start: float, end: float) -> list[float]:
        return [latency for when, latency in self.latencies if start <= when <= end]

    def longest_wait(self, start: float, end: float) -> float:
        """The longest a bot waited, after sending its move, for its next turn or its end,
        among the waits that ended in the window and (at its end) those still going on."""
        ended = (wait for when, wait in self.waits if start <= when <= end)
        going_on = (end - bot.sent for bot in self.bots if bot.sent)
        return max(itertools.chain(ended, going_on), default=0.0)

    def longest_gap(self, start: float, end: float) -> tuple[float, float]:
        """The longest time in the window in which no honest game got a turn, and when it
        began."""
        turns = self.turns_between(start, end)
        return max((b - a, a) for a, b in itertools.pairwise([start, *turns, end]))


class Bot:
    """One side of a game; ``sent``: when it sent its move, until its next turn comes."""

    def __init__(self, pair: Pair, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.pair, self.reader, self.writer = pair, reader, writer
        self.sent = 0.0
        self.dwarves: list[int] = []  # Tavern: the team's dwarf ids

    def waited(self) -> None:
        """Its wait is over (a turn, the end, or the game lost meanwhile)."""
        if self.sent:
            now = time.perf_counter()
            self.pair.record.waits.append((now, now - self.sent))
            self.sent = 0.0

    async def play(self) -> None:
        """Until the game's end (returns) or a bad end (raises ``Lost``)."""
        self.pair.record.bots.add(self)
        try:
            await self._play()
        except TimeoutError:
            raise Lost("lost", f"no message for {SILENCE_S:g} s") from None
        except (ConnectionError, ValueError) as error:
            raise Lost("lost", f"connection broken: {error}") from None
        finally:
            self.waited()
            self.pair.record.bots.discard(self)

    async def _play(self) -> None:
        pair, record = self.pair, self.pair.record
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(SILENCE_S) as silence:
            while True:
                line = await self.reader.readline()
                now = time.perf_counter()
                silence.reschedule(loop.time() + SILENCE_S)
                if not line:
                    raise Lost("lost", "closed with no message")
                if line.startswith(TURN):
                    record.turns.append(now)
                    if pair.sent_at:
                        record.latencies.append((now, now - pair.sent_at))
                        pair.sent_at = 0.0
                    self.waited()
                    if pair.stopping.is_set():
                        return
                    await asyncio.sleep(pair.think_s * pair.chance.uniform(0.5, 1.5))
                    if self.dwarves:
                        self.writer.write(tavern_moves(self.dwarves, pair.chance))
                    else:
                        self.writer.write(random_thud_move(line, pair.chance))
                    self.sent = pair.sent_at = time.perf_counter()
                elif any(line.startswith(end) for end in ENDS):
                    reason = str(orjson.loads(line)["result"]["reason"])
                    if reason in LOST_REASONS:
                        raise Lost("lost", reason)
                    if reason in FORFEIT_REASONS:
                        raise Lost("forfeited", reason)
                    return
                elif line.startswith(ERROR):
                    message = str(orjson.loads(line).get("message"))
                    if message in LOST_ERRORS:
                        raise Lost("lost", message)
                    record.errors[message] += 1


class Pair:
    """Two honest bots from one address playing game after game, on ``ports`` (one port each:
    the same node, or two)."""

    def __init__(
        self,
        game: str,
        source: str,
        ports: tuple[int, int],
        think_s: float,
        record: Record,
        stopping: asyncio.Event,
        seed: int,
    ) -> None:
        self.game, self.source, self.ports = game, source, ports
        self.think_s, self.record, self.stopping = think_s, record, stopping
        self.chance = random.Random(seed)
        self.sent_at = 0.0  # the last move sent by either bot, until a turn answers it

    async def run(self) -> None:
        while not self.stopping.is_set():
            bots: list[Bot] = []
            try:
                played = await self.play_one(bots)
            finally:
                for bot in bots:
                    bot.writer.transport.abort()
            if not played:
                await asyncio.sleep(RETRY_PAUSE_S)

    async def connect(self, port: int) -> Bot:
        sock = await connect_from(self.source, port, timeout_s=SETUP_TIMEOUT_S)
        reader, writer = await asyncio.open_connection(sock=sock, limit=1 << 22)
        return Bot(self, reader, writer)

    @staticmethod
    async def expect(bot: Bot, kind: str) -> dict[str, object]:
        line = await bot.reader.readline()
        if not line:
            raise Refused("closed with no message")
        message = orjson.loads(line)
        if message.get("type") != kind:
            raise Refused(str(message.get("message", message.get("type"))))
        return dict(message)

    async def play_one(self, bots: list[Bot]) -> bool:
        """Set up a game and play it; False if the set-up was refused."""
        try:
            async with asyncio.timeout(SETUP_TIMEOUT_S):
                await self.set_up(bots)
        except TimeoutError:
            return self.refused(f"no ready or game-info within {SETUP_TIMEOUT_S:g} s")
        except (OSError, ValueError) as error:
            return self.refused(f"connection failed: {error}")
        except Refused as refused:
            return self.refused(str(refused))
        self.record.setups.append(time.perf_counter())
        await self.play_game(bots)
        return True

    async def set_up(self, bots: list[Bot]) -> None:
        create = {"type": "create-simulation", "game": self.game}
        while True:
            first = await self.connect(self.ports[0])
            bots.append(first)
            first.writer.write(orjson.dumps(create) + b"\n")
            try:
                simulation_id = (await self.expect(first, "ready"))["simulationId"]
                break
            except Refused as refused:
                if str(refused) != DRAINING:
                    raise
            self.record.errors[f"{DRAINING} (connected again)"] += 1
            bots.remove(first)
            first.writer.transport.abort()
            await asyncio.sleep(DRAINING_PAUSE_S)
        bots.append(await self.connect(self.ports[1]))
        for bot, side in zip(bots, ("dwarf", "troll"), strict=True):
            join = {
                "type": "join-simulation",
                "game": self.game,
                "nick": "honest",
                "simulationId": simulation_id,
            }
            if self.game == "thud":
                join["side"] = side
            bot.writer.write(orjson.dumps(join) + b"\n")
        for bot in bots:
            info = await self.expect(bot, "game-info")
            if self.game == "tavern":
                first_id = 1 if info["team"] == "team1" else 6  # botsPerPlayer 5: 1-5, 6-10
                bot.dwarves = list(range(first_id, first_id + 5))

    def refused(self, reason: str) -> bool:
        if not self.stopping.is_set():
            self.record.ended("refused", reason)
        return False

    async def play_game(self, bots: list[Bot]) -> None:
        """Both bots to the end; the first bad end ends the game for both."""
        tasks = [asyncio.create_task(bot.play()) for bot in bots]
        try:
            for done in asyncio.as_completed(tasks):
                await done
        except Lost as lost:
            if not self.stopping.is_set():
                self.record.ended(lost.outcome, lost.reason)
            return
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if not self.stopping.is_set():
            self.record.ended("finished", "")


class HonestPlayers:
    """``pairs`` pairs of ``game`` bots; pair ``i`` plays from 127.0.0.(10+i), creating its
    games on ``ports[i % n]`` and joining the second bot through ``ports[(i + 1) % n]``."""

    def __init__(self, game: str, ports: list[int], pairs: int, think_s: float) -> None:
        self.record = Record()
        self.stopping = asyncio.Event()
        count = len(ports)
        self.pairs = [
            Pair(
                game,
                f"127.0.0.{10 + index}",
                (ports[index % count], ports[(index + 1) % count]),
                think_s,
                self.record,
                self.stopping,
                seed=index + 1,
            )
            for index in range(pairs)
        ]
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [asyncio.create_task(pair.run()) for pair in self.pairs]

    async def stop(self) -> None:
        """Each bot stops at its next turn; what is left after a moment is cut off."""
        self.stopping.set()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=STOP_GRACE_S)
        for task in self._tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*self._tasks, return_exceptions=True)
