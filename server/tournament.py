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
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from server.arena import Arena
from server.config import ArenaConfig
from server.games import GAMES, SEAT_NAMES
from server.games.base import JsonObject
from server.league import GameResult
from server.records import Recorder, Records
from server.simulation import Simulation

STDERR_KEPT = 20_000  # the last characters of a bot's stderr kept with the record
THUD_CLIENT = Path(__file__).resolve().parent.parent / "bots" / "js" / "thud-client.js"
"""The adapter that plays a Thud challenge client (a JavaScript class in a file) as a seat."""
MAX_NICK = 64


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
    name = _get(raw, "name", str)
    game = _get(raw, "game", str)
    if game not in GAMES:
        raise TournamentError(f"key 'game': must be one of {', '.join(sorted(GAMES))}")
    seat_names = SEAT_NAMES[game]
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
    side = _get(raw, "side", str, "both", prefix)
    if side != "both" and side not in seat_names:
        raise TournamentError(f"key '{prefix}side': must be both or one of {', '.join(seat_names)}")
    sides = seat_names if side == "both" else (side,)
    return Entrant(name, parts, sides, base)


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
    seat_names = SEAT_NAMES[spec.game]
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

    def send(self, message: JsonObject) -> None:
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

    async def run(self) -> list[GameResult]:
        """Play every game not yet finished; returns the tournament's results."""
        spec = self.spec
        pairings = schedule(spec)
        self.records.tournament_started(spec.id, spec.name, spec.game, spec.raw)
        finished = await asyncio.to_thread(self.records.finished_pairings, spec.id)
        todo = [pairing for pairing in pairings if pairing.key not in finished]
        progress = Progress(len(pairings), len(pairings) - len(todo), self.out)
        progress.update("resuming" if finished else "")
        arena = Arena(self.config)
        arena.listeners.append(Recorder(self.records))
        slots = asyncio.Semaphore(spec.parallel)
        with tempfile.TemporaryDirectory(prefix="tavern-tournament-") as scratch:
            async with arena.serving(), asyncio.TaskGroup() as games:
                for pairing in todo:
                    games.create_task(self._game(arena, pairing, slots, progress, Path(scratch)))
        if len(finished) + len(todo) == len(pairings):
            self.records.tournament_finished(spec.id)
        await self.records.flush()
        return await asyncio.to_thread(self.records.results, spec.id)

    async def _game(
        self,
        arena: Arena,
        pairing: Pairing,
        slots: asyncio.Semaphore,
        progress: Progress,
        scratch: Path,
    ) -> None:
        async with slots:
            progress.running += 1
            progress.update(f"started {pairing.key}")
            simulation = arena.create_simulation(
                self.spec.game, seed=self.spec.seed * 100_003 + pairing.number
            )
            simulation.tournament_id = self.spec.id
            simulation.pairing = pairing.key
            simulation.seat_bots = [entrant.name for entrant in pairing.bots]
            simulation.hold_seats = True
            bots: list[BotProcess] = []
            try:
                for seat, entrant in enumerate(pairing.bots):
                    bot = BotProcess(entrant, scratch / f"{simulation.id}-{seat}.stderr")
                    bots.append(bot)
                    await self._seat(arena, simulation, seat, bot)
                await simulation.done.wait()  # the match's own timeouts bound the wait
            finally:
                for bot in bots:
                    await bot.stop()
                if simulation.started_at is not None:
                    for seat, bot in enumerate(bots):
                        self.records.seat_stderr(simulation.id, seat, bot.stderr_tail())
            progress.running -= 1
            progress.done += 1
            outcome = simulation.outcome
            winner = (
                "draw"
                if outcome is None or outcome.winner is None
                else pairing.bots[outcome.winner].name
            )
            progress.update(f"{pairing.key}: {winner}")

    async def _seat(self, arena: Arena, simulation: Simulation, seat: int, bot: BotProcess) -> None:
        """Start a seat's bot and wait for it to join; seat an absent player if it does not."""
        seat_name = simulation.game.seat_names[seat]
        assert arena.tcp_port is not None
        values = {
            "host": "127.0.0.1",
            "port": str(arena.tcp_port),
            "simulation": simulation.id,
            "side": seat_name,
            "seed": str(simulation.seed),
            "python": sys.executable,
            "game": simulation.game.name,
        }
        await bot.start(values, self.spec.limits)
        joined = asyncio.create_task(simulation.wait_seated(seat))
        exited = asyncio.create_task(bot.wait())
        try:
            await asyncio.wait(
                {joined, exited},
                timeout=self.spec.limits.startup_ms / 1000,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            joined.cancel()
            exited.cancel()
        if simulation.seats[seat] is None:
            await bot.stop()
        if simulation.seats[seat] is None:
            nick = f"{bot.entrant.name} (did not join)"
            simulation.join(AbsentSeat(), {"nick": nick, "side": seat_name})
            if simulation.is_full():
                arena.start_match(simulation)


class BotProcess:
    """One bot's process: started in its own session under limits, killed with its group."""

    def __init__(self, entrant: Entrant, stderr_path: Path) -> None:
        self.entrant = entrant
        self.stderr_path = stderr_path
        self.process: asyncio.subprocess.Process | None = None

    async def start(self, values: dict[str, str], limits: Limits) -> None:
        command = [part.format(**values) for part in self.entrant.command]
        environment = {
            **os.environ,
            **{f"TAVERN_{key.upper()}": value for key, value in values.items()},
        }
        with self.stderr_path.open("wb") as stderr:
            try:
                self.process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "server.limited",
                    str(limits.cpu_seconds),
                    str(limits.memory_mb),
                    "--",
                    *command,
                    cwd=self.entrant.cwd,
                    env=environment,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=stderr,
                    start_new_session=True,
                )
            except OSError as error:
                stderr.write(f"cannot start {command}: {error}\n".encode())

    async def wait(self) -> None:
        """Until the process has exited (at once if it never started)."""
        if self.process is not None:
            await self.process.wait()

    async def stop(self) -> None:
        if self.process is None:
            return
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        await self.process.wait()

    def stderr_tail(self) -> str:
        try:
            text = self.stderr_path.read_bytes().decode(errors="replace")
        except OSError:
            return ""
        return text[-STDERR_KEPT:]


def describe_schedule(pairings: Sequence[Pairing]) -> str:
    return "\n".join(f"{pairing.number:>4}  {pairing.key}" for pairing in pairings)
