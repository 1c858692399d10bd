"""Bots over TCP: the listener, and one ``Connection`` per bot that relays its bytes.

A connection is an asyncio ``Protocol``: bytes arrive in ``data_received`` and go through the
sans-I/O ``MessageReader``; each message asks the arena for something (create, join, move,
rejoin) through the same match API as every front end; what the seat is sent goes to the
transport. There is no task per connection, only callbacks and timers, so a turn costs no task
switch; the connection closes its transport whatever happens.

Some bots written for the original server parse each TCP read as exactly one message. The
original kept them alive by accident (Nagle's algorithm held back a second message for about
40 ms). Here the rule is explicit: when a message the bot did not ask for (a turn, a score, the
end) follows another one to the same bot and the bot has sent nothing since, the writer waits
``message_gap`` after the previous write, so the two never arrive in one read. Replies to the
bot's own requests are never delayed (a bot that pipelines requests gets its answers at once),
and neither is a normal turn, which always follows the bot's own move.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter, deque
from collections.abc import AsyncIterator
from typing import cast

from server.arena import Arena
from server.commands import Leave, Move, Pong, asks_pings, read
from server.config import ListenError
from server.errors import BotError
from server.games.base import JsonObject
from server.meter import InputMeter, MeterLimits
from server.protocol import (
    InvalidMessage,
    Message,
    MessageReader,
    MessageTooLong,
    ReaderEvent,
    encode,
    error_message,
)
from server.proxy_header import AwaitedHeader, Balancers
from server.round_trip import RoundTrip
from server.seat_channel import SeatMessage
from server.session import Client, Session, carry_out
from server.tcp_rounds import (
    UNJOINED_INPUT_PER_ROUND,
    WRITE_BATCH_S,
    IdleDeadline,
    RoundBudget,
    WriteBatch,
    keep_alive,
    kernel_round_trip_s,
)
from server.tcp_writer import PacedWriter

log = logging.getLogger(__name__)

READ_CHUNK = 16_384  # at most this much of one peer's input is handled per loop round
# Messages parsed ahead of handling: a chunk of many small messages is parsed as they are
# handled, so that a peer past its meter's budget costs nothing more until it is back within it.
PARSED_AHEAD = 32
UNMETERED_INPUT = 4096  # what a connection may send before the budget applies: a join fits
CLOSE_FLUSH_TIMEOUT_S = 5.0
CLOSE_WAIT_S = 2.0
LISTEN_BACKLOG = 4096  # bursts of connections (a load test, a tournament) must not be refused
ERROR_LINE = b'{"type":"error"'  # how every error line starts (server.protocol.error_message)


class TcpServer:
    """The TCP listener and its connections."""

    def __init__(self, arena: Arena) -> None:
        self.arena = arena
        self.port: int | None = None
        self.connections: set[Connection] = set()
        self.write_batch = WriteBatch(WRITE_BATCH_S)
        self.unjoined_input = RoundBudget(UNJOINED_INPUT_PER_ROUND)
        config = arena.config
        self.meter_limits = MeterLimits(
            bytes_per_s=config.max_input_bytes_per_second,
            bytes_burst=max(config.max_input_bytes_per_second, 2 * config.max_message_bytes),
            errors_per_s=config.max_errors_per_second,
            errors_burst=2 * config.max_errors_per_second,
        )
        self.balancers = Balancers(config.balancers)
        self._per_address: Counter[str] = Counter()
        # Connections without a game, each in the order it came to be so (dicts as ordered
        # sets): idle ones (neither seeking nor a registered bot present for challenges), and
        # waiting ones (one or the other).
        self._idle: dict[Connection, None] = {}
        self._waiting: dict[Connection, None] = {}
        self._all_closed = asyncio.Event()

    def accepted(self, connection: Connection) -> None:
        """A new connection: counted, or refused past the limits. A full arena makes room by
        closing the connection idle longest, or if none is idle the one waiting longest for a
        game or a challenge (a ladder bot waiting is there for a reason: it goes only after
        every connection that does nothing), so that connections without a game, from however
        few addresses, never lock new bots out; a seated one never gives way."""
        config = self.arena.config
        full = len(self.connections) >= config.max_connections
        if full and (way := self._giving_way()) is not None:  # its place is the newcomer's
            oldest, what = way
            oldest.refuse(
                BotError.TOO_MANY_CONNECTIONS, f"the arena is full: the longest {what} gives way"
            )
            full = False
        if full:
            connection.refuse(
                BotError.TOO_MANY_CONNECTIONS, f"the arena takes {config.max_connections}"
            )
        elif self._per_address[connection.address] >= config.max_connections_per_address:
            connection.refuse(
                BotError.TOO_MANY_CONNECTIONS,
                f"at most {config.max_connections_per_address} from one address",
            )
        else:
            self._idle[connection] = None
        self.connections.add(connection)
        self._all_closed.clear()
        self._per_address[connection.address] += 1

    def _giving_way(self) -> tuple[Connection, str] | None:
        """The connection a newcomer to a full arena replaces, and what it is."""
        for tier, what in ((self._idle, "idle connection"), (self._waiting, "waiting one")):
            while tier:
                oldest = next(iter(tier))
                oldest.watch_idle()  # a bot may have named itself since (its key checked)
                if oldest in tier:
                    return oldest, what
        return None

    def waits(self, connection: Connection, idle: bool) -> None:
        """The connection holds no game: idle, or waiting for a game or a challenge."""
        tier, other = (self._idle, self._waiting) if idle else (self._waiting, self._idle)
        if connection not in tier:
            other.pop(connection, None)
            tier[connection] = None

    def joined(self, connection: Connection) -> None:
        """The connection has a game (or is closing): it no longer gives way to newcomers."""
        self._idle.pop(connection, None)
        self._waiting.pop(connection, None)

    def disconnected(self, connection: Connection) -> None:
        self.joined(connection)
        if connection in self.connections:
            self.connections.discard(connection)
            self._per_address[connection.address] -= 1
            if not self._per_address[connection.address]:
                del self._per_address[connection.address]
            if not self.connections:
                self._all_closed.set()
        connection.left()

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[TcpServer]:
        """Listen for bots until the block exits; then tell each why it is closed, and close."""
        config = self.arena.config
        loop = asyncio.get_running_loop()
        try:
            server = await loop.create_server(
                lambda: Connection(self),
                config.host,
                config.port,
                reuse_address=True,
                backlog=LISTEN_BACKLOG,
            )
        except OSError as error:
            change = '--port N (or "port" in config.json)'
            raise ListenError("bots", config.host, config.port, error, change) from error
        self.port = self.arena.bot_port = server.sockets[0].getsockname()[1]
        log.info("bots connect to %s:%s", config.host, self.port)
        try:
            async with server:
                try:
                    yield self
                finally:
                    server.close()  # stop accepting before anything else
                    # Stop the games first (kept as unfinished: a bot whose connection then
                    # closes cannot win one by forfeit), then tell every bot why it is closed.
                    self.arena.stop_matches()
                    for connection in list(self.connections):
                        connection.refuse(BotError.SERVER_SHUTTING_DOWN, "the arena is stopping")
        finally:
            # Connections flush what they were told and close on their own; give them a moment.
            if self.connections:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(CLOSE_WAIT_S):
                        await self._all_closed.wait()
            for connection in list(self.connections):
                connection.abort()


class Connection(asyncio.Protocol):
    """A TCP peer's bytes: its session's messages in, and what the session sends it out
    (``server.session.SessionChannel``)."""

    def __init__(self, server: TcpServer) -> None:
        self.server = server
        self.arena = server.arena
        config = self.arena.config
        self.protocol = MessageReader(config.max_message_bytes)
        self.session = Session(self.arena, Client("?"), self)
        self.address = self.peer = "?"
        self.transport: asyncio.Transport | None = None
        self._idle = IdleDeadline(config.idle_timeout_ms / 1000, self._idled)
        self.round_trip = RoundTrip(config.ping_interval_ms / 1000)
        self.out = PacedWriter(
            config.message_gap_ms / 1000,
            config.max_send_buffer_bytes,
            server.write_batch,
            self._out_drained,
        )
        self._handling = False  # while one of the bot's messages is being handled
        self._closing = False  # no more input is handled, and the socket closes once flushed
        self._received = 0
        self._pending = b""  # input waiting for its turn (the round budget, or a later round)
        self._held: deque[ReaderEvent] = deque()  # read, not handled yet (see _handle_held)
        self.meter = InputMeter(server.meter_limits, time.monotonic())
        self._close_deadline: asyncio.TimerHandle | None = None
        self._metered: asyncio.TimerHandle | None = None  # reading paused for the meter
        # A balancer's connection: its PROXY header, until it names the client.
        self._header: AwaitedHeader | None = None

    # --- asyncio.Protocol ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's is not a subclass of asyncio.Transport, but has its API).
        self.transport = self.out.transport = cast(asyncio.Transport, transport)
        keep_alive(transport.get_extra_info("socket"))
        peer = transport.get_extra_info("peername")
        if self.server.balancers.listed(peer):
            # The client is the one its header names: nothing is counted before it has.
            self._name_peer(peer)
            self._header = AwaitedHeader(peer, self.arena.clock, self._begin, self._not_proxied)
            return
        self._begin(peer)

    def _name_peer(self, peer: object) -> None:
        self.address = str(peer[0]) if isinstance(peer, tuple) else str(peer)
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)

    def _begin(self, peer: object) -> None:
        """The client is known (``peer``): counted, and its time to join a game starts."""
        self._name_peer(peer)
        if self._header is None and self.transport is not None:  # no balancer in between
            sock = self.transport.get_extra_info("socket")
            self.round_trip.kernel = lambda: kernel_round_trip_s(sock)
        self.session.client = Client(self.address, round_trip=self.round_trip)
        # Counted from the connection, not reset by each byte: a peer that trickles bytes
        # without joining is closed as surely as a silent one.
        self._idle.start()
        self.server.accepted(self)

    def data_received(self, data: bytes) -> None:
        if self._header is not None and self._header.waiting:
            data = self._header.feed(data)
        if self._closing or not data:
            return
        self._pending += data
        self._read_more()

    def _not_proxied(self, why: str) -> None:
        """A balancer's connection without its PROXY header: closed (a balancer that sends
        none is set up wrong, and its clients' addresses are unknown)."""
        log.warning("connection %s from a balancer: no PROXY header (%s): closed", self.peer, why)
        self.abort()

    def eof_received(self) -> bool:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            log.info("connection %s: %s", self.peer, exc)
        self._closing = True
        self._idle.stop()
        for timer in (self._close_deadline, self._metered):
            if timer is not None:
                timer.cancel()
        if self._header is not None:
            self._header.stop()
        self.out.clear()
        self._held.clear()
        self.server.disconnected(self)

    def _read_more(self) -> None:
        """Handle pending input, ``READ_CHUNK`` bytes a round: more waits for a later round, so
        that a flooding peer gets its share and no more; and no faster than its meter allows."""
        assert self.transport is not None
        if self._closing or self._metered is not None:
            return
        if self._held or self.protocol.more:  # ``_unhandled``, inline: every chunk read
            self._handle_held()
        now = time.monotonic()
        wait_s = self.meter.pause_s(now)
        if wait_s > 0 and (self._unhandled() or self._pending):
            # Past its budget: the peer is read again once it has paid it back.
            self.transport.pause_reading()
            self._metered = asyncio.get_running_loop().call_later(wait_s, self._meter_paid)
            return
        if not self._pending:
            return
        chunk, self._pending = self._pending[:READ_CHUNK], self._pending[READ_CHUNK:]
        self.meter.received(len(chunk), now)
        self._received += len(chunk)
        if (
            not self.session.in_game
            and self._received > UNMETERED_INPUT
            and not self.server.unjoined_input.take(len(chunk), lambda: self._resume(chunk))
        ):
            self.transport.pause_reading()
            return
        self._handle(chunk)
        if (self._pending or self._held or self.protocol.more) and not self._closing:
            self.transport.pause_reading()
            asyncio.get_running_loop().call_soon(self._resume, b"")

    def _meter_paid(self) -> None:
        self._metered = None
        self._resume(b"")

    def _resume(self, chunk: bytes) -> None:
        """The chunk's turn has come (if any): handle it, then what is still pending."""
        if self._closing or self.transport is None:
            return
        if chunk:
            self._handle(chunk)
        if self._pending or self._unhandled():
            self._read_more()
        if (
            not self._pending
            and not self._unhandled()
            and not self._closing
            and self._metered is None
        ):
            self.transport.resume_reading()

    def _handle(self, data: bytes) -> None:
        """Act on what a chunk completed."""
        self.out.last_read = time.monotonic()
        self._held.extend(self.protocol.feed(data, PARSED_AHEAD))
        self._handle_held()

    def _unhandled(self) -> bool:
        """Messages read and not handled yet, or bytes read and not parsed yet."""
        return bool(self._held) or self.protocol.more

    def _handle_held(self) -> None:
        """Act on the messages read and not handled yet, in order, until the peer is past its
        meter's budget. The answers, errors included, are replies: they go out at once, never
        paced like the messages a bot did not ask for."""
        self._handling = True
        held = self._held
        try:
            while not self._closing:
                if not held:
                    if not self.protocol.more:
                        break
                    held.extend(self.protocol.feed(b"", PARSED_AHEAD))
                    continue
                event = held.popleft()
                if isinstance(event, Message):
                    try:
                        self._message(event.payload)
                    except Exception:  # a bug must cost this request, not the connection
                        log.exception("connection %s: handling %r failed", self.peer, event.type)
                        self.error(BotError.SERVER_ERROR, "the request failed; it was logged")
                elif isinstance(event, InvalidMessage):
                    self.error(BotError.INVALID_JSON, event.reason)
                elif isinstance(event, MessageTooLong):
                    limit = f"messages are limited to {event.limit} bytes"
                    self.refuse(BotError.MESSAGE_TOO_LONG, limit)
                if (held or self.protocol.more) and self.meter.pause_s(time.monotonic()) > 0:
                    break  # the rest waits until the peer is back within its budget
        finally:
            self._handling = False

    def _message(self, message: JsonObject) -> None:
        command = read(message)
        if type(command) is Pong:
            self.round_trip.pong(command.ping_id, self.arena.clock.now())
            return
        if not isinstance(command, Move):
            if asks_pings(command):
                self.round_trip.pings = True
            carry_out(self.arena, self.session, self.session.handle(command))
            self.watch_idle()
            return
        # What a move causes (a point, the other side's turn, the end) is the game's news, not
        # an answer: it is paced like any message the bot did not ask for.
        self._handling = False
        try:
            if effects := self.session.handle(command):  # a move to a seat has none
                carry_out(self.arena, self.session, effects)
        finally:
            self._handling = True
        if self.round_trip.pings:  # the bot has just played: it is not thinking
            self._ping()

    def _ping(self) -> None:
        """A ping, if one is due: written with this round's writes, ahead of none of the bot's
        messages, and never paced (it makes the next message no later)."""
        if self.out.pacing or self._closing:
            return
        if ping := self.round_trip.ping(self.arena.clock.now()):
            self.out.send_unpaced(encode(ping))

    def watch_idle(self) -> None:
        """``idleTimeoutMs`` counts only while the connection is idle (``Session.idle``: no
        game, no seek, not a registered bot present for challenges), from when it became so;
        bytes sent meanwhile do not extend it. Called where the session may have become idle
        (a command carried out, a refusal, a game's end) or busy; a bot that becomes present
        after its key is checked, with no word, is found so here when its deadline comes."""
        if self._closing:
            return
        session = self.session
        idle = session.idle
        if session.in_game:
            self.server.joined(self)
        else:
            self.server.waits(self, idle)
        if idle:
            self._idle.start()
        else:
            self._idle.stop()

    def _idled(self) -> None:
        if self.session.idle:
            reason = f"no game, no seek and no registered bot named in {self._idle.idle_s:g} s"
            self.refuse(BotError.IDLE_TIMEOUT, reason)
        else:
            self.watch_idle()

    # --- SessionChannel ------------------------------------------------------------------------
    def seated(self) -> None:
        self.watch_idle()
        self._ping()

    def send(self, message: SeatMessage) -> None:
        self.send_data(encode(message.body))  # every turn: one call less than ``send_body``

    def send_body(self, message: JsonObject) -> None:
        """Queue one message for the bot."""
        self.send_data(encode(message))

    def send_data(self, data: bytes) -> None:
        """Queue one encoded message for the bot."""
        transport = self.transport
        if self._closing or transport is None or transport.is_closing():
            return
        if data.startswith(ERROR_LINE):  # the bot's mistakes are metered (see server.meter)
            self.meter.erred(time.monotonic())
        # A bot that asks for pings reads lines: nothing to it is paced (see above).
        if not self.out.send(data, self._handling or self.round_trip.pings):
            log.info("connection %s: send buffer full, dropped", self.peer)
            self.abort()  # and its game forfeited

    def _out_drained(self) -> None:
        if self._closing:
            self._close_when_written()

    def refuse(self, message: str, reason: str) -> None:
        """A limit was reached: say which, then close."""
        self.send_body(error_message(message, reason))
        self.hang_up()

    def error(self, message: str, reason: str | None = None) -> None:
        self.send_body(error_message(message, reason))
        self.watch_idle()  # a refusal may end a seek or a seat asked for

    def close(self) -> None:
        """The seat's channel is closed. A ladder client whose game is over stays connected,
        free for another (``Session.stays_connected``); otherwise the connection closes."""
        if self.session.stays_connected:
            self.watch_idle()
        else:
            self.hang_up()

    def hang_up(self) -> None:
        """Stop handling input; close the socket once what is queued has been written."""
        if self._closing:
            return
        self._closing = True
        self._pending = b""
        self.server.joined(self)
        if not self.out.pacing:
            self._close_when_written()

    def _close_when_written(self) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        self.out.write_unsent()
        transport.close()  # after the buffered bytes; a peer that reads nothing is aborted
        self._close_deadline = asyncio.get_running_loop().call_later(
            CLOSE_FLUSH_TIMEOUT_S, self.abort
        )

    def abort(self) -> None:
        """Drop the connection now, with whatever is queued."""
        self._closing = True
        self.out.clear()
        if self.transport is not None:
            self.transport.abort()

    def left(self) -> None:
        """The connection ended: its seat is freed or forfeited."""
        self.session.handle(Leave())  # at once, with no effect
