"""``tavern worker``: plays the tournament games queued on Redis, recording them in the
tournament's database; with ``--hosted GAME``, plays the hosted bots' active versions on the
arena's ladder instead (``server.hosted_worker``), and tries their new versions
(``tavern_cli.version_gate``)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path

from server.config import ArenaConfig
from server.games import GAMES
from server.hosted_worker import Gate, HostedWorker
from server.records import Records, opened
from server.sprt import Sprt
from server.tournament.spec import TournamentError
from server.tournament_queue import CLAIM_TIMEOUT_MS, MIN_CLAIM_TIMEOUT_MS, QueueLink
from server.tournament_worker import Worker
from tavern_cli.config_file import DEFAULT_HELP, RecordsNote
from tavern_cli.flags import (
    Parser,
    Subcommands,
    host_port,
    int_flag,
    records_to_write,
    sprt_flag,
    sprt_of,
    writable_file,
)
from tavern_cli.log_file import log_to
from tavern_cli.signals import Stopped, until_signalled
from tavern_cli.version_gate import try_candidate

TRIAL_CONCURRENCY = 2  # a trial's games at once, beside the ladder's

MAX_CLAIM_TIMEOUT_MS = 24 * 3_600_000


def add(commands: Subcommands) -> Parser:
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
    worker.add_argument(
        "--hosted",
        choices=sorted(GAMES),
        help="play every hosted bot's active version on the arena's ladder, seeking games of "
        "this game (no Redis needed)",
    )
    worker.add_argument(
        "--games-per-bot",
        type=int_flag(1, 1000),
        default=1,
        help="with --hosted: each bot's games at once (the arena holds it to maxGamesPerBot)",
    )
    worker.add_argument(
        "--arena",
        type=host_port,
        default=None,
        help="with --hosted: the arena's address for bots, HOST:PORT (default: this machine's "
        "port from the config)",
    )
    sprt_flag(
        worker,
        "with --hosted: a new version becomes active once an SPRT match against the active "
        "one, played here, finds it stronger (H0: no stronger than ELO0; H1: stronger by "
        "ELO1; default 0 10)",
    )
    worker.add_argument(
        "--trial-games",
        type=int_flag(2, 100_000),
        default=400,
        help="with --hosted: a new version's trial plays at most this many games (400)",
    )
    return worker


def run(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    if args.hosted is not None:
        sprt = sprt_of(args.sprt)
        if sprt is None:
            return 2
        trial = Trial(sprt, args.trial_games)
        arena = args.arena or ("127.0.0.1", config.port)
        return run_hosted(config, args.hosted, arena, args.games_per_bot, trial, args.log, said)
    return run_worker(config, args.claim_timeout_ms, args.log, said)


@dataclass(frozen=True, slots=True)
class Trial:
    """How a hosted worker tries a new version: its SPRT bounds and most games."""

    sprt: Sprt
    games: int


def gate(config: ArenaConfig, records: Records, game: str, trial: Trial) -> Gate:
    """The worker's gate: a candidate's SPRT match played here, as ``tavern bots try``."""

    async def tried(bot: str, number: int) -> object:
        return await try_candidate(
            bot,
            game,
            trial.sprt,
            trial.games,
            TRIAL_CONCURRENCY,
            config,
            records,
            sys.stderr,
            number,
        )

    return tried


def run_hosted(
    config: ArenaConfig,
    game: str,
    arena: tuple[str, int],
    games_per_bot: int,
    trial: Trial,
    log_file: Path | None,
    said: RecordsNote,
) -> int:
    said()
    if log_file is not None:
        log_to(log_file)

    async def work() -> None:
        async with opened(config) as records:
            print(f"tavern: worker plays hosted bots on {arena[0]}:{arena[1]}", flush=True)
            tries = gate(config, records, game, trial)
            await HostedWorker(records, game, arena, games_per_bot, gate=tries).run()

    try:
        asyncio.run(until_signalled(work()))
    except Stopped as stopped:
        print(
            "tavern: hosted worker stopped; its bots' games in progress are lost", file=sys.stderr
        )
        return stopped.code
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
        async with opened(config) as records:
            link = QueueLink(redis_url)
            try:
                worker = Worker(config, records, link, claim_timeout_ms)
                print(f"tavern: worker {worker.name} takes games from {link.where}", flush=True)
                await worker.run()
            finally:
                await link.close()

    try:
        asyncio.run(until_signalled(work()))
    except TournamentError as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 2
    except Stopped as stopped:
        print("tavern: worker stopped; its game in progress is kept unfinished", file=sys.stderr)
        return stopped.code
    return 0
