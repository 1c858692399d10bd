"""The ``tavern`` command: ``tavern serve`` runs the arena, the other commands play, check and
replay games.

Each command is a module of ``tavern_cli.commands`` that adds its own parser and runs itself;
this module assembles them, reads the settings every command starts from (the settings file
with the command line's flags on top), and runs the command named. Everything a command line
gives is checked before anything starts (``tavern_cli.flags``): a mistake is one line naming
the flag, and exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Protocol

from server.config import ArenaConfig, ConfigError, check_cluster, load_config
from server.records import RecordsUnavailable
from tavern_cli.commands import (
    bot_tests,
    bots,
    house,
    ladder,
    match,
    play,
    records,
    replay,
    serve,
    tournament,
    validate,
    worker,
)
from tavern_cli.config_file import RecordsNote, SettingsFile, records_line, settings_file
from tavern_cli.flags import Parser, Subcommands
from tavern_cli.log_file import LOG_FORMAT


class Command(Protocol):
    """A module of ``tavern_cli.commands``."""

    def add(self, commands: Subcommands) -> Parser: ...

    def run(self, args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int: ...


# In the order ``tavern --help`` lists them.
COMMANDS: tuple[Command, ...] = (
    serve,
    tournament,
    worker,
    validate,
    play,
    match,
    replay,
    bot_tests,
    records,
    bots,
    ladder,
    house,
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="tavern",
        description="Dwarven Tavern Arena: run the arena, play bots against each other, "
        "check a bot, run tournaments, replay recorded games.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add(commands).set_defaults(command_module=command)
    return parser


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
    command: Command = args.command_module
    try:
        return command.run(args, config, said)
    except RecordsUnavailable as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 1
