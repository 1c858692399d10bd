"""``tavern tournament FILE``: a tournament from a JSON or TOML file, or a folder of Thud
clients, played here or queued on Redis for ``tavern worker``s."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from server.config import ArenaConfig
from server.league import GameResult, format_tables
from server.records import is_postgres, opened
from server.tournament.runner import TournamentRunner
from server.tournament.schedule import (
    arena_table,
    describe_schedule,
    knockout_table,
    schedule,
    swiss_table,
)
from server.tournament.spec import TournamentError, load_spec
from server.tournament_queue import DeadGame, run_queued
from tavern_cli.config_file import DEFAULT_HELP, RecordsNote
from tavern_cli.flags import Parser, Subcommands, int_flag, records_to_write, writable_file
from tavern_cli.log_file import log_beside_records, log_to
from tavern_cli.signals import Stopped, until_signalled

MAX_LOCAL_WORKERS = 256


def add(commands: Subcommands) -> Parser:
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
    return tournament


def run(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    return run_tournament(args.file, config, args.schedule, args.workers, args.log, said)


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

    async def play() -> tuple[list[GameResult], list[DeadGame]]:
        async with opened(config) as records:
            if not queued:
                return await TournamentRunner(spec, config, records).run(), []
            async with local_workers(workers or 0, config, log_file, redis_url):
                return await run_queued(spec, records, redis_url)

    try:
        results, given_up = asyncio.run(until_signalled(play()))
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
    if spec.format == "swiss":
        print(f"Swiss standings after {spec.rounds} rounds:")
        print(swiss_table(spec, results))
    elif spec.format == "knockout":
        print("Knockout, who went through each round:")
        print(knockout_table(spec, results))
    elif spec.format == "arena":
        print("Arena standings (a win 2, a draw 1, double on a streak of two wins):")
        print(arena_table(spec, results))
    if given_up:  # not in the table: no bot lost them
        print(f"arena faults, {len(given_up)} games not played:")
        for game in given_up:
            print(f"  {game.text()}")
    return 0
