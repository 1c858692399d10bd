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
from collections.abc import AsyncIterator, Callable
from typing import cast

from server.arena import MAX_SEED, TOO_MANY_SIMULATIONS, Arena, RemoteSeat
from server.config import ListenError
from server.games import DEFAULT_GAME
from server.games.base import JoinRejected, JsonObject
from server.match import SERVER_ERROR, Match, MatchOptions, SeatMessage, SeatRequest
from server.meter import InputMeter, MeterLimits
from server.protocol import (
    INVALID_JSON,
    MESSAGE_TOO_LONG,
    InvalidMessage,
    Message,
    MessageReader,
    MessageTooLong,
    ReaderEvent,
    encode,
    error_message,
)

log = logging.getLogger(__name__)

READ_CHUNK = 16_384  # at most this much of one peer's input is handled per loop round
UNJOINED_INPUT_PER_ROUND = 32_768  # see RoundBudget
UNMETERED_INPUT = 4096  # what a connection may send before the budget applies: a join fits
CLOSE_FLUSH_TIMEOUT_S = 5.0
WRITE_BATCH_S = 0.001  # see WriteBatch: measured with bench/load.py, 300 to 1,000 games
CLOSE_WAIT_S = 2.0
LISTEN_BACKLOG = 4096  # bursts of connections (a load test, a tournament) must not be refused
SHUTTING_DOWN = "Server shutting down"
WRONG_SIMULATION_ID = "Wrong simulation ID"
TOO_MANY_CONNECTIONS = "Too many connections"
ERROR_LINE = b'{"type":"error"'  # how every error line starts (server.protocol.error_message)


class WriteBatch:
    """Socket writes made together: at the end of the event loop's round, or sooner once the
    first has waited ``most_s``.

    A write to a bot's socket may wake the bot's process. Made one by one between turns, such
    writes cost more than the rest of a turn under load; made back to back, most find their
    process already awake (Tavern under load: 12,000 to 14,000 turns/s instead of 10,600 to
    11,100). The wait is bounded: held to the end of a long round (a burst of turns), the first
    writes of the round made the reply latency's p99 two to three times longer.
    """

    def __init__(self, most_s: float) -> None:
        self.most_s = most_s
        self._connections: list[Connection] = []
        self._since = 0.0
        self._flush_due = False

    def add(self, connection: Connection) -> None:
        if not self._connections:
            self._since = time.perf_counter()
        self._connections.append(connection)
        if time.perf_counter() - self._since >= self.most_s:
            self._write()
        elif not self._flush_due:
            self._flush_due = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self._flush_due = False
        self._write()

    def _write(self) -> None:
        connections, self._connections = self._connections, []
        for connection in connections:
            connection.write_unsent()


class RoundBudget:
    """Input bytes from connections that have not joined a game, handled per loop round.

    Such connections cannot delay the games: however many of them send at once, each round of
    the event loop handles at most about ``per_round`` of their bytes, in the order they came;
    the others stop reading (their bytes wait in the kernel's buffers) until their turn, while
    seated bots are served at once, and so is what a connection sends first
    (``UNMETERED_INPUT``: a create or a join), so a bot that has just connected never waits
    behind the flood.
    """

    def __init__(self, per_round: int) -> None:
        self.per_round = per_round
        self._left = per_round
        self._waiting: deque[tuple[int, Callable[[], None]]] = deque()
        self._refill_due = False

    def take(self, size: int, then: Callable[[], None]) -> bool:
        """True if ``size`` bytes may be handled now; else ``then`` is called when they may."""
        if self._left > 0 and not self._waiting:
            self._left -= size
            self._refill_soon()
            return True
        self._waiting.append((size, then))
        self._refill_soon()
        return False

    def _refill_soon(self) -> None:
        if not self._refill_due:
            self._refill_due = True
            asyncio.get_running_loop().call_soon(self._refill)

    def _refill(self) -> None:
        """A new round: let through as many waiting as its budget allows, and no more."""
        self._refill_due = False
        left = self.per_round
        loop = asyncio.get_running_loop()
        while self._waiting and left > 0:
            size, then = self._waiting.popleft()
            loop.call_soon(then)
            left -= size
        self._left = left
        if self._waiting:
            self._refill_soon()


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
        self._per_address: Counter[str] = Counter()
        # Connections that have not joined a game yet, oldest first (a dict as an ordered set).
        self._unjoined: dict[Connection, None] = {}
        self._all_closed = asyncio.Event()

    def accepted(self, connection: Connection) -> None:
        """A new connection: counted, or refused past the limits. A full arena makes room by
        closing the connection that has waited longest without joining a game, so that idle
        connections, from however few addresses, never lock new bots out."""
        config = self.arena.config
        full = len(self.connections) >= config.max_connections
        if full and self._unjoined:  # its place is the newcomer's
            oldest = next(iter(self._unjoined))
            oldest.refuse(
                TOO_MANY_CONNECTIONS, "the arena is full: the longest idle connection gives way"
            )
            full = False
        if full:
            connection.refuse(TOO_MANY_CONNECTIONS, f"the arena takes {config.max_connections}")
        elif self._per_address[connection.address] >= config.max_connections_per_address:
            connection.refuse(
                TOO_MANY_CONNECTIONS,
                f"at most {config.max_connections_per_address} from one address",
            )
        else:
            self._unjoined[connection] = None
        self.connections.add(connection)
        self._all_closed.clear()
        self._per_address[connection.address] += 1

    def joined(self, connection: Connection) -> None:
        """The connection has a game (or is closing): it no longer gives way to newcomers."""
        self._unjoined.pop(connection, None)

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
                        connection.refuse(SHUTTING_DOWN, "the arena is stopping")
        finally:
            # Connections flush what they were told and close on their own; give them a moment.
            if self.connections:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(CLOSE_WAIT_S):
                        await self._all_closed.wait()
            for connection in list(self.connections):
                connection.abort()


class Connection(asyncio.Protocol):
    """A TCP peer and what it asks of the arena; implements ``SeatChannel`` for its seat."""

    def __init__(self, server: TcpServer) -> None:
        self.server = server
        self.arena = server.arena
        config = self.arena.config
        self.protocol = MessageReader(config.max_message_bytes)
        self.seat: tuple[Match, int] | None = None
        self.remote: RemoteSeat | None = None  # a seat asked for or taken on another node
        self._random_join: JsonObject | None = None  # the random join a remote seat answers
        self._claimed = False  # the random join went through the nodes' claim (see _join)
        self.simulations_created = 0
        self.address = self.peer = "?"
        self.transport: asyncio.Transport | None = None
        self._gap_s = config.message_gap_ms / 1000
        self._idle_s = config.idle_timeout_ms / 1000
        self._max_buffered = config.max_send_buffer_bytes
        self._outbox: deque[tuple[bytes, bool]] = deque()  # (data, answers a request)
        self._outbox_bytes = 0
        self._unsent: list[bytes] = []  # due now, written at the end of this round (WriteBatch)
        self._unsent_bytes = 0
        self._handling = False  # while one of the bot's messages is being handled
        self._closing = False  # no more input is handled, and the socket closes once flushed
        self._last_write = 0.0
        self._last_read = 0.0
        self._received = 0
        self._pending = b""  # input waiting for its turn (the round budget, or a later round)
        self._held: deque[ReaderEvent] = deque()  # read, not handled yet (see _handle_held)
        self.meter = InputMeter(server.meter_limits, time.monotonic())
        self._join_deadline: asyncio.TimerHandle | None = None
        self._paced_write: asyncio.TimerHandle | None = None
        self._close_deadline: asyncio.TimerHandle | None = None
        self._metered: asyncio.TimerHandle | None = None  # reading paused for the meter

    # --- asyncio.Protocol ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's is not a subclass of asyncio.Transport, but has its API).
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.address = str(peer[0]) if isinstance(peer, tuple) else str(peer)
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        # Counted from the connection, not reset by each byte: a peer that trickles bytes
        # without joining is closed as surely as a silent one.
        loop = asyncio.get_running_loop()
        self._join_deadline = loop.call_later(self._idle_s, self._idle)
        self.server.accepted(self)

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        self._pending += data
        self._read_more()

    def eof_received(self) -> bool:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            log.info("connection %s: %s", self.peer, exc)
        self._closing = True
        for timer in (self._join_deadline, self._paced_write, self._close_deadline, self._metered):
            if timer is not None:
                timer.cancel()
        self._outbox.clear()
        self._unsent.clear()
        self._held.clear()
        self.server.disconnected(self)

    def _read_more(self) -> None:
        """Handle pending input, ``READ_CHUNK`` bytes a round: more waits for a later round, so
        that a flooding peer gets its share and no more; and no faster than its meter allows."""
        assert self.transport is not None
        if self._closing or self._metered is not None:
            return
        if self._held:
            self._handle_held()
        now = time.monotonic()
        wait_s = self.meter.pause_s(now)
        if wait_s > 0 and (self._held or self._pending):
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
            not self.seat
            and self.remote is None
            and self._received > UNMETERED_INPUT
            and not self.server.unjoined_input.take(len(chunk), lambda: self._resume(chunk))
        ):
            self.transport.pause_reading()
            return
        self._handle(chunk)
        if (self._pending or self._held) and not self._closing:
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
        if self._pending or self._held:
            self._read_more()
        if not self._pending and not self._held and not self._closing and self._metered is None:
            self.transport.resume_reading()

    def _handle(self, data: bytes) -> None:
        """Act on what a chunk completed."""
        self._last_read = time.monotonic()
        self._held.extend(self.protocol.feed(data))
        self._handle_held()

    def _handle_held(self) -> None:
        """Act on the messages read and not handled yet, in order, until the peer is past its
        meter's budget. The answers, errors included, are replies: they go out at once, never
        paced like the messages a bot did not ask for."""
        self._handling = True
        held = self._held
        try:
            while held and not self._closing:
                event = held.popleft()
                if isinstance(event, Message):
                    try:
                        self.handle(event.payload)
                    except Exception:  # a bug must cost this request, not the connection
                        log.exception("connection %s: handling %r failed", self.peer, event.type)
                        self.error(SERVER_ERROR, "the request failed; it was logged")
                elif isinstance(event, InvalidMessage):
                    self.error(INVALID_JSON, event.reason)
                elif isinstance(event, MessageTooLong):
                    self.refuse(MESSAGE_TOO_LONG, f"messages are limited to {event.limit} bytes")
                if held and self.meter.pause_s(time.monotonic()) > 0:
                    break  # the rest waits until the peer is back within its budget
        finally:
            self._handling = False

    def _idle(self) -> None:
        self._join_deadline = None
        if self.seat is None and self.remote is None:
            self.refuse("Idle timeout", f"nothing joined in {self._idle_s:g} s")

    def _seated(self, match: Match, seat: int) -> None:
        self.seat = (match, seat)
        self.remote_seated()

    # --- RemotePeer (a seat on another node) --------------------------------------------------
    def remote_seated(self) -> None:
        self.server.joined(self)
        if self._join_deadline is not None:
            self._join_deadline.cancel()
            self._join_deadline = None

    def remote_refused(self, message: str, reason: str | None) -> None:
        self.remote = None
        random_join = self._random_join
        elsewhere = self.arena.elsewhere
        if random_join is None or self._closing:
            self.error(message, reason)
        elif not self._claimed and elsewhere is not None:
            # Taken meanwhile: the nodes agree on where the next one opens.
            self._claimed = True
            game = random_join.get("game", DEFAULT_GAME) or DEFAULT_GAME
            self.remote = elsewhere.random_join(self, game, random_join)
        else:  # refused even so: it waits for a partner here
            self.open_here(None)

    def open_here(self, simulation_id: str | None) -> None:
        self.remote = None
        random_join, self._random_join = self._random_join, None
        if random_join is not None and not self._closing:
            self._join_here(random_join, simulation_id)

    # --- SeatChannel -------------------------------------------------------------------------
    def send(self, message: SeatMessage) -> None:
        self.send_body(message.body)

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
        buffered = self._outbox_bytes + self._unsent_bytes + transport.get_write_buffer_size()
        if buffered + len(data) > self._max_buffered:
            # The bot stopped reading: past the high-water mark it is dropped (and forfeits),
            # so its backlog can never eat the server's memory.
            log.info("connection %s: send buffer full (%d bytes), dropped", self.peer, buffered)
            self.abort()
            return
        if not self._outbox and not self._needs_gap(self._handling):
            # Nothing is waiting and no pause is due: written at the end of this round. The
            # transport buffers what the socket cannot take yet (bounded above).
            self._unsent.append(data)
            self._unsent_bytes += len(data)
            self._last_write = time.monotonic()
            if len(self._unsent) == 1:
                self.server.write_batch.add(self)  # may write at once
            return
        self._outbox.append((data, self._handling))
        self._outbox_bytes += len(data)
        if len(self._outbox) == 1:
            self._write_paced()

    def write_unsent(self) -> None:
        """Hand what ``send`` left for this round to the transport, in order."""
        unsent, self._unsent, self._unsent_bytes = self._unsent, [], 0
        transport = self.transport
        if transport is not None and not transport.is_closing() and unsent:
            transport.writelines(unsent)

    def _write_paced(self) -> None:
        """Write the outbox, waiting out each message's pause; a message stays queued through
        its pause, so nothing sent meanwhile can overtake it."""
        self._paced_write = None
        while self._outbox:
            data, is_reply = self._outbox[0]
            if self._needs_gap(is_reply):
                wait = self._gap_s - (time.monotonic() - self._last_write)
                self._paced_write = asyncio.get_running_loop().call_later(wait, self._write_paced)
                return
            self._outbox.popleft()
            self._outbox_bytes -= len(data)
            self.write_unsent()  # what send left for this round came before this
            if self.transport is not None and not self.transport.is_closing():
                self.transport.write(data)
            self._last_write = time.monotonic()
        if self._closing:
            self._close_when_written()

    def _needs_gap(self, is_reply: bool) -> bool:
        """A message the bot did not ask for, right after another with no word from the bot."""
        return (
            not is_reply
            and self._last_write > self._last_read
            and time.monotonic() - self._last_write < self._gap_s
        )

    def refuse(self, message: str, reason: str) -> None:
        """A limit was reached: say which, then close."""
        self.send_body(error_message(message, reason))
        self.close()

    def error(self, message: str, reason: str | None = None) -> None:
        self.send_body(error_message(message, reason))

    def close(self) -> None:
        """Stop handling input; close the socket once what is queued has been written."""
        if self._closing:
            return
        self._closing = True
        self._pending = b""
        self.server.joined(self)
        if not self._outbox:
            self._close_when_written()

    def _close_when_written(self) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        self.write_unsent()
        transport.close()  # after the buffered bytes; a peer that reads nothing is aborted
        self._close_deadline = asyncio.get_running_loop().call_later(
            CLOSE_FLUSH_TIMEOUT_S, self.abort
        )

    def abort(self) -> None:
        """Drop the connection now, with whatever is queued."""
        self._closing = True
        self._outbox.clear()
        self._unsent.clear()
        if self.transport is not None:
            self.transport.abort()

    # --- requests ------------------------------------------------------------------------------
    def handle(self, message: JsonObject) -> None:
        """Act on one message from the bot."""
        kind = message["type"]
        if kind == "create-simulation":
            self._create(message)
        elif kind == "join-simulation":
            self._join(message)
        elif kind == "player-turn":
            if self.remote is not None:
                self.remote.submit(message)
                return
            if self.seat is None:
                self.error("Not in a game", "join a simulation first")
                return
            match, seat = self.seat
            # What a move causes (a point, the other side's turn, the end) is the game's news,
            # not an answer: it is paced like any message the bot did not ask for.
            self._handling = False
            try:
                match.submit(seat, message, self)
            finally:
                self._handling = True
        elif kind == "rejoin":
            self._rejoin(message)
        else:
            self.error("Unknown message type", f"unknown type {kind!r}")

    def _game_name(self, message: JsonObject) -> str | None:
        name = message.get("game", DEFAULT_GAME)
        if name is None:
            name = DEFAULT_GAME
        if not isinstance(name, str) or name not in self.arena.games:
            self.error("Unknown game", f"game must be one of: {', '.join(self.arena.games)}")
            return None
        return name

    def _seed(self, message: JsonObject) -> tuple[bool, int | None]:
        seed = message.get("seed")
        if seed is None:
            return True, None
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            self.error("Invalid seed", f"seed must be an integer from 0 to {MAX_SEED}")
            return False, None
        return True, seed

    def _create(self, message: JsonObject) -> None:
        game = self._game_name(message)
        valid, seed = self._seed(message)
        if game is None or not valid:
            return
        limit = self.arena.config.max_simulations_per_connection
        if self.simulations_created >= limit:
            self.refuse(TOO_MANY_SIMULATIONS, f"at most {limit} per connection")
            return
        try:
            match = self.arena.open(game, MatchOptions(seed=seed, creator=self.address))
        except JoinRejected as rejected:
            self.error(rejected.message, rejected.reason)
            return
        self.simulations_created += 1
        self.send_body(match.codec.ready_message(match.id, match.seed))

    def _join(self, message: JsonObject) -> None:
        if self.seat is not None or self.remote is not None:
            self.error("Already in a game", "one game per connection")
            return
        simulation_id = message.get("simulationId")
        elsewhere = self.arena.elsewhere
        if (
            isinstance(simulation_id, str)
            and simulation_id
            and elsewhere is not None
            and self.arena.get(simulation_id) is None
        ):
            self.remote = elsewhere.seat(self, simulation_id, message, rejoin=False)
            return
        if not simulation_id and elsewhere is not None:
            game = message.get("game", DEFAULT_GAME) or DEFAULT_GAME
            try:
                here = self.arena.waiting(game, message) if game in self.arena.games else None
            except JoinRejected as rejected:
                self.error(rejected.message, rejected.reason)
                return
            if game in self.arena.games and here is None:
                # Nothing waits here: one waiting on another node, or else the one the nodes
                # agree is opened for the random joins arriving at this moment.
                self._random_join = message
                found_id = elsewhere.waiting(game, message)
                self._claimed = found_id is None
                if found_id is not None:
                    self.remote = elsewhere.seat(self, found_id, message, rejoin=False)
                else:
                    self.remote = elsewhere.random_join(self, game, message)
                return
        self._join_here(message)

    def _join_here(self, message: JsonObject, new_id: str | None = None) -> None:
        """Seat the bot in the match it names, or for a random join in a waiting match here or
        a new one (with ``new_id``, if the nodes agreed on it)."""
        simulation_id = message.get("simulationId")
        if simulation_id:
            found = self.arena.get(simulation_id)
            if found is None:
                self.error(WRONG_SIMULATION_ID)
                return
            named_game = message.get("game")
            if named_game is not None and named_game != found.codec.name:
                self.error("Wrong game", f"simulation {found.id} is a {found.codec.name} game")
                return
            match = found
        else:
            game = self._game_name(message)
            valid, seed = self._seed(message)
            if game is None or not valid:
                return
            options = MatchOptions(seed=seed, creator=self.address, by_join=True, match_id=new_id)
            try:
                match = self.arena.waiting(game, message) or self.arena.open(game, options)
            except JoinRejected as rejected:
                self.error(rejected.message, rejected.reason)
                return
        try:
            seat = match.seat(self, SeatRequest(message))
        except JoinRejected as rejected:
            self.error(rejected.message, rejected.reason)
            if match.options.by_join:
                self.arena.drop_if_abandoned(match)
            return
        self._seated(match, seat)

    def _rejoin(self, message: JsonObject) -> None:
        """A bot that lost its connection takes its seat back with the seat's token."""
        if self.seat is not None or self.remote is not None:
            self.error("Already in a game", "one game per connection")
            return
        simulation_id = message.get("simulationId")
        match = self.arena.get(simulation_id)
        elsewhere = self.arena.elsewhere
        if match is None and elsewhere is not None and isinstance(simulation_id, str):
            self.remote = elsewhere.seat(self, simulation_id, message, rejoin=True)
            return
        if match is None:
            self.error(WRONG_SIMULATION_ID)
            return
        try:
            seat = match.rejoin(self, message.get("token"))
        except JoinRejected as rejected:
            self.error(rejected.message, rejected.reason)
            return
        self._seated(match, seat)

    def left(self) -> None:
        """The connection ended: its seat is freed or forfeited."""
        if self.remote is not None:
            self.remote.leave()
            self.remote = None
        if self.seat is None:
            return
        match, seat = self.seat
        match.leave(seat, self)
        if match.options.by_join:
            self.arena.drop_if_abandoned(match)
