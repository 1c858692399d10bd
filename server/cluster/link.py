"""A node's link to Redis: its connections, what it writes, its heartbeat's rhythm, and linking
again with a backoff whenever Redis goes away.

Everything goes through redis-py's public API. The frames between nodes travel by sharded
pub/sub (``SPUBLISH`` to a node's inbox channel, Redis 7; chosen over a Stream per inbox with
``bench/transport.py``, docs/operations.md says why): a sender task writes each loop round's
frames (one message per node) and the node's due commands in one pipeline, and reads every
reply, logging and counting each error Redis answers (``Refusals``,
``tavern_redis_errors`` in /metrics); a listener (redis-py's ``PubSub``, on the server of the
inbox's slot when Redis is a cluster) holds the inbox's subscription and the lobby's. The
heartbeat and the look-ups keep clients of their own (``Link.redis`` for the look-ups), so
that neither keeps the other waiting. One Redis or a Redis Cluster alike
(``server.redis_client``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Collection, Coroutine
from typing import Any, Protocol

from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.client import PubSub
from redis.asyncio.connection import AbstractConnection
from redis.backoff import NoBackoff
from redis.exceptions import (
    AskError,
    AuthenticationError,
    AuthorizationError,
    MovedError,
    RedisError,
    ResponseError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.retry import Retry

from server import redis_client
from server.cancelling import stop_if_cancelled
from server.cluster import RedisRefused, wire
from server.cluster.keys import LOBBY, inbox
from server.config import without_password
from server.redis_client import Client, Servers

log = logging.getLogger(__name__)

MAX_OUTGOING_BYTES = 64 * 1024 * 1024  # queued toward Redis before the link counts as lost
FIRST_CONNECT_WAIT_S = 5.0
LOOK_UPS_AT_ONCE = 64  # connections to Redis for look-ups; more wait for one of them
LEAVE_WAIT_S = 2.0

REFUSALS_SAID_EVERY_S = 60.0  # a command's errors are logged at most this often (all counted)

Command = tuple[Any, ...]  # a Redis command's arguments


class LinkUser(Protocol):
    """The node a link serves."""

    def pushed(self, channel: bytes, data: bytes) -> None:
        """A message published on the node's inbox or on the lobby."""

    def relinked(self) -> None:
        """The link is made (again): whatever the node keeps in Redis is due again, since
        Redis may have lost it all."""

    async def beat(self, redis: Client) -> None:
        """Say the node is alive and follow the others: first thing once linked, then every
        heartbeat."""

    def unlinked(self, was_up: bool) -> None:
        """Redis is out of reach: the link is down (``was_up``: it was up until now)."""

    def due(self) -> list[Command]:
        """The commands due this loop round, written after the frames."""

    def refused(self, key: str, error: ResponseError) -> None:
        """Redis refused one of ``due``'s commands, on ``key`` (its first argument): a key of
        another type, say, which the node may repair."""


def _key_of(command: Command) -> str:
    """The (first) key a command is about: its first argument, a script's first key."""
    index = 3 if str(command[0]).upper() in ("EVAL", "EVALSHA") else 1
    if len(command) <= index:
        return ""
    key = command[index]
    return key.decode(errors="replace") if isinstance(key, bytes) else str(key)


class Refusals:
    """The errors Redis answered to a link's commands, by command (``tavern_redis_errors`` in
    /metrics): each counted, and logged at most once a minute per command."""

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self.counts: collections.Counter[str] = collections.Counter()
        self._said: dict[str, float] = {}  # when each command's were last logged

    def add(self, command: str, error: ResponseError) -> None:
        self.counts[command] += 1
        now = time.monotonic()
        if now - self._said.get(command, -math.inf) >= REFUSALS_SAID_EVERY_S:
            self._said[command] = now
            log.warning(
                "node %s: Redis refused %s: %s (%d refused so far)",
                self.node_id,
                command,
                error,
                self.counts[command],
            )


class Outbox:
    """Frames due to other nodes, by node, until the next send: each node's go in one message
    to its inbox, after this node's id."""

    def __init__(self, node_id: str) -> None:
        self.size = 0  # bytes of frames held
        self._frames: dict[str, list[bytes]] = {}
        self._header = node_id.encode()

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

    def batches(self, held: Collection[str] = ()) -> list[tuple[str, bytes]]:
        """Everything due, as (inbox channel, message) pairs (taken), but the frames of the
        ``held`` nodes, which stay."""
        frames_by_node, self._frames, self.size = self._frames, {}, 0
        for node in held:
            kept = frames_by_node.pop(node, None)
            if kept is not None:
                self._frames[node] = kept
                self.size += sum(map(len, kept))
        header = self._header
        return [(inbox(node), header + b"".join(frames)) for node, frames in frames_by_node.items()]


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
        self.redis: Client | None = None  # redis-py's client, while linked
        self._up = asyncio.Event()  # linked, and the node registered and following the others
        self.connected = asyncio.Event()
        self._tasks: asyncio.TaskGroup | None = None  # the link's own, and look-ups through it
        # Set when something is due to Redis, while the link's sender runs (None otherwise).
        self._due: asyncio.Event | None = None
        self._lost: asyncio.Future[None] | None = None  # fails when the link is lost
        self._outbox = Outbox(node_id)
        self.refusals = Refusals(node_id)
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
        if self._due is None and node not in self.held:
            return
        if self._outbox.size > MAX_OUTGOING_BYTES:
            # Redis takes less than this node sends: the link counts as lost, and is made
            # again, rather than let the backlog grow.
            self._lose(f"{self._outbox.size} bytes queued toward Redis")
            return
        self._outbox.add(node, wire.frame(kind, connection, payload))
        self.flush_soon()

    def flush_soon(self) -> None:
        """Wake the sender: what is due goes once this loop round is over."""
        if self._due is not None:
            self._due.set()

    def _lose(self, why: str) -> None:
        if self._lost is not None and not self._lost.done():
            log.warning("node %s: %s", self.node_id, why)
            self._lost.set_exception(RedisConnectionError(why))

    async def _send_due(self, servers: Servers, due: asyncio.Event, **options: Any) -> None:
        """Everything due, pipelined: each loop round, the frames for each node (one SPUBLISH
        each to its inbox), then the node's commands, each written on a connection of the
        sender's to the server that holds its key (one server, or a cluster's), without
        waiting for the replies to the ones before (a frame never waits a round trip behind
        another); the replies are read as they come (``_read_replies``). A connection lost,
        or a cluster whose slots moved, fails the link (the seats' own sequence numbers send
        again what it lost)."""
        connections: dict[str, tuple[AbstractConnection, collections.deque[Command]]] = {}
        pools: list[ConnectionPool] = []
        try:
            async with asyncio.TaskGroup() as tasks:
                while True:
                    await due.wait()
                    due.clear()
                    sent: list[Command] = [
                        ("SPUBLISH", channel, message)
                        for channel, message in self._outbox.batches(self.held)
                    ]
                    sent += self.user.due()
                    by_server: dict[str, list[Command]] = {}
                    for command in sent:
                        by_server.setdefault(servers.of(_key_of(command)), []).append(command)
                    for url, commands in by_server.items():
                        if url not in connections:
                            # No read timeout: the heartbeat (with its timeouts) finds a Redis
                            # that stopped answering.
                            pool = ConnectionPool.from_url(url, socket_timeout=None, **options)
                            pools.append(pool)
                            connection: AbstractConnection = await pool.get_connection()  # type: ignore[no-untyped-call]
                            connections[url] = (connection, collections.deque())
                            tasks.create_task(self._read_replies(*connections[url]))
                        connection, replies_due = connections[url]
                        replies_due.extend(commands)
                        await connection.send_packed_command(
                            connection.pack_commands(commands), check_health=False
                        )
                    stop_if_cancelled()
        finally:
            for pool in pools:
                with contextlib.suppress(RedisError, OSError):
                    await pool.disconnect()

    async def _read_replies(
        self, connection: AbstractConnection, replies_due: collections.deque[Command]
    ) -> None:
        """The replies to what the sender wrote on a connection, in order: an error Redis
        answers costs only its command (logged and counted), but a redirection (a cluster's
        slot moved to another server), which fails the link: it is made again on the
        cluster's new map."""
        task = asyncio.current_task()
        while True:
            try:
                await connection.read_response(timeout=math.inf)
            except (MovedError, AskError) as moved:
                raise RedisConnectionError(f"Redis Cluster slots moved: {moved}") from None
            except ResponseError as error:
                command = replies_due.popleft()
                self.refusals.add(str(command[0]), error)
                self.user.refused(_key_of(command), error)
            else:
                replies_due.popleft()
            stop_if_cancelled(task)

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
                    pipe.execute_command("SPUBLISH", channel, message)
                for command in commands:
                    pipe.execute_command(*command)
                await pipe.execute()
        self.up = False

    async def _linked(self) -> None:
        """Connect, register, follow the others and serve them until the link fails."""
        # No retries inside redis-py: a failed command means the link is down, handled here.
        # (A cluster client follows a redirection to a slot's new server all the same.)
        options: dict[str, Any] = {"retry": Retry(NoBackoff(), 0), "socket_connect_timeout": 2}
        timeout = max(2.0, self.ttl_ms / 1000)
        clients: list[Client] = []
        pubsub: PubSub | None = None
        lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        due = asyncio.Event()

        async def connected(urls: str, **more: Any) -> tuple[Client, str]:
            client, url = await redis_client.connect(urls, **options, **more)
            clients.append(client)
            return client, url

        try:
            # The look-ups (seats, claims, the seek pool, bots...) share a bounded pool, in
            # which a command waits for a free connection rather than fails; the heartbeat has
            # a connection of its own, which no number of look-ups at once can take from it.
            redis, url = await connected(self.url, pool=LOOK_UPS_AT_ONCE, socket_timeout=timeout)
            beating, _ = await connected(url, pool=1, socket_timeout=timeout)
            # The frames go out on connections of their own (pipelined, see _send_due) and
            # come in on the listener's, a connection to the server of the node's inbox:
            # neither waits behind a look-up or a heartbeat.
            servers = Servers(redis, url)
            listening = Redis.from_url(
                servers.of(inbox(self.node_id)), socket_timeout=timeout, **options
            )
            clients.append(listening)
            pubsub = listening.pubsub()
            async with asyncio.timeout(timeout):  # (TimeoutError: an OSError, the link failed)
                await self._subscribe(pubsub)
            self._lost, self._due = lost, due
            self.redis = redis
            self.user.relinked()
            due.set()
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._send_due(servers, due, **options))
                tasks.create_task(self._listen(pubsub))
                await self.user.beat(beating)  # which follows the other nodes' simulations
                self.up = True
                self.connected.set()
                log.info("node %s: in the arena on %s", self.node_id, without_password(self.url))
                tasks.create_task(self._heartbeat(beating))
                await lost
        finally:
            self.redis = self._due = self._lost = None
            if not lost.done():
                lost.cancel()  # closed here, not lost
            elif not lost.cancelled():
                lost.exception()  # raised above already, or never awaited: retrieved
            if pubsub is not None:
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
            for client in clients:
                with contextlib.suppress(RedisError, OSError):
                    await client.aclose()

    async def _subscribe(self, pubsub: PubSub) -> None:
        """Subscribe to the node's inbox (sharded) and to the lobby, and wait until Redis says
        both are held: only then may other nodes be told this one is here."""
        await pubsub.ssubscribe(inbox(self.node_id))
        await pubsub.subscribe(LOBBY)
        confirmed = 0
        while confirmed < 2:
            message = await pubsub.get_message(timeout=None)
            stop_if_cancelled()
            if message is None:
                continue
            if message["type"] in ("ssubscribe", "subscribe"):
                confirmed += 1
            elif message["type"] in ("smessage", "message"):
                self.user.pushed(message["channel"], message["data"])

    async def _listen(self, pubsub: PubSub) -> None:
        """Hand each message on the inbox or the lobby to the node, as it comes (waiting for
        each as long as it takes: a Redis that stops answering is found by the heartbeat). A
        cluster whose inbox's slot moved to another server ends the subscription: the link
        is made again, to that server."""
        pushed, task = self.user.pushed, asyncio.current_task()
        while True:
            message = await pubsub.get_message(timeout=None)
            stop_if_cancelled(task)
            if message is None:
                continue
            if message["type"] in ("smessage", "message"):
                pushed(message["channel"], message["data"])
            elif message["type"] in ("sunsubscribe", "unsubscribe"):
                raise RedisConnectionError(
                    f"Redis ended the subscription to {message['channel']!r}"
                )

    async def _heartbeat(self, redis: Client) -> None:
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
