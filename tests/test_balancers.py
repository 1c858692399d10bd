"""Behind a load balancer (issue 30, item 7): the PROXY header on the bots' port, the visor's
and the Thud API's, believed only from the addresses listed in ``balancers``, and pages and
HTTP connections that read nothing giving way at the caps. Real sockets from several loopback
addresses, against a real arena and visor; tests/test_deploy.py runs the same through the
shipped HAProxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import orjson
import pytest

from bench.common import connect_from
from tests.conftest import Served
from tests.services import free_port
from tests.test_abuse import hub_of, receive, serve, websocket_frame
from tests.test_proxy_header import HAPROXY_CHECK, SIGNATURE
from tests.test_visor_limits import raw_page, session_from, start
from visor.pages import Page

BALANCER = "127.0.0.9"
CREATE = b'{"type":"create-simulation"}\n'


def v2_header(client: str, port: int) -> bytes:
    """What HAProxy's ``send-proxy-v2`` begins a connection with, for a client on IPv4."""
    addresses = socket.inet_aton(client) + socket.inet_aton("127.0.0.1")
    return SIGNATURE + bytes.fromhex("2111000c") + addresses + port.to_bytes(2, "big") * 2


def proxied(tmp_path: Path, **changes: object) -> contextlib.AbstractAsyncContextManager[Served]:
    return serve(tmp_path / "arena.db", balancers=(BALANCER,), **changes)


async def line_client(source: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(sock=await connect_from(source, port))


async def answer(reader: asyncio.StreamReader) -> dict[str, object]:
    async with asyncio.timeout(10):
        message: dict[str, object] = orjson.loads(await reader.readline())
        return message


async def closed_unanswered(reader: asyncio.StreamReader) -> float:
    """Seconds until the server closes the connection, which it answers nothing."""
    started = time.monotonic()
    async with asyncio.timeout(10):
        with contextlib.suppress(ConnectionResetError):
            assert await reader.read() == b""
    return time.monotonic() - started


async def test_a_bot_behind_a_balancer_counts_as_the_client_its_header_names(
    tmp_path: Path,
) -> None:
    """One waiting simulation per address. Through the balancer, two clients (a version 2
    header, and a version 1 one) each create one: each is counted as itself, so neither is
    refused (before: both were the balancer's address, and the second was refused). The
    balancer's own connection (a LOCAL header, as its health checks send) is the balancer."""
    async with proxied(tmp_path, max_waiting_simulations_per_address=1) as served:
        port = served.tcp_port
        one = await line_client(BALANCER, port)
        one[1].write(v2_header("127.1.1.1", 40001) + CREATE)
        two = await line_client(BALANCER, port)
        two[1].write(b"PROXY TCP4 127.1.1.2 127.0.0.1 40002 9000\r\n")
        two[1].write(CREATE)
        check = await line_client(BALANCER, port)
        check[1].write(HAPROXY_CHECK + CREATE)
        creators = {}
        for reader, writer in (one, two, check):
            ready = await answer(reader)
            assert ready["type"] == "ready", ready
            match = served.arena.get(ready["simulationId"])
            assert match is not None
            creators[match.options.creator] = writer
        assert set(creators) == {"127.1.1.1", "127.1.1.2", BALANCER}
        one[1].write(CREATE)  # its own address is at its cap
        assert (await answer(one[0]))["message"] == "Too many simulations"
        for _, writer in (one, two, check):
            writer.close()


async def test_a_balancers_connection_without_a_header_is_closed_and_never_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From a listed balancer: a connection that begins with a message, or with half a header
    that never ends, is closed unanswered and said in the log; while it waits it is not
    counted (the header comes first)."""
    monkeypatch.setattr("server.proxy_header.HEADER_TIMEOUT_S", 0.2)
    caplog.set_level(logging.WARNING, logger="server.tcp")
    async with proxied(tmp_path) as served:
        reader, writer = await line_client(BALANCER, served.tcp_port)
        writer.write(CREATE)
        await closed_unanswered(reader)
        writer.close()
        reader, writer = await line_client(BALANCER, served.tcp_port)
        writer.write(SIGNATURE[:7])
        await asyncio.sleep(0.05)
        assert served.tcp.connections == set()  # waiting for its header: not counted
        assert 0.1 < await closed_unanswered(reader) < 2.0
        writer.close()
        assert served.arena.matches == {}
    said = [r.getMessage() for r in caplog.records if "no PROXY header" in r.getMessage()]
    assert len(said) == 2, said
    assert "it does not begin with a PROXY header" in said[0]
    assert "no header within 0.2 s" in said[1]


async def test_a_header_from_an_address_not_listed_is_garbage_not_an_address(
    tmp_path: Path,
) -> None:
    """A client that is no balancer sends a header naming another address: the header is bad
    input (`Invalid JSON`), and what it creates counts against its own address."""
    async with proxied(tmp_path) as served:
        reader, writer = await line_client("127.0.0.1", served.tcp_port)
        writer.write(v2_header("127.1.1.1", 40001) + b"\n")
        assert (await answer(reader))["message"] == "Invalid JSON"
        writer.write(CREATE)
        async with asyncio.timeout(10):
            while (message := await answer(reader))["type"] == "error":
                assert message["message"] == "Invalid JSON", message
        assert message["type"] == "ready", message
        match = served.arena.get(message["simulationId"])
        assert match is not None and match.options.creator == "127.0.0.1"
        writer.close()


@contextlib.asynccontextmanager
async def through_balancer(port: int, header: bytes) -> AsyncIterator[int]:
    """A port whose connections are passed on to ``port`` from the balancer's address, each
    begun with ``header``, as HAProxy's ``send-proxy-v2`` does."""

    async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65_536):
                sink.write(data)
                await sink.drain()
        finally:
            sink.close()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        node_reader, node_writer = await line_client(BALANCER, port)
        node_writer.write(header)
        await asyncio.gather(
            pipe(reader, node_writer), pipe(node_reader, writer), return_exceptions=True
        )

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def test_a_page_behind_a_balancer_is_its_client_and_a_headerless_one_is_closed(
    tmp_path: Path,
) -> None:
    """The visor's port: a page through the balancer creates a simulation as the client its
    header names (the request's ``remote``); an HTTP request from the balancer with no header is
    closed unanswered; one from elsewhere that begins with a header is a bad request."""
    async with (
        proxied(tmp_path) as served,
        through_balancer(served.http_port, v2_header("127.1.1.3", 40003)) as port,
        aiohttp.ClientSession() as session,
        session.ws_connect(f"http://127.0.0.1:{port}/ws") as ws,
    ):
        await ws.send_json({"type": "create", "game": "tavern"})
        created = await receive(ws, "created")
        match = served.arena.get(created["simulationId"])
        assert match is not None and match.options.creator == "127.1.1.3"
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        reader, writer = await line_client(BALANCER, served.http_port)
        writer.write(request)
        await closed_unanswered(reader)
        writer.close()
        reader, writer = await line_client("127.0.0.1", served.http_port)
        writer.write(v2_header("127.1.1.1", 40001) + request)
        async with asyncio.timeout(10):
            assert b" 400 Bad Request" in await reader.readline()
        writer.close()


# The silent clients' addresses, the newcomer's, and the caps: the arena's (no address holds
# two more than the newcomer, so no busiest address gives way), then one address's.
AT_CAPS = [
    (["127.0.4.1", "127.0.4.2", "127.0.4.3"], "127.0.4.5", {"max_pages": 3}),
    (["127.0.4.1"] * 3, "127.0.4.1", {"max_pages_per_address": 3}),
]


@pytest.mark.parametrize(("sources", "newcomer", "caps"), AT_CAPS, ids=["arena", "address"])
async def test_pages_that_read_nothing_give_way_before_a_new_page_is_refused(
    tmp_path: Path, sources: list[str], newcomer: str, caps: dict[str, int]
) -> None:
    """Three pages at most (in all, or from one address). Three open and read nothing of the
    lobbies they ask for, until their sockets take no more; a new page takes the place of one
    of them (before: `Too many pages`)."""
    async with proxied(tmp_path, **caps) as served:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(10):
            creator, writer = await line_client("127.0.4.9", served.tcp_port)
            writer.write(CREATE * 60)  # a long lobby: 50 rows
            for _ in range(60):
                await answer(creator)
        silent = [await raw_page(served.http_port, source) for source in sources]
        pages = hub_of(served.arena).pages
        async with asyncio.timeout(10):
            while len(pages) < len(silent):
                await asyncio.sleep(0.01)
        for page in pages:  # the server's buffers toward them as small as the kernel allows,
            assert page.transport is not None  # so that they fill in a moment, not in seconds
            page.transport.get_extra_info("socket").setsockopt(
                socket.SOL_SOCKET, socket.SO_SNDBUF, 4096
            )
        lobby = websocket_frame(b'{"type": "lobby"}')
        async with asyncio.timeout(10):
            while not all(buffered(page) for page in pages):
                for sock in silent:
                    await loop.sock_sendall(sock, lobby)
                await asyncio.sleep(0.02)
        before = set(pages)
        async with (
            session_from(newcomer) as session,
            session.ws_connect(f"{served.url}/ws") as ws,
        ):
            await ws.send_json({"type": "lobby"})
            assert (await ws.receive_json())["type"] == "lobby"
            async with asyncio.timeout(5):  # one of them gave way
                while len(before - pages) < 1:
                    await asyncio.sleep(0.01)
            assert len(before - pages) == 1
        for sock in silent:
            sock.close()
        writer.close()


def buffered(page: Page) -> int:
    """What waits for a page in its transport: its socket took no more."""
    assert page.transport is not None
    return page.transport.get_write_buffer_size()


@pytest.mark.parametrize(
    ("sources", "newcomer", "caps"),
    [
        (["127.0.5.1", "127.0.5.2", "127.0.5.3"], "127.0.5.5", {"max_http_connections": 3}),
        (["127.0.5.1"] * 3, "127.0.5.1", {"max_http_connections_per_address": 3}),
    ],
    ids=["arena", "address"],
)
async def test_http_connections_that_read_nothing_give_way_before_a_new_one_is_refused(
    tmp_path: Path, sources: list[str], newcomer: str, caps: dict[str, int]
) -> None:
    """Three HTTP connections at most (in all, or from one address). Three ask for the
    simulations' list (a thousand simulations: 120 KB) 60 times over and read none of it,
    until more than 64 KiB waits for each in the server; a new connection then takes the place
    of one of them (before: 503 or 429, as each had begun a request)."""
    settings = {
        "max_waiting_simulations_per_address": 1000,
        "max_simulations_per_connection": 1000,
        **caps,
    }
    async with proxied(tmp_path, **settings) as served:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(10):
            creator, writer = await line_client("127.0.5.9", served.tcp_port)
            writer.write(CREATE * 1000)
            for _ in range(1000):
                await answer(creator)
        request = b"GET /api/simulations HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        silent = []
        for source in sources:
            sock = await connect_from(source, served.http_port, receive_buffer=4096)
            await loop.sock_sendall(sock, request * 60)
            silent.append(sock)
        for sock in silent:  # each is being answered: none waits for a request to begin
            await answered(sock)
        statuses: list[int] = []
        async with session_from(newcomer) as session, asyncio.timeout(10):
            while not statuses or statuses[-1] != 200:  # until they are backed up
                async with session.get(f"{served.url}/api/simulations") as response:
                    statuses.append(response.status)
                    await response.read()
                await asyncio.sleep(0.05)
        assert set(statuses) <= {200, 429, 503}, statuses
        for sock in silent:
            sock.close()
        writer.close()


async def answered(sock: socket.socket) -> None:
    """Once the server has begun to answer on ``sock`` (what it sent is left unread)."""
    async with asyncio.timeout(10):
        while True:
            with contextlib.suppress(BlockingIOError):
                if sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT):
                    return
            await asyncio.sleep(0.01)


async def test_the_thud_api_port_behind_a_balancer_counts_each_client(tmp_path: Path) -> None:
    """The Thud HTTP API's own port (`thudApiPort`): one game per address; two clients through
    the balancer each start one (before: both were the balancer, and the second was refused);
    a connection from the balancer without a header is closed unanswered."""
    api_port = free_port()
    async with proxied(tmp_path, thud_api_port=api_port, max_thud_api_games_per_address=1):
        statuses: list[int] = []
        for client in ("127.1.1.4", "127.1.1.5"):
            async with (
                through_balancer(api_port, v2_header(client, 40004)) as port,
                aiohttp.ClientSession() as session,
            ):
                statuses.append((await start(session, f"http://127.0.0.1:{port}"))[0])
                statuses.append((await start(session, f"http://127.0.0.1:{port}"))[0])
        assert statuses == [200, 429, 200, 429], statuses
        reader, writer = await line_client(BALANCER, api_port)
        writer.write(b"POST /start HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        await closed_unanswered(reader)
        writer.close()
