"""Tournaments: every entrant against every other, each bot a real process, a league at the end.

    tavern tournament FILE          # FILE is JSON or TOML; see docs/tournaments.md
    tavern tournament DIR           # Thud challenge clients: DIR/dwarf/*.js against DIR/troll/*.js

The tournament runs its own arena on a loopback port and records every game in the configured
records file. For each game it creates a simulation, starts each seat's bot (the command gets
``{host}``, ``{port}``, ``{simulation}``, ``{side}``, ``{seed}`` and ``{python}`` filled in, and
the same in ``TAVERN_*`` environment variables) under CPU and memory limits, keeps its stderr
with the game's record, and kills it when the game ends. A bot that crashes or goes silent loses
that game by the ordinary rules (disconnect, timeouts); one that never joins is replaced by a
seat that never answers, so it loses on time. Seats are filled one at a time, in seat order, so
even a bot that does not ask for a side gets the right one.

A tournament is identified by its name: running the same file again skips the games already
finished, so an interrupted tournament (Ctrl-C, a crash) resumes where it stopped.

A bot may be a Thud challenge client, a JavaScript class in a file (``"file"`` instead of
``"command"``): it plays through ``bots/js/thud-client.js`` under Node.js. A folder holding such
files in ``dwarf/`` and ``troll/`` is a tournament by itself, as the challenge kept its clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import os
import re
import shlex
import shutil
import signal
import sys
import tomllib
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import orjson

from server.arena import Arena
from server.commentary import result_text
from server.config import ArenaConfig
from server.games import GAMES
from server.games.base import JsonObject, Outcome
from server.league import GAME_OVER, GameResult
from server.match import (
    PLAYER_DISCONNECTED,
    GameStarted,
    Match,
    MatchOptions,
    SeatMessage,
    SeatRequest,
    TurnPlayed,
    Update,
)
from server.records import Recorder, Records
from server.sandbox import POLL_S, BotGroup, Sandbox
from server.tcp import TcpServer

STDERR_KEPT = 20_000  # the last characters of a bot's stderr kept with the record
STDERR_KEPT_BYTES = 4 * STDERR_KEPT  # enough bytes for that many characters of UTF-8
STDERR_EOF_WAIT_S = 1.0  # after its bot is killed, how long its stderr may take to close
QUOTED_LINES = 40  # at most this many of a bot's last stderr lines are shown to a person
QUOTED_CHARS = 4000  # ... and at most this many characters of them
QUOTED_LINE_CHARS = 500  # a longer line (minified code, a dump) is cut
LEFT_GRACE_S = 1.0  # how long a bot that left its game may take to exit on its own
PLACEHOLDERS = ("host", "port", "simulation", "side", "seed", "game", "python")
KEYS = ("name", "game", "seed", "parallel", "swap_sides", "limits", "bots")
LIMIT_KEYS = ("cpu_seconds", "memory_mb", "startup_ms", "turn_timeout_ms")
BOT_KEYS = ("name", "side", "command", "file")
THUD_CLIENT = Path(__file__).resolve().parent.parent / "bots" / "js" / "thud-client.js"
"""The adapter that plays a Thud challenge client (a JavaScript class in a file) as a seat."""
MAX_NICK = 64
T = TypeVar("T")


class TournamentError(Exception):
    """The tournament file is not valid; the message names the key."""


@dataclass(frozen=True, slots=True)
class Entrant:
    name: str
    command: tuple[str, ...]
    sides: tuple[str, ...]  # the seats it may take
    cwd: Path


@dataclass(frozen=True, slots=True)
class Limits:
    cpu_seconds: int = 300
    memory_mb: int = 2048
    startup_ms: int = 10_000  # time for a bot to join its simulation
    turn_timeout_ms: int | None = None  # None: the arena's


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class TournamentSpec:
    id: str
    name: str
    game: str
    seed: int
    parallel: int
    swap_sides: bool
    entrants: tuple[Entrant, ...]
    limits: Limits
    raw: JsonObject


@dataclass(frozen=True, slots=True)
class Pairing:
    number: int
    bots: tuple[Entrant, Entrant]  # by seat
    key: str  # stable across runs: how a resumed tournament recognises a finished game


# --- the file ------------------------------------------------------------------------------------
def load_spec(path: Path) -> TournamentSpec:
    """Read a tournament file (``.toml``, else JSON), or a folder of Thud challenge clients."""
    if path.is_dir():
        return spec_from_folder(path)
    try:
        text = path.read_bytes()
    except OSError as error:
        raise TournamentError(f"{path}: cannot read: {error.strerror}") from error
    try:
        raw = tomllib.loads(text.decode()) if path.suffix == ".toml" else orjson.loads(text)
    except (tomllib.TOMLDecodeError, orjson.JSONDecodeError, UnicodeDecodeError) as error:
        kind = "TOML" if path.suffix == ".toml" else "JSON"
        raise TournamentError(f"{path}: not valid {kind}: {error}") from error
    return spec_from_mapping(raw, path.parent)


def spec_from_mapping(raw: object, base: Path) -> TournamentSpec:
    if not isinstance(raw, dict):
        raise TournamentError("a tournament file holds one object")
    _known_keys(raw, KEYS)
    name = _get(raw, "name", str)
    game = _get(raw, "game", str)
    if game not in GAMES:
        raise TournamentError(f"key 'game': must be one of {', '.join(sorted(GAMES))}")
    seat_names = GAMES[game].seat_names
    bots_raw = raw.get("bots")
    if not isinstance(bots_raw, list) or len(bots_raw) < 2:
        raise TournamentError("key 'bots': must be a list of at least two bots")
    entrants = tuple(
        _entrant(index, bot, game, seat_names, base) for index, bot in enumerate(bots_raw)
    )
    names = [entrant.name for entrant in entrants]
    if len(set(names)) != len(names):
        raise TournamentError("key 'bots': two bots have the same name")
    limits_raw = raw.get("limits", {})
    if not isinstance(limits_raw, dict):
        raise TournamentError("key 'limits': must be an object")
    _known_keys(limits_raw, LIMIT_KEYS, "limits.")
    limits = Limits(
        cpu_seconds=_get(limits_raw, "cpu_seconds", int, DEFAULT_LIMITS.cpu_seconds, "limits."),
        memory_mb=_get(limits_raw, "memory_mb", int, DEFAULT_LIMITS.memory_mb, "limits."),
        startup_ms=_get(limits_raw, "startup_ms", int, DEFAULT_LIMITS.startup_ms, "limits."),
        turn_timeout_ms=_get(limits_raw, "turn_timeout_ms", int, None, "limits."),
    )
    return TournamentSpec(
        id=re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "tournament",
        name=name,
        game=game,
        seed=_get(raw, "seed", int, 1),
        parallel=max(1, _get(raw, "parallel", int, 1)),
        swap_sides=_get(raw, "swap_sides", bool, False),
        entrants=entrants,
        limits=limits,
        raw=raw,
    )


def _known_keys(raw: dict[str, Any], known: tuple[str, ...], prefix: str = "") -> None:
    """A misspelled key would otherwise be ignored, and its default used without a word."""
    for key in raw:
        if key not in known:
            raise TournamentError(
                f"key '{prefix}{key}': unknown (the known keys are {', '.join(known)})"
            )


def _get(raw: dict[str, Any], key: str, kind: type, default: Any = ..., prefix: str = "") -> Any:
    if key not in raw:
        if default is ...:
            raise TournamentError(f"key '{prefix}{key}': missing")
        return default
    value = raw[key]
    if (kind is int and isinstance(value, bool)) or not isinstance(value, kind):
        raise TournamentError(f"key '{prefix}{key}': must be a {kind.__name__}, got {value!r}")
    return value


def _entrant(
    index: int, raw: object, game: str, seat_names: tuple[str, ...], base: Path
) -> Entrant:
    prefix = f"bots[{index}]."
    if not isinstance(raw, dict):
        raise TournamentError(f"key 'bots[{index}]': must be an object with name and command")
    _known_keys(raw, BOT_KEYS, prefix)
    name = _get(raw, "name", str, prefix=prefix)
    command = raw.get("command")
    if "file" in raw:
        if command is not None:
            raise TournamentError(f"key '{prefix}file': give a command or a file, not both")
        parts = _client_command(_get(raw, "file", str, prefix=prefix), name, game, base, prefix)
    elif isinstance(command, str):
        parts = tuple(shlex.split(command))
    elif isinstance(command, list) and all(isinstance(part, str) for part in command):
        parts = tuple(command)
    else:
        raise TournamentError(f"key '{prefix}command': must be a string or a list of strings")
    if not parts:
        raise TournamentError(f"key '{prefix}command': is empty")
    check_placeholders(parts, f"key '{prefix}command'")
    side = _get(raw, "side", str, "both", prefix)
    if side != "both" and side not in seat_names:
        raise TournamentError(f"key '{prefix}side': must be both or one of {', '.join(seat_names)}")
    sides = seat_names if side == "both" else (side,)
    return Entrant(name, parts, sides, base)


def check_placeholders(parts: Sequence[str], what: str) -> None:
    """Every ``{name}`` in a command is a known placeholder; raises ``TournamentError`` naming
    the command as ``what``."""
    blank = dict.fromkeys(PLACEHOLDERS, "")
    for part in parts:
        try:
            part.format(**blank)
        except KeyError as error:
            raise TournamentError(
                f"{what}: unknown placeholder {{{error.args[0]}}} (the known ones "
                f"are {', '.join('{' + name + '}' for name in PLACEHOLDERS)})"
            ) from error
        except (ValueError, IndexError) as error:
            raise TournamentError(
                f"{what}: {error} in {part!r} (write {{{{ and }}}} for a brace)"
            ) from error


def placeholder_values(entrant: Entrant, game: str) -> dict[str, str]:
    """What a bot's command and ``TAVERN_*`` environment are filled in with; a game fills in
    its own port, simulation, side and seed."""
    return {
        "host": "127.0.0.1",
        "port": "0",
        "simulation": "",
        "side": entrant.sides[0],
        "seed": "0",
        "python": sys.executable,
        "game": game,
    }


def check_programs(entrants: Sequence[Entrant], game: str) -> None:
    """Every bot's program must exist before the first game: a misspelled one would otherwise
    lose every game on time, with an error from deep inside the launcher."""
    for entrant in entrants:
        problem = program_problem(entrant, game)
        if problem is not None:
            raise TournamentError(f"bot {entrant.name!r}: {problem}")


def program_problem(entrant: Entrant, game: str) -> str | None:
    """What keeps a bot's program from running, named as its command names it (a placeholder
    such as ``{python}`` is looked for as filled in)."""
    written = entrant.command[0]
    program = written.format(**placeholder_values(entrant, game))
    if "/" in program:
        path = entrant.cwd / program
        if not path.is_file():
            return f"there is no program {written} (in {entrant.cwd})"
        if not os.access(path, os.X_OK):
            return f"the program {written} is not executable (in {entrant.cwd})"
    elif shutil.which(program) is None:
        return f"the program {written} is not on the PATH"
    return None


def _client_command(file: str, name: str, game: str, base: Path, prefix: str) -> tuple[str, ...]:
    """The command that plays a Thud challenge client file through the Node.js adapter."""
    if game != "thud":
        raise TournamentError(f"key '{prefix}file': client files play Thud only")
    path = (base / file).resolve()
    if not path.is_file():
        raise TournamentError(f"key '{prefix}file': no such file {path}")
    if shutil.which("node") is None:
        raise TournamentError(f"key '{prefix}file': client files need Node.js (node) on the PATH")

    def literal(text: str) -> str:  # every part of a command is filled in with str.format
        return text.replace("{", "{{").replace("}", "}}")

    return (
        "node",
        literal(str(THUD_CLIENT)),
        "--file",
        literal(str(path)),
        "--side",
        "{side}",
        "--host",
        "{host}",
        "--port",
        "{port}",
        "--simulation",
        "{simulation}",
        "--nick",
        literal(name[:MAX_NICK]),
    )


def spec_from_folder(folder: Path) -> TournamentSpec:
    """A Thud tournament of challenge clients: every ``dwarf/**/*.js`` against every
    ``troll/**/*.js``, each bot named after its file (its path under ``dwarf/`` or ``troll/``,
    without ``.js``; prefixed with the side when both sides have a file of that name).

    The tournament is named after the folder, and its id also depends on the files' contents:
    running it again resumes it, but once a client changes it is a new tournament.
    """
    files = {
        side: sorted(path for path in (folder / side).rglob("*.js") if path.is_file())
        for side in ("dwarf", "troll")
    }
    for side, paths in files.items():
        if not paths:
            raise TournamentError(f"{folder}: no client files in {side}/ (*.js)")
    stems = {
        side: [path.relative_to(folder / side).with_suffix("").as_posix() for path in paths]
        for side, paths in files.items()
    }
    shared = set(stems["dwarf"]) & set(stems["troll"])
    bots: list[JsonObject] = []
    digest = hashlib.sha256()
    for side, paths in files.items():
        for path, stem in zip(paths, stems[side], strict=True):
            relative = path.relative_to(folder).as_posix()
            name = f"{side}/{stem}" if stem in shared else stem
            bots.append({"name": name, "side": side, "file": relative})
            digest.update(f"{relative}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    raw: JsonObject = {
        "name": folder.resolve().name or "clients",
        "game": "thud",
        "parallel": max(1, min(4, os.cpu_count() or 1)),
        "bots": bots,
    }
    spec = spec_from_mapping(raw, folder)
    return dataclasses.replace(spec, id=f"{spec.id}-{digest.hexdigest()[:8]}")


def schedule(spec: TournamentSpec) -> list[Pairing]:
    """Who plays whom, and on which side.

    Thud, as the challenge: every dwarf bot plays every troll bot once. A pair of bots that can
    both play either side meets once (the earlier-listed one as the dwarfs), or twice, once each
    way, with ``swap_sides``. Dwarven Tavern: every pair plays twice, once from each side.
    """
    seat_names = GAMES[spec.game].seat_names
    both_ways = spec.swap_sides or spec.game == "tavern"
    pairings: list[tuple[Entrant, Entrant]] = []
    entrants = spec.entrants
    for i, first in enumerate(entrants):
        for second in entrants[i + 1 :]:
            ways = [
                (a, b)
                for a, b in ((first, second), (second, first))
                if seat_names[0] in a.sides and seat_names[1] in b.sides
            ]
            pairings += ways if both_ways else ways[:1]
    return [
        Pairing(number, (a, b), f"{seat_names[0]}:{a.name} v {seat_names[1]}:{b.name}")
        for number, (a, b) in enumerate(pairings, start=1)
    ]


# --- running ------------------------------------------------------------------------------------
class AbsentSeat:
    """Stands in for a bot that never joined: it never answers, so it loses on time."""

    def send(self, message: SeatMessage) -> None:
        """Nobody is listening."""

    def close(self) -> None:
        """Nothing to close."""


class Progress:
    """Games done, running and left, on one line that redraws (or a line per game in a log)."""

    def __init__(self, total: int, done: int, out: IO[str]) -> None:
        self.total, self.done, self.running = total, done, 0
        self.out = out
        self.live = out.isatty()

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


class TournamentRunner:
    def __init__(
        self, spec: TournamentSpec, config: ArenaConfig, records: Records, out: IO[str] = sys.stderr
    ) -> None:
        turn_timeout = spec.limits.turn_timeout_ms or config.turn_timeout_ms
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
        self._last_seats: dict[str, int] = {}  # by game: the seat that played its last turn

    def _on_update(self, update: Update) -> None:
        if isinstance(update, GameStarted):
            self._started.add(update.view.match_id)
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
        pairings = schedule(spec)
        self.records.tournament_started(spec.id, spec.name, spec.game, spec.raw)
        finished = await asyncio.to_thread(self.records.finished_pairings, spec.id)
        todo = [pairing for pairing in pairings if pairing.key not in finished]
        progress = Progress(len(pairings), len(pairings) - len(todo), self.out)
        progress.update("resuming" if finished else "")
        await self.play(todo, progress)
        if len(finished) + len(todo) == len(pairings):
            self.records.tournament_finished(spec.id)
        await self.records.flush()
        return await asyncio.to_thread(self.records.results, spec.id)

    async def play(self, todo: list[Pairing], progress: Progress) -> None:
        """Play these games on an arena of the runner's own (``spec.parallel`` at once), each
        bot in the sandbox: what ``run`` does once it knows which games are left, and what a
        ``tavern worker`` does with each game it takes from the queue."""
        sandbox = Sandbox.create()
        if sandbox.warning is not None and sandbox.warning not in _WARNED:
            _WARNED.add(sandbox.warning)
            self.out.write(f"tavern: {sandbox.warning}\n")
        arena = Arena(self.config)
        arena.listeners += [Recorder(self.records), self._on_update]
        arena.id_tag = self.records.id_tag
        try:
            async with arena.running(), TcpServer(arena).serving() as tcp:
                games = asyncio.create_task(self._play(arena, tcp, todo, progress, sandbox))
                try:
                    await asyncio.wait({games})
                except asyncio.CancelledError:
                    games.cancel()  # the games leave their bots running, for the end
                    await asyncio.wait({games})
                    raise  # out of the arena, which stops every match without a result
                games.result()
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
            options = MatchOptions(
                seed=self.spec.seed * 100_003 + pairing.number,
                hold_seats=True,
                tournament_id=self.spec.id,
                pairing=pairing.key,
                seat_bots=tuple(entrant.name for entrant in pairing.bots),
            )
            match = arena.open(self.spec.game, options)
            bots = []
            for seat, entrant in enumerate(pairing.bots):
                bot = BotProcess(entrant, match.id, seat, self.spec.limits)
                self._running.add(bot)
                bots.append(bot)
                await self._seat(match, tcp, bot, sandbox)
            finished = await match.finished()  # the match's own timeouts bound the wait
            outcome = None if finished is None else finished.outcome
            for bot in bots:
                bot.outcome = outcome
                await self._finish(bot)
            progress.running -= 1
            progress.done += 1
            names = [entrant.name for entrant in pairing.bots]
            result = None if finished is None else finished.view.result()
            ended = result_text(match.codec, names, result, self._last_seats.pop(match.id, None))
            progress.update(f"{pairing.key}: {ended}")

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


async def seat_bot(match: Match, port: int, bot: BotProcess, sandbox: Sandbox) -> None:
    """Start a seat's bot (its command filled in for this game, bots on ``port``) and wait for
    it to join; seat an absent player if it does not within its start-up time."""
    seat = bot.seat
    seat_name = match.codec.seat_names[seat]
    values = {
        **placeholder_values(bot.entrant, match.codec.name),
        "port": str(port),
        "simulation": match.id,
        "side": seat_name,
        "seed": str(match.seed),
    }
    await bot.start(values, sandbox)
    joined = asyncio.create_task(match.wait_seated(seat))
    exited = asyncio.create_task(bot.wait())
    try:
        await asyncio.wait(
            {joined, exited},
            timeout=bot.limits.startup_ms / 1000,
            return_when=asyncio.FIRST_COMPLETED,
        )
    finally:
        joined.cancel()
        exited.cancel()
    if match.seats[seat] is None:
        await bot.stop()
    if match.seats[seat] is None:
        bot.joined = False
        nick = f"{bot.entrant.name} (did not join)"
        match.seat(AbsentSeat(), SeatRequest({"nick": nick, "side": seat_name}))


async def finish_bot(bot: BotProcess, records: Records | None) -> None:
    """Stop a bot whose game is over (or stopped) and, given the records its game's seats are
    in, keep its stderr and how it ended there. One that left its game may end on its own first.
    """
    interrupted = bot.outcome is None
    await bot.stop(LEFT_GRACE_S if bot.left() else 0.0)
    if records is not None:
        records.seat_stderr(bot.match_id, bot.seat, bot.stderr_tail())
        records.seat_exit(bot.match_id, bot.seat, bot.exit_text(interrupted))


_WARNED: set[str] = set()  # what the sandbox lacks is said once per process


class BotProcess:
    """One bot's process, in its own session and cgroups, under its limits.

    Its stderr comes through a pipe, of which only the last ``STDERR_KEPT_BYTES`` are kept (a
    bot may write hundreds of megabytes). Its exit is told as ``Records.seat_exit`` keeps it:
    a bot that played its game to the end has an exit that ends with ``GAME_OVER``; any other
    (it died, was killed by a limit, left or never joined) is a crash for the league tables.
    """

    def __init__(self, entrant: Entrant, match_id: str, seat: int, limits: Limits) -> None:
        self.entrant = entrant
        self.match_id = match_id
        self.outcome: Outcome | None = None  # how its game ended, once it has
        self.seat = seat
        self.limits = limits
        self.process: asyncio.subprocess.Process | None = None
        self.group: BotGroup | None = None
        self.joined = True
        self._stderr = bytearray()
        self._reader: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None  # also sets _exited
        self._exited = asyncio.Event()
        self._killed_for: str | None = None  # the limit the bot went over
        self._ended: str | None = None  # how it ended by itself; None if it was stopped
        self._stopping: asyncio.Task[None] | None = None

    async def start(self, values: dict[str, str], sandbox: Sandbox) -> None:
        command = [part.format(**values) for part in self.entrant.command]
        environment = {
            **os.environ,
            **{f"TAVERN_{key.upper()}": value for key, value in values.items()},
        }
        self.group = sandbox.group(f"{self.match_id}-{self.seat}", self.limits.memory_mb)
        cgroups = [argument for procs in self.group.procs for argument in ("--cgroup", str(procs))]
        try:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "server.limited",
                str(self.limits.cpu_seconds),
                str(self.limits.memory_mb),
                *cgroups,
                "--",
                *command,
                cwd=self.entrant.cwd,
                env=environment,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as error:
            self._stderr += f"cannot start {command}: {error}\n".encode()
            self._ended = f"could not start: {error.strerror}"
            return
        assert self.process.stderr is not None
        self._reader = asyncio.create_task(self._read_stderr(self.process.stderr))
        self._watcher = asyncio.create_task(self._watch(self.process, self.group))

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65_536):
            self._stderr += chunk
            if len(self._stderr) > STDERR_KEPT_BYTES:
                del self._stderr[:-STDERR_KEPT_BYTES]

    async def _watch(self, process: asyncio.subprocess.Process, group: BotGroup) -> None:
        """Kill the whole bot once its processes together pass the CPU or memory limit, or once
        its own process has exited: what it left running (holding its connection, maybe) goes
        with it.

        It watches the exit too (``wait``): in Python 3.11, ``Process.wait()`` also waits for
        the process's stderr to close, which a process it started may hold open for as long
        as it lives.
        """
        try:
            while process.returncode is None:
                await asyncio.sleep(POLL_S)
                used = group.cpu_seconds()
                if used is not None and used > self.limits.cpu_seconds and not self._killed_for:
                    self._kill(f"killed: CPU limit ({self.limits.cpu_seconds} s)")
                elif group.out_of_memory() and not self._killed_for:
                    self._kill(f"killed: memory limit ({self.limits.memory_mb} MB)")
            self._kill()
        finally:
            self._exited.set()

    def _kill(self, reason: str | None = None) -> None:
        if reason is not None and self._killed_for is None:
            self._killed_for = reason
        if self.group is not None:
            self.group.kill()
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)

    async def wait(self) -> None:
        """Until the bot's own process has exited (at once if it never started)."""
        if self.process is not None:
            await self._exited.wait()

    async def stop(self, grace_s: float = 0.0) -> None:
        """Kill every process of the bot, keep how it ended, read the rest of its stderr.

        With ``grace_s``, the bot's process may first end on its own: one that left its game
        is usually on its way out, writing what went wrong on stderr. The stop is done once,
        to its end, even when the caller is cancelled (a tournament stopping): then whoever
        calls next waits for the same stop.
        """
        if self._stopping is None:
            self._stopping = asyncio.create_task(self._stop(grace_s))
        await asyncio.shield(self._stopping)

    async def _stop(self, grace_s: float) -> None:
        if self.process is not None and grace_s > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wait(), grace_s)
        if self.process is not None:
            self._kill()
            await self.wait()
            assert self.process.returncode is not None
            self._ended = self._ending(self.process.returncode)
        if self._reader is not None:
            # Every writer is dead, unless one escaped a machine without cgroups.
            await asyncio.wait({self._reader}, timeout=STDERR_EOF_WAIT_S)
            self._reader.cancel()
        if self.group is not None:
            await self.group.remove()

    def _ending(self, returncode: int) -> str | None:
        """How the process ended, if not by the runner's kill."""
        assert self.group is not None
        if self.group.out_of_memory():
            return f"killed: memory limit ({self.limits.memory_mb} MB)"
        if returncode == -signal.SIGXCPU:  # RLIMIT_CPU, the second line
            return f"killed: CPU limit ({self.limits.cpu_seconds} s)"
        if returncode == -signal.SIGKILL:
            return None
        if returncode < 0:
            return f"killed by signal {signal.Signals(-returncode).name}"
        return f"exited with code {returncode}"

    def exit_text(self, interrupted: bool = False) -> str:
        """How the bot ended, as the game's record keeps it (server.league.crashed reads it)."""
        ended = self._killed_for or self._ended
        if not self.joined:
            if ended is None:
                return f"did not join within {self.limits.startup_ms} ms"
            return f"did not join ({ended})"
        if self._killed_for is not None:
            return self._killed_for
        if interrupted:  # whatever it did once the arena told it that it was stopping
            return "stopped when the tournament was interrupted"
        if self.left():
            return ended or "left the game before its end"
        return f"{ended} {GAME_OVER}" if ended else f"stopped {GAME_OVER}"

    def left(self) -> bool:
        """Did the bot lose its game by leaving it (its connection closed)?"""
        outcome = self.outcome
        return (
            outcome is not None
            and outcome.reason == PLAYER_DISCONNECTED
            and outcome.winner != self.seat
        )

    def stderr_tail(self) -> str:
        return self._stderr.decode(errors="replace")[-STDERR_KEPT:]


class Stopped(Exception):
    """The command was stopped by a signal (after cleaning up); ``code`` is its exit status."""

    def __init__(self, signal_number: int) -> None:
        super().__init__(signal.Signals(signal_number).name)
        self.code = 128 + signal_number


async def until_signalled(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work``; the first SIGINT or SIGTERM cancels it, and once it has cleaned up (its
    ``finally`` blocks ran), raises ``Stopped``. A second signal is ignored, so that a
    tournament's records are closed properly even when Ctrl-C is pressed twice."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def on_signal(number: int) -> None:
        if not received:
            received.append(number)
            task.cancel()

    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, on_signal, number)
    try:
        return await work
    except asyncio.CancelledError:
        if not received:
            raise
        task.uncancel()
        raise Stopped(received[0]) from None
    finally:
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(number)


def describe_schedule(pairings: Sequence[Pairing]) -> str:
    return "\n".join(f"{pairing.number:>4}  {pairing.key}" for pairing in pairings)


def quoted_stderr(stderr: str) -> str:
    """What a bot wrote on stderr, for a person reading how it ended: its last lines, each
    quoted with ``  | ``, within ``QUOTED_LINES`` and ``QUOTED_CHARS``.

    When the cut falls inside a stack trace, the line that began it is kept above a note of
    what was left out: Node.js writes the error's message there, above its stack frames.
    """
    lines = [
        line if len(line) <= QUOTED_LINE_CHARS else line[:QUOTED_LINE_CHARS] + " ..."
        for line in stderr.rstrip().lstrip("\n").splitlines()
    ]
    first = len(lines)  # the first line shown
    size = 0
    while first > 0 and len(lines) - first < QUOTED_LINES:
        size += len(lines[first - 1]) + 1
        if size > QUOTED_CHARS:
            break
        first -= 1
    shown = lines[first:]
    if first > 0:
        began = None
        if shown[0][:1].isspace():  # the cut is inside a stack trace
            began = next(
                (i for i in reversed(range(first)) if lines[i] and not lines[i][0].isspace()),
                None,
            )
        if began is not None:
            shown = [lines[began], f"... ({first - 1} lines not shown)", *shown]
        else:
            shown = [f"... ({first} earlier lines not shown)", *shown]
    return "".join(f"  | {line}".rstrip() + "\n" for line in shown)
