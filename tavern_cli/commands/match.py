"""``tavern match GAME A B``: an A/B test, paired games between two bot commands, with an
optional SPRT."""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from datetime import UTC, datetime
from pathlib import Path

from server.config import ArenaConfig
from server.games import GAMES
from server.records import is_postgres, opened
from server.sprt import Sprt
from server.tournament.spec import TournamentError
from tavern_cli.config_file import DEFAULT_HELP, RecordsNote
from tavern_cli.flags import (
    Parser,
    Subcommands,
    clock_flag,
    float_flag,
    int_flag,
    records_to_write,
    writable_file,
)
from tavern_cli.log_file import log_beside_records, log_to
from tavern_cli.match import (
    MatchPlan,
    MatchReport,
    match_spec,
    run_match,
    run_queued_match,
    summary,
)
from tavern_cli.play import PlayError
from tavern_cli.signals import Stopped, until_signalled

MAX_MATCH_GAMES = 1_000_000
MAX_CONCURRENCY = 256
MAX_MATCH_SEED = 2**32  # times 100,003 plus the pair: still a seed pages read back exactly


def add(commands: Subcommands) -> Parser:
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
    return match


def run(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
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
        async with opened(config) as records:
            if args.workers:
                return await run_queued_match(spec, sprt, records, redis_url, sys.stderr)
            return await run_match(spec, sprt, config, records, sys.stderr)

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
