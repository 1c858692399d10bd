"""``tavern validate``: a bot played against the house players, to check that it plays
legally and in time."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from server.config import ArenaConfig
from server.games import GAMES
from server.tournament.spec import TournamentError
from server.validate import validate
from tavern_cli.config_file import RecordsNote
from tavern_cli.flags import Parser, Subcommands, int_flag, setting_flag
from tavern_cli.signals import Stopped, until_signalled

MAX_VALIDATE_GAMES = 1000


def add(commands: Subcommands) -> Parser:
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
    return validate


def run(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    """Plays in a scratch arena of its own: neither the settings nor the records matter."""
    command = args.bot_command[1:] if args.bot_command[:1] == ["--"] else args.bot_command
    return validate_bot(args.game, args.side, command, args.games, args.turn_timeout_ms)


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
