"""Every game the arena plays, kept in SQLite or PostgreSQL: who played, every turn, the result.

``schema`` holds the schema and its migrations (in both dialects) and what is SQLite's own;
``backends`` what differs between SQLite and PostgreSQL (connections, where the version is
kept, the statement that writes a batch of turns, which writing processes are alive);
``writes`` the writes as data; ``writer`` the writer thread and its batches, ``transaction``
one transaction of them; ``recorder`` the ``Recorder``, the arena's listener; ``journal`` and
``backlog`` what the writer keeps while the database is out of reach; ``queries`` the reads
and their JSON; ``copy`` copies records between databases.
``Records`` is one database, both sides of it.

The schema is versioned (``PRAGMA user_version`` in SQLite, the ``schema_version`` table in
PostgreSQL); ``MIGRATIONS[n]`` upgrades a database from version n to n + 1, so a newer server
opens an older one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from server.config import ArenaConfig
from server.match_events import Listener
from server.records.backends import Backend, RecordsOutOfReach, backend_for, is_postgres
from server.records.queries import Archived, GameFilter, Listed, Queries
from server.records.recorder import Recorder
from server.records.schema import MIGRATIONS, SCHEMA_VERSION, connect, migrate
from server.records.writer import JOURNAL_BYTES, SWEEP_S, Writer

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Archived",
    "Backend",
    "GameFilter",
    "Listed",
    "Recorder",
    "Records",
    "RecordsOutOfReach",
    "RecordsUnavailable",
    "backend_for",
    "connect",
    "default_journal",
    "is_postgres",
    "migrate",
    "opened",
    "recording",
    "records_for",
]
POSTGRES_JOURNAL = Path("data/records-journal")


class RecordsUnavailable(Exception):
    """The records cannot be opened (the database is away, or refuses): said in one line."""


class Records(Writer, Queries):
    """The arena's store of games: a process that plays games ``open``s it and writes; any
    process reads (``tavern replay`` after ``open_to_read``).

    ``database`` is an SQLite file's path or a ``postgresql://`` URL (``backends``);
    ``journal`` the folder of the writes kept while it is out of reach (``default_journal``),
    at most ``journal_bytes`` a process."""

    def __init__(
        self,
        database: str | Path,
        sweep_s: float = SWEEP_S,
        journal: Path | None = None,
        journal_bytes: int = JOURNAL_BYTES,
    ) -> None:
        backend = backend_for(database)
        folder = default_journal(database) if journal is None else journal
        Writer.__init__(self, backend, folder, journal_bytes, sweep_s)
        Queries.__init__(self, backend)

    @property
    def path(self) -> Path:
        """The SQLite file (a PostgreSQL database has none)."""
        path = getattr(self.backend, "path", None)
        if not isinstance(path, Path):
            raise TypeError(f"the records are not a file: {self.backend.describe()}")
        return path

    def open(self) -> None:
        with self._reachable():
            Writer.open(self)

    def open_to_read(self) -> None:
        """Upgrade the records if they are older than this code, and nothing else."""
        with self._reachable():
            connection = self.backend.connect()
            try:
                self.backend.migrate(connection)
            finally:
                connection.close()

    @contextlib.contextmanager
    def _reachable(self) -> Iterator[None]:
        """A database that cannot be opened is a ``RecordsUnavailable`` naming it (never its
        password) and the first line of why."""
        try:
            yield
        except self.backend.errors as error:
            why = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            where = self.backend.describe()
            raise RecordsUnavailable(f"cannot open the records at {where}: {why}") from error


def default_journal(database: str | Path) -> Path:
    """Where the writes wait while the database is out of reach, unless ``recordsJournal``
    says: beside an SQLite file (``arena.db.journal``), ``data/records-journal`` for
    PostgreSQL."""
    return POSTGRES_JOURNAL if is_postgres(database) else Path(f"{database}.journal")


def records_for(config: ArenaConfig) -> Records:
    """The records of a configuration: its database, its journal and the journal's bound."""
    journal = None if config.records_journal is None else Path(config.records_journal)
    return Records(config.database, journal=journal, journal_bytes=config.records_journal_bytes)


@contextlib.asynccontextmanager
async def opened(database: str | Path | ArenaConfig) -> AsyncIterator[Records]:
    """The records open for the block, closed after it whatever happens (both in a thread:
    opening may migrate or wait on a lock, closing writes what is left): a configuration's
    (``records_for``), or a database with the default journal."""
    records = records_for(database) if isinstance(database, ArenaConfig) else Records(database)
    await asyncio.to_thread(records.open)
    try:
        yield records
    finally:
        await asyncio.to_thread(records.close)


@contextlib.asynccontextmanager
async def recording(
    listeners: list[Listener], database: str | Path | ArenaConfig
) -> AsyncIterator[Records]:
    """Keep every game in the records for the block: ``listeners`` are the arena's."""
    async with opened(database) as records:
        listeners.append(Recorder(records))
        yield records
