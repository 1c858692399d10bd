"""``tavern bots``: the organiser's registry of bot identities, on the records (as the other
commands, ``tavern_cli.organiser``).

``add`` and ``rotate`` print the new key once, on stdout and nowhere else: the records keep
only its salted hash (``server.identity``). ``add`` refuses a name that looks like a registered
one (``server.names``).

``upload`` keeps a hosted bot's version (``server.bot_versions``): with the bot's key in
``TAVERN_BOT_KEY`` it is sent to the arena (``--arena``, the visor's address), as its owner
would from its page; without, the organiser keeps it in the records directly. ``versions``
lists a bot's versions.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import aiohttp

from server.bot_logs import LOGGED_GAMES, MAX_LOGGED_GAMES, bot_log, log_text
from server.bot_versions import VersionRefused, version_of, zipped_folder
from server.config import ArenaConfig
from server.errors import Rejected
from server.games import GAMES
from server.games.base import JsonObject
from server.identity import RegisteredBot, check_name, hash_key, look_alike_of, new_key
from server.records import Records, opened
from server.records.backends import backend_for, transaction
from server.records.identities import add_bot, registered_bots, set_key
from server.records.versions import store_version, versions
from server.tournament.spec import TournamentError
from tavern_cli.config_file import RecordsNote
from tavern_cli.flags import Parser, Subcommands, int_flag, sprt_flag, sprt_of
from tavern_cli.organiser import connection, no_bot, records_flags
from tavern_cli.version_gate import try_candidate

ARENA_HELP = "with TAVERN_BOT_KEY: the arena's web address (default: this machine's visor)"


def add(commands: Subcommands) -> Parser:
    bots = commands.add_parser("bots", help="register bots: names and their secret keys")
    bots_commands = bots.add_subparsers(dest="bots_command", required=True)
    for name, text in (
        ("add", "register a bot and print its key (shown once)"),
        ("rotate", "give a bot a new key (printed once); the old one stops working"),
        ("revoke", "withdraw a bot's key: nobody can play under its name until rotated"),
        ("list", "the registered bots"),
        ("versions", "a hosted bot's versions, newest first"),
    ):
        command = bots_commands.add_parser(name, help=text)
        if name != "list":
            command.add_argument("name", help="the bot's name")
        records_flags(command)
    upload = bots_commands.add_parser(
        "upload",
        help="keep a version of a hosted bot: its files and its run command (with "
        "TAVERN_BOT_KEY, through the arena; else in the records, as the organiser)",
    )
    upload.add_argument("name", help="the bot's name")
    upload.add_argument("files", type=Path, help="its folder, or a zip of it")
    upload.add_argument(
        "--run", required=True, help='the command that starts it there, e.g. "python3 bot.py"'
    )
    upload.add_argument(
        "--activate", action="store_true", help="make it the bot's active version at once"
    )
    upload.add_argument(
        "--game",
        dest="games",
        action="append",
        choices=sorted(GAMES),
        default=[],
        help="a game it plays (again for each; none: every game)",
    )
    upload.add_argument("--arena", help=ARENA_HELP)
    records_flags(upload)
    logs = bots_commands.add_parser(
        "logs",
        help="a hosted bot's last games: how each ended for it, its stderr, each turn's CPU time "
        "(with TAVERN_BOT_KEY, from the arena; else from the records, as the organiser)",
    )
    logs.add_argument("name", help="the bot's name")
    logs.add_argument(
        "--games",
        type=int_flag(1, MAX_LOGGED_GAMES),
        default=LOGGED_GAMES,
        help="how many (default 10)",
    )
    logs.add_argument("--arena", help=ARENA_HELP)
    records_flags(logs)
    trial = bots_commands.add_parser(
        "try",
        help="a hosted bot's newest candidate version against its active one, an SPRT match "
        "played here: made active if it is stronger, its rating moved by the Elo measured",
    )
    trial.add_argument("name", help="the bot's name")
    trial.add_argument("game", choices=sorted(GAMES), help="the game they play")
    trial.add_argument("--games", type=int_flag(2, 100_000), default=400, help="at most (400)")
    trial.add_argument("--concurrency", type=int_flag(1, 256), default=2, help="games at once")
    sprt_flag(trial, "H0: no stronger than ELO0; H1: stronger by ELO1 (default 0 10)")
    records_flags(trial)
    return bots


def run(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    if args.bots_command == "upload":
        return upload_version(args, config, said)
    if args.bots_command == "logs":
        return show_logs(args, config, said)
    if args.bots_command == "try":
        return try_version(args, config, said)
    said()
    if args.bots_command == "versions":
        return list_versions(args.name, config.database)
    return bots_command(args, config.database)


def upload_version(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    files: Path = args.files
    try:
        archive = zipped_folder(files) if files.is_dir() else files.read_bytes()
        key = os.environ.get("TAVERN_BOT_KEY")
        if key:
            arena = args.arena or f"http://127.0.0.1:{config.http_port}"
            form = aiohttp.FormData({"key": key, "run": args.run})
            form.add_field("activate", "1" if args.activate else "0")
            form.add_field("games", ",".join(args.games))
            form.add_field("archive", archive, filename="bot.zip", content_type="application/zip")
            url = f"{arena.rstrip('/')}/api/bots/{args.name}/versions"
            answer = asyncio.run(asked_arena(url, "the upload", data=form))
        else:
            said()
            version = version_of(archive, args.run)
            Records(config.database).open_to_read()  # creates or upgrades the schema
            games = tuple(dict.fromkeys(args.games))
            backend = backend_for(config.database)
            stored = store_version(backend, args.name, version, args.activate, games)
            if stored is None:
                return no_bot(args.name)
            answer = {"bot": stored.bot, "number": stored.number, "hash": version.content_hash}
            answer |= {"state": stored.state, "added": stored.added, "files": version.files}
    except (OSError, VersionRefused, ArenaRefused) as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 1
    again = "" if answer["added"] else " (uploaded before)"
    print(
        f"{answer['bot']} version {answer['number']}{again}: {answer['files']} files, "
        f"{answer['state']}, hash {answer['hash']}"
    )
    return 0


class ArenaRefused(Exception):
    """The arena could not be asked, or refused; the message says which, and its answer."""


async def asked_arena(url: str, what: str, **request: Any) -> JsonObject:
    """The arena's answer to a POST (as the bot's page sends it), or ``ArenaRefused``."""
    try:
        async with aiohttp.ClientSession() as session, session.post(url, **request) as response:
            answer = await response.json(content_type=None)
    except (aiohttp.ClientError, ValueError) as error:
        raise ArenaRefused(f"cannot reach {url}: {error}") from None
    if response.status not in (200, 201):
        raise ArenaRefused(f"the arena refused {what}: {answer.get('error', answer)}")
    return dict(answer)


def show_logs(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    key = os.environ.get("TAVERN_BOT_KEY")
    try:
        if key:
            arena = args.arena or f"http://127.0.0.1:{config.http_port}"
            url = f"{arena.rstrip('/')}/api/bots/{args.name}/logs"
            asked = {"key": key, "games": args.games}
            answer = asyncio.run(asked_arena(url, "its logs", json=asked))
            name, games = answer["bot"], answer["games"]
        else:
            said()
            records = Records(config.database)
            records.open_to_read()
            name, games = args.name, bot_log(records, args.name, args.games)
    except ArenaRefused as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 1
    print(log_text(name, games))
    return 0


def try_version(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    sprt = sprt_of(args.sprt)
    if sprt is None:
        return 2
    said()

    async def trial() -> tuple[int, JsonObject]:
        async with opened(config) as records:
            return await try_candidate(
                args.name,
                args.game,
                sprt,
                args.games,
                args.concurrency,
                config,
                records,
                sys.stderr,
            )

    try:
        number, result = asyncio.run(trial())
    except TournamentError as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 1
    verdict = {"H1": "stronger: now active", "H0": "not stronger: stays a candidate"}
    said_of = verdict.get(str(result["verdict"]), "undecided: stays a candidate")
    print(
        f"{args.name} version {number}: {result['wins']}-{result['draws']}-{result['losses']} "
        f"in {result['games']} games, Elo {result['elo']:+}; {said_of}"
    )
    return 0


def list_versions(name: str, database: str) -> int:
    with connection(database) as db:
        found = versions(db, name)
    if not found:
        print(f"tavern: {name} has no version", file=sys.stderr)
        return 1
    for version in found:
        trial = version["sprt"]
        tried = "" if trial is None else f"  (tried: {trial['verdict']}, Elo {trial['elo']:+})"
        games = ",".join(version["games"]) or "every game"
        print(
            f"{version['number']:>4}  {version['state']:<9}  {version['files']:>4} files  "
            f"{version['hash'][:16]}  {games}  {version['run']}{tried}"
        )
    return 0


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
