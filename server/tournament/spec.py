"""A tournament as its file says it, read and checked before any game starts.

A JSON or TOML file, or a folder of Thud challenge clients, becomes a ``TournamentSpec``. Every
mistake (an unknown or misspelled key, a value of the wrong type, a command with an unknown
placeholder, a program that is not there) is a ``TournamentError`` naming the key or the bot:
a tournament never starts only to have a misspelled bot lose every game on time. ``tavern play``
checks its two commands by the same rules.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shlex
import shutil
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from server import jail
from server.errors import Rejected
from server.games import GAMES
from server.games.base import JsonObject, TimeBank

PLACEHOLDERS = ("host", "port", "simulation", "side", "seed", "game", "python")
# In the records' copy of a file seeded by the ladder: the order the ratings gave at its first
# run, which every later run (and the league's page) pairs by.
SEEDED_KEY = "seeded"
SEEDINGS = ("listed", "ladder")  # the bots' seeds: as listed, or by their ladder ratings
KEYS = (
    "name", "game", "seed", "parallel", "swap_sides", "paired_games", "limits", "bots", "format",
    "rounds", "tie_breaks", "duration_s", "seeding",
)  # fmt: skip
# Who meets whom (server.tournament.formats): every pair; one bot (the first listed) against each
# of the others; a Swiss event of ``rounds`` rounds; a knockout seeded as the bots are listed; an
# arena of ``duration_s`` seconds (lichess's: a bot paired again as soon as its game ends).
FORMATS = ("round-robin", "gauntlet", "swiss", "knockout", "arena")
MAX_TIE_BREAKS = 10
MAX_DURATION_S = 7 * 24 * 3600
LIMIT_KEYS = ("cpu_seconds", "memory_mb", "startup_ms", "turn_timeout_ms", "clock")
BOT_KEYS = ("name", "side", "command", "file", "isolated", "hosted")
MAX_NICK = 64


class TournamentError(Exception):
    """The tournament file is not valid; the message names the key."""


@dataclass(frozen=True, slots=True)
class Entrant:
    name: str
    command: tuple[str, ...]
    sides: tuple[str, ...]  # the seats it may take
    cwd: Path
    # Run under bubblewrap (server.jail), seeing only its folder (``cwd``), with no network: it
    # plays over its stdin and stdout.
    isolated: bool = False
    # A hosted bot's registered name: its active version is played, isolated, its files and
    # command taken from the records when the games start (server.tournament.hosted).
    hosted: str | None = None


@dataclass(frozen=True, slots=True)
class Limits:
    cpu_seconds: int = 300
    memory_mb: int = 2048
    startup_ms: int = 10_000  # time for a bot to join its simulation
    turn_timeout_ms: int | None = None  # None: the arena's
    clock: TimeBank | None = None  # a time bank per seat instead of the flat turn timeout


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
    paired_games: int = 0  # two bots: this many games, in pairs of one seed (0: round robin)
    format: str = "round-robin"  # one of FORMATS
    rounds: int = 0  # a Swiss event's
    tie_breaks: int = 2  # a knockout's games after a drawn one, at most (then the higher seed)
    duration_s: int = 0  # an arena's, from its first run's start
    seeding: str = "listed"  # one of SEEDINGS: a Swiss or knockout event's first order


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
    _known_keys(raw, KEYS, known_beside=(SEEDED_KEY,))
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
        clock=_clock(limits_raw),
    )
    paired_games = _get(raw, "paired_games", int, 0)
    if paired_games < 0:
        raise TournamentError(f"key 'paired_games': must be 0 or more, got {paired_games}")
    if paired_games and (len(entrants) != 2 or any(e.sides != seat_names for e in entrants)):
        raise TournamentError("key 'paired_games': needs two bots that both play either side")
    kind = _get(raw, "format", str, "round-robin")
    if kind not in FORMATS:
        raise TournamentError(f"key 'format': one of {', '.join(FORMATS)}, got {kind!r}")
    rounds = _get(raw, "rounds", int, 0)
    tie_breaks = _get(raw, "tie_breaks", int, 2)
    if kind == "swiss" and not 1 <= rounds < len(entrants):
        raise TournamentError(f"key 'rounds': a Swiss event of {len(entrants)} bots plays 1 "
                              f"to {len(entrants) - 1} rounds, got {rounds}")  # fmt: skip
    if kind != "swiss" and "rounds" in raw:
        raise TournamentError("key 'rounds': only a Swiss event has rounds")
    if kind != "knockout" and "tie_breaks" in raw:
        raise TournamentError("key 'tie_breaks': only a knockout has tie-break games")
    duration_s = _get(raw, "duration_s", int, 0)
    if kind == "arena" and not 1 <= duration_s <= MAX_DURATION_S:
        raise TournamentError(f"key 'duration_s': an arena lasts 1 to {MAX_DURATION_S} s")
    if kind != "arena" and "duration_s" in raw:
        raise TournamentError("key 'duration_s': only an arena has a duration")
    if not 0 <= tie_breaks <= MAX_TIE_BREAKS:
        raise TournamentError(f"key 'tie_breaks': 0 to {MAX_TIE_BREAKS}, got {tie_breaks}")
    if kind in ("swiss", "knockout", "arena") and (
        paired_games or any(entrant.sides != seat_names for entrant in entrants)
    ):
        raise TournamentError(f"key 'format': a {kind} event's bots all play either side")
    seeding = _seeding(raw, kind)
    if SEEDED_KEY in raw:
        entrants = _seeded_order(entrants, raw[SEEDED_KEY])
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
        paired_games=paired_games,
        format=kind,
        rounds=rounds,
        tie_breaks=tie_breaks,
        duration_s=duration_s,
        seeding=seeding,
    )


def seeded(spec: TournamentSpec, order: list[str]) -> TournamentSpec:
    """``spec`` with its bots in ``order`` (their seeds), which its file's copy keeps."""
    entrants = _seeded_order(spec.entrants, order)
    return dataclasses.replace(spec, entrants=entrants, raw={**spec.raw, SEEDED_KEY: order})


def _seeding(raw: dict[str, Any], kind: str) -> str:
    seeding: str = _get(raw, "seeding", str, "listed")
    if seeding not in SEEDINGS:
        raise TournamentError(f"key 'seeding': one of {', '.join(SEEDINGS)}, got {seeding!r}")
    if seeding != "listed" and kind not in ("swiss", "knockout"):
        raise TournamentError("key 'seeding': only a Swiss or knockout event is seeded")
    return seeding


def _seeded_order(entrants: tuple[Entrant, ...], order: object) -> tuple[Entrant, ...]:
    by_name = {entrant.name: entrant for entrant in entrants}
    if not isinstance(order, list) or sorted(map(str, order)) != sorted(by_name):
        raise TournamentError(f"key '{SEEDED_KEY}': the file's bots, each once, in seed order")
    return tuple(by_name[name] for name in order)


def _known_keys(
    raw: dict[str, Any],
    known: tuple[str, ...],
    prefix: str = "",
    known_beside: tuple[str, ...] = (),
) -> None:
    """A misspelled key would otherwise be ignored, and its default used without a word (the
    keys ``known_beside`` are the arena's own, in its copy of a file: not named to a user)."""
    for key in raw:
        if key not in known and key not in known_beside:
            raise TournamentError(
                f"key '{prefix}{key}': unknown (the known keys are {', '.join(known)})"
            )


def _clock(limits: dict[str, Any]) -> TimeBank | None:
    """``limits.clock``: a ``create-simulation``'s ``clock`` (docs/protocol.md), if given."""
    if "clock" not in limits:
        return None
    try:
        return TimeBank.from_wire(limits["clock"])
    except Rejected as rejected:
        raise TournamentError(f"key 'limits.clock': {rejected.reason}") from None


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
    if "hosted" in raw:
        return _hosted_entrant(raw, name, seat_names, base, prefix)
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
    if "isolated" not in raw:
        return Entrant(name, parts, sides, base)
    folder = (base / _get(raw, "isolated", str, prefix=prefix)).resolve()
    if not folder.is_dir():
        raise TournamentError(f"key '{prefix}isolated': {folder} is not a folder")
    if (why := jail.missing()) is not None:
        raise TournamentError(f"key '{prefix}isolated': {why}")
    return Entrant(name, parts, sides, folder, isolated=True)


def _hosted_entrant(
    raw: dict[str, Any], name: str, seat_names: tuple[str, ...], base: Path, prefix: str
) -> Entrant:
    """A hosted bot: its registered name, and no command or files of the file's."""
    for key in ("command", "file", "isolated"):
        if key in raw:
            raise TournamentError(f"key '{prefix}{key}': a hosted bot's come from its version")
    hosted = _get(raw, "hosted", str, prefix=prefix)
    if (why := jail.missing()) is not None:
        raise TournamentError(f"key '{prefix}hosted': {why}")
    side = _get(raw, "side", str, "both", prefix)
    if side != "both" and side not in seat_names:
        raise TournamentError(f"key '{prefix}side': must be both or one of {', '.join(seat_names)}")
    sides = seat_names if side == "both" else (side,)
    return Entrant(name, (), sides, base, isolated=True, hosted=hosted)


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
        # An isolated bot sees the system's Python, not the arena's.
        "python": "python3" if entrant.isolated else sys.executable,
        "game": game,
    }


def check_programs(entrants: Sequence[Entrant], game: str) -> None:
    """Every bot's program must exist before the first game: a misspelled one would otherwise
    lose every game on time, with an error from deep inside the launcher."""
    for entrant in entrants:
        if entrant.hosted is not None:  # its version's command runs in its own folder
            continue
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
    """The command that plays a challenge client file through its game's Node.js adapter."""
    adapter = GAMES[game].client_adapter
    if adapter is None:
        playing = ", ".join(g.name for g in GAMES.values() if g.client_adapter is not None)
        raise TournamentError(f"key '{prefix}file': client files play {playing} only")
    path = (base / file).resolve()
    if not path.is_file():
        raise TournamentError(f"key '{prefix}file': no such file {path}")
    if shutil.which("node") is None:
        raise TournamentError(f"key '{prefix}file': client files need Node.js (node) on the PATH")

    def literal(text: str) -> str:  # every part of a command is filled in with str.format
        return text.replace("{", "{{").replace("}", "}}")

    return (
        "node",
        literal(str(adapter)),
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
    [game] = [game for game in GAMES.values() if game.client_adapter is not None]
    files = {
        side: sorted(path for path in (folder / side).rglob("*.js") if path.is_file())
        for side in game.seat_names
    }
    for side, paths in files.items():
        if not paths:
            raise TournamentError(f"{folder}: no client files in {side}/ (*.js)")
    stems = {
        side: [path.relative_to(folder / side).with_suffix("").as_posix() for path in paths]
        for side, paths in files.items()
    }
    first, second = (set(names) for names in stems.values())
    shared = first & second
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
        "game": game.name,
        "parallel": max(1, min(4, os.cpu_count() or 1)),
        "bots": bots,
    }
    spec = spec_from_mapping(raw, folder)
    return dataclasses.replace(spec, id=f"{spec.id}-{digest.hexdigest()[:8]}")


# --- a tournament resumed from its file ----------------------------------------------------------
# What a key is when the file leaves it out, so that writing a default out is no change.
_DEFAULTS: JsonObject = {
    "seed": 1, "swap_sides": False, "paired_games": 0, "format": "round-robin", "rounds": 0,
    "tie_breaks": 2, "duration_s": 0, "seeding": "listed",
}  # fmt: skip
_LIMIT_DEFAULTS: JsonObject = {
    "cpu_seconds": DEFAULT_LIMITS.cpu_seconds,
    "memory_mb": DEFAULT_LIMITS.memory_mb,
    "startup_ms": DEFAULT_LIMITS.startup_ms,
    "turn_timeout_ms": None,
    "clock": None,
}


def changes(started: JsonObject, now: JsonObject) -> list[str]:
    """What ``now`` (a tournament file as read) changes in the one its tournament ``started``
    from (as its records keep it), in words: every key that decides its games (who plays,
    in which order, on which side, with which command, seeds, settings, limits). Only
    ``parallel`` may change: it decides how many games are played at once, not how any is
    played. An empty list: the same tournament."""
    found = [
        f"{key}: {_shown(started.get(key, default))} -> {_shown(now.get(key, default))}"
        for key, default in {"game": None, **_DEFAULTS}.items()
        if started.get(key, default) != now.get(key, default)
    ]
    before, after = _mapping(started.get("limits")), _mapping(now.get("limits"))
    found += [
        f"limits.{key}: {_shown(before.get(key, default))} -> {_shown(after.get(key, default))}"
        for key, default in _LIMIT_DEFAULTS.items()
        if before.get(key, default) != after.get(key, default)
    ]
    old, new = _bots(started), _bots(now)
    if added := [name for name in new if name not in old]:
        found.append(f"bots added: {', '.join(added)}")
    if removed := [name for name in old if name not in new]:
        found.append(f"bots removed: {', '.join(removed)}")
    kept = [name for name in old if name in new]
    if kept != [name for name in new if name in old]:
        found.append(
            f"bots reordered: {', '.join(kept)} -> {', '.join(n for n in new if n in old)}"
        )
    for name in kept:
        found += [
            f"bot {name}: {key} {_shown(old[name][key])} -> {_shown(new[name][key])}"
            for key in ("side", "command", "file")
            if old[name][key] != new[name][key]
        ]
    return found


def _mapping(value: object) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _bots(raw: JsonObject) -> dict[str, JsonObject]:
    """A file's bots by name, in its order: what decides how each plays."""
    bots: dict[str, JsonObject] = {}
    listed = raw.get("bots")
    for bot in listed if isinstance(listed, list) else []:
        if isinstance(bot, dict) and isinstance(bot.get("name"), str):
            command = bot.get("command")
            bots[bot["name"]] = {
                "side": bot.get("side", "both"),
                "command": shlex.split(command) if isinstance(command, str) else command,
                "file": bot.get("file"),
            }
    return bots


def _shown(value: object) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        return shlex.join(value)
    return orjson.dumps(value).decode()
