"""The seek pool of an arena on Redis: a seeker on any node meets one on any other.

Each seek is a member of the game's sorted set ``tavern:seeks:{game}`` (scored by rating): its
node, its id there, and what the pairing policy needs (``server.ladder``). A node with seekers
reads its games' sets every ``TICK_S`` and pairs them with the same pure policy as an arena
alone; a pair is this node's to make when its longer-waiting seeker is here. It is claimed
atomically (both members removed, or neither, by one script), so that no seeker is paired
twice; the match opens here, this node's seeker takes its seat, and the other seeker's node,
if another, is told (``wire.PAIRED``) and asks for the remaining seat the ordinary way.
Members of nodes that are gone are removed by whichever node reads them. A pair claimed after
its seeker here left (its withdrawal not in Redis yet) is not played: the other seeker goes back
to the pool as it was, its wait counted from its seek.
"""

from __future__ import annotations

import asyncio
import time

import orjson
from redis.asyncio import Redis
from redis.exceptions import RedisError

from server.arena import Arena, SeekTaker
from server.cluster import values, wire
from server.cluster.following import Following
from server.cluster.keys import node_key, seeks_key
from server.cluster.link import Command, Link
from server.ladder import TICK_S, Seeker, pair_seekers

CLAIM_PAIR = """if redis.call('ZSCORE', KEYS[1], ARGV[1])
    and redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  redis.call('ZREM', KEYS[1], ARGV[1], ARGV[2])
  return 1
end
return 0"""  # both seekers taken at once, or neither


class SharedSeeks:
    """This node's seekers in the shared pool, and its part in pairing it."""

    def __init__(
        self, link: Link, arena: Arena, following: Following, complaints: values.Complaints
    ) -> None:
        self.link = link
        self.arena = arena
        self.following = following
        self.complaints = complaints
        self.local: dict[str, tuple[bytes, Seeker, SeekTaker]] = {}  # by seek id: its member
        self._writes: list[Command] = []
        self._pairing: asyncio.Task[None] | None = None

    def seek(self, seeker: Seeker, taker: SeekTaker) -> None:
        """``server.arena.Elsewhere.seek``: in the pool, the seek's id starts with this node's,
        and its ``since`` is the wall clock's, the one every node shares."""
        shared = Seeker(
            f"{self.link.node_id}/{seeker.id}",
            seeker.bot,
            seeker.game,
            seeker.rated,
            seeker.rating,
            time.time(),
            seeker.last_opponent,
            seeker.had_first_seat,
        )
        member = values.seek_member(self.link.node_id, shared)
        self.local[seeker.id] = (member, shared, taker)
        self._writes.append(("ZADD", seeks_key(seeker.game), seeker.rating, member))
        self.link.flush_soon()
        if self._pairing is None and (tasks := self.link.tasks) is not None:
            self._pairing = tasks.create_task(self._pair_while_seeking(), name="seeks")

    def relinked(self) -> None:
        """Every seek here is due in the pool again: Redis may have lost them (a restart), or
        the other nodes removed them (this node was taken for lost)."""
        for member, seeker, _ in self.local.values():
            self._writes.append(("ZADD", seeks_key(seeker.game), seeker.rating, member))
        if self._writes:
            self.link.flush_soon()

    def unseek(self, seeker_id: str) -> None:
        found = self.local.pop(seeker_id, None)
        if found is not None:
            member, seeker, _ = found
            self._writes.append(("ZREM", seeks_key(seeker.game), member))
            self.link.flush_soon()

    def writes(self) -> list[Command]:
        writes, self._writes = self._writes, []
        return writes

    def paired(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.PAIRED``: another node paired a seek of this node's into its match."""
        seeker_id, simulation_id = values.pairing(payload)
        found = self.local.pop(seeker_id.removeprefix(f"{self.link.node_id}/"), None)
        if found is not None:
            found[2].paired_elsewhere(simulation_id)

    async def _pair_while_seeking(self) -> None:
        try:
            while self.local:
                await asyncio.sleep(TICK_S)
                redis = self.link.redis
                if redis is None:
                    continue
                try:
                    for game in {seeker.game for _, seeker, _ in self.local.values()}:
                        await self._pair(redis, game)
                except (RedisError, OSError):
                    continue  # the link says so and links again; the next tick tries again
        finally:
            self._pairing = None

    async def _pair(self, redis: Redis, game: str) -> None:
        key = seeks_key(game)
        living = self.following.alive | {self.link.node_id}
        members: dict[str, tuple[str, bytes]] = {}  # seek id -> node, member
        seekers = []
        gone: list[bytes] = []
        read: list[tuple[str, Seeker, bytes]] = []
        for member in await redis.zrange(key, 0, -1):
            if not isinstance(member, bytes):
                continue
            try:
                read.append((*values.seeker(member), member))
            except values.BadValue as bad:
                self.complaints(key, bad)
                gone.append(member)
        living |= await self._back(redis, {node for node, _, _ in read} - living)
        for node, seeker, member in read:
            if node not in living:
                gone.append(member)
                continue
            if self.arena.roster.is_barred(seeker.bot):
                continue  # banned or revoked: its node withdraws it once it knows
            members[seeker.id] = (node, member)
            seekers.append(seeker)
        if gone:
            await redis.zrem(key, *gone)
        mine = [
            (first, second)
            for first, second in pair_seekers(seekers, time.time())
            if members[min((first, second), key=lambda s: (s.since, s.id)).id][0]
            == self.link.node_id  # the older seeker's node pairs them
        ]
        if not mine:
            return
        # Every claim of the pass in one round trip: each is still atomic (one script), and
        # a pass of hundreds of pairs does not wait for Redis once per pair.
        async with redis.pipeline(transaction=False) as claims:
            for first, second in mine:
                claims.eval(CLAIM_PAIR, 1, key, members[first.id][1], members[second.id][1])
            claimed = await claims.execute()
        for (first, second), answer in zip(mine, claimed, strict=True):
            if answer != 1:
                continue
            pair = (first, second)
            if all(self._still_seeking(seeker, members) for seeker in pair):
                self._meet(first, second, members)
                continue
            for seeker in pair:  # those still seeking wait on, in their place
                if self._still_seeking(seeker, members):
                    self._writes.append(("ZADD", key, seeker.rating, members[seeker.id][1]))
            self.link.flush_soon()

    async def _back(self, redis: Redis, nodes: set[str]) -> set[str]:
        """Those of ``nodes``, which this node has not seen alive at its last heartbeat, that
        are alive now: one taken for lost that came back put its seeks in the pool again
        before the next heartbeat here could see it, and they stay."""
        if not nodes:
            return set()
        ordered = sorted(nodes)
        keys = await redis.mget([node_key(node) for node in ordered])
        return {node for node, alive in zip(ordered, keys, strict=True) if alive is not None}

    def _still_seeking(self, seeker: Seeker, members: dict[str, tuple[str, bytes]]) -> bool:
        """Another node's seeker (as far as this node knows), or one of this node's that has
        not left."""
        node = members[seeker.id][0]
        return node != self.link.node_id or seeker.id.removeprefix(f"{node}/") in self.local

    def _meet(self, first: Seeker, second: Seeker, members: dict[str, tuple[str, bytes]]) -> None:
        match = self.arena.paired_match(first, second)
        for seat, seeker in enumerate((first, second)):
            node = members[seeker.id][0]
            if node != self.link.node_id:
                payload = orjson.dumps({"seek": seeker.id, "simulationId": match.id})
                self.link.send(node, wire.PAIRED, 0, payload)
                continue
            found = self.local.pop(seeker.id.removeprefix(f"{node}/"), None)
            if found is not None:
                found[2].paired(match, seat)
