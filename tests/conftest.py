"""Shared fixtures: a real arena on an ephemeral loopback port, and a raw line client."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from server.arena import Arena
from server.config import ArenaConfig
from server.match import Match
from server.match_events import Listener, TurnPlayed, Update
from server.match_views import TurnResult
from server.records import Records, recording
from server.tcp import Connection, TcpServer
from tests.services import (
    PostgresServer,
    RedisCluster,
    RedisServer,
    postgres_server,
    redis_cluster,
    redis_server,
)
from visor import app as visor_app

RECEIVE_TIMEOUT_S = 10.0
ROOT = Path(__file__).resolve().parent.parent


def test_config(**changes: Any) -> ArenaConfig:
    """Defaults, on 127.0.0.1 with ephemeral ports.

    A disconnect forfeits at once (no grace period to rejoin) unless a test asks for one, so
    that tests of leaving players need not wait for the grace period.
    """
    base = ArenaConfig(host="127.0.0.1", port=0, http_port=0, reconnect_grace_ms=0)
    return dataclasses.replace(base, **changes)


test_config.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


class TurnLog:
    """Every turn the arena's games play, by simulation id (a match keeps only a count)."""

    def __init__(self, arena: Arena | Running) -> None:
        self.turns: dict[str, list[TurnResult]] = collections.defaultdict(list)
        arena.listeners.append(self)

    def __call__(self, update: Update) -> None:
        if isinstance(update, TurnPlayed):
            self.turns[update.result.match_id].append(update.result)


@dataclasses.dataclass
class Running:
    """An arena playing its matches, with bots on TCP."""

    arena: Arena
    tcp: TcpServer

    @property
    def tcp_port(self) -> int:
        assert self.tcp.port is not None
        return self.tcp.port

    @property
    def matches(self) -> dict[str, Match]:
        return self.arena.matches

    @property
    def listeners(self) -> list[Listener]:
        return self.arena.listeners

    @property
    def config(self) -> ArenaConfig:
        return self.arena.config

    @property
    def connections(self) -> set[Connection]:
        return self.tcp.connections


@contextlib.asynccontextmanager
async def serving(config: ArenaConfig) -> AsyncIterator[Running]:
    """An arena with these settings, bots on an ephemeral TCP port, for the block."""
    arena = Arena(config)
    async with arena.running(), TcpServer(arena).serving() as tcp:
        yield Running(arena, tcp)


@pytest.fixture
async def arena() -> AsyncIterator[Running]:
    async with serving(test_config()) as running:
        yield running


@dataclasses.dataclass
class Served:
    """A running arena and its visor."""

    arena: Arena
    tcp: TcpServer
    http_port: int
    records: Records

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def tcp_port(self) -> int:
        assert self.tcp.port is not None
        return self.tcp.port


@contextlib.asynccontextmanager
async def serving_visor(config: ArenaConfig, database: str | Path) -> AsyncIterator[Served]:
    """An arena and its visor with these settings and records in ``database``."""
    arena = Arena(config)
    async with recording(arena.listeners, database) as records:
        arena.id_tag = records.id_tag
        async with (
            arena.running(),
            TcpServer(arena).serving() as tcp,
            visor_app.serving(arena, "127.0.0.1", 0, records) as http_port,
        ):
            yield Served(arena, tcp, http_port, records)


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    async with serving_visor(test_config(), tmp_path / "arena.db") as running:
        yield running


class RawClient:
    """A bot at the byte level: sends exactly what it is given, reads line by line."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, port: int) -> RawClient:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
        return cls(reader, writer)

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_raw(orjson.dumps(message) + b"\n")

    async def receive(self, timeout: float = RECEIVE_TIMEOUT_S) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                line = await self.reader.readline()
                if not line:
                    raise ConnectionError("closed by the server")
                if line.strip():
                    message: dict[str, Any] = orjson.loads(line)
                    return message

    async def receive_line(self, timeout: float = RECEIVE_TIMEOUT_S) -> bytes:
        async with asyncio.timeout(timeout):
            return await self.reader.readline()

    async def expect(self, kind: str, timeout: float = RECEIVE_TIMEOUT_S) -> dict[str, Any]:
        message = await self.receive(timeout)
        assert message["type"] == kind, message
        return message

    async def expect_error(self, text: str) -> dict[str, Any]:
        message = await self.expect("error")
        assert message["message"] == text, message
        return message

    async def is_closed(self, timeout: float = RECEIVE_TIMEOUT_S) -> bool:
        """True once the server has closed the connection (reading what is left): a reset is
        a close too (the server closed with bytes of the client's unread, on a busy machine
        before the client had read all it was sent)."""
        async with asyncio.timeout(timeout):
            with contextlib.suppress(ConnectionResetError):
                while await self.reader.read(65536):
                    pass
        return True

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


@dataclasses.dataclass
class Tapped:
    """One bot connection through a ``Tap``: the messages each side sent, in order."""

    from_bot: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    to_bot: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def replies_and_turns(self) -> tuple[list[Any], list[int]]:
        """The ``turn`` each ``player-turn`` named (None if none), and the turns it was sent."""
        replies = [m.get("turn") for m in self.from_bot if m["type"] == "player-turn"]
        return replies, [m["turn"] for m in self.to_bot if m["type"] == "turn"]


@contextlib.asynccontextmanager
async def tap(port: int) -> AsyncIterator[tuple[int, list[Tapped]]]:
    """A loopback relay to the arena on ``port`` that keeps the messages of every connection
    made through it (bots that end each message with a newline): what a bot puts on the wire,
    seen from outside the bot. Yields the relay's port and the connections, as they come."""
    connections: list[Tapped] = []

    async def pipe(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, kept: list[Any]
    ) -> None:
        pending = b""
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                *lines, pending = (pending + data).split(b"\n")
                kept.extend(orjson.loads(line) for line in lines if line.strip())  # before relaying
                writer.write(data)
                await writer.drain()
        writer.close()

    async def relay(bot_reader: asyncio.StreamReader, bot_writer: asyncio.StreamWriter) -> None:
        arena_reader, arena_writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
        tapped = Tapped()
        connections.append(tapped)
        async with asyncio.TaskGroup() as both:
            both.create_task(pipe(bot_reader, arena_writer, tapped.from_bot))
            both.create_task(pipe(arena_reader, bot_writer, tapped.to_bot))

    server = await asyncio.start_server(relay, "127.0.0.1", 0, limit=1 << 22)
    async with server:
        yield server.sockets[0].getsockname()[1], connections


@pytest.fixture
async def connect(arena: Running) -> AsyncIterator[Any]:
    """Open raw clients to the arena; all are closed at the end of the test."""
    clients: list[RawClient] = []

    async def open_client() -> RawClient:
        assert arena.tcp_port is not None
        client = await RawClient.connect(arena.tcp_port)
        clients.append(client)
        return client

    yield open_client
    for client in clients:
        await client.close()


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    """A redis-server of the test's own (tests kill and restart it)."""
    with redis_server() as server:
        yield server


@pytest.fixture(params=["one-redis", "redis-cluster"])
def arena_redis(request: pytest.FixtureRequest) -> Iterator[RedisServer | RedisCluster]:
    """The arena's Redis, once a redis-server and once a Redis Cluster of three masters: the
    tests that take it pass unchanged on both (issue 32)."""
    if request.param == "one-redis":
        with redis_server() as server:
            yield server
    else:
        with redis_cluster() as cluster:
            yield cluster


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL cluster for the session; each test makes its own database in it."""
    with postgres_server() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def records_database(
    request: pytest.FixtureRequest, tmp_path: Path, postgres_databases: list[str]
) -> str:
    """Where a test keeps its records: a fresh SQLite file, or a fresh PostgreSQL database.
    The records tests take it, so that each of them runs on both backends."""
    if request.param == "sqlite":
        return str(tmp_path / "arena.db")
    server: PostgresServer = request.getfixturevalue("postgres")
    name = f"records_{len(postgres_databases)}"
    postgres_databases.append(name)
    return server.create_database(name)


@pytest.fixture(scope="session")
def postgres_databases() -> list[str]:
    """The databases made in the session's cluster so far (each test makes a new one)."""
    return []
