"""One node of an arena shared through Redis: its parts, put together.

* ``link``: the connections to Redis, what the node writes there, its heartbeat's rhythm, and
  linking again whenever Redis goes away;
* ``listing`` and ``claims``: this node's simulations as the arena sees them, and the claims of
  its random joins; ``following``: the other nodes, alive or not, and their simulations (the
  directory);
* ``seats``: seats that cross nodes, asked of another node (``SeatsAsked``) or given to another
  node's clients (``SeatsGiven``); ``relays``: pages watching across nodes, both ways;
* ``seeks``, ``challenges`` and ``bots``: the ladder's pool, challenges across nodes, and what
  the nodes share about registered bots (pacing, what each holds, last games, presence);
* ``inbox``: the frames the other nodes send, each kind to its part's handler (the table is
  made in ``ClusterNode.__init__``).

What lives in Redis is told in ``server.cluster.keys``. Anyone who reaches the Redis can write
there and publish on its channels, so whatever a node reads from it is checked first
(``server.cluster.values``, ``wire.read_batch``): a value or a frame that does not read is
skipped and logged, and costs nothing else; a key that holds another type of value than the
nodes keep there is deleted (``server.cluster.repairs``), each reply read on its own.

When a node's key expires, every other node drops its simulations, tells each bot and page
connected through it to one of that node's games why, and closes them. When Redis itself goes
away, games whose seats are all on their node play on; every page that crosses nodes is told
and closed; the seats that cross nodes are held for ``reconnectGraceMs``, their frames kept in
the link until their node is back in the arena, so that their games go on where they were (or
told and closed when the grace is over); the node retries with a backoff and registers
everything again once Redis is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator, Collection

import orjson
from redis.exceptions import ResponseError

from server.arena import Arena, RandomJoiner, RemotePeer, SeekTaker, Standing
from server.challenges import Challenge
from server.cluster import Answerer, Spectators, values, wire
from server.cluster.bots import SharedBots
from server.cluster.challenges import RemoteChallenges
from server.cluster.claims import Claims
from server.cluster.following import Following
from server.cluster.inbox import Handler, Inbox
from server.cluster.keys import (
    FINISHED,
    NODES,
    OWNED_KINDS,
    TYPES,
    inbox,
    kind_of,
    node_key,
)
from server.cluster.link import Command, Link
from server.cluster.listing import Listing
from server.cluster.relays import Relays, Watching
from server.cluster.repairs import Repairs
from server.cluster.requests import Requests
from server.cluster.seats import LINK_LOST_REASON, PeerSeat, SeatsAsked, SeatsGiven
from server.cluster.seeks import PAIRED_KEPT_S, SharedSeeks
from server.config import ArenaConfig, without_password
from server.errors import BotError
from server.games.base import JsonObject
from server.ladder import Seeker
from server.protocol import encode, error_message
from server.redis_client import Client

log = logging.getLogger(__name__)

NODE_LOST_REASON = "the node playing this game stopped answering"


class ClusterNode:
    """This process as one node of the arena on a Redis server: what the TCP connections ask
    (``server.arena.Elsewhere``) and what the visor asks (``server.cluster.OtherNodes``)."""

    def __init__(self, arena: Arena, config: ArenaConfig) -> None:
        assert config.redis is not None
        self.arena = arena
        self.id = secrets.token_hex(wire.NODE_ID_BYTES // 2)
        self.addresses: JsonObject = {}
        self.round_trip_s: float | None = None  # of the last heartbeat, for /metrics
        # What it read from Redis and could not use (tavern_redis_bad_values in /metrics).
        self.complaints = complaints = values.Complaints(self.id)
        self.link = Link(
            self, self.id, config.redis, config.node_heartbeat_ms / 1000, config.node_ttl_ms
        )
        self.repairs = Repairs(self.link, complaints, self._deleted)
        self.listing = Listing(self.link)
        self.claims = Claims(self.link, self.repairs)
        self.following = Following(self.link, self.repairs)
        # How long the seats that cross nodes are held while the link is made again (and a
        # seat asked for meanwhile waits for it).
        self.grace_s = config.reconnect_grace_ms / 1000
        self.asked = SeatsAsked(self.link, arena, self.following, self.claims, self.grace_s)
        # A seat's link that ended is kept while its node may still ask for its last frames.
        self.given = SeatsGiven(self.link, arena, keep_s=2 * self.grace_s)
        self.watching = Watching(self.link, self.following.directory)
        self.relays = Relays(self.link)
        # A pairing is noted longer than its frame may wait for its node's link to come back.
        paired_kept_s = max(PAIRED_KEPT_S, 2 * self.grace_s)
        self.seeks = SharedSeeks(self.link, arena, self.following, self.repairs, paired_kept_s)
        self.challenges = RemoteChallenges(self.link, arena, self.following)
        self.bots = SharedBots(self.link, arena, self.following, self.repairs)
        self.requests = Requests(self.link)
        arena.roster.pacer = arena.roster.budget = self.bots
        frame_table: dict[bytes, Handler] = {
            # To the node playing the match:
            wire.JOIN: self.given.join,
            wire.MOVE: self.given.move,
            wire.LEAVE: self.given.leave,
            wire.RESUME: self.given.resume,
            wire.WATCH: self.relays.watched,
            wire.UNWATCH: self.relays.unwatched,
            # To the node holding the connection:
            wire.DATA: self.asked.data,
            wire.SEATED: self.asked.seated,
            wire.REFUSED: self.asked.refused,
            wire.CLOSE: self.asked.closed,
            wire.RESUMED: self.asked.resumed,
            wire.SPECTATE: self.watching.relayed,
            wire.PAIRED: self.seeks.paired,
            wire.CHALLENGE: self.challenges.offered,
            wire.ANSWERED: self.challenges.answered,
            # Either way:
            wire.REQUEST: self.requests.requested,
            wire.REPLY: self.requests.replied,
        }
        self.inbox = Inbox(frame_table, complaints)
        self._grace: asyncio.TimerHandle | None = None
        self._refreshed: list[Command] = []  # the heartbeat's, due in the link's next write
        self._inbox_channel = inbox(self.id).encode()
        self._registered = False  # this node's key was written since the link was made
        # Taken for lost at the last beat: what it owns is written again at this one too (a
        self._owned_due_again = False  # node that found it dead may have deleted it since)
        arena.listeners += (self.listing.on_update, self.claims.on_update)

    # --- what the visor asks (server.cluster.OtherNodes) --------------------------------------
    def serve_spectators(self, spectators: Spectators) -> None:
        self.following.spectators = self.watching.spectators = self.relays.spectators = spectators

    def simulations(self) -> list[JsonObject]:
        return sorted(self.following.directory.values(), key=lambda entry: entry["created"])

    def simulation(self, simulation_id: str) -> JsonObject | None:
        return self.following.directory.get(simulation_id)

    def watch(self, simulation_id: str) -> bool:
        return self.watching.watch(simulation_id)

    def unwatch(self, simulation_id: str) -> None:
        self.watching.unwatch(simulation_id)

    async def alias(self, name: str, simulation_id: str) -> None:
        await self.listing.alias(name, simulation_id)

    async def locate(self, name: str) -> str | None:
        return await self.following.locate(name)

    def node_of(self, simulation_id: str) -> str | None:
        entry = self.following.directory.get(simulation_id)
        return None if entry is None else str(entry["node"])

    async def ask(self, node: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        return await self.requests.ask(node, path, body)

    def answer_requests(self, answerer: Answerer) -> None:
        self.requests.answerer = answerer

    def remote_seats(self) -> int:
        """The seats of this node's games held through another node (for /metrics)."""
        return len(self.given.channels)

    # --- what the sessions ask (server.arena.Elsewhere) ---------------------------------------
    def seat(
        self,
        peer: RemotePeer,
        simulation_id: str,
        message: JsonObject,
        rejoin: bool,
        kind: str = "bot",
    ) -> PeerSeat:
        return self.asked.seat(peer, simulation_id, message, rejoin, kind)

    def waiting(self, game: str, fields: JsonObject) -> str | None:
        if not self.link.up:
            return None
        seats = self.arena.codec(game).wanted_seats(fields)
        return self.following.directory.waiting(game, seats)

    def random_join(self, peer: RandomJoiner, game: str, message: JsonObject) -> PeerSeat:
        return self.asked.random_join(peer, game, message)

    def seek(self, seeker: Seeker, taker: SeekTaker) -> None:
        self.seeks.seek(seeker, taker)

    def unseek(self, seeker_id: str) -> None:
        self.seeks.unseek(seeker_id)

    def challenge(self, challenge: Challenge) -> None:
        self.challenges.challenge(challenge)

    def present(self, bot: str) -> None:
        self.challenges.present(bot)

    async def online(self, bots: list[str]) -> set[str]:
        return await self.bots.online(bots)

    async def standing(self, bot: str) -> Standing:
        return await self.bots.standing(bot)

    def held(self, bot: str, games: int) -> None:
        self.bots.held(bot, games)

    def paired(self, first: str, second: str) -> None:
        self.bots.paired(first, second)

    # --- what the link asks (server.cluster.link.LinkUser) ------------------------------------
    def pushed(self, channel: bytes, data: bytes) -> None:
        if channel == self._inbox_channel:
            self.inbox.received(data)
        else:
            self.following.announced(data)

    def refused(self, key: str, error: ResponseError) -> None:
        """A key of another type the link's write met is repaired (deleted)."""
        if kind_of(key) in TYPES:
            self.repairs.wrong_type(key, error)

    def _deleted(self, key: str) -> None:
        """A key of another type is to be deleted: if it is of the kinds a node lists as its
        own (its entries, names, bots' holdings and presence, the list), this node's are
        written again whole after the deletion, as after a lost link."""
        if kind_of(key) in OWNED_KINDS:
            self._owned_again()

    def _owned_again(self) -> None:
        """What this node lists as its own (``tavern:owned``) is due in Redis again."""
        self.listing.relinked()
        self.bots.relinked()
        self.challenges.relinked()

    def relinked(self) -> None:
        self._refreshed = []  # every entry is written again anyway
        self._owned_again()
        self.seeks.relinked()
        self._registered = False

    async def beat(self, redis: Client) -> None:
        """Say this node is alive (its one key), write what changed since the last beat (the
        games' turns, the bots gone), and find the nodes that are not. Each reply is read on
        its own: a key that holds another type of value costs only itself
        (``server.cluster.repairs``)."""
        started = time.perf_counter()
        # What changed goes with the link's next write, whose replies the link reads.
        self._refreshed = [*self.listing.refresh(), *self.challenges.refresh()]
        self.link.flush_soon()
        pipe = redis.pipeline(transaction=False)
        pipe.exists(node_key(self.id))  # (whatever its type: SET replaces any)
        pipe.set(node_key(self.id), orjson.dumps(self.addresses), px=self.link.ttl_ms)
        pipe.sadd(NODES, self.id)
        pipe.pexpire(FINISHED, self.link.ttl_ms)  # kept while any node of the arena lives
        pipe.smembers(NODES)
        results = await pipe.execute(raise_on_error=False)
        self.round_trip_s = time.perf_counter() - started
        exists, *replies = results
        keys = [node_key(self.id), NODES, FINISHED, NODES]
        for key, result in zip(keys, replies, strict=True):
            self.repairs.check(key, result)
        if self._owned_due_again:
            self._owned_due_again = False
            self._owned_again()
        if self._registered and exists == 0:
            self._taken_for_lost()
            self._owned_due_again = True
        self._registered = True
        members = results[-1]
        alive = await self.following.living(
            redis, None if isinstance(members, Exception) else members, self._known_nodes()
        )
        # The nodes back after a lost link: each seat's link to them resumes (frames lost with
        # the link go again).
        back = self.link.seen(alive)
        self.asked.back(back)
        self.given.back(back)
        if back and not self.link.held and self._grace is not None:
            self._grace.cancel()  # every held node is back: a later outage has its own grace
            self._grace = None
        self.given.forget_ended()
        # The nodes whose seats are held after a lost link have until the grace's end.
        lost = self._known_nodes() - alive - self.link.held
        self._lost(lost, BotError.ARENA_NODE_LOST, NODE_LOST_REASON)
        await self.following.follow(redis, alive)

    def unlinked(self, was_up: bool) -> None:
        """Redis is out of reach: the seats that cross nodes are held for ``reconnectGraceMs``
        (their frames wait in the link until their node is back, and the game goes on where
        it was); the pages watching across nodes, and everything once the grace is over, are
        told and closed."""
        crossing = self.following.directory or self.asked.handles or self.given.channels
        if not was_up and not crossing:
            return
        self.round_trip_s = None
        seated = self.asked.owners() | self.given.nodes()
        if self._grace is None and seated and self.grace_s > 0:
            log.warning(
                "node %s: seats on %s held for %g s while the link is made again",
                self.id,
                ", ".join(sorted(seated)),
                self.grace_s,
            )
            self.link.hold(seated)
            self._grace = asyncio.get_running_loop().call_later(self.grace_s, self._grace_over)
        self._lost(self._known_nodes(), BotError.ARENA_LINK_LOST, LINK_LOST_REASON, self.link.held)
        self.asked.unlinked()  # seats still waiting for an owner
        self.requests.lost()  # their answers would come over the link lost
        self.following.clear()

    def _grace_over(self) -> None:
        """The nodes not back in the arena by now are lost, with every seat that crosses to
        them."""
        self._grace = None
        late = set(self.link.held)
        self.link.let_go(late)
        if self.link.up:
            self._lost(late, BotError.ARENA_NODE_LOST, NODE_LOST_REASON)
        else:
            self._lost(late, BotError.ARENA_LINK_LOST, LINK_LOST_REASON)

    def due(self) -> list[Command]:
        refreshed, self._refreshed = self._refreshed, []
        return (
            self.repairs.writes()
            + refreshed  # before the entries' deletions
            + self.listing.writes()
            + self.claims.writes()
            + self.seeks.writes()
            + self.challenges.writes()
            + self.bots.writes()
        )

    def _taken_for_lost(self) -> None:
        """This node's key had expired when its heartbeat came: it said nothing for
        ``nodeTtlMs`` (its process stopped, SIGSTOP, or too busy), and the other nodes took
        it for lost: they dropped its simulations and its seeks, told the bots and pages that
        crossed to it why and closed them, and hold the seats its own bots play there until the
        grace is over. This node does its part, so that no game is played on for a seat the
        other end gave up: each seat that crosses nodes asks its other end what it read, as
        after a lost link (one the other end still has goes on; one it gave up is given up
        here too: a bot here is told ``Arena link lost`` and closed, a seat of a game here is
        left, to rejoin within the grace or forfeit); the pages watching across nodes are
        told and closed; its seeks go into the pool again. (Its directory needs nothing:
        the lobby's announcements made meanwhile wait in its subscription.)"""
        crossing = self.asked.owners() | self.given.nodes()
        pages = self.watching.nodes() | self.relays.nodes()
        log.warning(
            "node %s: silent for longer than nodeTtlMs (%d ms), it was taken for lost; "
            "its seats on %s ask what is left of them",
            self.id,
            self.link.ttl_ms,
            ", ".join(sorted(crossing)) or "no other node",
        )
        self.asked.back(crossing)
        self.given.back(crossing)
        self.watching.lost(pages, BotError.ARENA_LINK_LOST, LINK_LOST_REASON)
        self.relays.lost(pages)
        self.seeks.relinked()
        self._owned_again()  # the others deleted what it listed: written again

    # --- nodes lost ---------------------------------------------------------------------------
    def _lost(self, nodes: set[str], message: str, reason: str, held: Collection[str] = ()) -> None:
        """Those nodes are gone: their simulations leave the lobby, and every seat and page
        that reached them through this node, or reached this node through them, is told why
        and closed; but the seats that cross to the ``held`` nodes, which are kept."""
        if not nodes:
            return
        log.warning("node %s: lost %s: %s", self.id, ", ".join(sorted(nodes)), reason)
        dropped = self.following.drop(nodes)
        self.requests.lost(set(nodes))
        seats_lost = set(nodes).difference(held)
        self.asked.lost(seats_lost, encode(error_message(message, reason)))
        self.watching.lost(nodes, message, reason)
        self.given.lost(seats_lost)
        self.relays.lost(nodes)
        if dropped and self.following.spectators is not None:
            self.following.spectators.lobby_changed()

    def _known_nodes(self) -> set[str]:
        known = {str(entry["node"]) for entry in self.following.directory.values()}
        known |= self.asked.owners()
        known |= self.watching.nodes()
        known |= self.given.nodes()
        known |= self.relays.nodes()
        return known

    # --- running ------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def running(self, addresses: JsonObject) -> AsyncIterator[ClusterNode]:
        """Be a node of the arena for the block (waiting a moment for the first link); then
        leave it: this node's seats on other nodes and its games' remote seats are told."""
        self.addresses = {**addresses, "wire": wire.VERSION}
        async with self.link.running():
            try:
                yield self
            finally:
                if self._grace is not None:
                    self._grace.cancel()
                await self._leave_arena()

    async def _leave_arena(self) -> None:
        """A clean stop: the remote seats of this node's games hear why, and this node's keys
        go at once rather than when the others find it dead."""
        if self.link.redis is None:
            return
        self.given.close_all(
            encode(error_message(BotError.SERVER_SHUTTING_DOWN, "the arena is stopping"))
        )
        await self.link.leave(self.listing.leaving())

    def arena_name(self) -> str:
        """Which arena this node joined, as logs may show it."""
        return without_password(self.link.url)
