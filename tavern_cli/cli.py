"""The ``tavern`` command: ``tavern serve`` runs the arena, the other commands play, check and
replay games.

Everything a command line gives is checked before anything starts: each number against its
range (a flag that sets a config key against the config file's), each file to write in a folder
that exists. A mistake is one line naming the flag, and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import os
import random
import re
import signal
import sys
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

import orjson

from server.arena import Arena
from server.cluster import RedisRefused
from server.commentary import replay_result_text, replay_text
from server.config import (
    ArenaConfig,
    ConfigError,
    ListenError,
    check_cluster,
    load_config,
    setting_range,
)
from server.draining import Drain
from server.errors import Rejected
from server.game_file import read_game_file, record_lines
from server.games import GAMES
from server.games.base import JsonObject, TimeBank
from server.games.settings import TURN_LIMITS, bounded_int
from server.league import GameResult, format_tables
from server.records import (
    Records,
    RecordsUnavailable,
    backend_for,
    is_postgres,
    recording,
    records_for,
)
from server.records.copy import copy_records
from server.records.identities import roster_kept
from server.replay import DamagedRecord, TurnRange, turns_before
from server.sprt import Sprt
from server.tcp import TcpServer
from server.tournament.runner import TournamentRunner
from server.tournament.schedule import describe_schedule, schedule
from server.tournament.spec import TournamentError, load_spec
from server.tournament_queue import (
    CLAIM_TIMEOUT_MS,
    MIN_CLAIM_TIMEOUT_MS,
    QueueLink,
    Worker,
    run_queued,
)
from server.validate import validate
from tavern_cli.bot_test import positions_of, read_positions, run_positions
from tavern_cli.config_file import (
    DEFAULT_HELP,
    RecordsNote,
    SettingsFile,
    records_line,
    settings_file,
)
from tavern_cli.house import add_house_command, house_command
from tavern_cli.ladder import add_bot_commands, bots_command, ladder_command
from tavern_cli.match import (
    MatchPlan,
    MatchReport,
    match_spec,
    run_match,
    run_queued_match,
    summary,
)
from tavern_cli.play import PlayError, PlayOptions, play
from tavern_cli.signals import Stopped, until_signalled
from visor import app as visor
from visor.health import Health
from visor.metrics import Metrics

LOG_FORMAT = "%(asctime)s %(name)s %(message)s"
INTEGER = re.compile(r"[+-]?[0-9]+")
MAX_SEED = 2**53 - 1  # a seed a page's JavaScript reads back exactly
MAX_LOCAL_WORKERS = 256
MAX_VALIDATE_GAMES = 1000
MAX_CLAIM_TIMEOUT_MS = 24 * 3_600_000
MAX_MATCH_GAMES = 1_000_000
MAX_CONCURRENCY = 256
MAX_MATCH_SEED = 2**32  # times 100,003 plus the pair: still a seed pages read back exactly


class Parser(argparse.ArgumentParser):
    """A bad value for an argument is said in one line, naming the argument; a missing or
    unknown argument also shows the usage."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("argument "):  # argparse's words for one argument's value
            self.exit(2, f"{self.prog}: {message}\n")
        super().error(message)


def int_flag(low: int, high: int) -> Callable[[str], int]:
    """An integer from ``low`` to ``high``, in the config file's words when it is not."""

    def parse(text: str) -> int:
        try:
            return bounded_int(int(text) if INTEGER.fullmatch(text) else text, low, high)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def setting_flag(field: str) -> Callable[[str], int]:
    """A flag that sets (or stands for) an integer setting: the config file's range."""
    return int_flag(*setting_range(field))


def writable_file(text: str) -> Path:
    """A file a command writes: in a folder that exists (a flag never creates one)."""
    path = Path(text)
    folder = path.parent
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"there is no folder {folder}")
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(f"{text} cannot be written")
    return path


def records_to_write(text: str) -> str:
    """Records a command writes: a postgresql:// URL, or an SQLite file as ``writable_file``."""
    if not is_postgres(text):
        writable_file(text)
    return text


def clock_flag(text: str) -> TimeBank:
    """``INITIAL_MS+INCREMENT_MS`` (or ``INITIAL_MS``): a time bank per seat, as a
    ``create-simulation``'s ``clock``."""
    initial, _, increment = text.partition("+")
    try:
        fields = {"initialMs": int(initial), "incrementMs": int(increment or "0")}
        return TimeBank.from_wire(fields)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not INITIAL_MS+INCREMENT_MS: {text!r}") from None
    except Rejected as rejected:
        raise argparse.ArgumentTypeError(str(rejected.reason)) from None


def float_flag(text: str) -> float:
    """A finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def turn_range(text: str) -> TurnRange:
    try:
        return TurnRange.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="tavern",
        description="Dwarven Tavern Arena: run the arena, play bots against each other, "
        "check a bot, run tournaments, replay recorded games.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the arena: bots on TCP, the visor on HTTP")
    serve.add_argument(
        "--config",
        type=Path,
        help=f"settings file ({DEFAULT_HELP})",
    )
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=setting_flag("port"), help="TCP port for bots (default 9000)")
    serve.add_argument(
        "--http-port", type=setting_flag("http_port"), help="HTTP port for the visor (default 8080)"
    )
    serve.add_argument(
        "--redis",
        metavar="URL",
        help="join the arena shared by every node on this Redis (redis://HOST:PORT/DB)",
    )
    serve.add_argument(
        "--loop",
        choices=("asyncio", "uvloop"),
        help="event loop (default: uvloop where it is installed, as it is with the arena on "
        "Linux and macOS; else asyncio's own)",
    )
    tournament = commands.add_parser(
        "tournament", help="run a tournament from a JSON or TOML file, or a folder of Thud clients"
    )
    tournament.add_argument(
        "file",
        type=Path,
        help="the tournament file, or a folder with dwarf/ and troll/ client files "
        "(docs/tournaments.md)",
    )
    tournament.add_argument(
        "--config", type=Path, help=f"settings file, naming the database ({DEFAULT_HELP})"
    )
    tournament.add_argument(
        "--database",
        type=records_to_write,
        help="records: a file or a postgresql:// URL (overrides the config)",
    )
    tournament.add_argument("--schedule", action="store_true", help="print the games and stop")
    tournament.add_argument(
        "--redis", help="queue the games on this Redis for tavern workers (overrides the config)"
    )
    tournament.add_argument(
        "--workers",
        type=int_flag(0, MAX_LOCAL_WORKERS),
        help="with redis: also start this many workers here (0: play every game here, unqueued)",
    )
    tournament.add_argument(
        "--log", type=writable_file, help="the arena's log (default: beside the records)"
    )
    worker = commands.add_parser(
        "worker", help="play queued tournament games (needs redis, and the tournament's database)"
    )
    worker.add_argument(
        "--config", type=Path, help=f"settings file, naming database and redis ({DEFAULT_HELP})"
    )
    worker.add_argument(
        "--database", type=records_to_write, help="records: a file or a postgresql:// URL"
    )
    worker.add_argument("--redis", help="the Redis the tournaments queue their games on")
    worker.add_argument(
        "--claim-timeout-ms",
        type=int_flag(MIN_CLAIM_TIMEOUT_MS, MAX_CLAIM_TIMEOUT_MS),
        default=CLAIM_TIMEOUT_MS,
        help="take over a game another worker has not kept claimed for this long (a worker "
        "claims its game again every third of it)",
    )
    worker.add_argument("--log", type=writable_file, help="write the log here instead of on stderr")
    validate = commands.add_parser(
        "validate", help="play a bot against the house players and check that it plays legally"
    )
    validate.add_argument("--game", required=True, choices=sorted(GAMES))
    validate.add_argument(
        "--side", required=True, help="the seat the bot plays (dwarf, troll, team1...)"
    )
    validate.add_argument(
        "--games",
        type=int_flag(1, MAX_VALIDATE_GAMES),
        default=1,
        help="games against each house player",
    )
    validate.add_argument("--turn-timeout-ms", type=setting_flag("turn_timeout_ms"), default=5000)
    validate.add_argument(
        "bot_command", metavar="command", nargs=argparse.REMAINDER, help="-- then the bot's command"
    )
    play = commands.add_parser(
        "play",
        help="play one game between two bot commands here, drawn in the terminal",
        description="Each command may use {port}, {simulation}, {side}, {seed}, {host} and "
        "{python}, filled in as in a tournament: the first command plays the first seat "
        "(team1, dwarf), the second the other.",
    )
    play.add_argument("game", choices=sorted(GAMES))
    play.add_argument("commands", nargs=2, metavar="COMMAND", help="a bot's command, quoted")
    play.add_argument(
        "--seed", type=int_flag(0, MAX_SEED), help="the game's seed (default: a random one)"
    )
    play.add_argument(
        "--turns",
        type=int_flag(*TURN_LIMITS),
        help="end the game on points after this many turns",
    )
    play.add_argument("--output", type=writable_file, help="write the game here as JSON lines")
    play.add_argument(
        "--open", action="store_true", help="open the game in the browser; serve until Ctrl-C"
    )
    play.add_argument(
        "--config", type=Path, help=f"settings file: time limits, board ({DEFAULT_HELP})"
    )
    play.add_argument("--database", type=writable_file, help="keep the game's record in this file")
    play.add_argument(
        "--from",
        dest="from_game",
        metavar="GAME",
        help="play on from a recorded game (its id, in --database or the config's records) or "
        "a game file, after --turn N of its turns, with its random draws and its settings (the "
        "board, turn limit, time per move and clock it was played with; --config, --turns and "
        "--clock change them)",
    )
    play.add_argument(
        "--turn",
        type=int_flag(0, 1_000_000),
        default=0,
        help="with --from: the turns of that game played before this one starts (0: none)",
    )
    play.add_argument(
        "--verbose",
        action="store_true",
        help="print what each bot says of its move (its debug text) with the turn",
    )
    play.add_argument(
        "--clock",
        type=clock_flag,
        metavar="INITIAL_MS+INCREMENT_MS",
        help="a time bank per bot with an increment per move, instead of the flat time per "
        "move; a bot whose bank runs out loses (e.g. 60000+1000)",
    )
    match = commands.add_parser(
        "match",
        help="an A/B test: paired games between two bot commands, with an optional SPRT",
        description="Plays A against B in pairs of games (one seed, the sides swapped), "
        "records them as a tournament, and with --sprt stops once the sequential probability "
        "ratio test decides. Each command takes the placeholders of tavern play's.",
    )
    match.add_argument("game", choices=sorted(GAMES))
    match.add_argument("commands", nargs=2, metavar="COMMAND", help="A's command, then B's")
    match.add_argument(
        "--games",
        type=int_flag(1, MAX_MATCH_GAMES),
        default=100,
        help="at most this many games (default 100; an odd count is rounded up)",
    )
    match.add_argument(
        "--concurrency", type=int_flag(1, MAX_CONCURRENCY), default=1, help="games at once"
    )
    match.add_argument(
        "--sprt",
        nargs=2,
        type=float_flag,
        metavar=("ELO0", "ELO1"),
        help="test H0: A - B = ELO0 Elo against H1: A - B = ELO1, and stop once decided",
    )
    match.add_argument("--alpha", type=float_flag, default=0.05, help="false positive rate")
    match.add_argument("--beta", type=float_flag, default=0.05, help="false negative rate")
    match.add_argument(
        "--seed", type=int_flag(0, MAX_MATCH_SEED), help="every pair's seed derives from it"
    )
    match.add_argument(
        "--config", type=Path, help=f"settings file: time limits, database ({DEFAULT_HELP})"
    )
    match.add_argument(
        "--clock",
        type=clock_flag,
        metavar="INITIAL_MS+INCREMENT_MS",
        help="a time bank per bot with an increment per move, as tavern play's",
    )
    match.add_argument(
        "--database",
        type=records_to_write,
        help="records: a file or a postgresql:// URL (overrides the config)",
    )
    match.add_argument(
        "--log", type=writable_file, help="the arena's log (default: beside the records)"
    )
    match.add_argument(
        "--workers",
        action="store_true",
        help="queue the games on redis for tavern workers (--concurrency of them at a time) "
        "instead of playing them here",
    )
    match.add_argument("--redis", help="with --workers: the Redis to queue on (overrides config)")
    replay = commands.add_parser(
        "replay", help="print a recorded game, or a game file, turn by turn"
    )
    replay.add_argument(
        "game_id",
        metavar="GAME",
        help="the simulation id of a recorded game, or a game file (tavern play --output)",
    )
    replay.add_argument(
        "--config", type=Path, help=f"settings file, naming the database ({DEFAULT_HELP})"
    )
    replay.add_argument(
        "--database", help="records: a file or a postgresql:// URL (overrides the config)"
    )
    replay.add_argument(
        "--turns",
        metavar="A-B",
        type=turn_range,
        help="show only these turns: A-B, A- (to the end), -B or N",
    )
    replay.add_argument(
        "--positions",
        metavar="A-B",
        type=turn_range,
        help="print the positions after turns A to B as lines of a positions file (tavern test)",
    )
    replay.add_argument(
        "--output",
        type=writable_file,
        help="write the game here as a game file (JSON lines) instead of printing it",
    )
    bot_test = commands.add_parser(
        "test",
        help="a bot's unit tests: its answer to each position of a file (tavern replay "
        "--positions), legal, in time and as expected",
    )
    bot_test.add_argument(
        "tested_command", metavar="BOT", help="the bot's command, quoted, as for tavern play"
    )
    bot_test.add_argument("--positions", type=Path, required=True, help="the positions file")
    bot_test.add_argument(
        "--config", type=Path, help=f"settings file: time limits, board ({DEFAULT_HELP})"
    )
    records = commands.add_parser("records", help="manage the records")
    records_commands = records.add_subparsers(dest="records_command", required=True)
    copy = records_commands.add_parser(
        "copy", help="copy every record from one database to another (SQLite file or PostgreSQL)"
    )
    copy.add_argument("source", metavar="FROM", help="an SQLite file or a postgresql:// URL")
    copy.add_argument(
        "target",
        metavar="TO",
        type=records_to_write,
        help="an SQLite file or a postgresql:// URL",
    )
    add_bot_commands(commands)
    add_house_command(commands)
    return parser


def copy_command(source: str, target: str) -> int:
    if not is_postgres(source) and not Path(source).is_file():
        print(f"tavern: no records file at {source}", file=sys.stderr)
        return 1

    def progress(table: str, rows: int) -> None:
        print(f"\r{table}: {rows} rows", end="", file=sys.stderr, flush=True)

    failures: tuple[type[Exception], ...] = (
        ValueError,
        RuntimeError,
        *backend_for(source).errors,
        *backend_for(target).errors,
    )
    try:
        counts = copy_records(source, target, progress)
    except failures as error:
        print(f"\ntavern: records copy failed: {error}", file=sys.stderr)
        return 1
    print("\r", end="", file=sys.stderr)
    print(", ".join(f"{table}: {rows} rows" for table, rows in counts.items()))
    return 0


def config_for(args: argparse.Namespace) -> tuple[ArenaConfig, SettingsFile]:
    """The settings file's settings with the command line's flags on top, and the file
    (``validate`` has no ``--config``: it plays in a scratch arena of its own)."""
    settings = settings_file(getattr(args, "config", None))
    config = load_config(settings.path)
    overrides = {
        name: getattr(args, name, None)
        for name in ("host", "port", "http_port", "database", "redis")
    }
    if overrides["database"] is not None:
        overrides["database"] = str(overrides["database"])
    config = config.with_overrides(**overrides)
    check_cluster(config)
    return config, settings


def log_to(log_file: Path) -> None:
    """Send the log to a file instead of stderr."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(filename=log_file, level=logging.INFO, format=LOG_FORMAT, force=True)


def log_beside_records(config: ArenaConfig, name: str) -> Path:
    """An SQLite file's folder, else ``data/`` (the default records' folder)."""
    folder = Path("data") if is_postgres(config.database) else Path(config.database).parent
    return folder / f"{name}.log"


@contextlib.asynccontextmanager
async def local_workers(
    count: int, config: ArenaConfig, log_file: Path, redis_url: str
) -> AsyncIterator[None]:
    """``count`` ``tavern worker`` processes on this machine for the block (``--workers N``),
    writing to the tournament's log (so that nothing breaks into the command's progress line);
    stopped with SIGTERM at its end, as a user would."""
    with log_file.open("ab") as log_output:
        workers = [
            await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "tavern_cli", "worker", "--redis", redis_url),
                *("--database", config.database, "--log", str(log_file)),
                stdout=log_output,
                stderr=log_output,
            )
            for _ in range(count)
        ]
        try:
            yield
        finally:
            for worker in workers:
                if worker.returncode is None:
                    worker.send_signal(signal.SIGTERM)
            for worker in workers:
                await worker.wait()


def run_tournament(
    path: Path,
    config: ArenaConfig,
    only_schedule: bool,
    workers: int | None,
    log_file: Path | None,
    said: RecordsNote,
) -> int:
    try:
        spec = load_spec(path)
    except TournamentError as error:
        print(f"tavern: bad tournament: {error}", file=sys.stderr)
        return 2
    if only_schedule:
        print(describe_schedule(schedule(spec)))
        return 0
    # The arena's log (a bot's connection reset, ...) goes to a file beside the records, so
    # that it never breaks into the progress line.
    log_file = log_file or log_beside_records(config, spec.id)
    log_to(log_file)
    said()
    print(f"tavern: {spec.name}: the arena's log is {log_file}", file=sys.stderr)

    redis_url = config.redis or ""
    queued = bool(redis_url) and workers != 0
    if queued and not is_postgres(config.database):
        print(
            f"tavern: the records are the file {config.database}: only workers on this machine "
            "can record games in it (workers elsewhere need a shared postgresql:// database)",
            file=sys.stderr,
        )

    async def play() -> list[GameResult]:
        records = records_for(config)
        await asyncio.to_thread(records.open)
        try:
            if not queued:
                return await TournamentRunner(spec, config, records).run()
            async with local_workers(workers or 0, config, log_file, redis_url):
                return await run_queued(spec, records, redis_url)
        finally:
            await asyncio.to_thread(records.close)

    try:
        results = asyncio.run(until_signalled(play()))
    except TournamentError as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 2
    except (Stopped, KeyboardInterrupt) as stopped:
        if queued and not workers:
            print(
                "\ntavern: stopped following the tournament; the workers go on with its "
                "queued games; run the same command to follow it again",
                file=sys.stderr,
            )
        else:
            print(
                "\ntavern: tournament stopped; the games in progress are kept unfinished; "
                "run the same command to resume it",
                file=sys.stderr,
            )
        return stopped.code if isinstance(stopped, Stopped) else 130
    print(f"{spec.name}: {len(results)} games")
    print(format_tables(results))
    return 0


def run_worker(
    config: ArenaConfig, claim_timeout_ms: int, log_file: Path | None, said: RecordsNote
) -> int:
    redis_url = config.redis
    if not redis_url:
        print("tavern: a worker needs redis (in the config, or --redis URL)", file=sys.stderr)
        return 2
    said()
    if log_file is not None:
        log_to(log_file)

    async def work() -> None:
        records = records_for(config)
        await asyncio.to_thread(records.open)
        link = QueueLink(redis_url)
        try:
            worker = Worker(config, records, link, claim_timeout_ms)
            print(f"tavern: worker {worker.name} takes games from {link.where}", flush=True)
            await worker.run()
        finally:
            await link.close()
            await asyncio.to_thread(records.close)

    try:
        asyncio.run(until_signalled(work()))
    except TournamentError as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 2
    except Stopped as stopped:
        print("tavern: worker stopped; its game in progress is kept unfinished", file=sys.stderr)
        return stopped.code
    return 0


def validate_bot(game: str, side: str, command: list[str], games: int, turn_timeout_ms: int) -> int:
    logging.getLogger().setLevel(logging.WARNING)  # the verdicts say what went wrong
    try:
        verdicts = asyncio.run(
            until_signalled(validate(game, side, command, games, turn_timeout_ms))
        )
    except (ValueError, TournamentError) as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 2
    except Stopped as stopped:
        print("\ntavern: validation stopped", file=sys.stderr)
        return stopped.code
    for verdict in verdicts:
        mark = "ok  " if verdict.ok else "FAIL"
        print(f"{mark} {verdict.game_id} against {verdict.opponent}: {verdict.summary}")
        print(verdict.said, end="")
    valid = all(verdict.ok for verdict in verdicts)
    print("valid: every game finished with legal moves in time" if valid else "not valid")
    return 0 if valid else 1


def play_game(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    logging.getLogger().setLevel(logging.WARNING)  # the board is the output
    start = None
    if args.from_game is not None:
        try:
            start = load_game(config.database, args.from_game, said)
        except (GameNotFound, DamagedRecord) as error:
            print(f"tavern: --from: {error}", file=sys.stderr)
            return 2
    if args.database is not None:  # the game's record is kept there (else: a scratch file)
        said()
    options = PlayOptions(
        game=args.game,
        commands=(args.commands[0], args.commands[1]),
        seed=args.seed,
        turns=args.turns,
        output=args.output,
        open_browser=args.open,
        database=args.database,
        verbose=args.verbose,
        start=start,
        start_turn=args.turn,
        clock=args.clock,
        own_settings=args.config is not None,
    )
    try:
        finished = asyncio.run(until_signalled(play(options, config, sys.stdout)))
    except (PlayError, TournamentError) as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 2
    except Stopped as stopped:
        print("\ntavern: stopped", file=sys.stderr)
        return stopped.code
    return 0 if finished is not None else 1


def run_ab_match(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    try:
        sprt = (
            None if args.sprt is None else Sprt(args.sprt[0], args.sprt[1], args.alpha, args.beta)
        )
    except ValueError as error:
        print(f"tavern: --sprt: {error}", file=sys.stderr)
        return 2
    redis_url = config.redis or ""
    if args.workers and not redis_url:
        print("tavern: --workers needs redis (in the config, or --redis URL)", file=sys.stderr)
        return 2
    if args.workers and not is_postgres(config.database):
        print(
            f"tavern: the records are the file {config.database}: only workers on this machine "
            "can record games in it (workers elsewhere need a shared postgresql:// database)",
            file=sys.stderr,
        )
    seed = args.seed if args.seed is not None else random.randrange(MAX_MATCH_SEED)
    plan = MatchPlan(
        game=args.game,
        commands=(args.commands[0], args.commands[1]),
        games=args.games,
        concurrency=args.concurrency,
        seed=seed,
        sprt=sprt,
        clock=args.clock,
    )
    try:
        spec = match_spec(plan, datetime.now(UTC))
    except (PlayError, TournamentError) as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 2
    log_file = args.log or log_beside_records(config, spec.id)
    log_to(log_file)
    said()
    print(
        f"tavern: match {spec.id} (seed {seed}); the arena's log is {log_file}",
        file=sys.stderr,
    )

    async def play() -> MatchReport:
        records = records_for(config)
        await asyncio.to_thread(records.open)
        try:
            if args.workers:
                return await run_queued_match(spec, sprt, records, redis_url, sys.stderr)
            return await run_match(spec, sprt, config, records, sys.stderr)
        finally:
            await asyncio.to_thread(records.close)

    try:
        report = asyncio.run(until_signalled(play()))
    except TournamentError as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 2
    except Stopped as stopped:
        kept = (
            "the workers finish the games they are playing"
            if args.workers
            else "the games in progress are kept unfinished"
        )
        print(f"\ntavern: match stopped; {kept}", file=sys.stderr)
        return stopped.code
    print(summary(spec, sprt, report))
    return 0


def load_game(database: str, game: str, said: RecordsNote) -> JsonObject:
    """The record of a game: a game file's (a path to a file), else the records' game of that
    id (``said`` is called before they are opened); raises ``GameNotFound`` or
    ``DamagedRecord`` with what to say."""
    path = Path(game)
    if path.is_file():
        try:
            with path.open("rb") as lines:
                return read_game_file(lines, str(path))
        except OSError as error:
            raise GameNotFound(f"{path} cannot be read: {error}") from error
    if game.endswith(".jsonl"):
        raise GameNotFound(f"there is no file {game}")
    said()
    if not is_postgres(database) and not Path(database).exists():
        raise GameNotFound(f"no records file at {database}")
    records = Records(database)
    records.open_to_read()
    record = records.game(game)
    if record is None:
        raise GameNotFound(f"no recorded game {game!r} in {database}")
    return record


class GameNotFound(Exception):
    """No game by that id in the records, and no such game file."""


def print_positions(database: str, game: str, turns: TurnRange, said: RecordsNote) -> int:
    try:
        record = load_game(database, game, said)
    except (GameNotFound, DamagedRecord) as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 1
    last = turns_before(record) + len(record["turns"]) - 1 if turns.last is None else turns.last
    for line in positions_of(record, turns.first, last):
        sys.stdout.buffer.write(orjson.dumps(line) + b"\n")
    return 0


def test_bot(command: str, positions: Path, config: ArenaConfig) -> int:
    logging.getLogger().setLevel(logging.WARNING)  # the verdicts say what went wrong
    try:
        lines = read_positions(positions)
        verdicts = asyncio.run(
            until_signalled(
                run_positions(command, lines, config, lambda line: print(line, flush=True))
            )
        )
    except OSError as error:
        print(f"tavern: {positions}: {error.strerror}", file=sys.stderr)
        return 2
    except (PlayError, TournamentError) as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 2
    except Stopped as stopped:
        print("\ntavern: test stopped", file=sys.stderr)
        return stopped.code
    failed = sum(not verdict.ok for verdict in verdicts)
    print(f"{len(verdicts) - failed} of {len(verdicts)} positions passed")
    return 0 if failed == 0 and verdicts else 1


def print_replay(
    database: str, game: str, turns: TurnRange | None, output: Path | None, said: RecordsNote
) -> int:
    try:
        record = load_game(database, game, said)
        played = turns_before(record) + len(record["turns"])
        if turns is not None and turns.first > played:
            print(
                f"tavern: --turns: game {record['id']} has {played} turns; there is no turn "
                f"{turns.first}",
                file=sys.stderr,
            )
            return 2
        if output is not None:
            with output.open("wb") as file:
                file.writelines(record_lines(record, replay_result_text(record)))
            print(f"tavern: game {record['id']} is in {output}")
            return 0
        blocks = list(replay_text(record, turns))  # replayed in full before anything is said
        print("\n".join(blocks))
    except GameNotFound as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 1
    except DamagedRecord as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 1
    return 0


async def serve(config: ArenaConfig) -> None:
    """Run until SIGTERM or SIGINT, then shut down gracefully: stop accepting, tell every bot
    and spectator, keep every game (those cut short as unfinished), and return. SIGUSR1 drains
    the node first (``server.draining``): it returns once its games are over, or after
    ``drainTimeoutMs``."""
    arena = Arena(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signal_number, stop.set)
    metrics = Metrics(arena)
    metrics.measure(
        "tavern_draining", "1 while the node drains before a restart", lambda: arena.draining
    )
    tcp_server = TcpServer(arena)
    metrics.measure(
        "tavern_connections", "Bot connections open", lambda: len(tcp_server.connections)
    )
    node = None
    if config.redis is not None:
        # Only an arena on Redis pays for importing the client.
        from server.cluster.node import ClusterNode  # noqa: PLC0415

        node = ClusterNode(arena, config)
        arena.elsewhere = node
        metrics.measure(
            "tavern_redis_round_trip_seconds",
            "The last heartbeat's round trip to Redis (NaN while Redis is out of reach)",
            lambda: math.nan if node is None or node.round_trip_s is None else node.round_trip_s,
        )
        metrics.count(
            "tavern_redis_bad_values",
            "Values and frames read from Redis that the node could not use (skipped, or a key "
            "of another type deleted), by the kind of key",
            "key",
            lambda: {} if node is None else node.complaints.counts,
        )
    drain = Drain(arena, (lambda: len(node.asked.handles)) if node is not None else lambda: 0)
    loop.add_signal_handler(signal.SIGUSR1, drain.start)
    async with recording(arena.listeners, config) as records:
        arena.id_tag = records.id_tag
        arena.records_full = lambda: records.full
        health = Health(arena, records, (lambda: node.link.up) if node is not None else None)
        async with (
            roster_kept(records.roster_changes, records, arena.roster),
            arena.running(),
            tcp_server.serving() as tcp,
            visor.serving(
                arena, config.host, config.http_port, records, node, metrics, health
            ) as http_port,
        ):
            print(f"tavern: bots connect to {config.host}:{tcp.port}", flush=True)
            print(f"tavern: watch at http://{config.host}:{http_port}/", flush=True)
            if node is None:
                await until_stopped(stop, drain, config)
            else:
                addresses = {
                    "tcp": f"{config.host}:{tcp.port}",
                    "http": f"{config.host}:{http_port}",
                }
                async with node.running(addresses):
                    print(f"tavern: arena {node.arena_name()}, node {node.id}", flush=True)
                    await until_stopped(stop, drain, config)
            print("tavern: shutting down", flush=True)


async def until_stopped(stop: asyncio.Event, drain: Drain, config: ArenaConfig) -> None:
    """Until SIGTERM or SIGINT (``stop``), or the end of a drain: then says how it ended."""
    timeout_s, notice_s = config.drain_timeout_ms / 1000, config.drain_notice_ms / 1000
    async with asyncio.TaskGroup() as tasks:
        stopped = tasks.create_task(stop.wait())
        drained = tasks.create_task(drain.done(timeout_s, notice_s))
        await asyncio.wait((stopped, drained), return_when=asyncio.FIRST_COMPLETED)
        for task in (stopped, drained):
            task.cancel()
    if drained.done() and not drained.cancelled():
        left = drained.result()
        if left:
            print(f"tavern: drain timed out; {left} games or seats left", flush=True)
        else:
            print("tavern: drained: every game here is over", flush=True)


def first_of(group: BaseExceptionGroup[Exception]) -> BaseException:
    """The first error of a group, however deep (task groups nest)."""
    error: BaseException = group.exceptions[0]
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    try:
        config, settings = config_for(args)
    except ConfigError as error:
        print(f"tavern: bad configuration: {error}", file=sys.stderr)
        return 2
    database_flag = getattr(args, "database", None) is not None
    said = RecordsNote(records_line(config, settings, database_flag))
    try:
        return run_command(args, config, said)
    except RecordsUnavailable as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 1


def run_command(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    """The command the command line names, with its settings; ``said`` is called where it
    opens the records."""
    if args.command == "records":
        return copy_command(args.source, args.target)
    if args.command == "house":
        return house_command(args)
    if args.command == "bots":
        said()
        return bots_command(args, config.database)
    if args.command == "ladder":
        said()
        return ladder_command(args, config.database)
    if args.command == "replay":
        if args.positions is not None:
            return print_positions(config.database, args.game_id, args.positions, said)
        return print_replay(config.database, args.game_id, args.turns, args.output, said)
    if args.command == "test":
        return test_bot(args.tested_command, args.positions, config)
    if args.command == "play":
        return play_game(args, config, said)
    if args.command == "match":
        return run_ab_match(args, config, said)
    if args.command == "tournament":
        return run_tournament(args.file, config, args.schedule, args.workers, args.log, said)
    if args.command == "worker":
        return run_worker(config, args.claim_timeout_ms, args.log, said)
    if args.command == "validate":
        command = args.bot_command[1:] if args.bot_command[:1] == ["--"] else args.bot_command
        return validate_bot(args.game, args.side, command, args.games, args.turn_timeout_ms)
    run = asyncio.run
    if args.loop != "asyncio":
        try:
            import uvloop  # noqa: PLC0415  # not on Windows: asyncio's own loop serves there
        except ImportError:
            if args.loop == "uvloop":
                print("tavern: --loop uvloop needs uvloop: pip install uvloop", file=sys.stderr)
                return 2
        else:
            run = uvloop.run
    status = 0
    said()
    try:
        run(serve(config))
    except* ListenError as refused:  # raised inside the arena's task group, so in a group
        print(f"tavern: {first_of(refused)}", file=sys.stderr)
        status = 2
    except* RecordsUnavailable as unavailable:
        print(f"tavern: {first_of(unavailable)}", file=sys.stderr)
        status = 1
    except* RedisRefused as redis_refused:
        print(f"tavern: {first_of(redis_refused)}", file=sys.stderr)
        status = 2
    return status
