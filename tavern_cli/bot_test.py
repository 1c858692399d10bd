"""``tavern test BOT --positions FILE``: a bot's unit tests, on positions taken from games.

Each line of the file is ``{"game", "position", "expect"?}`` (``tavern replay GAME --positions
A-B`` writes them): ``position`` is a game up to a turn (its id, seed, settings, players and
turns, as the records keep them, and ``turn``, how many of them are played). For each, the bot is
started in the seat on move in that position, a house player in the other, and its first answer
is checked: it must be legal (not refused by the rules), in time (within ``turnTimeoutMs``) and,
where ``expect`` is given, have every field ``expect`` has with the same value. One line per
position, then a summary; the exit status is 0 only if every position passed (docs/play.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from server.arena import Arena
from server.config import ArenaConfig
from server.debug import without_debug
from server.games import GAMES
from server.games.base import JsonObject
from server.house_seats import seat_house
from server.match import Match
from server.match_events import TurnPlayed, Update
from server.match_options import MatchOptions
from server.match_views import TurnResult
from server.played_on import NoStartingPoint, starting_point
from server.replay import DamagedRecord, turns_before
from server.sandbox import Sandbox
from server.tcp import TcpServer
from server.tournament.bots import BotProcess, finish_bot, seat_bot
from server.tournament.spec import DEFAULT_LIMITS, Limits
from tavern_cli.play import PlayError, PlayOptions, command_entrant, config_for_play

POSITION_FIELDS = ("id", "game", "seed", "settings", "players", "turns")


def positions_of(record: JsonObject, first: int, last: int) -> Iterator[JsonObject]:
    """The lines of a positions file for turns ``first`` to ``last`` of a recorded game: the
    position after that many turns (the game going on from there)."""
    before = turns_before(record)  # a game begun at a given position numbers its turns on
    for turn in range(max(first, before), min(last, before + len(record["turns"]) - 1) + 1):
        position = {key: record[key] for key in POSITION_FIELDS}
        position["turns"] = record["turns"][: turn - before]
        position["turn"] = turn
        yield {"game": record["game"], "position": position}


WROTE_LINES = 12  # under a failed position: at most this many last lines of each text...
WROTE_LINE_CHARS = 200  # ...each cut to this many characters


@dataclass(frozen=True, slots=True)
class Verdict:
    line: int
    ok: bool
    said: str


def wrote_text(debug: str | None, stderr: str | None) -> str:
    """What a bot wrote while a position was tried (its debug text, its stderr), for the lines
    under a FAIL: the last ``WROTE_LINES`` of each, marked as ``tavern play --verbose`` marks
    them (``  debug| ...``, ``  stderr| ...``)."""
    lines = []
    for label, text in (("debug", debug), ("stderr", stderr)):
        if not text or not text.strip():
            continue
        kept = text.rstrip().splitlines()
        if len(kept) > WROTE_LINES:
            lines.append(f"  {label}| ... ({len(kept) - WROTE_LINES} earlier lines not shown)")
            kept = kept[-WROTE_LINES:]
        for line in kept:
            cut = line if len(line) <= WROTE_LINE_CHARS else line[:WROTE_LINE_CHARS] + " ..."
            lines.append(f"  {label}| {cut}".rstrip())
    return "".join(line + "\n" for line in lines)


def check_answer(
    played: TurnResult | None, seat: int, errors: int, timeout_ms: int, expect: JsonObject | None
) -> tuple[bool, str]:
    """Whether a bot's first answer passes, and what to say of it."""
    if played is None or played.timed_out or played.seat != seat:
        return False, "no answer in time"
    action = without_debug(played.action)
    said = orjson.dumps(action).decode()
    if errors:
        return False, f"{errors} refused moves before {said}"
    if played.reply_ms > timeout_ms:
        return False, f"answered in {played.reply_ms} ms, over {timeout_ms} ms: {said}"
    if expect is not None and any(action.get(key) != value for key, value in expect.items()):
        return False, f"answered {said}, expected {orjson.dumps(expect).decode()}"
    return True, f"{said} in {played.reply_ms} ms"


async def run_positions(
    command: str,
    lines: list[JsonObject],
    config: ArenaConfig,
    say: Callable[[str], None],
    limits: Limits = DEFAULT_LIMITS,
) -> list[Verdict]:
    """Play each position's first turn with the bot; a verdict per line."""
    verdicts = []
    for number, line in enumerate(lines, start=1):
        ok, said, wrote = await _one_position(command, line, config, limits)
        verdicts.append(Verdict(number, ok, said))
        say(f"{'ok  ' if ok else 'FAIL'} line {number}: {said}")
        if not ok and wrote:
            say(wrote.rstrip("\n"))
    return verdicts


async def _one_position(
    command: str, line: JsonObject, config: ArenaConfig, limits: Limits
) -> tuple[bool, str, str]:
    """Whether the bot passes the position, what to say of it, and what it wrote meanwhile."""
    try:
        game, position = line["game"], dict(line["position"])
        turn = int(position["turn"])
        record = {**position, "result": None, "finishedAt": None, "startedAt": None}
    except (KeyError, TypeError, ValueError) as error:
        return False, f"not a position line: {error}", ""
    if game not in GAMES:
        return False, f"no game {game!r}", ""
    seat_names = GAMES[game].seat_names
    arena_config = config_for_play(config, PlayOptions(game, (command, command)), limits)
    arena = Arena(arena_config)
    try:
        bot = command_entrant("the bot", command, tuple(seat_names), game)
        # The position's game is played with its own settings (its board, its turn limit).
        start = starting_point(record, turn)
        seat = start.codec.rules.to_move(start.resume.state)
    except PlayError as error:
        return False, str(error), ""
    except (NoStartingPoint, DamagedRecord) as error:
        return False, f"not a position of its game: {error}", ""
    answered: asyncio.Future[TurnResult] = asyncio.get_running_loop().create_future()

    def heard(update: Update) -> None:
        if isinstance(update, TurnPlayed) and not answered.done():
            answered.set_result(update.result)

    arena.listeners.append(heard)
    async with arena.running(), TcpServer(arena).serving() as tcp:
        assert tcp.port is not None
        options = MatchOptions(seed=start.seed, resume=start.resume, codec=start.codec)
        match = arena.open(game, options)
        sandbox = Sandbox.create()
        process = BotProcess(bot, match.id, seat, limits)
        try:
            house = next(
                player
                for player in GAMES[game].house_players.values()
                if seat_names[1 - seat] in player.sides
            )
            seat_house(match, house, seat_names[1 - seat], 0.0)
            await seat_bot(match, tcp.port, process, sandbox)
            played = await _first_answer(answered, match)
        finally:
            match.stop()
            process.outcome = match.outcome
            await finish_bot(process, None)
            await sandbox.close()
        occupant = match.seats[seat]
        errors = 0 if occupant is None else occupant.errors
        ok, said = check_answer(
            played, seat, errors, arena_config.turn_timeout_ms, line.get("expect")
        )
        # Its answer's own debug text and stderr, else (no answer) all it wrote on stderr.
        if played is not None and played.seat == seat:
            wrote = wrote_text(played.debug, played.stderr)
        else:
            wrote = wrote_text(None, process.stderr_tail())
        return ok, said, wrote


async def _first_answer(answered: asyncio.Future[TurnResult], match: Match) -> TurnResult | None:
    """The first turn played, or ``None`` if the game ended first (the match's own timeouts
    bound the wait)."""
    finished = asyncio.ensure_future(match.done.wait())
    try:
        waiting: list[asyncio.Future[Any]] = [answered, finished]
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    finally:
        finished.cancel()
    return answered.result() if answered.done() else None


def read_positions(path: Path) -> list[JsonObject]:
    """The lines of a positions file (blank lines skipped); raises ``PlayError`` naming a line
    that is not JSON."""
    lines = []
    for number, text in enumerate(path.read_bytes().splitlines(), start=1):
        if text.strip():
            try:
                lines.append(orjson.loads(text))
            except orjson.JSONDecodeError as error:
                raise PlayError(f"{path}, line {number} is not JSON: {error}") from error
    return lines
