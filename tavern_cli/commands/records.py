"""``tavern records copy FROM TO``: every record copied from one database to another (an
SQLite file or PostgreSQL); ``tavern records export``: the archive's finished games, as
zstandard-compressed JSON lines (``server.records.archive``) or a Parquet file
(``server.records.parquet``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from server.config import ArenaConfig
from server.games import GAMES
from server.records import Archived, Records, backend_for, is_postgres
from server.records.archive import moment, write_jsonl_zst
from server.records.copy import copy_records
from tavern_cli.config_file import RecordsNote
from tavern_cli.flags import Parser, Subcommands, records_to_write, writable_file
from tavern_cli.organiser import records_flags


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
    export = records_commands.add_parser(
        "export",
        help="the finished games, oldest first, each its whole record: players, settings, seed, "
        "every turn (docs/records.md), as zstandard-compressed JSON lines or Parquet",
    )
    export.add_argument(
        "--since", type=_moment, help="of a game's start: a date, a time or epoch seconds"
    )
    export.add_argument("--until", type=_moment, help="of a game's start (not included)")
    export.add_argument("--game", choices=sorted(GAMES), help="of this game only")
    export.add_argument("--bot", help="of this bot only (a registered bot, or an entrant)")
    export.add_argument(
        "--format",
        choices=("jsonl.zst", "parquet"),
        default="jsonl.zst",
        help="zstandard-compressed JSON lines, a record a line; or Parquet, a game a row "
        "(pandas, DuckDB)",
    )
    export.add_argument("--output", type=writable_file, required=True, help="the file written")
    records_flags(export)
    return records


def _moment(text: str) -> float:
    try:
        return moment(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "a date (2026-11-01), an ISO time or epoch seconds"
        ) from None


def run(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    if args.records_command == "export":
        said()
        records = Records(config.database)
        records.open_to_read()
        where = Archived(args.game, args.bot, args.since, args.until)
        if args.format == "parquet":
            # pyarrow only here: every other command starts 30 ms sooner without it.
            from server.records.parquet import write_parquet  # noqa: PLC0415

            count = write_parquet(records, where, args.output)
        else:
            with args.output.open("wb") as out:
                count = write_jsonl_zst(records, where, out)
        print(f"{count} games written to {args.output}")
        return 0
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
