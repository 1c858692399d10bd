"""A node's link to Redis: its connections, what it writes, its heartbeat's rhythm, and linking
again with a backoff whenever Redis goes away.

The traffic between nodes goes over two connections of the link's own, made by redis-py
(address, password, database) and then written and read directly (``RawConnection``): every
loop round's frames go out as pre-encoded PUBLISH commands in one write, on a connection that
asked Redis for no replies, and the inbox's messages are parsed by hiredis as bytes arrive. The
heartbeat and the look-ups keep redis-py's ordinary client (``Link.redis`` for the look-ups),
each with connections of its own, so that look-ups never keep a heartbeat waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Collection, Coroutine
from typing import Any, Protocol, cast

import hiredis
from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis
from redis.asyncio.connection import AbstractConnection
from redis.backoff import NoBackoff
from redis.exceptions import (
    AuthenticationError,
    AuthorizationError,
    RedisError,
    ResponseError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.retry import Retry

from server.cancelling import stop_if_cancelled
from server.cluster import RedisRefused, wire
from server.cluster.keys import LOBBY, inbox
from server.config import without_password

log = logging.getLogger(__name__)

MAX_OUTGOING_BYTES = 64 * 1024 * 1024  # queued toward Redis before the link counts as lost
FIRST_CONNECT_WAIT_S = 5.0
LOOK_UPS_AT_ONCE = 64  # connections to Redis for look-ups; more wait for one of them
LEAVE_WAIT_S = 2.0

Command = tuple[Any, ...]  # a Redis command's arguments, as ``wire.command`` encodes them


class LinkUser(Protocol):
    """The node a link serves."""

    def pushed(self, channel: bytes, data: bytes) -> None:
        """A message published on the node's inbox or on the lobby."""

    def relinked(self) -> None:
        """The link is made (again): whatever the node keeps in Redis is due again, since
        Redis may have lost it all."""

    async def beat(self, redis: Redis) -> None:
        """Say the node is alive and follow the others: first thing once linked, then every
        heartbeat."""

    def unlinked(self, was_up: bool) -> None:
        """Redis is out of reach: the link is down (``was_up``: it was up until now)."""

    def due(self) -> list[Command]:
        """The commands due this loop round, written after the frames."""


class RawConnection(asyncio.Protocol):
    """A connection to Redis once redis-py has made it: written to directly, and read by
    hiredis's parser as bytes arrive (no task wakes up, no reply is awaited)."""

    def __init__(self, lost: asyncio.Future[None], pushed: Callable[[bytes, bytes], None] | None):
        self.lost = lost
        self.pushed = pushed
        self.parser = hiredis.Reader()

    @classmethod
    def take_over(
        cls,
        connection: AbstractConnection,
        lost: asyncio.Future[None],
        pushed: Callable[[bytes, bytes], None] | None,
    ) -> asyncio.Transport:
        """The connection's transport, now read by a RawConnection: ``pushed`` gets each
        published message (channel, data), and ``lost`` fails when the connection is lost."""
        writer = connection._writer  # redis-py's stream, idle: every reply so far was read
        assert writer is not None
        transport = cast(asyncio.Transport, writer.transport)
        transport.set_protocol(cls(lost, pushed))
        return transport

    def data_received(self, data: bytes) -> None:
        if self.pushed is None:
            return  # the sender asked for no replies
        self.parser.feed(data)
        while (reply := self.parser.gets()) is not False:
            if isinstance(reply, list) and reply[0] == b"message":
                self.pushed(reply[1], reply[2])

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_exception(RedisConnectionError(f"Redis connection lost: {exc}"))


class Outbox:
    """Frames due to other nodes, by node, until the next write: each node's go in one PUBLISH
    to its inbox, after this node's id."""

    def __init__(self, node_id: str) -> None:
        self.size = 0  # bytes of frames held
        self._frames: dict[str, list[bytes]] = {}
        self._header = node_id.encode()
        self._heads: dict[str, bytes] = {}  # each node's PUBLISH, up to its message's length

    def add(self, node: str, frame: bytes) -> None:
        frames = self._frames.get(node)
        if frames is None:
            self._frames[node] = [frame]
        else:
            frames.append(frame)
        self.size += len(frame)

    def keep_only(self, nodes: Collection[str]) -> None:
        """Drop the frames of every node but these."""
        self._frames = {node: frames for node, frames in self._frames.items() if node in nodes}
        self.size = sum(len(frame) for frames in self._frames.values() for frame in frames)

    def drop(self, nodes: Collection[str]) -> None:
        """Drop these nodes' frames."""
        for node in nodes:
            self.size -= sum(map(len, self._frames.pop(node, ())))

    def publishes(self, held: Collection[str] = ()) -> list[bytes]:
        """Everything due, as encoded PUBLISH commands (taken), but the frames of the ``held``
        nodes, which stay."""
        frames_by_node, self._frames, self.size = self._frames, {}, 0
        for node in held:
            kept = frames_by_node.pop(node, None)
            if kept is not None:
                self._frames[node] = kept
                self.size += sum(map(len, kept))
        parts: list[bytes] = []
        for node, frames in frames_by_node.items():
            head = self._heads.get(node)
            if head is None:
                head = self._heads[node] = wire.publish_head(inbox(node))
            size = len(self._header) + sum(map(len, frames))
            parts += (head, b"$%d\r\n" % size, self._header, *frames, b"\r\n")
        return parts

    def batches(self) -> list[tuple[str, bytes]]:
        """Everything held, as (channel, message) pairs (taken)."""
        frames_by_node, self._frames, self.size = self._frames, {}, 0
        return [
            (inbox(node), self._header + b"".join(frames))
            for node, frames in frames_by_node.items()
        ]


class Link:
    """This node's link to the Redis of its arena, made again whenever it fails."""

    def __init__(
        self, user: LinkUser, node_id: str, url: str, heartbeat_s: float, ttl_ms: int
    ) -> None:
        self.user = user
        self.node_id = node_id
        self.url = url
        self.heartbeat_s = heartbeat_s
        self.ttl_ms = ttl_ms
        self.redis: Redis | None = None  # redis-py's client, while linked
        self._up = asyncio.Event()  # linked, and the node registered and following the others
        self.connected = asyncio.Event()
        self._tasks: asyncio.TaskGroup | None = None  # the link's own, and look-ups through it
        self._sender: asyncio.Transport | None = None  # toward Redis, while linked
        self._outbox = Outbox(node_id)
        self._flush_due = False
        # Nodes whose frames wait in the outbox while the link is down, until they are seen
        # in the arena again (``seen``): the seats that cross to them are held meanwhile.
        self.held: set[str] = set()

    @property
    def up(self) -> bool:
        """Linked, and the node registered and following the others."""
        return self._up.is_set()

    @up.setter
    def up(self, up: bool) -> None:
        if up:
            self._up.set()
        else:
            self._up.clear()

    @property
    def tasks(self) -> asyncio.TaskGroup | None:
        """Where a look-up through the link runs; None while the link is down."""
        return self._tasks if self.up else None

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> bool:
        """Run ``work`` as a task of the link's, which outlives the link's outages (it may wait
        for the link: ``back_within``); False if the node is not running (``work`` is closed)."""
        if self._tasks is None:
            work.close()
            return False
        self._tasks.create_task(work, name=name)
        return True

    async def back_within(self, seconds: float) -> bool:
        """Whether the link is up now, or is up again within ``seconds``."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._up.wait()
        return self.up

    # --- sending ------------------------------------------------------------------------------
    def send(self, node: str, kind: bytes, connection: int, payload: bytes) -> None:
        """Queue a frame for ``node``: sent with everything else due to it this loop round."""
        # Sent once connected, before the node is up too: a seat's link resumes in the first
        # heartbeat after a lost link (see ``LinkUser.beat``).
        if (self._sender is None and node not in self.held) or (
            self._outbox.size > MAX_OUTGOING_BYTES
        ):
            return  # past the bound, the link is about to be made again (see _flush)
        self._outbox.add(node, wire.frame(kind, connection, payload))
        if not self._flush_due:
            self.flush_soon()

    def flush_soon(self) -> None:
        if not self._flush_due and self._sender is not None:
            self._flush_due = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Everything due this loop round, in one write: the frames for each node (a PUBLISH
        per node), then the node's commands. The sender asked Redis for no replies, so no
        write waits for one."""
        self._flush_due = False
        sender = self._sender
        if sender is None:
            return
        if sender.get_write_buffer_size() + self._outbox.size > MAX_OUTGOING_BYTES:
            # Redis takes less than this node sends: the link counts as lost, and is made
            # again, rather than let the backlog grow.
            log.warning("node %s: %d bytes queued toward Redis", self.node_id, self._outbox.size)
            sender.abort()
            return
        parts = self._outbox.publishes(self.held)
        parts += (wire.command(*command) for command in self.user.due())
        if parts:
            sender.write(b"".join(parts))

    # --- holding frames while the link is down -----------------------------------------------
    def hold(self, nodes: set[str]) -> None:
        """Keep the frames for these nodes, from now until each is ``seen`` again (or
        ``let_go``): a Redis restart then costs the seats that cross to them no frame."""
        self.held |= nodes

    def seen(self, alive: set[str]) -> set[str]:
        """These nodes are in the arena again (registered, so listening): their frames go.
        Returns those that were held."""
        if back := self.held & alive:
            self.held -= back
            self.flush_soon()
        return back

    def let_go(self, nodes: set[str]) -> None:
        """Hold no more frames for these nodes: those kept are dropped."""
        self.held -= nodes
        self._outbox.drop(nodes)

    # --- linked -------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Linked for the block, and linked again whenever the link fails (waiting a moment
        for the first link)."""
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = tasks
                linking = tasks.create_task(self._stay_linked(), name="cluster")
                try:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(FIRST_CONNECT_WAIT_S):
                            await self.connected.wait()
                    yield
                finally:
                    linking.cancel()
        finally:
            self._tasks = None

    async def leave(self, commands: list[Command]) -> None:
        """A clean stop: what is due to the other nodes, then ``commands``, in one pipeline
        (waiting for it a moment at most); the link is down after."""
        redis = self.redis
        if redis is None:
            return
        with contextlib.suppress(RedisError, OSError):
            async with asyncio.timeout(LEAVE_WAIT_S):
                pipe = redis.pipeline(transaction=False)
                for channel, message in self._outbox.batches():
                    pipe.publish(channel, message)
                for command in commands:
                    pipe.execute_command(*command)
                await pipe.execute()
        self.up = False

    async def _linked(self) -> None:
        """Connect, register, follow the others and serve them until the link fails."""
        # No retries inside redis-py: a failed command means the link is down, handled here.
        options: dict[str, Any] = {"retry": Retry(NoBackoff(), 0), "socket_connect_timeout": 2}
        timeout = max(2.0, self.ttl_ms / 1000)
        # The look-ups (seats, claims, the seek pool, bots...) share a bounded pool, in which a
        # command waits for a free connection rather than fails; the heartbeat has a connection
        # of its own, which no number of look-ups at once can take from it.
        look_ups = BlockingConnectionPool.from_url(
            self.url,
            max_connections=LOOK_UPS_AT_ONCE,
            timeout=timeout,
            socket_timeout=timeout,
            **options,
        )
        redis = Redis.from_pool(look_ups)
        beating = Redis.from_pool(
            BlockingConnectionPool.from_url(
                self.url, max_connections=1, timeout=timeout, socket_timeout=timeout, **options
            )
        )
        # The traffic goes over two connections of its own, made (address, password, database)
        # by redis-py, then written and read directly (see RawConnection).
        pool = ConnectionPool.from_url(self.url, protocol=2, **options)
        sender = pool.connection_class(**pool.connection_kwargs)
        listener = pool.connection_class(**pool.connection_kwargs)
        lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        try:
            await sender.connect()  # type: ignore[no-untyped-call]
            await sender.send_command("CLIENT", "REPLY", "OFF")
            await listener.connect()  # type: ignore[no-untyped-call]
            listening = RawConnection.take_over(listener, lost, self.user.pushed)
            listening.write(wire.command("SUBSCRIBE", inbox(self.node_id), LOBBY))
            self._sender = RawConnection.take_over(sender, lost, None)
            self.redis = redis
            self.user.relinked()
            self.flush_soon()
            await self.user.beat(beating)  # which follows the other nodes' simulations
            self.up = True
            self.connected.set()
            log.info("node %s: in the arena on %s", self.node_id, without_password(self.url))
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._heartbeat(beating))
                await lost
        finally:
            self.redis = self._sender = None
            self._flush_due = False
            if not lost.done():
                lost.cancel()  # closed here, not lost
            elif not lost.cancelled():
                lost.exception()  # raised above already, or never awaited: retrieved
            for connection in (sender, listener):
                with contextlib.suppress(RedisError, OSError):
                    await connection.disconnect(nowait=True)
            for client in (redis, beating):
                with contextlib.suppress(RedisError, OSError):
                    await client.aclose()

    async def _heartbeat(self, redis: Redis) -> None:
        """A beat every ``heartbeat_s`` on a fixed rhythm, not ``heartbeat_s`` after the last one
        ended: a beat that waits long on Redis (or on a busy loop) does not put the next ones
        later; one past its time goes at once."""
        loop = asyncio.get_running_loop()
        due = loop.time()
        while True:
            await self.user.beat(redis)
            stop_if_cancelled()
            due = max(due + self.heartbeat_s, loop.time())
            await asyncio.sleep(due - loop.time())

    async def _stay_linked(self) -> None:
        backoff = self.heartbeat_s / 4
        linked_once = False
        while True:
            try:
                await self._linked()
            except* (AuthenticationError, AuthorizationError, ResponseError) as refused:
                if not linked_once and not self.up:
                    where = without_password(self.url)
                    raise RedisRefused(
                        f"Redis at {where} refused: {refused.exceptions[0]}"
                    ) from None
                log.warning(
                    "node %s: Redis at %s refused: %s; retrying in %.1f s",
                    self.node_id,
                    without_password(self.url),
                    refused.exceptions[0],
                    backoff,
                )
            except* (RedisError, OSError) as failed:
                log.warning(
                    "node %s: Redis at %s: %s; retrying in %.1f s",
                    self.node_id,
                    without_password(self.url),
                    failed.exceptions[0],
                    backoff,
                )
            stop_if_cancelled()  # a cancelled link, whatever error its last call raised
            was_up = self.up
            if was_up:
                linked_once = True
                backoff = self.heartbeat_s / 4  # it was up: start the backoff again
            self.up = False
            self.user.unlinked(was_up)  # which may hold some nodes' frames
            self._outbox.keep_only(self.held)
            await asyncio.sleep(backoff)
            # Tried again at least once a heartbeat: what waits for Redis (the games that cross
            # nodes, the seats asked meanwhile) waits no longer than it is away, and a beat.
            backoff = min(backoff * 2, self.heartbeat_s)
