"""Every game the arena plays, kept in SQLite: who played, every turn, the result.

``schema`` holds what is SQLite's own (the connections, the schema and its migrations, the
statement that writes a batch of turns) and the owner locks that tell which processes still
write; ``writer`` the writer thread, its batches and ``Recorder``, the arena's listener;
``queries`` the reads and their JSON. ``Records`` is one records file, both sides of it.

The schema is versioned with ``PRAGMA user_version``; ``MIGRATIONS[n]`` upgrades a file from
version n to n + 1, so a newer server opens an older file.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from server.match import Listener
from server.records.queries import GameFilter, Queries
from server.records.schema import MIGRATIONS, SCHEMA_VERSION, connect, migrate
from server.records.writer import Recorder, Writer

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "GameFilter",
    "Recorder",
    "Records",
    "connect",
    "migrate",
    "recording",
]


class Records(Writer, Queries):
    """The arena's store of games: a process that plays games ``open``s it and writes; any
    process reads (``tavern replay`` after ``open_to_read``)."""

    def __init__(self, path: Path) -> None:
        Writer.__init__(self, path)
        Queries.__init__(self, path)

    def open_to_read(self) -> None:
        """Upgrade the file if it is older than this code, and nothing else."""
        with contextlib.closing(connect(self.path)) as connection:
            migrate(connection)


@contextlib.asynccontextmanager
async def recording(listeners: list[Listener], path: Path) -> AsyncIterator[Records]:
    """Keep every game in the records file for the block: ``listeners`` are the arena's."""
    records = Records(path)
    await asyncio.to_thread(records.open)
    listeners.append(Recorder(records))
    try:
        yield records
    finally:
        await asyncio.to_thread(records.close)
