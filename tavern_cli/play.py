"""``tavern play``: one game between two bot commands on this machine, as ``battlesnake play``.

    tavern play GAME "CMD1" "CMD2" [--seed N] [--turns N] [--output game.jsonl] [--open]
                [--clock INITIAL_MS+INCREMENT_MS]

It starts an arena of its own on free loopback ports (the visor included, to watch the game),
runs each command as a tournament runs a bot (``{port}``, ``{simulation}``, ``{side}``... filled
in, under the same limits), draws the board in the terminal as the game goes, says the result in
words, and can write the game as JSON lines (docs/play.md). The records go to a scratch file
unless ``--database`` names one to keep.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shlex
import tempfile
import time
import webbrowser
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import orjson

from server.arena import Arena
from server.commentary import board_text, clock_text, result_text, turn_text
from server.config import ArenaConfig
from server.debug import CPU_KEY, DEBUG_KEY, STDERR_KEY, TIMING_KEY
from server.errors import Rejected
from server.game_file import game_line, record_lines, recorded_settings, result_line
from server.games import GAMES
from server.games.base import AnyCodec, JsonObject, TimeBank
from server.league import crashed
from server.match_events import GameFinished, GameStarted, TurnPlayed, Update
from server.match_options import MatchOptions
from server.match_views import TurnResult
from server.played_on import NoStartingPoint, StartingPoint, starting_point
from server.records import recording
from server.replay import CLOCK_KEY, DamagedRecord, turns_before
from server.sandbox import Sandbox
from server.tcp import TcpServer
from server.tournament.bots import BotProcess, finish_bot, quoted_stderr, seat_bot
from server.tournament.spec import (
    DEFAULT_LIMITS,
    Entrant,
    Limits,
    check_placeholders,
    program_problem,
)
from visor import app as visor

REDRAW_S = 0.05  # on a terminal, the board is redrawn at most this often (and at the end)
HOME_AND_CLEAR = "\x1b[H\x1b[J"  # cursor to the top-left, then clear what is below it


@dataclass(frozen=True, slots=True)
class PlayOptions:
    game: str
    commands: tuple[str, str]  # by seat
    seed: int | None = None
    turns: int | None = None  # a turn limit of its own (None: the config's)
    output: Path | None = None  # the game as JSON lines
    open_browser: bool = False  # open the watch page, and keep serving until Ctrl-C
    database: Path | None = None  # keep the records here (None: a scratch file)
    verbose: bool = False  # print each bot's debug text and stderr with its turn, as played
    start: JsonObject | None = None  # a game's record to play on from (``--from``)...
    start_turn: int = 0  # ...after this many of its turns (``--turn``)
    clock: TimeBank | None = None  # a time bank per seat instead of the flat timeout (``--clock``)
    # With ``start``: the config's game settings and time limits (``--config`` given) rather
    # than the recorded game's.
    own_settings: bool = False


class PlayError(Exception):
    """The command line cannot be played (a bad command, an unknown program)."""


def entrants(options: PlayOptions) -> list[Entrant]:
    """Each command as the bot of its seat."""
    seat_names = GAMES[options.game].seat_names
    return [
        command_entrant(f"bot {seat + 1}", command, (seat_names[seat],), options.game)
        for seat, command in enumerate(options.commands)
    ]


def command_entrant(name: str, command: str, sides: tuple[str, ...], game: str) -> Entrant:
    """A bot given on the command line, checked as a tournament checks its bots (its
    placeholders, its program), run in the current folder."""
    try:
        parts = tuple(shlex.split(command))
    except ValueError as error:
        raise PlayError(f"{name}'s command: {error}") from error
    if not parts:
        raise PlayError(f"{name}'s command is empty")
    check_placeholders(parts, f"{name}'s command")
    bot = Entrant(name, parts, sides, Path.cwd())
    problem = program_problem(bot, game)
    if problem is not None:
        raise PlayError(f"{name}: {problem}")
    return bot


@dataclass(frozen=True, slots=True)
class PlayedOn:
    """A game played on from a recorded one (``--from GAME --turn N``): where it begins, and
    what it is played with, the recorded game's settings unless the command line says
    otherwise."""

    point: StartingPoint
    codec: AnyCodec  # its game: the recorded game's board and turn limit (or --config's, --turns)
    clock: TimeBank | None  # the recorded game's time bank, or --clock's
    lines: list[bytes]  # the recorded turns before it, as the lines of a game file


def played_on(options: PlayOptions, config: ArenaConfig) -> PlayedOn:
    """``options.start`` after ``options.start_turn`` turns, as this command plays on from it
    (``config``: the settings given, for a ``--config`` given); raises ``PlayError`` saying why
    a game of ``options.game`` cannot start there."""
    record = options.start
    assert record is not None
    if record["game"] != options.game:
        raise PlayError(
            f"--from: game {record['id']} is a game of {record['game']}, not {options.game}"
        )
    try:
        point = starting_point(record, options.start_turn)
        lines = [] if turns_before(record) else _lines_before(record, options.start_turn)
    except NoStartingPoint as error:
        raise PlayError(f"--turn: {error}") from error
    except DamagedRecord as error:
        raise PlayError(f"--from: {error}") from error
    game = GAMES[options.game]
    settings = point.codec.settings()
    if options.own_settings:  # --config: its board, which must be the recorded game's
        given = config.game_settings[options.game]
        limit = settings["turnLimit"]
        if game.with_turn_limit(given, limit) != game.with_turn_limit(settings, limit):
            raise PlayError(
                f"--from: game {record['id']} was played on another board than --config's: "
                "give a config with its settings, or none (its own are then used)"
            )
        settings = given
    if options.turns is not None:
        settings = game.with_turn_limit(settings, options.turns)
    codec = game.codec_for(settings)
    if codec.rules.outcome(point.resume.state) is not None:
        raise PlayError(
            f"--turn: game {record['id']} is over after its turn {options.start_turn}: "
            "nothing to play on from there"
        )
    clock = options.clock
    recorded_clock = record["settings"].get(CLOCK_KEY)
    if clock is None and recorded_clock is not None:
        try:
            clock = TimeBank.from_wire(recorded_clock)
        except Rejected as rejected:
            raise PlayError(f"--from: game {record['id']}'s clock: {rejected.reason}") from None
    return PlayedOn(point, codec, clock, lines)


def _lines_before(record: JsonObject, turn: int) -> list[bytes]:
    """The recorded game's first ``turn`` turns as the turn lines of a game file."""
    lines = record_lines({**record, "turns": record["turns"][:turn], "result": None}, "")
    return list(lines)[1:]  # its game line is the new game's own


def recorded_limits(config: ArenaConfig, record: JsonObject) -> ArenaConfig:
    """``config`` with the time per move and the timeouts in a row a recorded game was played
    with (the arena's where its record does not say)."""
    settings = record["settings"]
    return dataclasses.replace(
        config,
        turn_timeout_ms=settings.get("turnTimeoutMs", config.turn_timeout_ms),
        max_consecutive_timeouts=settings.get(
            "maxConsecutiveTimeouts", config.max_consecutive_timeouts
        ),
    )


class Commentator:
    """Draws the game in the terminal and writes its JSON lines, from the arena's updates.

    On a terminal the board is redrawn in place; into a pipe every turn is printed in turn, as
    plain text.
    """

    def __init__(
        self,
        codec: AnyCodec,
        out: IO[str],
        lines: IO[bytes] | None,
        verbose: bool = False,
        played: PlayedOn | None = None,
    ) -> None:
        self.codec = codec
        self.played = played
        self.verbose = verbose
        self.out = out
        self.lines = lines
        self.live = out.isatty()
        self.match_id: str | None = None
        self.nicks: list[str] = []
        self.last_seat: int | None = None  # the seat that played the last turn
        self.bank: TimeBank | None = None  # the game's time bank, if it has one
        self.time_left_s: list[float] = []  # with a bank: each seat's, after the last turn
        self.finished: GameFinished | None = None
        self._header = ""
        self._last_drawn = 0.0
        self._pending: str | None = None  # a redraw skipped for the rate limit
        self.closed = False  # the terminal or pipe is gone

    def follow(self, match_id: str) -> None:
        self.match_id = match_id

    def __call__(self, update: Update) -> None:
        if isinstance(update, TurnPlayed):
            if update.result.match_id == self.match_id:
                self._turn(update)
        elif isinstance(update, GameStarted):
            if update.view.match_id == self.match_id:
                self._started(update)
        elif isinstance(update, GameFinished) and update.view.match_id == self.match_id:
            self._finished(update)

    def _started(self, update: GameStarted) -> None:
        view = update.view
        self.nicks = [seat.nick if seat is not None else "?" for seat in view.players]
        players = " against ".join(
            f"{seat.seat} ({seat.nick})" for seat in view.players if seat is not None
        )
        self._header = f"{view.game} {view.match_id}, seed {view.seed}: {players}"
        self.bank = view.limits.bank
        if self.bank is not None:
            self.time_left_s = [self.bank.initial_ms / 1000] * len(view.players)
            self._header += "\n" + clock_text(self.bank.initial_ms, self.bank.increment_ms)
        legend = "\n".join(self.codec.text.legend_text(view.state))
        self._draw(f"{self._header}\n{legend}\n\nstart\n{board_text(self.codec, view.state)}")
        record = {
            "game": view.game,
            "id": view.match_id,
            "seed": view.seed,
            "players": [seat.to_wire() for seat in view.players if seat is not None],
            "settings": recorded_settings(view),
            "startedAt": update.started_at,
        }
        played = self.played
        if played is None:
            self._line(game_line(record, self.codec, view.state))
        else:
            self._line(game_line(record, self.codec, played.point.start))
            if self.lines is not None:
                self.lines.writelines(played.lines)

    def _turn(self, update: TurnPlayed) -> None:
        result = update.result
        self.last_seat = result.seat
        text = turn_text(
            self.codec,
            result.number,
            result.seat,
            self.nicks[result.seat],
            result.timed_out,
            result.events,
            result.state,
            result.debug if self.verbose else None,
            result.stderr if self.verbose else None,
            self._time_left(result),
        )
        if self.lines is not None:
            timing = None if result.timing is None else result.timing.to_wire()
            beside = (
                (DEBUG_KEY, result.debug),
                (STDERR_KEY, result.stderr),
                (CPU_KEY, result.cpu_ms),
                (TIMING_KEY, timing),
            )
            said = b"".join(
                b',"%s":%s' % (key.encode(), orjson.dumps(kept))
                for key, kept in beside
                if kept is not None
            )
            self.lines.write(result.spectator_json() + said + b"}\n")
        self._draw(f"{self._header}\n\n{text}" if self.live else f"\n{text}")

    def _time_left(self, result: TurnResult) -> list[float] | None:
        """With a time bank, each seat's time left after the turn: the next turn's clock says
        it; after the last turn (no next one), the mover's is worked out as the match spends
        it, its reply's time taken and the increment given."""
        bank = self.bank
        if bank is None:
            return None
        clock = result.clock
        if clock is not None and clock.remaining_s:
            self.time_left_s = list(clock.remaining_s)
        else:
            spent = result.reply_ms / 1000
            self.time_left_s[result.seat] += bank.increment_ms / 1000 - spent
        return self.time_left_s

    def _finished(self, update: GameFinished) -> None:
        self.finished = update
        if self._pending is not None and not self.closed:
            self._show(self._pending)
        self._line(
            result_line(
                update.view.turn, update.view.result(), self.result_words(), update.finished_at
            )
        )

    def result_words(self) -> str:
        finished = self.finished
        if finished is None:
            return "stopped: no result"
        return result_text(self.codec, self.nicks, finished.view.result(), self.last_seat)

    def _draw(self, text: str) -> None:
        if self.closed:
            return
        if not self.live:
            self.say(text + "\n")
            return
        now = time.monotonic()
        if now - self._last_drawn < REDRAW_S:
            self._pending = text
            return
        self._show(text)

    def _show(self, text: str) -> None:
        self.say(HOME_AND_CLEAR + text + "\n")
        self._last_drawn = time.monotonic()
        self._pending = None

    def say(self, text: str) -> None:
        """Draw; a reader that went away (``| head``) stops the drawing, not the game."""
        try:
            self.out.write(text)
            self.out.flush()
        except OSError:
            self.closed = True

    def _line(self, message: JsonObject) -> None:
        if self.lines is not None:
            self.lines.write(orjson.dumps(message) + b"\n")


def config_for_play(config: ArenaConfig, options: PlayOptions, limits: Limits) -> ArenaConfig:
    """The arena's settings for a local game: loopback, free ports, the bots' start-up time
    for their first reply, and no rejoining (a bot process cannot come back)."""
    if options.start is not None and not options.own_settings:
        config = recorded_limits(config, options.start)
    turn_timeout = limits.turn_timeout_ms or config.turn_timeout_ms
    if options.turns is not None:
        config = config.with_turn_limit(options.game, options.turns)
    return dataclasses.replace(
        config,
        host="127.0.0.1",
        port=0,
        http_port=0,
        turn_timeout_ms=turn_timeout,
        first_turn_timeout_ms=max(turn_timeout, limits.startup_ms),
        reconnect_grace_ms=0,
    )


@contextlib.asynccontextmanager
async def records_file(database: Path | None) -> AsyncIterator[Path]:
    """The records file: the one asked for, else a scratch one removed at the end."""
    if database is not None:
        yield database
        return
    with tempfile.TemporaryDirectory(prefix="tavern-play-") as scratch:
        yield Path(scratch) / "play.db"


async def play(
    options: PlayOptions,
    config: ArenaConfig,
    out: IO[str],
    limits: Limits = DEFAULT_LIMITS,
) -> GameFinished | None:
    """Play the game to its end; the game as it finished (``None`` if it was cut short)."""
    bots_entrants = entrants(options)
    played = None if options.start is None else played_on(options, config)
    config = config_for_play(config, options, limits)
    arena = Arena(config)
    codec = arena.codec(options.game) if played is None else played.codec
    clock = options.clock if played is None else played.clock
    with contextlib.ExitStack() as files:
        lines = None if options.output is None else files.enter_context(options.output.open("wb"))
        commentator = Commentator(codec, out, lines, options.verbose, played)
        arena.listeners.append(commentator)
        async with (
            records_file(options.database) as database,
            recording(arena.listeners, database) as records,
            arena.running(),
            TcpServer(arena).serving() as tcp,
            visor.serving(arena, config.host, 0, records) as http_port,
        ):
            assert tcp.port is not None
            seat_bots = tuple(entrant.name for entrant in bots_entrants)
            match = arena.open(
                options.game,
                MatchOptions(
                    seed=options.seed if played is None else played.point.seed,
                    hold_seats=True,
                    seat_bots=seat_bots,
                    resume=None if played is None else played.point.resume,
                    limits=None if clock is None else arena.limits(clock),
                    codec=None if played is None else played.codec,
                ),
            )
            commentator.follow(match.id)
            url = f"http://{config.host}:{http_port}/watch/{match.id}"
            commentator.say(f"tavern: watch at {url}\n")
            if options.open_browser and not webbrowser.open(url):
                commentator.say("tavern: no browser could be opened; open the address above\n")
            sandbox = Sandbox.create()
            bots = [
                BotProcess(entrant, match.id, seat, limits)
                for seat, entrant in enumerate(bots_entrants)
            ]
            try:
                for bot in bots:
                    await seat_bot(match, tcp.port, bot, sandbox)
                finished = await match.finished()  # the match's own timeouts bound the wait
            finally:
                if match.outcome is None:
                    # Stopped (Ctrl-C): the game ends with no result before its bots are
                    # killed, whose connections closing would otherwise end it as a forfeit.
                    match.stop()
                for bot in bots:
                    bot.outcome = match.outcome
                    await finish_bot(bot, records if match.started_at is not None else None)
                await sandbox.close()
            await records.flush()
            commentator.say(f"\n{commentator.result_words()}\n")
            for bot in bots:
                said = _stderr_summary(bot)
                if said:
                    commentator.say(said)
            if options.output is not None:
                commentator.say(f"tavern: the game is in {options.output}\n")
            if options.open_browser:
                replay = f"http://{config.host}:{http_port}/replay/{match.id}"
                commentator.say(f"tavern: replay at {replay}; Ctrl-C to stop\n")
                await asyncio.Event().wait()  # until the command is stopped
            return finished


def _stderr_summary(bot: BotProcess) -> str:
    """How a bot ended when that was not the game's end, with what it wrote on stderr."""
    exit_text = bot.exit_text()
    if not crashed(exit_text):
        return ""
    return f"{bot.entrant.name} ({bot.entrant.command[0]}): {exit_text}\n" + quoted_stderr(
        bot.stderr_tail()
    )
