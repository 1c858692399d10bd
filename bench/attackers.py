"""The attackers of ``bench/hostile.py``, each run in a process of its own:

    python bench/attackers.py KIND '{"port": ..., "seconds": ..., ...}'

so that an attack has its own file descriptors (thousands of connections each) and its own
CPU, and the honest players' measurements in the bench's process are not slowed by it. An
attacker that holds connections first opens them all (a failed one is tried again, for at most
``open_within`` seconds), then holds them for ``seconds``; a flood floods for ``seconds``. Then
it closes everything and prints its figures as one JSON object on its last line of output.
Every connection goes to 127.0.0.1 only, from the loopback addresses it is given.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import connect_from
from bench.load import random_thud_move

Figures = dict[str, Any]
CONNECT_TIMEOUT_S = 10.0
OPENING_AT_ONCE = 256  # connections being opened at the same time by one attacker
RETRY_S = 1.0  # before opening again a connection that failed, or that the server closed
MESSAGE_BYTES = 65_000  # a burst's message: just under the default maxMessageBytes
HTTP_HEAD = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # a request that never ends
BAD_PAGE_REQUEST = b'{"type": "no such request"}'
SEATED_FLOOD = b'{"type":"x"}' * 5000


class Held(asyncio.Protocol):
    """A connection kept open: what the server sent it, and whether the server closed it.
    ``read``: False to stop reading after the answer to an HTTP request's head (a page that
    never reads)."""

    def __init__(self, read: bool = True) -> None:
        self.read = read
        self.transport: asyncio.Transport | None = None
        self.received = 0
        self.lines = 0
        self.head = b""  # the first bytes received
        self.closed = asyncio.Event()
        self.changed = asyncio.Event()  # something came, or the connection closed
        self.writable = asyncio.Event()
        self.writable.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.received += len(data)
        self.lines += data.count(b"\n")
        self.changed.set()
        if len(self.head) < 4096:
            self.head += data[: 4096 - len(self.head)]
        if not self.read and self.transport is not None and b"\r\n\r\n" in self.head:
            self.transport.pause_reading()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()
        self.changed.set()
        self.writable.set()

    async def until(self, test: Callable[[Held], bool]) -> None:
        """Wait until ``test`` holds, or the server closed the connection."""
        while not test(self) and not self.closed.is_set():
            self.changed.clear()
            await self.changed.wait()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()


async def open_held(
    source: str, port: int, read: bool = True, receive_buffer: int | None = None
) -> Held:
    sock = await connect_from(
        source, port, receive_buffer=receive_buffer, timeout_s=CONNECT_TIMEOUT_S
    )
    held = Held(read)
    await asyncio.get_running_loop().create_connection(lambda: held, sock=sock)
    return held


def spread(sources: Sequence[str]) -> Iterator[str]:
    return itertools.cycle(sources)


async def open_many(
    count: int,
    spec: dict[str, Any],
    then: Callable[[Held], Awaitable[None]] | None = None,
    read: bool = True,
    receive_buffer: int | None = None,
) -> tuple[list[Held], Counter[str]]:
    """``count`` connections to ``spec["port"]`` from ``spec["sources"]``, at most
    ``OPENING_AT_ONCE`` being opened at once; ``then`` is awaited on each once it is open (a
    request, a handshake). A connection that fails is tried again until ``open_within``."""
    held: list[Held] = []
    failures: Counter[str] = Counter()
    gate = asyncio.Semaphore(OPENING_AT_ONCE)
    addresses = spread(spec["sources"])
    give_up = time.monotonic() + spec["open_within"]

    async def one(source: str) -> None:
        async with gate:
            while time.monotonic() < give_up:
                try:
                    connection = await open_held(source, spec["port"], read, receive_buffer)
                    if then is not None:
                        await then(connection)
                except (OSError, TimeoutError) as error:
                    failures[f"{type(error).__name__} (tried again)"] += 1
                    await asyncio.sleep(RETRY_S)
                    continue
                held.append(connection)
                return
            failures["not opened in time"] += 1

    await asyncio.gather(*(one(next(addresses)) for _ in range(count)))
    return held, failures


def ends(spec: dict[str, Any]) -> float:
    """When the attack, starting now, ends."""
    return time.monotonic() + float(spec["seconds"])


async def hold_until(deadline: float) -> None:
    await asyncio.sleep(max(0.0, deadline - time.monotonic()))


def closed_by_server(held: Sequence[Held]) -> int:
    return sum(1 for connection in held if connection.closed.is_set())


def abort_all(held: Sequence[Held]) -> None:
    for connection in held:
        connection.abort()


def failed(failures: Counter[str]) -> str:
    return ", ".join(f"{count} {why}" for why, count in failures.items()) or "none"


# --- TCP connections that hold on ---------------------------------------------------------------
async def idle_tcp(spec: dict[str, Any]) -> Figures:
    """Connections to the bots' port that send nothing and never join; one the server closes
    (past its limits) is opened again a second later, so that the arena stays full."""
    started = time.monotonic()
    held, failures = await open_many(spec["connections"], spec)
    opened = time.monotonic() - started
    await asyncio.sleep(1.0)  # the server refuses what is past its limits at once
    refused = sum(1 for c in held if c.closed.is_set() and b"Too many connections" in c.head)
    deadline, reopened = ends(spec), 0
    sources = spread(spec["sources"])
    while time.monotonic() < deadline:
        for index, connection in enumerate(held):
            if connection.closed.is_set() and time.monotonic() < deadline:
                with contextlib.suppress(OSError, TimeoutError):
                    held[index] = await open_held(next(sources), spec["port"])
                    reopened += 1
        await asyncio.sleep(RETRY_S)
    figures = {
        "connections made": len(held),
        "at first refused with Too many connections": refused,
        "opened again after the server closed them": reopened,
        "closed by the server at the end": closed_by_server(held),
        "failures": failed(failures),
        "seconds to open them": round(opened, 1),
    }
    abort_all(held)
    return figures


async def idle_http(spec: dict[str, Any]) -> Figures:
    """Connections to the visor's port, each holding a request that never ends."""

    async def request(connection: Held) -> None:
        assert connection.transport is not None
        connection.transport.write(HTTP_HEAD)

    started = time.monotonic()
    held, failures = await open_many(spec["connections"], spec, request)
    opened = time.monotonic() - started
    await hold_until(ends(spec))
    figures = {
        "connections made": len(held),
        "closed by the server": closed_by_server(held),
        "failures": failed(failures),
        "bytes sent": len(held) * len(HTTP_HEAD),
        "seconds to open them": round(opened, 1),
    }
    abort_all(held)
    return figures


def burst_payload(kind: str) -> bytes:
    """One unterminated message just under the size limit: a long string, or one that never
    closes but holds a ``}`` every few bytes, in brackets or in strings."""
    if kind == "string":
        head = b'{"type":"x","pad":"'
        return head + b"a" * (MESSAGE_BYTES - len(head))
    head = b'{"p":['
    if kind == "brackets":
        return head + b"{}," * ((MESSAGE_BYTES - len(head)) // 3)
    return head + b'"}",' * ((MESSAGE_BYTES - len(head)) // 4)


async def burst(spec: dict[str, Any]) -> Figures:
    """Connections that each send one unterminated message of 65,000 bytes, as a network
    delivers it (1,460-byte segments), and wait."""
    data = burst_payload(spec["payload"])

    async def send(connection: Held) -> None:
        assert connection.transport is not None
        for offset in range(0, len(data), 1460):
            connection.transport.write(data[offset : offset + 1460])

    started = time.monotonic()
    held, failures = await open_many(spec["connections"], spec, send)
    sent_in = time.monotonic() - started
    await hold_until(ends(spec))
    figures = {
        "connections made": len(held),
        "closed by the server": closed_by_server(held),
        "failures": failed(failures),
        "bytes sent": len(held) * len(data),
        "seconds to send": round(sent_in, 1),
    }
    abort_all(held)
    return figures


# --- floods ------------------------------------------------------------------------------------
async def brace_flood(spec: dict[str, Any]) -> Figures:
    """One line of ``probe`` ``{`` first; then ``rate`` connections a second from one address,
    each sending ``bytes`` ``{`` bytes and reading what comes back for ``linger`` seconds."""
    source, port = spec["sources"][0], spec["port"]
    figures: Figures = await brace_line(source, port, spec["probe"])
    deadline = ends(spec)
    data = b"{" * spec["bytes"]
    counts: Counter[str] = Counter()
    replies: list[int] = []
    tasks: set[asyncio.Task[None]] = set()

    async def one() -> None:
        try:
            connection = await open_held(source, port)
        except (OSError, TimeoutError):
            counts["failed to connect"] += 1
            return
        assert connection.transport is not None
        connection.transport.write(data)
        counts["connections made"] += 1
        counts["bytes sent"] += len(data)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(connection.closed.wait(), spec["linger"])
        if connection.closed.is_set():
            counts["closed by the server"] += 1
        if b"Too many connections" in connection.head:
            counts["refused with Too many connections"] += 1
        replies.append(connection.lines)
        connection.abort()

    interval = 1 / spec["rate"]
    next_at = time.monotonic()
    while next_at < deadline:
        task = asyncio.create_task(one())
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        next_at += interval
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
    if tasks:
        await asyncio.wait(tasks, timeout=spec["linger"] + CONNECT_TIMEOUT_S)
    figures.update(counts)
    figures["replies per connection (mean)"] = round(sum(replies) / max(len(replies), 1))
    return figures


async def brace_line(source: str, port: int, size: int) -> Figures:
    """One line of ``size`` ``{``, sent as a network delivers it (1,460-byte segments, a few
    milliseconds apart) and read as fast as it comes: how many replies, and whether the server
    dropped the sender."""
    try:
        connection = await open_held(source, port)
    except (OSError, TimeoutError) as error:
        return {f"line of {size:,} braces": f"could not connect: {error}"}
    assert connection.transport is not None
    line = b"{" * size + b"\n"
    for offset in range(0, len(line), 1460):
        connection.transport.write(line[offset : offset + 1460])
        await asyncio.sleep(0.005)
    last, quiet_since = -1, time.monotonic()
    while not connection.closed.is_set() and time.monotonic() - quiet_since < 1.0:
        await asyncio.sleep(0.1)
        if connection.received != last:
            last, quiet_since = connection.received, time.monotonic()
    outcome = "dropped by the server" if connection.closed.is_set() else "still connected"
    connection.abort()
    return {f"line of {size:,} braces": f"{connection.lines:,} replies, {outcome}"}


async def random_joins(spec: dict[str, Any]) -> Figures:
    """Connections sending random joins the server must refuse (an empty nick), ``batch`` at a
    time, each batch once the previous one is answered."""
    join = b'{"type":"join-simulation","nick":""}\n' * spec["batch"]
    counts: Counter[str] = Counter()
    deadline = ends(spec)

    async def one(source: str) -> None:
        try:
            sock = await connect_from(source, spec["port"], timeout_s=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError):
            counts["failed to connect"] += 1
            return
        reader, writer = await asyncio.open_connection(sock=sock)
        counts["connections made"] += 1
        try:
            while time.monotonic() < deadline:
                writer.write(join)
                counts["joins sent"] += spec["batch"]
                counts["bytes sent"] += len(join)
                async with asyncio.timeout(max(0.1, deadline - time.monotonic())):
                    for _ in range(spec["batch"]):
                        line = await reader.readline()
                        if not line:
                            counts["closed by the server"] += 1
                            return
                        counts["answers"] += 1
        except TimeoutError:
            pass
        finally:
            writer.transport.abort()

    sources = spread(spec["sources"])
    await asyncio.gather(*(one(next(sources)) for _ in range(spec["connections"])))
    return dict(counts)


async def seated_flood(spec: dict[str, Any]) -> Figures:
    """Pairs of connections seated in Thud games of their own (all seated first, a failed
    seating tried again until ``open_within``), then all sending ``{"type":"x"}`` as fast as
    the server takes it (reading and dropping the answers); a pair whose game ends takes seats
    in a new one."""
    counts: Counter[str] = Counter()
    sources = spread(spec["sources"])
    give_up = time.monotonic() + spec["open_within"]

    async def seat_pair(source: str) -> list[Held] | None:
        held: list[Held] = []
        try:
            first = await open_held(source, spec["port"])
            held.append(first)
            assert first.transport is not None
            first.transport.write(b'{"type":"create-simulation","game":"thud"}\n')
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                await first.until(lambda held: b"\n" in held.head)
            ready = orjson.loads(first.head.split(b"\n")[0])
            if ready.get("type") != "ready":
                raise OSError(f"refused: {ready.get('message')}")
            second = await open_held(source, spec["port"])
            held.append(second)
            for connection, side in zip(held, ("dwarf", "troll"), strict=True):
                join = {
                    "type": "join-simulation",
                    "game": "thud",
                    "nick": "flood",
                    "simulationId": ready["simulationId"],
                    "side": side,
                }
                assert connection.transport is not None
                connection.transport.write(orjson.dumps(join) + b"\n")
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                for connection in held:
                    await connection.until(lambda seated: b'"type":"game-info"' in seated.head)
            if not all(b'"type":"game-info"' in connection.head for connection in held):
                raise OSError("not seated")
        except (OSError, TimeoutError, ValueError) as error:
            counts[f"seating failed: {error}"[:80]] += 1
            abort_all(held)
            return None
        counts["games seated"] += 1
        return held

    async def seated(source: str) -> list[Held] | None:
        while time.monotonic() < give_up:
            held = await seat_pair(source)
            if held is not None:
                return held
            await asyncio.sleep(RETRY_S)
        return None

    async def flood(connection: Held, deadline: float) -> None:
        assert connection.transport is not None
        while time.monotonic() < deadline and not connection.closed.is_set():
            await connection.writable.wait()
            if connection.closed.is_set():
                return
            connection.transport.write(SEATED_FLOOD)
            counts["bytes sent"] += len(SEATED_FLOOD)
            await asyncio.sleep(0)

    async def pair(held: list[Held] | None, deadline: float) -> None:
        while held is not None:
            await asyncio.gather(*(flood(connection, deadline) for connection in held))
            for connection in held:
                counts["bytes received"] += connection.received
            abort_all(held)
            held = await seat_pair(next(sources)) if time.monotonic() < deadline else None

    started = time.monotonic()
    pairs = await asyncio.gather(*(seated(next(sources)) for _ in range(spec["connections"] // 2)))
    counts["seconds to seat them"] = round(time.monotonic() - started)
    deadline = ends(spec)
    await asyncio.gather(*(pair(held, deadline) for held in pairs))
    figures: Figures = dict(counts)
    figures["connections"] = spec["connections"]
    return figures


async def seek_flood(spec: dict[str, Any]) -> Figures:
    """``connections`` guest seeks (``{"type":"seek","game":GAME,"nick":...}``), one a
    connection, spread over the nodes' ``ports`` and the ``sources``, all sent at once, all
    under one nick (``one_nick``: none of them may meet another) or each under its own: a
    connection the pool pairs (``game-info``) or the server refuses or closes is closed and
    seeks again from a new connection, until ``seconds`` are over, so that as many seeks wait
    as the arena takes."""
    counts: Counter[str] = Counter()
    deadline = ends(spec)
    numbers = itertools.count()
    ports, sources = itertools.cycle(spec["ports"]), spread(spec["sources"])

    async def seeking(source: str, port: int) -> None:
        while time.monotonic() < deadline:
            try:
                connection = await open_held(source, port)
            except (OSError, TimeoutError) as error:
                counts[f"{type(error).__name__} (tried again)"] += 1
                await asyncio.sleep(RETRY_S)
                continue
            nick = "flood" if spec["one_nick"] else f"flood {next(numbers)}"
            seek = {"type": "seek", "game": spec["game"], "nick": nick}
            assert connection.transport is not None
            connection.transport.write(orjson.dumps(seek) + b"\n")
            counts["seeks sent"] += 1
            try:
                async with asyncio.timeout(max(0.1, deadline - time.monotonic())):
                    await connection.until(lambda held: b"\n" in held.head)
            except TimeoutError:
                counts["waiting at the end"] += 1
                connection.abort()
                return
            first = connection.head.split(b"\n")[0]
            answer = orjson.loads(first) if first else {}
            if answer.get("type") == "game-info":
                counts["paired"] += 1
            elif answer.get("type") == "error":
                counts[f"refused: {answer.get('message')}"] += 1
                await asyncio.sleep(RETRY_S)
            else:
                counts["closed by the server"] += 1
                await asyncio.sleep(RETRY_S)
            connection.abort()

    await asyncio.gather(*(seeking(next(sources), next(ports)) for _ in range(spec["connections"])))
    return dict(counts)


# --- pages -------------------------------------------------------------------------------------
def handshake(path: str = "/ws") -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    return (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ).encode()


def websocket_frame(text: bytes) -> bytes:
    """A masked text frame, as a browser sends it (short messages only)."""
    mask = os.urandom(4)
    return (
        bytes([0x81, 0x80 | len(text)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(text))
    )


async def upgraded(connection: Held) -> None:
    """Send the websocket handshake and wait for the server's answer to it."""
    assert connection.transport is not None
    connection.transport.write(handshake())
    async with asyncio.timeout(CONNECT_TIMEOUT_S):
        await connection.until(lambda held: b"\r\n\r\n" in held.head)
    if not connection.head.startswith(b"HTTP/1.1 101"):
        raise OSError(f"no websocket: {connection.head[:40]!r}")


async def lobby_pages(spec: dict[str, Any]) -> Figures:
    """Pages that ask for the lobby and never read: each takes one read (the handshake's
    answer) and stops, with a 4 KiB receive buffer. One more page reads a lobby message, to
    tell its size."""
    lobby_bytes = await lobby_size(spec["sources"][0], spec["port"])

    async def ask(connection: Held) -> None:
        await upgraded(connection)
        assert connection.transport is not None
        connection.transport.write(websocket_frame(b'{"type":"lobby"}'))

    started = time.monotonic()
    held, failures = await open_many(spec["pages"], spec, ask, False, 4096)
    opened = time.monotonic() - started
    await hold_until(ends(spec))
    figures = {
        "pages open": len(held),
        "closed by the server": closed_by_server(held),
        "failures": failed(failures),
        "seconds to open them": round(opened, 1),
        "lobby message bytes": lobby_bytes,
    }
    abort_all(held)
    return figures


async def lobby_size(source: str, port: int) -> int:
    connector = aiohttp.TCPConnector(local_addr=(source, 0))
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.ws_connect(f"http://127.0.0.1:{port}/ws", max_msg_size=0) as ws,
    ):
        await ws.send_str('{"type":"lobby"}')
        async with asyncio.timeout(30):
            async for message in ws:
                if message.type is aiohttp.WSMsgType.TEXT and '"type":"lobby"' in message.data:
                    return len(message.data.encode())
    return 0


async def page_flood(spec: dict[str, Any]) -> Figures:
    """One page websocket sending bad requests as fast as it can, reading none of the answers."""
    connection = await open_held(spec["sources"][0], spec["port"], False, 4096)
    await upgraded(connection)
    deadline = ends(spec)
    assert connection.transport is not None
    batch = websocket_frame(BAD_PAGE_REQUEST) * 1000
    sent = 0
    while time.monotonic() < deadline and not connection.closed.is_set():
        if connection.transport.get_write_buffer_size() > 1 << 20:
            await asyncio.sleep(0.01)
            continue
        connection.transport.write(batch)
        sent += 1000
        await asyncio.sleep(0)
    unsent = connection.transport.get_write_buffer_size() // len(websocket_frame(BAD_PAGE_REQUEST))
    cut_off = connection.closed.is_set()
    connection.abort()
    return {
        "bad requests written": sent - unsent,
        "cut off by the server": "yes" if cut_off else "no",
    }


async def house_pages(spec: dict[str, Any]) -> Figures:
    """Pages each playing Thud as the dwarfs against the house troll, moving at once (a random
    legal move), game after game; a page refused a game asks again half a second later."""
    counts: Counter[str] = Counter()
    chance = random.Random(7)
    play = orjson.dumps(
        {"type": "play", "game": "thud", "side": "dwarf", "opponent": "troll", "nick": "p"}
    ).decode()
    sessions = {
        source: aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(source, 0)))
        for source in spec["sources"]
    }
    sources = spread(spec["sources"])
    deadline = ends(spec)

    async def page(source: str) -> None:
        try:
            async with sessions[source].ws_connect(
                f"http://127.0.0.1:{spec['port']}/ws", max_msg_size=0
            ) as ws:
                counts["pages open"] += 1
                await ws.send_str(play)
                async with asyncio.timeout(max(0.1, deadline - time.monotonic())):
                    playing = False
                    async for message in ws:
                        if message.type is aiohttp.WSMsgType.TEXT:
                            playing = await answer(ws, message.data.encode(), playing)
        except TimeoutError:
            pass
        except (aiohttp.ClientError, OSError):
            counts["pages refused or cut"] += 1

    async def answer(ws: aiohttp.ClientWebSocketResponse, text: bytes, playing: bool) -> bool:
        """Act on one message; whether the page is in a game now."""
        if text.startswith(b'{"type":"seat","message":{"type":"turn"'):
            move = orjson.loads(random_thud_move(text, chance))["move"]
            await ws.send_str(orjson.dumps({"type": "move", "move": move}).decode())
            counts["moves sent"] += 1
        elif text.startswith(b'{"type":"seat","message":{"type":"') and b"-game" in text[:50]:
            counts["games played"] += 1
            await ws.send_str(play)
        elif text.startswith(b'{"type":"seated"'):
            counts["games started"] += 1
            return True
        elif text.startswith(b'{"type":"error"'):
            counts[f"refused: {orjson.loads(text)['message']}"] += 1
            if not playing:
                await asyncio.sleep(0.5)
                await ws.send_str(play)
        return playing and b"-game" not in text[:50]

    try:
        await asyncio.gather(*(page(next(sources)) for _ in range(spec["pages"])))
    finally:
        for session in sessions.values():
            await session.close()
    return dict(counts)


# --- the Thud HTTP API --------------------------------------------------------------------------
async def api_starts(spec: dict[str, Any]) -> Figures:
    """``/start``s of the Thud API, ``per_source`` from each address, none ever played."""
    statuses: Counter[str] = Counter()
    body = orjson.dumps({"game": "begin", "player_one": "a", "player_two": "b"})
    url = f"http://127.0.0.1:{spec['port']}/start"
    deadline = ends(spec)

    async def from_source(source: str) -> None:
        connector = aiohttp.TCPConnector(local_addr=(source, 0))
        async with aiohttp.ClientSession(connector=connector) as session:
            for _ in range(spec["per_source"]):
                if time.monotonic() >= deadline:
                    return
                try:
                    async with session.post(url, data=body) as response:
                        await response.read()
                        statuses[f"answered {response.status}"] += 1
                except (aiohttp.ClientError, OSError, TimeoutError) as error:
                    statuses[f"failed: {type(error).__name__}"] += 1

    await asyncio.gather(*(from_source(source) for source in spec["sources"]))
    figures: Figures = dict(sorted(statuses.items()))
    await hold_until(deadline)
    return figures


# --- set-up -------------------------------------------------------------------------------------
async def waiting_simulations(spec: dict[str, Any]) -> Figures:
    """Simulations created and left waiting, ``per_source`` from each address, one connection
    per address (the caps: 100 waiting per address, 100 created per connection)."""
    counts: Counter[str] = Counter()
    create = b'{"type":"create-simulation"}\n'
    deadline = ends(spec)

    async def from_source(source: str) -> None:
        sock = await connect_from(source, spec["port"], timeout_s=CONNECT_TIMEOUT_S)
        reader, writer = await asyncio.open_connection(sock=sock)
        writer.write(create * spec["per_source"])
        try:
            async with asyncio.timeout(max(0.1, deadline - time.monotonic())):
                for _ in range(spec["per_source"]):
                    line = await reader.readline()
                    if not line:
                        return
                    answer = orjson.loads(line)
                    ready = answer.get("type") == "ready"
                    counts["created" if ready else f"refused: {answer.get('message')}"] += 1
        finally:
            writer.transport.abort()

    await asyncio.gather(*(from_source(source) for source in spec["sources"]))
    return dict(counts)


ATTACKERS: dict[str, Callable[[dict[str, Any]], Coroutine[Any, Any, Figures]]] = {
    "idle-tcp": idle_tcp,
    "idle-http": idle_http,
    "burst": burst,
    "brace-flood": brace_flood,
    "random-joins": random_joins,
    "seated-flood": seated_flood,
    "lobby-pages": lobby_pages,
    "page-flood": page_flood,
    "house-pages": house_pages,
    "api-starts": api_starts,
    "waiting-simulations": waiting_simulations,
    "seek-flood": seek_flood,
}


def main() -> None:
    kind, spec = sys.argv[1], orjson.loads(sys.argv[2])
    figures: Figures = uvloop.run(ATTACKERS[kind](spec))
    print(orjson.dumps(figures).decode(), flush=True)


if __name__ == "__main__":
    main()
