"""Playing a tournament on this machine: its unfinished games on an arena of the runner's own,
``parallel`` at a time, each recorded as it goes, so that running the same file again resumes
it. A ``tavern worker`` plays each game it takes from the queue with the same runner.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
import time
from collections.abc import Callable, Coroutine
from typing import IO, Any

import orjson

from server import calibration
from server.arena import Arena
from server.commentary import result_text
from server.config import ArenaConfig
from server.games.base import Outcome, TimeBank
from server.league import GameResult
from server.match import Match
from server.match_events import GameStarted, TurnPlayed, Update
from server.match_options import MatchOptions
from server.records import Recorder, Records
from server.sandbox import Sandbox
from server.tcp import TcpServer
from server.tournament.bots import BotProcess, finish_bot, seat_bot
from server.tournament.hosted import resolved
from server.tournament.schedule import (
    Pairing,
    arena_pairings,
    arena_standing,
    next_games,
    schedule,
)
from server.tournament.spec import (
    SEEDED_KEY,
    Entrant,
    TournamentError,
    TournamentSpec,
    changes,
    check_programs,
    seeded,
)

_WARNED: set[str] = set()  # what the sandbox lacks is said once per process
# A game the arena broke (a bot it could not start) is voided and played again, this many times
# at most, a pause apart; then it is left for the tournament's next run, a fault of the arena's.
VOID_ATTEMPTS = 3
VOID_PAUSE_S = 1.0


class Progress:
    """Games done, running and left, on one line that redraws (or a line per game in a log)."""

    def __init__(self, total: int, done: int, out: IO[str]) -> None:
        self.total, self.done, self.running = total, done, 0
        self.out = out
        self.live = out.isatty()

    def game_over(self, pairing: Pairing, outcome: Outcome | None, note: str) -> None:
        """A game ended (``outcome`` ``None``: with no result), said in ``note``."""
        self.running -= 1
        self.done += 1
        self.update(note)

    def update(self, note: str = "") -> None:
        left = self.total - self.done - self.running
        width = 30
        filled = round(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "." * (width - filled)
        line = f"[{bar}] {self.done}/{self.total} done, {self.running} running, {left} left"
        if self.live:
            self.out.write(f"\r{line}  {note[:60]:<60}")
            if self.done == self.total:
                self.out.write("\n")
        else:
            self.out.write(f"{line}{'  ' + note if note else ''}\n")
        self.out.flush()


async def begin(records: Records, spec: TournamentSpec) -> TournamentSpec:
    """Keep the tournament in the records as its file says it, the first time it runs; a run
    of one begun already must come from the same file (``changes``), or the new file's games
    would mix with the old one's results in one table (a bot added against games played
    without it, seeds moved by a reordering...): raises ``TournamentError`` naming what
    changed. Returns the tournament as it is played: an event seeded by the ladder in the
    order its first run read from the ratings, kept with its copy of the file."""
    started = await asyncio.to_thread(records.tournament, spec.id)
    if started is not None:
        changed = changes(started["spec"], orjson.loads(orjson.dumps(spec.raw)))
        if changed:
            raise TournamentError(
                f"the tournament {spec.name!r} (id {spec.id}) was begun from another file: "
                "resumed with this one, its games so far would count in a table with the new "
                f"file's. What changed: {'; '.join(changed)}. Put the file back as it was to "
                "resume it, or give the new one another name to begin it afresh"
            )
        order = started["spec"].get(SEEDED_KEY)
        return spec if order is None else seeded(spec, order)
    if spec.seeding == "ladder":
        spec = seeded(spec, await ladder_seeds(records, spec))
    records.tournament_started(spec.id, spec.name, spec.game, spec.raw)
    return spec


async def ladder_seeds(records: Records, spec: TournamentSpec) -> list[str]:
    """The bots strongest first by their ratings on the arena's ladder, in the current season
    (a hosted bot's by its registered name, another's by its own); those without a rating
    after them, as listed."""
    ladder = await asyncio.to_thread(records.ladder, spec.game, None)
    ordinal = {row["bot"].casefold(): row["ordinal"] for row in (ladder or {}).get("bots", [])}

    def rating(entrant: Entrant) -> float | None:
        return ordinal.get((entrant.hosted or entrant.name).partition("#")[0].casefold())

    rated = [entrant for entrant in spec.entrants if rating(entrant) is not None]
    rated.sort(key=lambda entrant: -(rating(entrant) or 0.0))  # stable: ties as listed
    unrated = [entrant for entrant in spec.entrants if rating(entrant) is None]
    return [entrant.name for entrant in (*rated, *unrated)]


class TournamentRunner:
    def __init__(
        self,
        spec: TournamentSpec,
        config: ArenaConfig,
        records: Records,
        out: IO[str] = sys.stderr,
        speed: float | None = None,
    ) -> None:
        turn_timeout = spec.limits.turn_timeout_ms or config.turn_timeout_ms
        # Isolated bots (hosted ones) play on clocks scaled by this machine's speed: a move is
        # worth the same on a slow worker and a fast one (server.calibration; ``speed``: a
        # measure given, 1.0 the reference machine).
        self.clock_scale = 1.0
        if any(entrant.isolated for entrant in spec.entrants):
            self.clock_scale = 1 / (calibration.speed() if speed is None else speed)
        turn_timeout = round(turn_timeout * self.clock_scale)
        # A bot's first reply may take as long as its start-up: it was just launched.
        self.config = dataclasses.replace(
            config,
            host="127.0.0.1",
            port=0,
            turn_timeout_ms=turn_timeout,
            first_turn_timeout_ms=max(turn_timeout, spec.limits.startup_ms),
            # A bot process the runner started cannot come back once it has exited.
            reconnect_grace_ms=0,
        )
        self.spec = spec
        self.records = records
        self.out = out
        self._running: set[BotProcess] = set()  # bots not yet stopped and recorded
        self._started: set[str] = set()  # the games that started (their seats are recorded)
        self._beginning: dict[str, asyncio.Event] = {}  # games awaited to start, to void them
        self._last_seats: dict[str, int] = {}  # by game: the seat that played its last turn
        self._entrants: dict[str, Entrant] = {}  # by name, as they play (hosted ones resolved)

    def _on_update(self, update: Update) -> None:
        if isinstance(update, GameStarted):
            self._started.add(update.view.match_id)
            if (began := self._beginning.pop(update.view.match_id, None)) is not None:
                began.set()
        elif isinstance(update, TurnPlayed):
            self._last_seats[update.result.match_id] = update.result.seat

    async def run(self) -> list[GameResult]:
        """Play every game not yet finished; returns the tournament's results.

        Cancelled (``tavern tournament`` cancels it on SIGINT or SIGTERM), it stops the matches
        in progress before anything else, so that none of them gets a result: their bots'
        connections closing would otherwise end them as forfeits. The records then keep them
        unfinished, and the next run plays them again. Only then are the bots killed.
        """
        spec = self.spec
        check_programs(spec.entrants, spec.game)
        self.spec = spec = await begin(self.records, spec)
        if spec.format == "swiss":
            return await self._in_rounds(spec.rounds * (len(spec.entrants) // 2))
        if spec.format == "knockout":
            return await self._in_rounds(len(spec.entrants) - 1)
        if spec.format == "arena":
            return await self._arena()
        pairings = schedule(spec)
        finished = await asyncio.to_thread(self.records.finished_pairings, spec.id)
        todo = [pairing for pairing in pairings if pairing.key not in finished]
        progress = Progress(len(pairings), len(pairings) - len(todo), self.out)
        progress.update("resuming" if finished else "")
        await self.play(todo, progress)
        await self.records.flush()
        played = await asyncio.to_thread(self.records.finished_pairings, spec.id)
        if played >= {pairing.key for pairing in pairings}:  # none voided and left unplayed
            self.records.tournament_finished(spec.id)
        await self.records.flush()
        return await asyncio.to_thread(self.records.results, spec.id)

    async def _in_rounds(self, total: int) -> list[GameResult]:
        """An event whose games follow the results (Swiss, knockout): ``next_games`` of the
        results in the records (so that a resumed event pairs as it did), played, and again,
        until there are none: then it is finished. Games left unplayed (voided again and
        again, or the run stopped) are played by the next run. ``total``: its games, for the
        progress line (a knockout's tie-break games come on top)."""
        spec = self.spec
        results = await asyncio.to_thread(self.records.results, spec.id)
        progress = Progress(total, len(results), self.out)
        progress.update("resuming" if results else "")
        while True:
            todo = next_games(spec, results)
            if not todo:
                self.records.tournament_finished(spec.id)
                break
            await self.play(todo, progress)
            await self.records.flush()
            results = await asyncio.to_thread(self.records.results, spec.id)
            if not {pairing.key for pairing in todo} <= {result.pairing for result in results}:
                break  # left short: the next run plays it again
        await self.records.flush()
        return results

    async def _arena(self) -> list[GameResult]:
        """An arena event (lichess's): for ``duration_s`` from its first run's start, each bot
        paired again as soon as its game ends, by points; games under way at the end are
        played out. A run stopped meanwhile is resumed, up to the same end."""
        spec = self.spec
        await self.records.flush()  # ``begin`` kept it: when it began is read back
        started = await asyncio.to_thread(self.records.tournament, spec.id)
        assert started is not None
        until = float(started["createdAt"]) + spec.duration_s
        results = await asyncio.to_thread(self.records.results, spec.id)
        progress = Progress(len(results), len(results), self.out)
        progress.update("resuming" if results else "")

        async def games(arena: Arena, tcp: TcpServer, sandbox: Sandbox) -> None:
            await self._arena_games(arena, tcp, progress, sandbox, until)

        await self._on_own_arena(games)
        if time.time() >= until:
            self.records.tournament_finished(spec.id)
        await self.records.flush()
        return await asyncio.to_thread(self.records.results, spec.id)

    async def _arena_games(
        self, arena: Arena, tcp: TcpServer, progress: Progress, sandbox: Sandbox, until: float
    ) -> None:
        """Pair the bots waiting whenever a game ends, until ``until``; then the games under
        way end."""
        spec = self.spec
        names = [entrant.name for entrant in spec.entrants]
        slots = asyncio.Semaphore(len(names))  # every bot may be in a game at once
        busy: set[str] = set()
        ended = asyncio.Event()
        number = 0

        async def play_one(pairing: Pairing) -> None:
            try:
                await self._game(arena, tcp, pairing, slots, progress, sandbox)
            finally:
                busy.difference_update(entrant.name for entrant in pairing.bots)
                ended.set()

        async with asyncio.TaskGroup() as games:
            while True:
                ended.clear()
                if time.time() < until:
                    await self.records.flush()
                    results = await asyncio.to_thread(self.records.results, spec.id)
                    standing = arena_standing(spec, results)
                    waiting = [name for name in names if name not in busy]
                    number = max(number, standing.last_number)
                    for pairing in arena_pairings(spec, waiting, standing, number):
                        number = pairing.number
                        busy.update(entrant.name for entrant in pairing.bots)
                        progress.total += 1
                        games.create_task(play_one(pairing))
                elif not busy:
                    return
                left = until - time.time()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ended.wait(), left if left > 0 else None)

    async def play(self, todo: list[Pairing], progress: Progress) -> None:
        """Play these games on an arena of the runner's own (``spec.parallel`` at once), each
        bot in the sandbox: what ``run`` does once it knows which games are left, and what a
        ``tavern worker`` does with each game it takes from the queue."""

        async def games(arena: Arena, tcp: TcpServer, sandbox: Sandbox) -> None:
            await self._play(arena, tcp, todo, progress, sandbox)

        await self._on_own_arena(games)

    async def _on_own_arena(
        self, games: Callable[[Arena, TcpServer, Sandbox], Coroutine[Any, Any, None]]
    ) -> None:
        """Run ``games`` on an arena of the runner's own, each bot in the sandbox; cancelled,
        its games are stopped first (kept unfinished), then their bots killed."""
        self._entrants = await resolved(self.spec.entrants, self.records)
        sandbox = Sandbox.create()
        if sandbox.warning is not None and sandbox.warning not in _WARNED:
            _WARNED.add(sandbox.warning)
            self.out.write(f"tavern: {sandbox.warning}\n")
        arena = Arena(self.config)
        arena.listeners += [Recorder(self.records), self._on_update]
        arena.id_tag = self.records.id_tag
        try:
            async with arena.running(), TcpServer(arena).serving() as tcp:
                playing = asyncio.create_task(games(arena, tcp, sandbox))
                try:
                    await asyncio.wait({playing})
                except asyncio.CancelledError:
                    playing.cancel()  # the games leave their bots running, for the end
                    await asyncio.wait({playing})
                    raise  # out of the arena, which stops every match without a result
                playing.result()
        finally:
            for bot in list(self._running):
                await self._finish(bot)
            await sandbox.close()

    async def _play(
        self,
        arena: Arena,
        tcp: TcpServer,
        todo: list[Pairing],
        progress: Progress,
        sandbox: Sandbox,
    ) -> None:
        slots = asyncio.Semaphore(self.spec.parallel)
        async with asyncio.TaskGroup() as games:
            for pairing in todo:
                games.create_task(self._game(arena, tcp, pairing, slots, progress, sandbox))

    async def _game(
        self,
        arena: Arena,
        tcp: TcpServer,
        pairing: Pairing,
        slots: asyncio.Semaphore,
        progress: Progress,
        sandbox: Sandbox,
    ) -> None:
        async with slots:
            progress.running += 1
            progress.update(f"started {pairing.key}")
            for attempt in range(1, VOID_ATTEMPTS + 1):
                why = await self._attempt(arena, tcp, pairing, progress, sandbox)
                if why is None:
                    return
                note = f"{pairing.key}: voided ({why})"
                if attempt == VOID_ATTEMPTS:  # left for the tournament's next run
                    self.records.tournament_fault(self.spec.id, pairing.key, attempt, why)
                    progress.game_over(pairing, None, f"{note}, {attempt} times: left unplayed")
                    return
                progress.update(f"{note}: played again")
                await asyncio.sleep(VOID_PAUSE_S)

    async def _attempt(
        self,
        arena: Arena,
        tcp: TcpServer,
        pairing: Pairing,
        progress: Progress,
        sandbox: Sandbox,
    ) -> str | None:
        """Play the pairing's game once: None once it ended, or why the arena broke it (a bot
        it could not start: the game is voided, kept so in the records, and played again)."""
        clock = self.spec.limits.clock
        if clock is not None and self.clock_scale != 1.0:
            clock = TimeBank(
                round(clock.initial_ms * self.clock_scale),
                round(clock.increment_ms * self.clock_scale),
            )
        options = MatchOptions(
            seed=pairing.seed,
            hold_seats=True,
            tournament_id=self.spec.id,
            pairing=pairing.key,
            seat_bots=tuple(entrant.name for entrant in pairing.bots),
            limits=None if clock is None else arena.limits(clock),
        )
        match = arena.open(self.spec.game, options)
        began = self._beginning[match.id] = asyncio.Event()
        bots = []
        for seat, entrant in enumerate(pairing.bots):
            bot = BotProcess(self._entrants[entrant.name], match.id, seat, self.spec.limits)
            self._running.add(bot)
            bots.append(bot)
            await self._seat(match, tcp, bot, sandbox)
        broken = [bot.launch_failed for bot in bots if bot.launch_failed is not None]
        if broken:  # voided once it has begun, so that its record says why
            await began.wait()
            match.void()
        self._beginning.pop(match.id, None)
        finished = await match.finished()  # the match's own timeouts bound the wait
        outcome = None if finished is None else finished.outcome
        for bot in bots:
            bot.outcome = outcome
            await self._finish(bot)
        names = [entrant.name for entrant in pairing.bots]
        result = None if finished is None else finished.view.result()
        ended = result_text(match.codec, names, result, self._last_seats.pop(match.id, None))
        if broken:
            return broken[0]
        progress.game_over(pairing, outcome, f"{pairing.key}: {ended}")
        return None

    async def _finish(self, bot: BotProcess) -> None:
        """Stop a bot and keep its stderr and how it ended with its game's record.

        A game that has no outcome was stopped with the tournament, and so was its bot.
        """
        recorded = bot.match_id in self._started and bot in self._running
        await finish_bot(bot, self.records if recorded else None)
        self._running.discard(bot)

    async def _seat(self, match: Match, tcp: TcpServer, bot: BotProcess, sandbox: Sandbox) -> None:
        assert tcp.port is not None
        await seat_bot(match, tcp.port, bot, sandbox)
