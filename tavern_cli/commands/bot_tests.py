"""``tavern test BOT --positions FILE``: a bot's unit tests, its answer to each position of a
file (``tavern_cli.bot_test``)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from server.config import ArenaConfig
from server.tournament.spec import TournamentError
from tavern_cli.bot_test import read_positions, run_positions
from tavern_cli.config_file import DEFAULT_HELP, RecordsNote
from tavern_cli.flags import Parser, Subcommands
from tavern_cli.play import PlayError
from tavern_cli.signals import Stopped, until_signalled


def add(commands: Subcommands) -> Parser:
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
    return bot_test


def run(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    return test_bot(args.tested_command, args.positions, config)


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
