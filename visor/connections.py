"""The visor's HTTP connections (its port and the Thud API's): capped, and never idle for long.

Every connection counts against ``maxHttpConnections`` and, from its address,
``maxHttpConnectionsPerAddress`` (websockets included: they are connections too); one past a cap
is answered 429 or 503 at once and closed, before aiohttp sees it. The caps hold for both ports
together, as the descriptors they spare are the process's. When every connection the visor takes
is open, a new one takes the place of the connection that has waited longest without a request
(answered 503 and closed), as on the bots' port: connections that send nothing, or never a
whole request head, from however few addresses, never shut the others out. At either cap, a
connection that does not read its answers (more than its transport's high-water mark waits for
it) gives way to a newcomer (of its address, at the address's cap) before anyone is refused.

A connection from a load balancer listed in ``balancers`` is counted only once its PROXY header
(``server.proxy_header``) has named the client, by the client's address; its requests'
``remote`` is that address, so every per-address cap behind the balancer counts each client.

A connection that has not sent a whole request head ``httpIdleTimeoutMs`` after it opened, or
after its last answer, is closed: that is aiohttp's keep-alive timeout, which the aiohttp required
here (pyproject.toml) starts when a connection opens, not only after an answer, and which leaves a
request being answered (a websocket included) alone. Bytes trickling in do not extend it.

What a connection sends is held (parsed, about twice its size) until its request is answered:
from its previous answer to the end of the next one, a connection may send ``MAX_REQUEST_BYTES``,
head and body; past that it is cut off. A websocket's frames, once it is open, are not counted
(its reader bounds them).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
from collections import Counter
from collections.abc import AsyncIterator
from typing import cast

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from aiohttp.web_protocol import RequestHandler

from server.clock import LoopClock
from server.config import ArenaConfig, ListenError
from server.errors import BotError
from server.proxy_header import AwaitedHeader, Balancers

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 32 * 1024  # a request's head and body: any page's or API call's fits


class HttpConnections:
    """The HTTP connections open, in all and per address, against their caps."""

    def __init__(
        self, most: int, most_per_address: int, balancers: Balancers | None = None
    ) -> None:
        self.most = most
        self.most_per_address = most_per_address
        self.balancers = Balancers(()) if balancers is None else balancers
        self._per_address: Counter[str] = Counter()
        self._open: dict[asyncio.BaseTransport, CountedConnection] = {}
        # Connections that have not begun a request yet, oldest first (a dict as an ordered set).
        self._waiting: dict[CountedConnection, None] = {}
        # Connections whose answers pile up unread (past their transport's high-water mark).
        self._backed_up: dict[CountedConnection, None] = {}

    @classmethod
    def for_config(cls, config: ArenaConfig) -> HttpConnections:
        """The configured caps, but never more than a quarter of the process's descriptors:
        the bots' connections, the records and the other nodes need theirs."""
        most = config.max_http_connections
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and most > soft // 4:
            log.warning(
                "maxHttpConnections %d is more than a quarter of the process's descriptor "
                "limit (%d): the visor takes at most %d",
                most,
                soft,
                max(1, soft // 4),
            )
            most = max(1, soft // 4)
        per_address = min(most, config.max_http_connections_per_address)
        return cls(most, per_address, Balancers(config.balancers))

    @property
    def open(self) -> int:
        return len(self._open)

    def admit(self, connection: CountedConnection) -> tuple[int, str] | None:
        """Count one more connection; or, past a cap, the status and the reason to answer it
        with."""
        address = connection.address
        if self._per_address[address] >= self.most_per_address and not self._give_way(address):
            return 429, f"at most {self.most_per_address} connections from one address"
        if len(self._open) >= self.most and not self._give_way(None):
            return 503, f"the arena has {self.most} connections open already: try again later"
        self._open[connection.transport] = connection
        self._waiting[connection] = None
        self._per_address[address] += 1
        return None

    def _give_way(self, address: str | None) -> bool:
        """Close a connection to make room for a newcomer: one that does not read its answers,
        of ``address`` (at its cap) or of any (None, at the arena's); at the arena's cap first
        the one that has waited longest without a request."""
        if address is None and self._waiting:
            oldest = next(iter(self._waiting))
            self.leave(oldest)
            oldest.refuse(503, "the visor is full: the longest waiting connection gives way")
            return True
        for connection in self._backed_up:
            if address is None or connection.address == address:
                log.info(
                    "HTTP connections are all open: one from %s, reading nothing, gives way",
                    connection.address,
                )
                self.leave(connection)
                connection.transport.abort()
                return True
        return False

    def backed_up(self, connection: CountedConnection, unread: bool) -> None:
        """The connection's answers pile up unread (``unread``: its transport paused writing),
        or no longer."""
        if unread:
            self._backed_up[connection] = None
        else:
            self._backed_up.pop(connection, None)

    def leave(self, connection: CountedConnection) -> None:
        self._waiting.pop(connection, None)
        self._backed_up.pop(connection, None)
        if self._open.pop(connection.transport, None) is connection:
            self._per_address[connection.address] -= 1
            if not self._per_address[connection.address]:
                del self._per_address[connection.address]

    def middleware(self) -> Middleware:
        """Tells each connection when its requests start and end (the first of an app's
        middlewares)."""

        @web.middleware
        async def requests(request: web.Request, handler: Handler) -> web.StreamResponse:
            transport = request.transport
            connection = None if transport is None else self._open.get(transport)
            if connection is None:
                return await handler(request)
            self._waiting.pop(connection, None)  # it no longer gives way to newcomers
            connection.request_started(request)
            if connection.proxied and request.remote != connection.address:
                request = request.clone(remote=connection.address)  # the balancer's client
            try:
                return await handler(request)
            finally:
                connection.request_finished()

        return requests


def refusal(status: int, reason: str) -> bytes:
    """A whole HTTP answer to a connection past a cap (it is closed after it)."""
    body = f"{BotError.TOO_MANY_CONNECTIONS}: {reason}\n".encode()
    phrase = "Too Many Requests" if status == 429 else "Service Unavailable"
    head = (
        f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nRetry-After: 10\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class CountedConnection(asyncio.Protocol):
    """One connection: counted, then served by aiohttp's request handler, or refused."""

    def __init__(self, connections: HttpConnections, server: web.Server) -> None:
        self._connections = connections
        self._server = server
        self._handler: RequestHandler | None = None  # once admitted
        self.transport: asyncio.Transport
        self.address = ""
        self._received = 0  # bytes since its last answer
        self._websocket = False  # an open websocket: its frames are not counted
        # A balancer's connection: its PROXY header, until it names the client.
        self.proxied = False
        self._header: AwaitedHeader | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        if self._connections.balancers.listed(peer):
            # The client is the one its header names: nothing is counted before it has.
            self._header = AwaitedHeader(peer, LoopClock(), self._begin, self._not_proxied)
            self.proxied = True
            return
        self._begin(peer)

    def _begin(self, peer: object) -> None:
        """The client is known (``peer``): counted, then served or refused."""
        self.address = str(peer[0]) if isinstance(peer, tuple) else ""
        refused = self._connections.admit(self)
        if refused is not None:
            self.refuse(*refused)
            return
        self._handler = self._server()
        self._handler.connection_made(self.transport)

    def _not_proxied(self, why: str) -> None:
        """A balancer's connection without its PROXY header: closed."""
        assert self._header is not None
        log.warning(
            "HTTP connection from the balancer %s: no PROXY header (%s): closed",
            self._header.reader.balancer[0],
            why,
        )
        self.transport.abort()

    def refuse(self, status: int, reason: str) -> None:
        """Answer why the connection may not stay, and close it."""
        self.transport.write(refusal(status, reason))
        self.transport.close()

    def request_started(self, request: web.Request) -> None:
        self._websocket = request.headers.get("Upgrade", "").lower() == "websocket"

    def request_finished(self) -> None:
        self._websocket = False
        self._received = 0

    def data_received(self, data: bytes) -> None:
        if self._header is not None and self._header.waiting:
            data = self._header.feed(data)
        if self._handler is None or not data:
            return
        if not self._websocket:
            self._received += len(data)
            if self._received > MAX_REQUEST_BYTES:
                log.info(
                    "an HTTP request from %s passed %d bytes: cut off",
                    self.address,
                    MAX_REQUEST_BYTES,
                )
                self.transport.abort()
                return
        self._handler.data_received(data)

    def eof_received(self) -> None:
        if self._handler is not None:
            self._handler.eof_received()

    def pause_writing(self) -> None:
        if self._handler is not None:
            self._connections.backed_up(self, True)
            self._handler.pause_writing()

    def resume_writing(self) -> None:
        if self._handler is not None:
            self._connections.backed_up(self, False)
            self._handler.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header is not None:
            self._header.stop()
        if self._handler is not None:
            self._connections.leave(self)
            self._handler.connection_lost(exc)


class CountedSite(web.BaseSite):
    """A TCP site (as ``web.TCPSite``) whose connections are ``CountedConnection``s."""

    def __init__(
        self, runner: web.BaseRunner, host: str, port: int, connections: HttpConnections
    ) -> None:
        super().__init__(runner)
        self._host = host
        self._port = port
        self._connections = connections
        self.port = port  # the port bound, once started

    @property
    def name(self) -> str:
        return f"http://{self._host}:{self.port}/"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None, "the runner is set up before its sites"
        connections = self._connections
        listening = await asyncio.get_running_loop().create_server(
            lambda: CountedConnection(connections, server),
            self._host,
            self._port,
            reuse_address=True,
        )
        self._server = listening
        self.port = int(listening.sockets[0].getsockname()[1])


@contextlib.asynccontextmanager
async def serving_http(
    app: web.Application,
    host: str,
    port: int,
    connections: HttpConnections,
    idle_timeout_ms: int,
    names: tuple[str, str],
) -> AsyncIterator[int]:
    """Serve ``app`` on ``host:port`` until the block exits; yields the port bound. ``names``:
    what is served and how to change its port, for the error if the port cannot be had."""
    app.middlewares.insert(0, connections.middleware())
    # After an answer, the rest of a body the handler did not read is read and dropped (so the
    # client reads the answer), for as long as a connection may idle.
    idle_s = idle_timeout_ms / 1000
    runner = web.AppRunner(
        app, access_log=None, shutdown_timeout=2.0, keepalive_timeout=idle_s, lingering_time=idle_s
    )
    await runner.setup()
    try:
        site = CountedSite(runner, host, port, connections)
        try:
            await site.start()
        except OSError as error:
            raise ListenError(names[0], host, port, error, names[1]) from error
        yield site.port
    finally:
        await runner.cleanup()
