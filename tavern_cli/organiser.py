"""What ``tavern bots`` and ``tavern ladder`` share: their flags naming the records (of
config.json, ``--config FILE`` or ``--database URL``, as the other commands) and a connection to
them. Running nodes see a change within a second."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from server.records import Records
from server.records.backends import Connection
from tavern_cli.config_file import DEFAULT_HELP


def records_flags(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--config", type=Path, help=f"settings file, naming the database ({DEFAULT_HELP})"
    )
    command.add_argument("--database", help="records: a file or a postgresql:// URL")


@contextlib.contextmanager
def connection(database: str) -> Iterator[Connection]:
    records = Records(database)
    records.open_to_read()  # creates or upgrades the schema
    db = records.backend.connect()
    try:
        yield db
    finally:
        db.close()


def no_bot(name: str) -> int:
    print(f"tavern: no bot named {name} is registered", file=sys.stderr)
    return 1
