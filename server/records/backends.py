"""Where the records live: an SQLite file (the embedded default) or a PostgreSQL database.

The writer and the queries are written once, in SQL both speak, with ``?`` parameters; a
``Backend`` holds what differs: how to connect, where the schema version is kept and which
migrations bring it up, the one statement that writes a batch of turn chunks, which errors a
failed write raises, and how a process tells whether another one that writes games is alive.

On PostgreSQL a writing process (a node) holds a session-level advisory lock, keyed by its
owner id, on a connection of its own for as long as it runs. PostgreSQL releases the lock when
that session ends, whether the process stopped, was killed or its machine went away (the
session's TCP keepalives find a dead peer within about 2.5 ``KEEPALIVE_S``), so a lock that
another session can take is the lock of a node that is gone, on whichever machine it ran.

A failed statement is either the database out of reach (``Backend.unavailable``: PostgreSQL
stopped or cut off, an SQLite file locked or unwritable), which the writer waits out with its
journal and the readers answer with ``RecordsOutOfReach``, or a write the database refuses
(a bug), which no waiting mends.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import socket
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

import orjson
import psycopg
from psycopg.rows import RowMaker

from server.config import without_password
from server.records.schema import (
    INSERT_CHUNKS,
    OWNER_ID,
    POSTGRES_MIGRATIONS,
    SCHEMA_VERSION,
    OwnerLocks,
    connect,
    migrate,
    too_new,
)

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
KEEPALIVE_S = 10  # a node's lock session: idle seconds before PostgreSQL probes its peer
MIGRATION_LOCK = 0x7461_7665_726E  # the advisory lock that one node at a time migrates under
CONNECT_TIMEOUT_S = 5  # a PostgreSQL that does not answer a new connection in this is away
# SQLite's primary result codes of a file that cannot be written now, but may be later: busy
# or locked past ``busy_timeout`` (another process holds it), read-only, I/O error, disk full,
# cannot open, lock protocol error. Any other code is a statement the file refuses.
SQLITE_AWAY = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PROTOCOL,
    }
)
ChunkRow = tuple[str, int, int, bytes]  # game id, first number, count, the turns as JSON
KEEPALIVES = {  # libpq's TCP keepalives, and how long data sent may go unacknowledged (ms)
    "keepalives": 1,
    "keepalives_idle": KEEPALIVE_S,
    "keepalives_interval": KEEPALIVE_S // 2,
    "keepalives_count": 3,
    "tcp_user_timeout": 3 * KEEPALIVE_S * 1000,
}


class RecordsOutOfReach(Exception):
    """A read found the records' database out of reach (``Backend.unavailable``): the visor
    answers 503, and it is logged once per outage, not per request."""


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """What the writer and the queries use of a connection: sqlite3's, or ``PostgresConnection``."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...
    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor: ...
    def close(self) -> None: ...


class Owners(Protocol):
    """Which writing processes are alive (see ``OwnerLocks`` and ``AdvisoryLocks``)."""

    def claim(self) -> str: ...
    def is_alive(self, owner: str, db: Connection) -> bool: ...
    def forget(self, owner: str) -> None: ...
    def renew(self) -> None: ...
    def release(self) -> None: ...


class Backend(Protocol):
    name: str
    errors: tuple[type[Exception], ...]  # what a failed write raises

    def describe(self) -> str: ...
    def connect(self) -> Connection: ...
    def migrate(self, db: Connection, target: int = SCHEMA_VERSION) -> int: ...
    def insert_chunks(self, db: Connection, rows: list[ChunkRow]) -> None: ...
    def owners(self) -> Owners: ...
    def lost(self, db: Connection) -> bool: ...
    def unavailable(self, error: Exception, db: Connection | None) -> bool: ...


@contextlib.contextmanager
def transaction(db: Connection) -> Iterator[None]:
    """One transaction on a connection that otherwise commits each statement on its own (the
    commands'): its writes together or not at all."""
    db.execute("BEGIN")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


@contextlib.contextmanager
def transacted(backend: Backend) -> Iterator[Connection]:
    """A connection of its own, for one transaction (an upload, a command's change), closed
    after."""
    db = backend.connect()
    try:
        with transaction(db):
            yield db
    finally:
        db.close()


def backend_for(database: str | Path) -> Backend:
    """The backend of a ``database`` setting: a PostgreSQL URL, else an SQLite file's path."""
    if isinstance(database, str) and database.startswith(POSTGRES_SCHEMES):
        return PostgresBackend(database)
    return SqliteBackend(Path(database))


def is_postgres(database: str | Path) -> bool:
    return isinstance(database, str) and database.startswith(POSTGRES_SCHEMES)


# --- SQLite --------------------------------------------------------------------------------------
class SqliteBackend:
    name = "sqlite"
    errors: tuple[type[Exception], ...] = (sqlite3.Error,)

    def __init__(self, path: Path) -> None:
        self.path = path

    def describe(self) -> str:
        return str(self.path)

    def connect(self) -> Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return connect(self.path)

    def migrate(self, db: Connection, target: int = SCHEMA_VERSION) -> int:
        assert isinstance(db, sqlite3.Connection)
        return migrate(db, target)

    def insert_chunks(self, db: Connection, rows: list[ChunkRow]) -> None:
        """One statement, whatever the number of chunks (``schema.INSERT_CHUNKS``)."""
        index, texts, offset = [], [], 1
        for game_id, first, count, text in rows:
            index.append(
                b"[%s,%d,%d,%d,%d]" % (orjson.dumps(game_id), first, count, offset, len(text))
            )
            texts.append(text)
            offset += len(text)
        db.execute(INSERT_CHUNKS, ((b"[%s]" % b",".join(index)).decode(), b"".join(texts)))

    def owners(self) -> Owners:
        return OwnerLocks(self.path.with_name(self.path.name + ".owners"))

    def lost(self, db: Connection) -> bool:
        """A file does not go away as a server does."""
        return False

    def unavailable(self, error: Exception, db: Connection | None) -> bool:
        """The file cannot be written now (locked by another process past the busy timeout,
        read-only, its disk full or failing), as opposed to a statement it refuses."""
        code = getattr(error, "sqlite_errorcode", None)
        return isinstance(error, sqlite3.OperationalError) and (
            code is None or code & 0xFF in SQLITE_AWAY
        )


# --- PostgreSQL ----------------------------------------------------------------------------------
_PLACEHOLDER = re.compile(r"\?")
_IS_PARAMETER = re.compile(r"\bIS \?")


def postgres_sql(sql: str) -> str:
    """A statement of the shared SQL as psycopg takes it: ``%s`` parameters, and ``IS ?``
    (SQLite's null-safe comparison) as ``IS NOT DISTINCT FROM``."""
    sql = _IS_PARAMETER.sub("IS NOT DISTINCT FROM ?", sql)
    return _PLACEHOLDER.sub("%s", sql)


class Row(tuple[Any, ...]):
    """A row read by name or by index, as SQLite's ``Row``: the queries use both."""

    names: ClassVar[dict[str, int]] = {}

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            key = self.names[key]
        return tuple.__getitem__(self, key)


_ROW_CLASSES: dict[tuple[str, ...], type[Row]] = {}


def _rows(cursor: psycopg.Cursor[Any]) -> RowMaker[Row]:
    columns = tuple(column.name for column in cursor.description or ())
    kind = _ROW_CLASSES.get(columns)
    if kind is None:
        names = {name: index for index, name in reversed(list(enumerate(columns)))}
        kind = _ROW_CLASSES[columns] = type("Row", (Row,), {"names": names})
    return kind


class PostgresConnection:
    """A psycopg connection in autocommit mode (the writer says BEGIN and COMMIT itself) that
    takes the shared SQL."""

    def __init__(self, url: str, **options: Any) -> None:
        self.connection: psycopg.Connection[Row] = psycopg.connect(
            url, autocommit=True, row_factory=_rows, **options
        )
        self._sql: dict[str, str] = {}

    def _translated(self, sql: str) -> str:
        translated = self._sql.get(sql)
        if translated is None:
            translated = self._sql[sql] = postgres_sql(sql)
        return translated

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        if not parameters:  # a script (migrations) or a statement without parameters
            return self.connection.execute(sql.encode())
        return self.connection.execute(self._translated(sql), parameters)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor:
        cursor = self.connection.cursor()
        cursor.executemany(self._translated(sql), parameters)
        return cursor

    def close(self) -> None:
        self.connection.close()


class PostgresBackend:
    name = "postgresql"
    errors: tuple[type[Exception], ...] = (psycopg.Error,)

    def __init__(self, url: str) -> None:
        self.url = url

    def describe(self) -> str:
        """The URL without its password."""
        return without_password(self.url)

    def connect(self) -> Connection:
        """A connection that finds a server gone without a word (its machine or the network
        down) within about 2.5 ``KEEPALIVE_S`` rather than the system's hours, so that no read
        or write waits for it longer."""
        return PostgresConnection(self.url, connect_timeout=CONNECT_TIMEOUT_S, **KEEPALIVES)

    def migrate(self, db: Connection, target: int = SCHEMA_VERSION) -> int:
        """Bring the database up to ``target``, under an advisory lock: nodes that start
        together migrate one after the other, the later ones finding nothing to do."""
        db.execute("BEGIN")
        try:
            db.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")
            row = db.execute("SELECT version FROM schema_version").fetchone()
            if row is None:
                db.execute("INSERT INTO schema_version VALUES (0)")
            found: int = 0 if row is None else row[0]
            if found > SCHEMA_VERSION:
                raise too_new(found)
            for version in range(found, target):
                db.execute(POSTGRES_MIGRATIONS[version])
                db.execute("UPDATE schema_version SET version = ?", (version + 1,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return found

    def insert_chunks(self, db: Connection, rows: list[ChunkRow]) -> None:
        """One statement, whatever the number of chunks, as in SQLite: the turns one after the
        other in one ``bytea``, each chunk's at its offset, the other columns as arrays. (The
        turns as an array of text cost psycopg some 200 µs a chunk to send, this 5:
        docs/performance.md.)"""
        offsets, offset = [], 1
        for row in rows:
            offsets.append(offset)
            offset += len(row[3])
        db.execute(
            "INSERT INTO turn_chunks (game_id, first_number, count, turns) "
            "SELECT game_id, first_number, count, "
            "convert_from(substring(?::bytea FROM at FOR length), 'UTF8') "
            "FROM unnest(?::text[], ?::bigint[], ?::bigint[], ?::int[], ?::int[]) "
            "AS chunk (game_id, first_number, count, at, length) "
            "ON CONFLICT (game_id, first_number) DO UPDATE SET count = excluded.count, "
            "turns = excluded.turns",
            (
                b"".join(row[3] for row in rows),
                [row[0] for row in rows],
                [row[1] for row in rows],
                [row[2] for row in rows],
                offsets,
                [len(row[3]) for row in rows],
            ),
        )

    def owners(self) -> Owners:
        return AdvisoryLocks(self.url)

    def lost(self, db: Connection) -> bool:
        """Was the connection cut (PostgreSQL restarted, the network went down)?"""
        return isinstance(db, PostgresConnection) and (db.connection.broken or db.connection.closed)

    def unavailable(self, error: Exception, db: Connection | None) -> bool:
        """The server is out of reach (stopped, restarting, cut off, out of connections or
        disk: psycopg's ``OperationalError``) or cut this connection, as opposed to a
        statement it refuses."""
        return isinstance(error, psycopg.OperationalError) or (db is not None and self.lost(db))


def lock_key(owner: str) -> int:
    """The advisory lock of an owner id: 64 bits of its digest, as a signed bigint."""
    return int.from_bytes(hashlib.sha256(owner.encode()).digest()[:8], "big", signed=True)


class AdvisoryLocks:
    """Owner liveness on PostgreSQL: each node holds its owner id's advisory lock on a session
    of its own (see the module's docstring)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._session: PostgresConnection | None = None
        self._owner = ""

    def claim(self) -> str:
        owner = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
        self._session, self._owner = self._locked(owner), owner
        return owner

    def _locked(self, owner: str) -> PostgresConnection:
        """A session of its own that holds the owner's lock."""
        session = PostgresConnection(
            self.url,
            **KEEPALIVES,
            options=f"-c tcp_keepalives_idle={KEEPALIVE_S} "
            f"-c tcp_keepalives_interval={KEEPALIVE_S // 2} -c tcp_keepalives_count=3",
        )
        taken = session.execute("SELECT pg_try_advisory_lock(?)", (lock_key(owner),)).fetchone()
        if not taken[0]:
            session.close()
            raise RuntimeError(f"records: the owner id {owner} is taken")
        return session

    def renew(self) -> None:
        """Take the lock again on a new session if the database cut the old one: until then
        the other nodes take this node for gone (and mark its games unfinished)."""
        if self._session is None:
            return
        try:
            self._session.execute("SELECT 1")  # a cut session says so only when used
        except psycopg.Error:
            self._session.close()
            self._session = self._locked(self._owner)

    def is_alive(self, owner: str, db: Connection) -> bool:
        """Can ``db`` (not the lock's own session) take the owner's lock? Then its node is gone."""
        if owner == self._owner:
            return True
        if not OWNER_ID.fullmatch(owner):
            return False
        key = lock_key(owner)
        if db.execute("SELECT pg_try_advisory_lock(?)", (key,)).fetchone()[0]:
            db.execute("SELECT pg_advisory_unlock(?)", (key,))
            return False
        return True

    def forget(self, owner: str) -> None:
        """Nothing is left behind by a node that is gone: its lock went with its session."""

    def release(self) -> None:
        if self._session is not None:
            self._session.close()  # ends the session, and with it the lock
            self._session = None
