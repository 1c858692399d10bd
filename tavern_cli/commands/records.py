"""``tavern records copy FROM TO``: every record copied from one database to another (an
SQLite file or PostgreSQL)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from server.config import ArenaConfig
from server.records import backend_for, is_postgres
from server.records.copy import copy_records
from tavern_cli.config_file import RecordsNote
from tavern_cli.flags import Parser, Subcommands, records_to_write


def add(commands: Subcommands) -> Parser:
    records = commands.add_parser("records", help="manage the records")
    records_commands = records.add_subparsers(dest="records_command", required=True)
    copy = records_commands.add_parser(
        "copy", help="copy every record from one database to another (SQLite file or PostgreSQL)"
    )
    copy.add_argument("source", metavar="FROM", help="an SQLite file or a postgresql:// URL")
    copy.add_argument(
        "target",
        metavar="TO",
        type=records_to_write,
        help="an SQLite file or a postgresql:// URL",
    )
    return records


def run(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    return copy_command(args.source, args.target)


def copy_command(source: str, target: str) -> int:
    if not is_postgres(source) and not Path(source).is_file():
        print(f"tavern: no records file at {source}", file=sys.stderr)
        return 1

    def progress(table: str, rows: int) -> None:
        print(f"\r{table}: {rows} rows", end="", file=sys.stderr, flush=True)

    failures: tuple[type[Exception], ...] = (
        ValueError,
        RuntimeError,
        *backend_for(source).errors,
        *backend_for(target).errors,
    )
    try:
        counts = copy_records(source, target, progress)
    except failures as error:
        print(f"\ntavern: records copy failed: {error}", file=sys.stderr)
        return 1
    print("\r", end="", file=sys.stderr)
    print(", ".join(f"{table}: {rows} rows" for table, rows in counts.items()))
    return 0
