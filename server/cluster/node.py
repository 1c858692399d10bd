"""One node of an arena shared through Redis.

What lives in Redis, all of it with an expiry, so that a node that dies leaves nothing behind:

* ``tavern:node:{id}``: the node's addresses (TCP, HTTP), refreshed every heartbeat; a node whose
  key has expired is dead. ``tavern:nodes`` lists the ids ever seen, to find them.
* ``tavern:sim:{id}``: the directory, one entry per live simulation (its node, game, status,
  seats and nicks, turn, scores, when it was created), refreshed by its node every heartbeat,
  deleted when it ends. Changes are also published on ``tavern:lobby`` so that every node's
  lobby follows them live.
* ``tavern:finished``: the lobby rows (with their result) of the arena's last finished games,
  newest first, as many as a lobby lists; its expiry is renewed by every node's heartbeat. A
  finished game leaves the directory for this list, and is published on ``tavern:lobby`` too,
  so that every node's lobby lists it and its ``/watch`` page shows its result.
* ``tavern:alias:{name}``: another name of a live simulation (a Thud API game's token digest),
  refreshed with it, so that any node finds the node to pass an API request to.
* ``tavern:claim:{game}``: ``{node} {simulation id}``, the match a random join that found nothing
  waiting opens, set only if absent (``SET NX GET``, atomic) so that random joins arriving
  through different nodes at once meet in one match; deleted once that match is full, and
  short-lived in any case (the directory lists it by then).
* ``tavern:inbox:{id}``: the node's channel, where the others publish batches of frames
  (``server.cluster.wire``): seat requests, moves, what a seat is sent, pages' messages.

A bot connected to node B asking for a simulation node A plays: B sends A a seat request; A
seats a ``RemoteSeatChannel`` through the ordinary ``match.seat`` (or ``match.rejoin``), whose
messages A publishes, in wire form, to B, which writes them to the bot unchanged. The bot's
moves go back to A and are submitted the ordinary way; the clock stays on A.

Anyone who reaches the Redis can write there and publish on its channels, so whatever a node
reads from it is checked first (``server.cluster.values``, ``wire.read_batch``): a value or a
frame that does not read is skipped and logged, and costs nothing else.

When a node's key expires, every other node drops its simulations, tells each bot and page
connected through it to one of that node's games why, and closes them. When Redis itself goes
away, games whose seats are all on their node play on; every seat and page that crosses nodes
is told and closed; the node retries with a backoff and registers everything again once Redis
is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import hiredis
import orjson
from redis.asyncio import ConnectionPool, Redis
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

from server.arena import Arena, RandomJoiner, RemotePeer
from server.cluster import Deliver, RedisRefused, Spectators, values, wire
from server.cluster.directory import Directory
from server.config import ArenaConfig, without_password
from server.games.base import JoinRejected, JsonObject
from server.match import (
    GameFinished,
    GameStarted,
    Match,
    MatchView,
    Removed,
    SeatMessage,
    SeatRequest,
    SeatsChanged,
    Status,
    TurnPlayed,
    TurnResult,
    Update,
)
from server.protocol import encode, error_message

log = logging.getLogger(__name__)

PREFIX = "tavern:"
NODES = PREFIX + "nodes"
LOBBY = PREFIX + "lobby"
FINISHED = PREFIX + "finished"
FINISHED_KEPT = 100  # as many as a lobby lists (visor.hub.FINISHED_KEPT)
WRONG_SIMULATION_ID = "Wrong simulation ID"
NODE_LOST = "Arena node lost"
NODE_LOST_REASON = "the node playing this game stopped answering"
LINK_LOST = "Arena link lost"
LINK_LOST_REASON = "this node lost its link to the other arena nodes"
MAX_OUTGOING_BYTES = 64 * 1024 * 1024  # queued toward Redis before the link counts as lost
FIRST_CONNECT_WAIT_S = 5.0
LOOK_UP_FIRST_PAUSE_S = 0.005
LOOK_UP_WAIT_S = 1.0
MAX_BACKOFF_S = 5.0


def node_key(node_id: str) -> str:
    return f"{PREFIX}node:{node_id}"


def sim_key(simulation_id: str) -> str:
    return f"{PREFIX}sim:{simulation_id}"


def alias_key(name: str) -> str:
    return f"{PREFIX}alias:{name}"


def claim_key(game: str) -> str:
    return f"{PREFIX}claim:{game}"


RELEASE_CLAIM = """if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0"""  # a claim is deleted by the node that made it, and only while it is still that one


def inbox(node_id: str) -> str:
    return f"{PREFIX}inbox:{node_id}"


def lobby_entry(view: MatchView, node_id: str, created: float) -> JsonObject:
    """A simulation as the directory keeps it: a lobby row, with its node and free seats."""
    return {
        **view.lobby_row(spectators=0),
        "node": node_id,
        "free": [index for index, p in enumerate(view.players) if p is None],
        "created": created,
    }


class RemoteSeatChannel:
    """A seat of a match played here, whose bot is connected through another node."""

    def __init__(self, node: ClusterNode, peer_node: str, connection: int) -> None:
        self.node = node
        self.peer_node = peer_node
        self.connection = connection
        self.match: Match | None = None
        self.seat = 0
        self.open = True

    def send(self, message: SeatMessage) -> None:
        if self.open:
            self.node.send(self.peer_node, wire.DATA, self.connection, encode(message.body))

    def close(self) -> None:
        if self.open:
            self.open = False
            self.node.send(self.peer_node, wire.CLOSE, self.connection, b"")
            self.node.forget_channel(self)


class PeerSeat:
    """A connection here playing a seat on another node (``server.arena.RemoteSeat``)."""

    def __init__(self, node: ClusterNode, connection: int, peer: RemotePeer) -> None:
        self.node = node
        self.connection = connection
        self.peer = peer
        self.owner: str | None = None  # the node playing the match, once known

    def submit(self, message: JsonObject) -> None:
        if self.owner is not None:
            self.node.send(self.owner, wire.MOVE, self.connection, orjson.dumps(message))

    def leave(self) -> None:
        if self.node.peers.pop(self.connection, None) is not None and self.owner is not None:
            self.node.send(self.owner, wire.LEAVE, self.connection, b"")


@dataclass
class Relay:
    """Another node's pages watching a match played here."""

    node: ClusterNode
    peer_node: str
    simulation_id: str
    deliver: Deliver = field(init=False)

    def __post_init__(self) -> None:
        prefix = self.simulation_id.encode() + b" "
        node, peer_node = self.node, self.peer_node

        def deliver(text: str) -> None:
            node.send(peer_node, wire.SPECTATE, 0, prefix + text.encode())

        self.deliver = deliver


class Link(asyncio.Protocol):
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
        """The connection's transport, now read by a Link: ``pushed`` gets each published
        message (channel, data), and ``lost`` fails when the connection is lost."""
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


class ClusterNode:
    """This process as one node of the arena on a Redis server."""

    def __init__(self, arena: Arena, config: ArenaConfig) -> None:
        assert config.redis is not None
        self.arena = arena
        self.url = config.redis
        self.id = secrets.token_hex(wire.NODE_ID_BYTES // 2)
        self.heartbeat_s = config.node_heartbeat_ms / 1000
        self.ttl_ms = config.node_ttl_ms
        self.addresses: JsonObject = {}
        self.spectators: Spectators | None = None
        self.up = False  # linked to Redis, registered, following the others
        self.connected = asyncio.Event()
        self.round_trip_s: float | None = None  # of the last heartbeat, for /metrics
        self._redis: Redis | None = None
        self._tasks: asyncio.TaskGroup | None = None  # the link's, and directory look-ups
        # Matches played here, as the others see them.
        self.channels: dict[tuple[str, int], RemoteSeatChannel] = {}
        self._relays: dict[tuple[str, str], Relay] = {}
        self._own: dict[str, JsonObject] = {}  # live simulations' directory entries
        self._created: dict[str, float] = {}
        self._changed: set[str] = set()  # entries to write and publish at once
        self._removed: set[str] = set()
        self._finished: list[JsonObject] = []  # lobby rows of games finished here, to announce
        self._turned: dict[str, TurnResult] = {}  # last turn of each, written every heartbeat
        self._aliases: dict[str, set[str]] = {}  # other names of live simulations here
        self._claims: dict[str, tuple[str, bytes]] = {}  # simulation id -> its claim, value
        self._released: list[tuple[str, bytes]] = []  # claims to delete
        self._removed_aliases: set[str] = set()
        # Other nodes' matches, as this node's connections and pages reach them.
        self.peers: dict[int, PeerSeat] = {}
        self._connections = itertools.count(1)
        self._watching: dict[str, str] = {}  # simulation id -> its node
        self.directory = Directory()  # the other nodes' live simulations
        self._alive: set[str] = set()  # the other nodes, at the last heartbeat
        # Frames waiting for the sender, by destination node.
        self._outgoing: dict[str, list[bytes]] = {}
        self._outgoing_bytes = 0
        self._sender: asyncio.Transport | None = None  # toward Redis, while linked
        self._flush_due = False
        self._publish_heads: dict[str, bytes] = {}  # by destination node
        self._header = self.id.encode()
        self._own_inbox = inbox(self.id).encode()
        self._complaints = values.Complaints(self.id)  # what it read from Redis and could not use
        arena.listeners.append(self._on_update)

    # --- what the visor asks (server.cluster.OtherNodes) --------------------------------------
    def serve_spectators(self, spectators: Spectators) -> None:
        self.spectators = spectators

    def simulations(self) -> list[JsonObject]:
        return sorted(self.directory.values(), key=lambda entry: entry["created"])

    def watch(self, simulation_id: str) -> bool:
        entry = self.directory.get(simulation_id)
        if entry is None or not self.up:
            return False
        # Asked again for each page: a page that comes later needs its own snapshot.
        self._watching[simulation_id] = owner = str(entry["node"])
        self.send(owner, wire.WATCH, 0, simulation_id.encode())
        return True

    def unwatch(self, simulation_id: str) -> None:
        owner = self._watching.pop(simulation_id, None)
        if owner is not None:
            self.send(owner, wire.UNWATCH, 0, simulation_id.encode())

    async def alias(self, name: str, simulation_id: str) -> None:
        self._aliases.setdefault(simulation_id, set()).add(name)
        redis = self._redis
        if redis is None:
            return  # written with everything else once the link is back
        value = orjson.dumps({"simulationId": simulation_id, "node": self.id})
        try:
            await redis.set(alias_key(name), value, px=self.ttl_ms)
        except (RedisError, OSError) as error:
            log.warning("node %s: cannot name %s: %s", self.id, simulation_id, error)

    async def locate(self, name: str) -> str | None:
        key = alias_key(name)
        raw = await self._read(key, name)
        if raw is None:
            return None
        try:
            _, node = values.alias(raw)
        except values.BadValue as bad:
            self._complaints(key, bad)
            return None
        return None if node == self.id else await self._http_address(node, name)

    async def address_of(self, simulation_id: str) -> str | None:
        entry = self.directory.get(simulation_id)
        if entry is None:
            return None
        return await self._http_address(str(entry["node"]), simulation_id)

    async def _http_address(self, node: str, looked_for: str) -> str | None:
        """Where ``node`` serves HTTP, from the addresses it registered."""
        key = node_key(node)
        addresses = await self._read(key, looked_for)
        if addresses is None:
            return None
        try:
            return values.node_http(addresses)
        except values.BadValue as bad:
            self._complaints(key, bad)
            return None

    async def _read(self, key: str, looked_for: str) -> bytes | str | None:
        """A key's value; None when Redis is out of reach (said in the log)."""
        redis = self._redis
        if redis is None:
            return None
        try:
            value: bytes | str | None = await redis.get(key)
        except (RedisError, OSError) as error:
            log.warning("node %s: cannot locate %s: %s", self.id, looked_for, error)
            return None
        return value

    # --- what the TCP connections ask (server.arena.Elsewhere) --------------------------------
    def seat(
        self,
        peer: RemotePeer,
        simulation_id: str,
        message: JsonObject,
        rejoin: bool,
        kind: str = "bot",
    ) -> PeerSeat:
        handle = PeerSeat(self, next(self._connections), peer)
        self.peers[handle.connection] = handle
        request = {
            "simulationId": simulation_id,
            "message": message,
            "rejoin": rejoin,
            "kind": kind,
        }
        loop = asyncio.get_running_loop()
        if not self.up or self._tasks is None:
            loop.call_soon(self._refuse, handle, LINK_LOST, LINK_LOST_REASON)
        elif (entry := self.directory.get(simulation_id)) is not None:
            self._ask(handle, str(entry["node"]), request)
        else:  # not followed yet (just created elsewhere?): the directory itself says
            self._tasks.create_task(self._seat_found(handle, simulation_id, request))
        return handle

    async def _seat_found(self, handle: PeerSeat, simulation_id: str, request: JsonObject) -> None:
        entry = await self._look_up(handle, simulation_id)
        if handle.connection not in self.peers:
            return  # the connection is gone already
        if entry is None or entry["node"] == self.id:
            self._refuse(handle, WRONG_SIMULATION_ID, None)
        else:
            self._ask(handle, entry["node"], request)

    def waiting(self, game: str, fields: JsonObject) -> str | None:
        if not self.up:
            return None
        return self.directory.waiting(game, self.arena.codec(game).wanted_seats(fields))

    def random_join(self, peer: RandomJoiner, game: str, message: JsonObject) -> PeerSeat:
        handle = PeerSeat(self, next(self._connections), peer)
        self.peers[handle.connection] = handle
        if not self.up or self._tasks is None:
            asyncio.get_running_loop().call_soon(self._open_here, handle, peer, None)
        else:
            self._tasks.create_task(self._claim(handle, peer, game, message))
        return handle

    async def _claim(
        self, handle: PeerSeat, peer: RandomJoiner, game: str, message: JsonObject
    ) -> None:
        """Open the match of this game's random joins here, unless another node just did:
        then join that one (or, should no node play it, open one here all the same: a random
        join is never refused for a claim)."""
        candidate = self.arena.new_id()
        key, value = claim_key(game), f"{self.id} {candidate}".encode()
        claimed = await self._claimed(key, value)
        if claimed is None:  # this node's to open
            self._open_here(handle, peer, candidate)
            if self.arena.get(candidate) is None:  # it joined one waiting here instead
                self._release(key, value)
            else:
                self._claims[candidate] = (key, value)
            return
        owner, simulation_id = claimed
        if owner == self.id:
            self._open_here(handle, peer, None)
            return
        entry = await self._look_up(handle, simulation_id)
        if entry is None or entry["node"] != owner:  # a claim left by a node that is gone
            self._release(key, f"{owner} {simulation_id}".encode())
            self._open_here(handle, peer, None)
        elif handle.connection in self.peers:
            request = {"simulationId": simulation_id, "message": message, "rejoin": False}
            self._ask(handle, owner, request)

    async def _claimed(self, key: str, value: bytes) -> tuple[str, str] | None:
        """Claim ``key`` with ``value`` unless another claim holds it: that claim's node and
        simulation id, or None if the claim is this one (or Redis is out of reach). A claim
        that does not read is deleted (if it is still there) and the key claimed again."""
        for _ in range(2):
            redis = self._redis
            if redis is None:
                return None
            try:
                answer = await redis.set(key, value, nx=True, get=True, px=self.ttl_ms)
                if not isinstance(answer, bytes):
                    return None
                try:
                    return values.claim(answer)
                except values.BadValue as bad:
                    self._complaints(key, bad)
                    await redis.eval(RELEASE_CLAIM, 1, key, answer)
            except (RedisError, OSError):
                return None
        return None

    def _open_here(self, handle: PeerSeat, peer: RandomJoiner, simulation_id: str | None) -> None:
        if self.peers.pop(handle.connection, None) is not None:
            peer.open_here(simulation_id)

    def _release(self, key: str, value: bytes) -> None:
        self._released.append((key, value))
        self._flush_soon()

    def _ask(self, handle: PeerSeat, owner: str, request: JsonObject) -> None:
        handle.owner = owner
        self.send(owner, wire.JOIN, handle.connection, orjson.dumps(request))

    async def _look_up(self, handle: PeerSeat, simulation_id: str) -> JsonObject | None:
        """The directory entry of a simulation this node does not follow (yet): one created a
        moment ago is announced a little after its creator hears its id, so a miss is asked
        again for up to ``LOOK_UP_WAIT_S`` (while the connection waits) before it is None."""
        pause, waited = LOOK_UP_FIRST_PAUSE_S, 0.0
        while True:
            entry = self.directory.get(simulation_id)
            if entry is None and self._redis is not None:
                entry = await self._stored_entry(self._redis, sim_key(simulation_id))
            if entry is not None or waited >= LOOK_UP_WAIT_S or handle.connection not in self.peers:
                return entry
            await asyncio.sleep(pause)
            waited += pause
            pause *= 2

    async def _stored_entry(self, redis: Redis, key: str) -> JsonObject | None:
        try:
            raw = await redis.get(key)
            return None if raw is None else values.directory_entry(raw)
        except (RedisError, OSError):
            return None
        except values.BadValue as bad:
            self._complaints(key, bad)
            return None

    def _refuse(self, handle: PeerSeat, message: str, reason: str | None) -> None:
        if self.peers.pop(handle.connection, None) is not None:
            handle.peer.remote_refused(message, reason)

    # --- frames from the other nodes ----------------------------------------------------------
    def received(self, data: bytes) -> None:
        """A batch published on this node's inbox, where anyone who reaches the Redis can
        publish: a bad frame costs only itself (said at most once a minute per sender)."""
        batch = wire.read_batch(data)
        sender = batch.sender
        if batch.dropped:
            fault = f"frames dropped: {batch.dropped} ({batch.fault})"
            self._complaints(f"frames from {sender or 'a non-node'}", fault)
        if sender is None:
            return
        for kind, connection, payload in batch.frames:
            try:
                self._frame(sender, kind, connection, payload)
            except values.BadValue as bad:
                self._complaints(f"frames from {sender}", f"a frame {kind!r}: {bad}")
            except Exception:  # a bug: it must cost that request, not the node
                self._complaints(f"frames from {sender}", f"a frame {kind!r} failed", exc_info=True)

    def _frame(self, sender: str, kind: bytes, connection: int, payload: bytes) -> None:
        if kind == wire.DATA:
            handle = self.peers.get(connection)
            if handle is not None:
                handle.peer.send_data(payload)
        elif kind == wire.MOVE:
            self._move(sender, connection, payload)
        elif kind == wire.SPECTATE:
            simulation_id, _, text = payload.partition(b" ")
            name = values.text(simulation_id)
            if name in self._watching and self.spectators is not None:
                self.spectators.relayed(name, values.text(text), last=False)
        elif kind == wire.JOIN:
            self._seat_remote(sender, connection, values.join_request(payload))
        elif kind == wire.SEATED:
            handle = self.peers.get(connection)
            if handle is not None:
                handle.peer.remote_seated()
        elif kind == wire.REFUSED:
            handle = self.peers.get(connection)
            message, reason = values.refusal(payload)
            if handle is not None:
                self._refuse(handle, message, reason)
        elif kind == wire.CLOSE:
            handle = self.peers.pop(connection, None)
            if handle is not None:
                handle.peer.close()
        elif kind == wire.LEAVE:
            channel = self.channels.pop((sender, connection), None)
            if channel is not None:
                channel.open = False
                self._leave(channel)
        elif kind == wire.WATCH:
            self._relay(sender, values.text(payload))
        elif kind == wire.UNWATCH:
            self._unrelay(sender, values.text(payload))

    def _seat_remote(self, sender: str, connection: int, request: values.JoinRequest) -> None:
        """A bot on ``sender`` asks for a seat of a match played here: exactly what a bot
        connected here would get, refusals included."""

        def refuse(message: str, reason: str | None) -> None:
            refusal = orjson.dumps({"message": message, "reason": reason})
            self.send(sender, wire.REFUSED, connection, refusal)

        match = self.arena.get(request.simulation_id)
        message = request.message
        if match is None:
            refuse(WRONG_SIMULATION_ID, None)
            return
        channel = RemoteSeatChannel(self, sender, connection)
        try:
            if request.rejoin:
                seat = match.rejoin(channel, message.get("token"))
            else:
                named_game = message.get("game")
                if named_game is not None and named_game != match.codec.name:
                    refuse("Wrong game", f"simulation {match.id} is a {match.codec.name} game")
                    return
                seat = match.seat(channel, self._seat_request(message, request.kind))
        except JoinRejected as rejected:
            channel.open = False
            refuse(rejected.message, rejected.reason)
            if match.options.by_join:
                self.arena.drop_if_abandoned(match)
            return
        channel.match, channel.seat = match, seat
        self.channels[(sender, connection)] = channel
        self.send(sender, wire.SEATED, connection, b"")

    def _seat_request(self, message: JsonObject, kind: str | None) -> SeatRequest:
        """As the node the player is connected to would ask: a person has a person's time."""
        if kind == "person":
            timeout_s = self.arena.config.person_turn_timeout_ms / 1000
            return SeatRequest(message, kind="person", turn_timeout_s=timeout_s)
        return SeatRequest(message)

    def _move(self, sender: str, connection: int, payload: bytes) -> None:
        channel = self.channels.get((sender, connection))
        if channel is None or channel.match is None:
            data = encode(error_message("Not in a game", "join a simulation first"))
            self.send(sender, wire.DATA, connection, data)
            return
        channel.match.submit(channel.seat, values.move(payload), channel)

    def _leave(self, channel: RemoteSeatChannel) -> None:
        match = channel.match
        if match is not None:
            match.leave(channel.seat, channel)
            if match.options.by_join:
                self.arena.drop_if_abandoned(match)

    def forget_channel(self, channel: RemoteSeatChannel) -> None:
        key = (channel.peer_node, channel.connection)
        if self.channels.get(key) is channel:
            del self.channels[key]

    def _relay(self, sender: str, simulation_id: str) -> None:
        """Pages on ``sender`` watch a match here: a snapshot now, then every message."""
        if self.spectators is None:
            return
        relay = self._relays.get((sender, simulation_id))
        if relay is None:
            relay = self._relays[(sender, simulation_id)] = Relay(self, sender, simulation_id)
        self.spectators.relay(simulation_id, relay.deliver)

    def _unrelay(self, sender: str, simulation_id: str) -> None:
        relay = self._relays.pop((sender, simulation_id), None)
        if relay is not None and self.spectators is not None:
            self.spectators.unrelay(simulation_id, relay.deliver)

    # --- nodes lost ---------------------------------------------------------------------------
    def _lost(self, nodes: set[str], message: str, reason: str) -> None:
        """Those nodes are gone: their simulations leave the lobby, and every seat and page
        that reached them through this node, or reached this node through them, is told why
        and closed."""
        if not nodes:
            return
        log.warning("node %s: lost %s: %s", self.id, ", ".join(sorted(nodes)), reason)
        dropped = self.directory.drop_nodes(nodes)
        notice = encode(error_message(message, reason))
        for connection, handle in list(self.peers.items()):
            if handle.owner in nodes:
                del self.peers[connection]
                handle.peer.send_data(notice)
                handle.peer.close()
        page_notice = orjson.dumps({"type": "error", "message": message, "reason": reason})
        for simulation_id, owner in list(self._watching.items()):
            if owner in nodes:
                del self._watching[simulation_id]
                if self.spectators is not None:
                    self.spectators.relayed(simulation_id, page_notice.decode(), last=True)
        for key, channel in list(self.channels.items()):
            if key[0] in nodes:
                del self.channels[key]
                channel.open = False
                self._leave(channel)
        for peer_node, simulation_id in [k for k in self._relays if k[0] in nodes]:
            self._unrelay(peer_node, simulation_id)
        if dropped and self.spectators is not None:
            self.spectators.lobby_changed()

    def _known_nodes(self) -> set[str]:
        known = {str(entry["node"]) for entry in self.directory.values()}
        known.update(handle.owner for handle in self.peers.values() if handle.owner is not None)
        known.update(self._watching.values())
        known.update(node for node, _ in self.channels)
        known.update(node for node, _ in self._relays)
        return known

    # --- the arena's updates: this node's directory entries -----------------------------------
    def _on_update(self, update: Update) -> None:
        if isinstance(update, TurnPlayed):
            self._turned[update.result.match_id] = update.result
        elif isinstance(update, SeatsChanged | GameStarted):
            view = update.view
            if view.match_id in self._claims and (
                view.status is not Status.WAITING or None not in view.players
            ):  # full: the next random join opens another
                self._release(*self._claims.pop(view.match_id))
            created = self._created.setdefault(view.match_id, time.time())
            self._own[view.match_id] = lobby_entry(view, self.id, created)
            self._changed.add(view.match_id)
            self._flush_soon()
        elif isinstance(update, GameFinished | Removed):
            match_id = update.view.match_id if isinstance(update, GameFinished) else update.match_id
            self._own.pop(match_id, None)
            created = self._created.pop(match_id, time.time())
            if isinstance(update, GameFinished):
                self._finished.append(lobby_entry(update.view, self.id, created))
                del self._finished[:-FINISHED_KEPT]  # while Redis is away, only the last few
            self._turned.pop(match_id, None)
            self._changed.discard(match_id)
            self._removed.add(match_id)
            self._removed_aliases.update(self._aliases.pop(match_id, ()))
            if match_id in self._claims:
                self._release(*self._claims.pop(match_id))
            self._flush_soon()

    # --- sending ------------------------------------------------------------------------------
    def send(self, node: str, kind: bytes, connection: int, payload: bytes) -> None:
        """Queue a frame for ``node``: sent with everything else due to it this loop round."""
        if not self.up or self._outgoing_bytes > MAX_OUTGOING_BYTES:
            return  # past the bound, the link is about to be made again (see _flush)
        frame = wire.frame(kind, connection, payload)
        frames = self._outgoing.get(node)
        if frames is None:
            self._outgoing[node] = [frame]
        else:
            frames.append(frame)
        self._outgoing_bytes += len(frame)
        if not self._flush_due:
            self._flush_soon()

    def _flush_soon(self) -> None:
        if not self._flush_due and self._sender is not None:
            self._flush_due = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Everything due this loop round, in one write: the frames for each node (a PUBLISH
        per node) and the directory's changes. The sender asked Redis for no replies, so no
        write waits for one."""
        self._flush_due = False
        sender = self._sender
        if sender is None:
            return
        if sender.get_write_buffer_size() + self._outgoing_bytes > MAX_OUTGOING_BYTES:
            # Redis takes less than this node sends: the link counts as lost, and is made
            # again, rather than let the backlog grow.
            log.warning("node %s: %d bytes queued toward Redis", self.id, self._outgoing_bytes)
            sender.abort()
            return
        outgoing, self._outgoing, self._outgoing_bytes = self._outgoing, {}, 0
        parts: list[bytes] = []
        for node, frames in outgoing.items():
            head = self._publish_heads.get(node)
            if head is None:
                head = self._publish_heads[node] = wire.publish_head(inbox(node))
            size = len(self._header) + sum(map(len, frames))
            parts += (head, b"$%d\r\n" % size, self._header, *frames, b"\r\n")
        changed, self._changed = self._changed, set()
        removed, self._removed = self._removed, set()
        commands = self._directory_writes(changed, removed)
        released, self._released = self._released, []
        commands += [("EVAL", RELEASE_CLAIM, 1, key, value) for key, value in released]
        parts += (wire.command(*command) for command in commands)
        if parts:
            sender.write(b"".join(parts))

    def _directory_writes(self, changed: set[str], removed: set[str]) -> list[tuple[Any, ...]]:
        commands: list[tuple[Any, ...]] = []
        entries = [self._own[name] for name in changed if name in self._own]
        for entry in entries:
            key = sim_key(entry["simulationId"])
            commands.append(("SET", key, orjson.dumps(entry), "PX", self.ttl_ms))
            commands += self._alias_writes(entry["simulationId"])
        if removed:
            commands.append(("DEL", *(sim_key(name) for name in removed)))
        removed_aliases, self._removed_aliases = self._removed_aliases, set()
        if removed_aliases:
            commands.append(("DEL", *(alias_key(name) for name in removed_aliases)))
        finished, self._finished = self._finished, []
        if finished:
            commands.append(("LPUSH", FINISHED, *(orjson.dumps(entry) for entry in finished)))
            commands.append(("LTRIM", FINISHED, 0, FINISHED_KEPT - 1))
            commands.append(("PEXPIRE", FINISHED, self.ttl_ms))
        if entries or removed:
            change = {"node": self.id, "set": entries, "del": sorted(removed), "ended": finished}
            commands.append(("PUBLISH", LOBBY, orjson.dumps(change)))
        return commands

    def _alias_writes(self, simulation_id: str) -> list[tuple[Any, ...]]:
        names = self._aliases.get(simulation_id, ())
        value = orjson.dumps({"simulationId": simulation_id, "node": self.id})
        return [("SET", alias_key(name), value, "PX", self.ttl_ms) for name in names]

    # --- receiving ----------------------------------------------------------------------------
    def pushed(self, channel: bytes, data: bytes) -> None:
        """A message published to this node's inbox or to the lobby."""
        if channel == self._own_inbox:
            self.received(data)
            return
        try:
            self._lobby_message(data)
        except values.BadValue as bad:
            self._complaints(LOBBY, bad)
        except Exception:  # a bug: one announcement must not cost the link
            self._complaints(LOBBY, "a message failed", exc_info=True)

    def _lobby_message(self, data: bytes) -> None:
        """A node's announcement (where anyone who reaches the Redis can publish): each entry
        is read on its own, and only its node's entries are taken."""
        change = values.lobby_change(data)
        node = change.node
        if node == self.id:
            return
        for entry in self._entries_of(node, change.set, values.directory_entry):
            if entry["status"] == Status.FINISHED.value:
                self.directory.pop(entry["simulationId"])
            else:
                self.directory.put(entry)
        for name in change.deleted:
            if (self.directory.get(name) or {}).get("node") == node:
                self.directory.pop(name)
        if self.spectators is not None:
            for entry in self._entries_of(node, change.ended, values.finished_entry):
                self.spectators.finished_elsewhere(entry)
            self.spectators.lobby_changed()

    def _entries_of(
        self, node: str, entries: list[object], read: Callable[[object], JsonObject]
    ) -> list[JsonObject]:
        """The entries a node announced that read, and are its own."""
        kept = []
        for value in entries:
            try:
                entry = read(value)
            except values.BadValue as bad:
                self._complaints(f"{LOBBY} from {node}", bad)
                continue
            if entry["node"] == node:
                kept.append(entry)
            else:
                self._complaints(f"{LOBBY} from {node}", f"an entry of node {entry['node']}")
        return kept

    # --- heartbeat ----------------------------------------------------------------------------
    async def _heartbeat_loop(self, redis: Redis) -> None:
        while True:
            await self._beat(redis)
            await asyncio.sleep(self.heartbeat_s)

    async def _beat(self, redis: Redis) -> None:
        """Say this node is alive, refresh its entries (with their latest turn), and find the
        nodes that are not."""
        started = time.perf_counter()
        turned, self._turned = self._turned, {}
        pipe = redis.pipeline(transaction=False)
        pipe.set(node_key(self.id), orjson.dumps(self.addresses), px=self.ttl_ms)
        pipe.sadd(NODES, self.id)
        pipe.pexpire(FINISHED, self.ttl_ms)  # kept while any node of the arena lives
        updated = []
        for name, entry in self._own.items():
            result = turned.get(name)
            if result is not None:
                entry["turn"], entry["scores"] = result.number, result.scores
                updated.append(entry)
            # Written whole, not just given more time: an entry that expired while this node
            # was too busy to say it is alive comes back.
            pipe.set(sim_key(name), orjson.dumps(entry), px=self.ttl_ms)
            for command in self._alias_writes(name):
                pipe.execute_command(*command)
        if updated:
            pipe.publish(LOBBY, orjson.dumps({"node": self.id, "set": updated, "del": []}))
        pipe.smembers(NODES)
        results = await pipe.execute()
        self.round_trip_s = time.perf_counter() - started
        members, strangers = self._node_ids(results[-1])
        members.discard(self.id)
        alive: set[str] = set()
        if members:
            ordered = sorted(members)
            entries = await redis.mget([node_key(member) for member in ordered])
            alive = {member for member, entry in zip(ordered, entries, strict=True) if entry}
        gone: list[str | bytes] = [*(members - alive), *strangers]
        if gone:
            await redis.srem(NODES, *gone)
        self._lost(self._known_nodes() - alive, NODE_LOST, NODE_LOST_REASON)
        if alive - self._alive:  # a new node, or one taken for dead that was only slow
            await self._load_directory(redis)
        self._alive = alive

    def _node_ids(self, members: set[bytes]) -> tuple[set[str], list[bytes]]:
        """The node ids in ``tavern:nodes``, and what else is there (said, to be removed)."""
        ids, strangers = set(), []
        for member in members:
            try:
                ids.add(values.node_id(member))
            except values.BadValue as bad:
                self._complaints(NODES, bad)
                strangers.append(member)
        return ids, strangers

    # --- the link ------------------------------------------------------------------------------
    async def _load_directory(self, redis: Redis) -> None:
        """Every other node's live simulations, and the arena's last finished games; an entry
        that does not read is said and skipped."""
        directory: list[JsonObject] = []
        keys = [key async for key in redis.scan_iter(match=sim_key("*"), count=1000)]
        for start in range(0, len(keys), 1000):
            batch = keys[start : start + 1000]
            for key, raw in zip(batch, await redis.mget(batch), strict=True):
                if raw is None:
                    continue
                try:
                    entry = values.directory_entry(raw)
                except values.BadValue as bad:
                    self._complaints(key.decode(errors="replace"), bad)
                    continue
                if entry["node"] != self.id:
                    directory.append(entry)
        self.directory.replace(directory)
        if self.spectators is not None:
            for raw in reversed(await redis.lrange(FINISHED, 0, FINISHED_KEPT - 1)):
                try:
                    entry = values.finished_entry(raw)
                except values.BadValue as bad:
                    self._complaints(FINISHED, bad)
                    continue
                if entry["node"] != self.id:
                    self.spectators.finished_elsewhere(entry)
            self.spectators.lobby_changed()

    async def _linked(self) -> None:
        """Connect, register, follow the others and serve them until the link fails."""
        # No retries inside redis-py: a failed command means the link is down, handled here.
        options: dict[str, Any] = {"retry": Retry(NoBackoff(), 0), "socket_connect_timeout": 2}
        redis = Redis.from_url(self.url, socket_timeout=max(2.0, self.ttl_ms / 1000), **options)
        # The traffic goes over two connections of its own, made (address, password, database)
        # by redis-py, then written and read directly (see Link).
        pool = ConnectionPool.from_url(self.url, protocol=2, **options)
        sender = pool.connection_class(**pool.connection_kwargs)
        listener = pool.connection_class(**pool.connection_kwargs)
        lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        try:
            await sender.connect()  # type: ignore[no-untyped-call]
            await sender.send_command("CLIENT", "REPLY", "OFF")
            await listener.connect()  # type: ignore[no-untyped-call]
            listening = Link.take_over(listener, lost, self.pushed)
            listening.write(wire.command("SUBSCRIBE", inbox(self.id), LOBBY))
            self._sender = Link.take_over(sender, lost, None)
            self._redis = redis
            self._changed.update(self._own)  # everything again: Redis may have lost it all
            self._flush_soon()
            await self._beat(redis)  # which follows the other nodes' simulations
            self.up = True
            self.connected.set()
            log.info("node %s: in the arena on %s", self.id, without_password(self.url))
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._heartbeat_loop(redis))
                await lost
        finally:
            self._redis = self._sender = None
            self._flush_due = False
            if not lost.done():
                lost.cancel()  # closed here, not lost
            elif not lost.cancelled():
                lost.exception()  # raised above already, or never awaited: retrieved
            for connection in (sender, listener):
                with contextlib.suppress(RedisError, OSError):
                    await connection.disconnect(nowait=True)
            with contextlib.suppress(RedisError, OSError):
                await redis.aclose()

    def _link_down(self, reason: str) -> None:
        """Redis is out of reach: everything that crosses nodes is told and closed."""
        if not self.up and not self.directory and not self.peers and not self.channels:
            return
        self.up = False
        self.round_trip_s = None
        self._outgoing.clear()
        self._outgoing_bytes = 0
        self._lost(self._known_nodes(), LINK_LOST, reason)
        for handle in list(self.peers.values()):  # seats still waiting for an owner
            self._refuse(handle, LINK_LOST, reason)
        self.directory.clear()
        self._alive.clear()
        if self.spectators is not None:
            self.spectators.lobby_changed()

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
                    self.id,
                    without_password(self.url),
                    refused.exceptions[0],
                    backoff,
                )
            except* (RedisError, OSError) as failed:
                log.warning(
                    "node %s: Redis at %s: %s; retrying in %.1f s",
                    self.id,
                    without_password(self.url),
                    failed.exceptions[0],
                    backoff,
                )
            if self.up:
                linked_once = True
                backoff = self.heartbeat_s / 4  # it was up: start the backoff again
            self._link_down(LINK_LOST_REASON)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    @contextlib.asynccontextmanager
    async def running(self, addresses: JsonObject) -> AsyncIterator[ClusterNode]:
        """Be a node of the arena for the block (waiting a moment for the first link); then
        leave it: this node's seats on other nodes and its games' remote seats are told."""
        self.addresses = addresses
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = tasks
                linking = tasks.create_task(self._stay_linked(), name="cluster")
                try:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(FIRST_CONNECT_WAIT_S):
                            await self.connected.wait()
                    yield self
                finally:
                    await self._leave_arena()
                    linking.cancel()
        finally:
            self._tasks = None

    async def _leave_arena(self) -> None:
        """A clean stop: the remote seats of this node's games hear why, and this node's keys
        go at once rather than when they expire."""
        redis = self._redis
        if redis is None:
            return
        notice = encode(error_message("Server shutting down", "the arena is stopping"))
        for (node, connection), channel in list(self.channels.items()):
            self.send(node, wire.DATA, connection, notice)
            channel.close()
        with contextlib.suppress(RedisError, OSError):
            async with asyncio.timeout(2.0):
                pipe = redis.pipeline(transaction=False)
                for node, frames in self._outgoing.items():
                    pipe.publish(inbox(node), self._header + b"".join(frames))
                self._outgoing.clear()
                pipe.delete(node_key(self.id), *(sim_key(name) for name in self._own))
                pipe.srem(NODES, self.id)
                change = {"node": self.id, "set": [], "del": list(self._own)}
                pipe.publish(LOBBY, orjson.dumps(change))
                await pipe.execute()
        self.up = False

    def arena_name(self) -> str:
        """Which arena this node joined, as logs may show it."""
        return without_password(self.url)
