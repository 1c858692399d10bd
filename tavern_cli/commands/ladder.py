"""``tavern ladder``: the ladder's seasons and bans, on the records (as the other commands,
``tavern_cli.organiser``)."""

from __future__ import annotations

import argparse
import sys

from server.config import ArenaConfig
from server.records.backends import transaction
from server.records.ladder import set_banned, start_season
from tavern_cli.config_file import RecordsNote
from tavern_cli.flags import Parser, Subcommands
from tavern_cli.organiser import connection, no_bot, records_flags


def add(commands: Subcommands) -> Parser:
    ladder = commands.add_parser("ladder", help="the ladder: seasons, banned bots")
    ladder_commands = ladder.add_subparsers(dest="ladder_command", required=True)
    season = ladder_commands.add_parser(
        "season", help="start a new season: every bot afresh, the old table kept"
    )
    season.add_argument("name", help="the new season's name")
    records_flags(season)
    for name, text in (
        ("ban", "refuse a bot's seeks and challenges"),
        ("unban", "let a banned bot seek and challenge again"),
    ):
        command = ladder_commands.add_parser(name, help=text)
        command.add_argument("name", help="the bot's name")
        records_flags(command)
    return ladder


def run(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    said()
    return ladder_command(args, config.database)


def ladder_command(args: argparse.Namespace, database: str) -> int:
    with connection(database) as db:
        if args.ladder_command == "season":
            if not start_season(db, args.name):
                print(f"tavern: season {args.name} was played already", file=sys.stderr)
                return 1
            print(f"tavern: season {args.name} starts now")
            return 0
        banned = args.ladder_command == "ban"
        with transaction(db):
            found = set_banned(db, args.name, banned)
    if found is None:
        return no_bot(args.name)
    print(f"tavern: {found} is {'banned' if banned else 'no longer banned'}")
    return 0
