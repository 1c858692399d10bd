"""``tavern worker --hosted GAME``: hosted bots on the ladder (issue 33, item 2).

The worker plays every bot with an active version (``server.records.versions``) on the arena's
ladder, as a connected bot plays: for each, a connection to the arena's TCP port seeks a rated
game of ``GAME`` under the bot's name; once paired, the bot's version runs isolated
(``server.jail``, in cgroups of its own under the tournament limits' defaults), its stdin
given the game from its ``game-info`` on and its stdout relayed back; when the game is over
and the bot gone, the connection seeks again. Connected bots and hosted bots meet on the same
ladder. A bot that ends before its game does loses on time: its worker keeps the seat, silent
(its connection closed would tell the arena the worker was lost, and void the game:
``server.match``).

The worker seeks with a key of its own for each bot (``server.identity.new_hosting_key``),
made when it starts playing the bot and kept in the records only as a hash beside the owner's
key (``bots.hosting_key_hash``), which every node reads into its roster within a second: the
owner's key is never needed, nor known, by the worker. Several workers play the same bots side
by side, each with keys of its own (the arena's ``maxGamesPerBot`` bounds a bot's games over
all of them). A version made active meanwhile is played from the bot's next game (its seeks
under way withdrawn at once, its games under way played to their end).

A hosted bot's move costs its CPU time, not the wall time it took (issue 33, item 4): the worker
stamps each move it relays with the CPU the bot's processes used since its turn was sent, as
its group counts it, times this machine's speed (``server.calibration``, measured when the
worker starts): ``cpuMs``, in the reference machine's milliseconds, which the arena charges the
bot's clock for the seat a hosting key proved (``server.match_clock``). A ``cpuMs`` the bot
writes itself is replaced or taken out. What the bot wrote on stderr during the turn goes beside
the move too (``stderr``, bounded: ``server.bot_stderr``), for its owner's log; once the game
is recorded, the worker keeps how the bot's process ended (a crash, a limit, the end of its
game) and the tail of its stderr with the game's record, as a tournament does.

A new version is tried before it plays (issue 33, item 5): given a ``gate``, the worker takes
each candidate version not tried yet (``server.records.versions.claim_trial``: one worker each)
and plays its SPRT match against the bot's active version, here, one trial at a time; the gate
(``tavern_cli.version_gate``) makes it active if it is stronger.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import shlex
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import orjson

from server import calibration
from server.bot_stderr import StderrPipe
from server.bot_versions import unpacked, versions_cache
from server.cancelling import stop_if_cancelled
from server.debug import CPU_KEY, STDERR_KEY
from server.games import GAMES
from server.identity import hosting_hash, new_hosting_key
from server.jail import jailed, killed, relay_on
from server.league import GAME_OVER
from server.limited import launcher
from server.records import Records
from server.records.backends import transacted
from server.records.identities import set_hosting_key
from server.records.versions import claim_trial
from server.sandbox import BotGroup, Sandbox
from server.tournament.bots import process_ending
from server.tournament.spec import Limits, TournamentError

log = logging.getLogger(__name__)

REFRESH_S = 5.0  # how often the worker reads which bots have an active version
RETRY_S = 1.0  # after a refused seek, or a lost link
# How long a new hosting key takes to reach every node's roster (they read the records' changes
# every second): the worker seeks only then, rather than spend its address's wrong-key tokens.
KEY_KNOWN_S = 2.0
GAME_ENDS = (b'"type":"win-game"', b'"type":"loss-game"', b'"type":"draw-game"')
TURN_LINE = b'{"type":"turn"'  # how the arena's turn messages begin (the type first)
MAX_LINE_BYTES = 1 << 22
EXIT_GRACE_S = 1.0  # how long a bot may take to exit once told its game's result
KEEP_EXIT_TRIES, KEEP_EXIT_WAIT_S = 40, 0.25  # waiting for a game's end in the records
# A trial a worker took this long ago and did not finish is taken again (its worker was lost).
TRIAL_STALE_S = 6 * 3600.0

Gate = Callable[[str, int], Awaitable[object]]
"""Plays a bot's candidate version (its number) against its active one and keeps the result."""


def game_over(line: bytes) -> bool:
    """Is this line the game's result (the last a bot is sent of it)?"""
    return any(end in line for end in GAME_ENDS)


class MoveStamp:
    """Each move of a hosted bot stamped with its CPU time in the reference machine's ms (what
    its processes used since its turn was sent, times this machine's ``speed``) and with what
    it wrote on stderr meanwhile."""

    def __init__(self, group: BotGroup, stderr: StderrPipe, speed: float) -> None:
        self.group = group
        self.stderr = stderr
        self.speed = speed
        self._since: float | None = None  # the group's CPU seconds when its turn was sent

    def sent(self, line: bytes) -> None:
        if line.startswith(TURN_LINE):
            self._since = self.group.cpu_seconds()
            self.stderr.turn_opened()

    def stamped(self, line: bytes) -> bytes:
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            return line  # the arena tells the bot what is wrong with it
        if not isinstance(message, dict) or message.get("type") != "player-turn":
            return line
        message.pop(CPU_KEY, None)  # only the worker says what a move cost and what it wrote
        message.pop(STDERR_KEY, None)
        since, used = self._since, self.group.cpu_seconds()  # a refused move's next one
        if since is not None and used is not None:  # counts from the turn too
            message[CPU_KEY] = round(1000 * (used - since) * self.speed)
        if (text := self.stderr.turn_closed()) is not None:
            message[STDERR_KEY] = text
        return orjson.dumps(message) + b"\n"


@dataclass(frozen=True, slots=True)
class Hosted:
    """A bot the worker plays: its name and its active version's hash and run command."""

    bot: str
    content_hash: str
    run: str


class HostedWorker:
    def __init__(
        self,
        records: Records,
        game: str,
        arena: tuple[str, int],
        games_per_bot: int = 1,
        out: IO[str] = sys.stderr,
        gate: Gate | None = None,
    ) -> None:
        self.records = records
        self.game = game
        self.arena = arena  # the arena's TCP address for bots
        self.games_per_bot = games_per_bot  # each bot's games at once (at most maxGamesPerBot)
        self.out = out
        self.limits = Limits()
        self.worker_id = secrets.token_hex(4)  # its keys' owner in the records
        self.wanted: dict[str, Hosted] = {}  # the active versions, as last read
        # Each bot's version played, and the task playing its games.
        self.playing: dict[str, tuple[Hosted, asyncio.Task[None]]] = {}
        self.games_on: Counter[str] = Counter()  # each bot's games under way
        self.speed = 1.0  # this machine's, as the reference's multiple: measured at ``run``
        self.gate = gate
        self._trial: asyncio.Task[None] | None = None  # the candidate being tried, if any
        self._tried = asyncio.Event()  # a trial ended: the active versions are read at once
        self._tasks: asyncio.TaskGroup | None = None  # while it runs

    async def run(self) -> None:
        """Play every hosted bot until cancelled; their keys are withdrawn at the end."""
        self.speed = await asyncio.to_thread(calibration.speed)
        print(f"tavern: this machine's speed: {self.speed:.2f} of the reference", file=self.out)
        sandbox = Sandbox.create()
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = tasks
                while True:
                    active = await asyncio.to_thread(self.records.active_hosted, self.game)
                    self.wanted = {bot: Hosted(bot, digest, run) for bot, digest, run in active}
                    for bot, (hosted, task) in list(self.playing.items()):
                        if task.done():  # its version changed, or it has none any more
                            del self.playing[bot]
                        elif self.wanted.get(bot) != hosted and not self.games_on[bot]:
                            task.cancel()  # only seeking: the new version seeks at once
                            del self.playing[bot]
                    for bot, hosted in self.wanted.items():
                        if bot not in self.playing:
                            task = tasks.create_task(self._play(hosted, sandbox))
                            self.playing[bot] = (hosted, task)
                    if self.gate is not None and (self._trial is None or self._trial.done()):
                        taken = await asyncio.to_thread(self._claim_trial)
                        if taken is not None:
                            self._trial = tasks.create_task(self._try(self.gate, *taken))
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._tried.wait(), REFRESH_S)
                    self._tried.clear()
        finally:
            await sandbox.close()
            await asyncio.to_thread(self._set_keys, dict.fromkeys(self.playing, ""))

    def _claim_trial(self) -> tuple[str, int] | None:
        with transacted(self.records.backend) as db:
            return claim_trial(db, self.game, time.time(), TRIAL_STALE_S)

    async def _try(self, gate: Gate, bot: str, number: int) -> None:
        """Try the version; a trial that cannot be played is said, and taken again later."""
        print(f"tavern: worker tries {bot}'s version {number}", file=self.out, flush=True)
        try:
            await gate(bot, number)
        except (TournamentError, OSError) as error:
            print(f"tavern: {bot}'s version {number} not tried: {error}", file=self.out)
        finally:
            self._tried.set()  # the version may be active now: played from its next game

    def _set_keys(self, hashes: dict[str, str]) -> None:
        """This worker's hosting keys' hashes of these bots, in the records ('': no key)."""
        with transacted(self.records.backend) as db:
            for bot, key_hash in hashes.items():
                set_hosting_key(db, bot, self.worker_id, key_hash)

    async def _play(self, hosted: Hosted, sandbox: Sandbox) -> None:
        """Seek and play games for one bot's version, ``games_per_bot`` at once, while it is the
        bot's active version (a game under way is played to its end)."""
        key = new_hosting_key()
        await asyncio.to_thread(self._set_keys, {hosted.bot: hosting_hash(key)})
        await asyncio.sleep(KEY_KNOWN_S)
        stored = await asyncio.to_thread(self.records.version_archive, hosted.content_hash)
        if stored is None:
            return
        folder = await asyncio.to_thread(unpacked, stored[0], hosted.content_hash, versions_cache())
        print(
            f"tavern: worker plays {hosted.bot} (version {hosted.content_hash[:12]})",
            file=self.out,
            flush=True,
        )
        async with asyncio.TaskGroup() as seekers:
            for seeker in range(self.games_per_bot):
                seekers.create_task(self._games(hosted, key, folder, sandbox, seeker))
        await asyncio.to_thread(self._set_keys, {hosted.bot: ""})  # no longer played: no key

    async def _games(
        self, hosted: Hosted, key: str, folder: Path, sandbox: Sandbox, seeker: int
    ) -> None:
        """One connection's games for the bot, one after the other."""
        games = 0
        while self.wanted.get(hosted.bot) == hosted:
            try:
                played = await self._game(hosted, key, folder, sandbox, f"{seeker}-{games}")
            except (OSError, ValueError) as error:
                log.warning("hosted %s: %s", hosted.bot, error)
                played = False
            stop_if_cancelled()  # whatever a connection's calls answered
            if played:
                games += 1
            else:
                await asyncio.sleep(RETRY_S)

    async def _game(
        self, hosted: Hosted, key: str, folder: Path, sandbox: Sandbox, number: str
    ) -> bool:
        """One seek and, once paired (or a challenge of its game accepted), its game; False if
        the seek was refused."""
        host, port = self.arena
        reader, writer = await asyncio.open_connection(host, port, limit=MAX_LINE_BYTES)
        try:
            seek = {"type": "seek", "game": self.game, "rated": True, "bot": hosted.bot, "key": key}
            writer.write(orjson.dumps(seek) + b"\n")
            await writer.drain()
            while True:
                line = await reader.readline()
                if not line:
                    return False
                message = orjson.loads(line)
                kind = message.get("type")
                if kind == "error":
                    log.info("hosted %s: %s", hosted.bot, message.get("message"))
                    return False
                if kind == "game-info":
                    break
                if kind == "challenge":  # a challenge to a game it plays is taken at once
                    answer = {"type": "accept", "challenge": message.get("challenge")}
                    if message.get("game") != self.game:
                        reason = f"{hosted.bot} is hosted to play {self.game} only"
                        answer = {**answer, "type": "decline", "reason": reason}
                    writer.write(orjson.dumps(answer) + b"\n")
                    await writer.drain()
            self.games_on[hosted.bot] += 1
            try:
                ended = await self._run_bot(hosted, line, reader, writer, folder, sandbox, number)
            finally:
                self.games_on[hosted.bot] -= 1
            codec = GAMES[self.game].codec
            seat = codec.seat_names.index(message[codec.seat_field])
            if self._tasks is not None:  # kept once the arena has recorded the game's end
                self._tasks.create_task(self._keep_exit(str(message["simulationId"]), seat, *ended))
            return True
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _run_bot(
        self,
        hosted: Hosted,
        game_info: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        folder: Path,
        sandbox: Sandbox,
        number: str,
    ) -> tuple[str, str]:
        """The bot's version, isolated, given the game from its ``game-info``; until it ends
        (or the game does), then every process of it killed. How it ended, and its stderr's
        tail."""
        group = sandbox.group(f"{hosted.bot}-{number}", self.limits.memory_mb)
        environment = {"TAVERN_GAME": self.game, "TAVERN_BOT": hosted.bot}
        command = jailed(shlex.split(hosted.run), folder, environment)
        stderr = StderrPipe()
        try:
            process = await asyncio.create_subprocess_exec(
                *launcher(
                    self.limits.cpu_seconds,
                    self.limits.memory_mb,
                    [str(procs) for procs in group.procs],
                    command,
                ),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr.opened(),
                start_new_session=True,
                limit=MAX_LINE_BYTES,
            )
        except OSError as error:
            stderr.failed(str(error))
            await group.remove()
            raise
        stderr.started()
        assert process.stdin is not None
        try:
            process.stdin.write(game_info)
            stamp = MoveStamp(group, stderr, self.speed)
            over = await relay_on(process, reader, writer, game_over, stamp)
            if over:
                with contextlib.suppress(TimeoutError):  # told its result: it may end itself
                    await asyncio.wait_for(process.wait(), EXIT_GRACE_S)
            else:  # the bot ended before its game: it loses on time, by its own fault (the
                # connection closed would void the game, as if the worker were lost)
                while (line := await reader.readline()) and not game_over(line):
                    pass
        finally:
            group.kill()
            await killed(process)
            assert process.returncode is not None
            ending = process_ending(process.returncode, group, self.limits)
            stderr.read()
            stderr.close()
            await group.remove()
        if over:
            return f"{ending or 'stopped'} {GAME_OVER}", stderr.tail()
        return ending or "ended before its game", stderr.tail()

    async def _keep_exit(self, game_id: str, seat: int, ended: str, tail: str) -> None:
        """How the bot ended and its stderr's tail, with its game's record, once its node has
        recorded the game's end (it writes every fraction of a second)."""
        for _ in range(KEEP_EXIT_TRIES):
            status = await asyncio.to_thread(self.records.game_status, game_id)
            if status not in (None, "playing"):
                break
            await asyncio.sleep(KEEP_EXIT_WAIT_S)
        self.records.seat_stderr(game_id, seat, tail)
        self.records.seat_exit(game_id, seat, ended)
