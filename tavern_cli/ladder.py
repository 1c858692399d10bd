"""``tavern bots`` and ``tavern ladder``: the organiser's registry of bot identities and the
ladder's seasons and bans, on the records of config.json (or of ``--config FILE`` /
``--database URL``), as the other commands.

``add`` and ``rotate`` print the new key once, on stdout and nowhere else: the records keep
only its salted hash (``server.identity``). ``add`` refuses a name that looks like a registered
one (``server.names``). Running nodes see a change within a second.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

from server.errors import Rejected
from server.identity import RegisteredBot, check_name, hash_key, look_alike_of, new_key
from server.records import Records
from server.records.backends import Connection, transaction
from server.records.identities import add_bot, registered_bots, set_key
from server.records.ladder import set_banned, start_season
from tavern_cli.config_file import DEFAULT_HELP

ParserT = TypeVar("ParserT", bound=argparse.ArgumentParser)


def add_bot_commands(commands: argparse._SubParsersAction[ParserT]) -> None:
    bots = commands.add_parser("bots", help="register bots: names and their secret keys")
    bots_commands = bots.add_subparsers(dest="bots_command", required=True)
    for name, text in (
        ("add", "register a bot and print its key (shown once)"),
        ("rotate", "give a bot a new key (printed once); the old one stops working"),
        ("revoke", "withdraw a bot's key: nobody can play under its name until rotated"),
        ("list", "the registered bots"),
    ):
        command = bots_commands.add_parser(name, help=text)
        if name != "list":
            command.add_argument("name", help="the bot's name")
        _records_flags(command)
    ladder = commands.add_parser("ladder", help="the ladder: seasons, banned bots")
    ladder_commands = ladder.add_subparsers(dest="ladder_command", required=True)
    season = ladder_commands.add_parser(
        "season", help="start a new season: every bot afresh, the old table kept"
    )
    season.add_argument("name", help="the new season's name")
    _records_flags(season)
    for name, text in (
        ("ban", "refuse a bot's seeks and challenges"),
        ("unban", "let a banned bot seek and challenge again"),
    ):
        command = ladder_commands.add_parser(name, help=text)
        command.add_argument("name", help="the bot's name")
        _records_flags(command)


def _records_flags(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--config", type=Path, help=f"settings file, naming the database ({DEFAULT_HELP})"
    )
    command.add_argument("--database", help="records: a file or a postgresql:// URL")


@contextlib.contextmanager
def _connection(database: str) -> Iterator[Connection]:
    records = Records(database)
    records.open_to_read()  # creates or upgrades the schema
    connection = records.backend.connect()
    try:
        yield connection
    finally:
        connection.close()


def bots_command(args: argparse.Namespace, database: str) -> int:
    command = args.bots_command
    with _connection(database) as db:
        if command == "list":
            for row in db.execute("SELECT name, key_hash, banned FROM bots ORDER BY name"):
                states = [
                    state
                    for state, shown in (
                        ("key revoked", not row["key_hash"]),
                        ("banned", row["banned"]),
                    )
                    if shown
                ]
                print(row["name"] + "".join(f"  ({state})" for state in states))
            return 0
        try:
            name = check_name(args.name)
        except Rejected as rejected:
            print(f"tavern: {rejected.reason}", file=sys.stderr)
            return 2
        if command == "revoke":
            with transaction(db):
                found = set_key(db, name, "")
            if found is None:
                return _no_bot(name)
            print(f"tavern: the key of {found} is revoked")
            return 0
        key = new_key()
        if command == "add":
            alike = look_alike_of(name, registered_bots(db))
            if alike is not None:
                said = f"tavern: {name} looks like {alike.name}, registered already"
                print(said, file=sys.stderr)
                return 1
            with transaction(db):
                added = add_bot(db, RegisteredBot(name, hash_key(key)))
            if not added:
                print(f"tavern: a bot named {name} is registered already", file=sys.stderr)
                return 1
            found = name
        else:
            with transaction(db):
                rotated = set_key(db, name, hash_key(key))
            if rotated is None:
                return _no_bot(name)
            found = rotated
    print(f"bot {found}: its key, shown only now (set TAVERN_BOT_KEY to it):")
    print(key)
    return 0


def ladder_command(args: argparse.Namespace, database: str) -> int:
    with _connection(database) as db:
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
        return _no_bot(args.name)
    print(f"tavern: {found} is {'banned' if banned else 'no longer banned'}")
    return 0


def _no_bot(name: str) -> int:
    print(f"tavern: no bot named {name} is registered", file=sys.stderr)
    return 1
