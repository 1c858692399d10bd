"""``tavern bots``: the organiser's registry of bot identities, on the records (as the other
commands, ``tavern_cli.organiser``).

``add`` and ``rotate`` print the new key once, on stdout and nowhere else: the records keep
only its salted hash (``server.identity``). ``add`` refuses a name that looks like a registered
one (``server.names``).
"""

from __future__ import annotations

import argparse
import sys

from server.config import ArenaConfig
from server.errors import Rejected
from server.identity import RegisteredBot, check_name, hash_key, look_alike_of, new_key
from server.records.backends import transaction
from server.records.identities import add_bot, registered_bots, set_key
from tavern_cli.config_file import RecordsNote
from tavern_cli.flags import Parser, Subcommands
from tavern_cli.organiser import connection, no_bot, records_flags


def add(commands: Subcommands) -> Parser:
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
        records_flags(command)
    return bots


def run(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    said()
    return bots_command(args, config.database)


def bots_command(args: argparse.Namespace, database: str) -> int:
    command = args.bots_command
    with connection(database) as db:
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
                return no_bot(name)
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
                return no_bot(name)
            found = rotated
    print(f"bot {found}: its key, shown only now (set TAVERN_BOT_KEY to it):")
    print(key)
    return 0
