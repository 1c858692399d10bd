"""The seek pool of an arena on Redis: a seeker on any node meets one on any other.

Each seek is a member of the game's sorted set ``tavern:seeks:{game}`` (scored by rating): its
node, its id there, and what the pairing policy needs (``server.ladder``). One node at a time
pairs a game's pool: the node with seekers that holds the game's lease (``tavern:pairing:{game}``,
taken when free and renewed at each of its passes, so that it passes to another node with
seekers within ``LEASE_MS`` once this one has none or stops). Every ``TICK_S`` the holder reads
the set and pairs it with the same pure policy as an arena alone, a slice at a time
(``server.ladder.Pairing``), letting the event loop run between slices; the other nodes read
nothing of it. A slice's pairs are claimed by one script, each atomically (both members
removed, or neither; noted in ``tavern:paired:{game}``), so that no seeker is paired twice; the
match opens on the pairing node, its own seekers take their seats, and the node of each other
seeker is told (``wire.PAIRED``) and asks for that seat the ordinary way. Members of nodes
that are gone are removed by the node that reads them. A pair claimed after its seeker here
left (its withdrawal not in Redis yet) is not played: the other seeker goes back to the pool
as it was, its wait counted from its seek.

A node that does not find a seek of its own in the pool (the pool held another type of value
and was reset, or Redis lost it) puts it back, unless it was paired (noted in
``tavern:paired:{game}``, checked by the same script): its pairing is on its way.
"""

from __future__ import annotations

import asyncio
import itertools
import time

import orjson
from redis.exceptions import RedisError

from server.arena import Arena, SeekTaker
from server.cancelling import stop_if_cancelled
from server.cluster import values, wire
from server.cluster.following import Following
from server.cluster.keys import node_key, paired_key, pairing_key, seeks_key
from server.cluster.link import Command, Link
from server.cluster.repairs import Repairs
from server.ladder import TICK_S, Pairing, Seeker
from server.redis_client import Client, read_many

# Pairs of seekers (ARGV[3], ARGV[4], then the next pair...) each taken both at once or
# neither, all in one script; those taken are noted in the pool's paired set (KEYS[2]) at
# ARGV[1] (the time), which keeps ARGV[2] seconds. Answers whether the paired set held another
# type of value (1: it was deleted first), then 1 for each pair taken, 0 for each not.
CLAIM_PAIRS = """local now, kept = tonumber(ARGV[1]), tonumber(ARGV[2])
local answers = {0}
local kind = redis.call('TYPE', KEYS[2]).ok
if kind ~= 'zset' and kind ~= 'none' then
  redis.call('DEL', KEYS[2])
  answers[1] = 1
end
for index = 3, #ARGV, 2 do
  local first, second = ARGV[index], ARGV[index + 1]
  if redis.call('ZSCORE', KEYS[1], first) and redis.call('ZSCORE', KEYS[1], second) then
    redis.call('ZREM', KEYS[1], first, second)
    redis.call('ZADD', KEYS[2], now, first, now, second)
    answers[#answers + 1] = 1
  else
    answers[#answers + 1] = 0
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - kept)
redis.call('PEXPIRE', KEYS[2], math.ceil(kept * 1000))
return answers"""
# A node's seeks (ARGV: score, member, ...) put back in the pool, but those paired.
SEEK_AGAIN = """for index = 1, #ARGV, 2 do
  if not redis.call('ZSCORE', KEYS[2], ARGV[index + 1]) then
    redis.call('ZADD', KEYS[1], ARGV[index], ARGV[index + 1])
  end
end
return 0"""
# The game's pairing lease (KEYS[1]) taken by ARGV[1] if free (or already its), for ARGV[2] ms;
# answers 1 if it is ARGV[1]'s. A value of another type is deleted first.
LEASE = """local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'string' and kind ~= 'none' then redis.call('DEL', KEYS[1]) end
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1"""
LEASE_MS = 4 * int(TICK_S * 1000)  # a pairing node that stops is replaced within this
READ_SLICE = 512  # members read (parsed) between two yields to the event loop
PAIRED_KEPT_S = 120.0  # how long a pairing is noted, at least


class SharedSeeks:
    """This node's seekers in the shared pool, and its part in pairing it."""

    def __init__(
        self,
        link: Link,
        arena: Arena,
        following: Following,
        repairs: Repairs,
        paired_kept_s: float = PAIRED_KEPT_S,
    ) -> None:
        self.link = link
        self.arena = arena
        self.following = following
        self.repairs = repairs
        self.complaints = repairs.complaints
        # Longer than a pairing's frame may wait for its node (a seat's link is held as long).
        self.paired_kept_s = paired_kept_s
        self.local: dict[str, tuple[bytes, Seeker, SeekTaker]] = {}  # by seek id: its member
        self._writes: list[Command] = []
        self._pairing: asyncio.Task[None] | None = None
        # Each game's members as last read, each with its node and seek: only new ones are read.
        self._read: dict[str, dict[bytes, tuple[str, Seeker]]] = {}

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
        the other nodes removed them (this node was taken for lost); those paired meanwhile
        stay out (``_seek_again``)."""
        for game in {seeker.game for _, seeker, _ in self.local.values()}:
            self._seek_again(game, set())

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
                        if await redis.eval(
                            LEASE, 1, pairing_key(game), self.link.node_id, LEASE_MS
                        ):
                            await self._pair(redis, game)
                except (RedisError, OSError):
                    pass  # the link says so and links again; the next tick tries again
                stop_if_cancelled()  # the node stops, whatever the pass's calls answered
        finally:
            self._pairing = None
            self._read.clear()

    async def _pair(self, redis: Client, game: str) -> None:
        """A pass over the game's pool: this node's pairs claimed and met, a slice at a time."""
        key, paired = seeks_key(game), paired_key(game)
        async with redis.pipeline(transaction=False) as pipe:
            pipe.zrange(key, 0, -1)
            pipe.type(paired)
            pool, paired_type = await pipe.execute(raise_on_error=False)
        if isinstance(paired_type, Exception):
            raise paired_type
        if paired_type not in (b"zset", b"none"):
            self.repairs.other_type(paired)  # deleted before any seek is put back
        if isinstance(pool, Exception):
            self.repairs.check(key, pool)  # another type: deleted, and the seeks put back
            return
        read = [member for member in pool if isinstance(member, bytes)]
        members, seekers = await self._members(redis, key, game, read)
        self._seek_again(game, set(read))
        pairing = Pairing(seekers, time.time())
        while not pairing.done:
            pairs = pairing.slice()
            if pairs:
                await self._claim(redis, game, pairs, members)
            else:
                await asyncio.sleep(0)  # the next slice in the next loop round

    async def _members(
        self, redis: Client, key: str, game: str, read: list[bytes]
    ) -> tuple[dict[str, tuple[str, bytes]], list[Seeker]]:
        """The pool's members by seek id, each with its node, and their seeks, but those of
        bots banned or without a key (their nodes withdraw them once they know); those that do
        not read, whose node is gone, or of this node's seeks that are no more (withdrawn while
        Redis was away, say) are removed. A member read at the last pass is not read again."""
        known, kept = self._read.get(game, {}), {}
        mine = self.link.node_id
        local = {seeker.id for _, seeker, _ in self.local.values()}  # as the pool names them
        members: dict[str, tuple[str, bytes]] = {}  # seek id -> node, member
        seekers: list[Seeker] = []
        gone: list[bytes] = []
        fresh = 0
        for member in read:
            found = known.get(member)
            if found is None:
                fresh += 1
                if fresh % READ_SLICE == 0:
                    await asyncio.sleep(0)
                try:
                    found = values.seeker(member)
                except values.BadValue as bad:
                    self.complaints(key, bad)
                    gone.append(member)
                    continue
            kept[member] = found
        living = self.following.alive | {mine}
        living |= await self._back(redis, {node for node, _ in kept.values()} - living)
        barred = self.arena.roster.is_barred
        for member, (node, seeker) in kept.items():
            if node not in living or (node == mine and seeker.id not in local):
                gone.append(member)
            elif not barred(seeker.bot):
                members[seeker.id] = (node, member)
                seekers.append(seeker)
        self._read[game] = kept
        if gone:
            self._writes.append(("ZREM", key, *gone))
            self.link.flush_soon()
        return members, seekers

    def _seek_again(self, game: str, present: set[bytes]) -> None:
        """This node's seeks of the game missing from the pool go back, unless paired."""
        missing = [
            (seeker.rating, member)
            for member, seeker, _ in self.local.values()
            if seeker.game == game and member not in present
        ]
        if missing:
            keys = (seeks_key(game), paired_key(game))
            self._writes.append(("EVAL", SEEK_AGAIN, 2, *keys, *itertools.chain(*missing)))
            self.link.flush_soon()

    async def _claim(
        self,
        redis: Client,
        game: str,
        pairs: list[tuple[Seeker, Seeker]],
        members: dict[str, tuple[str, bytes]],
    ) -> None:
        """Claim these pairs, in one script (each pair taken both at once or neither), and meet
        those claimed."""
        key, paired = seeks_key(game), paired_key(game)
        chosen = [members[seeker.id][1] for pair in pairs for seeker in pair]
        try:
            answers = await redis.eval(
                CLAIM_PAIRS, 2, key, paired, time.time(), self.paired_kept_s, *chosen
            )
        except RedisError as error:
            self.repairs.check(key, error)  # another type: deleted, and the seeks put back
            return
        if answers[0]:
            self.complaints(paired, "another type of value than a zset, deleted")
        for (first, second), taken in zip(pairs, answers[1:], strict=True):
            if not taken:
                continue
            pair = (first, second)
            if all(self._still_seeking(seeker, members) for seeker in pair):
                self._meet(first, second, members)
                continue
            for seeker in pair:  # those still seeking wait on, in their place
                if self._still_seeking(seeker, members):
                    member = members[seeker.id][1]
                    self._writes += (("ZREM", paired, member), ("ZADD", key, seeker.rating, member))
            self.link.flush_soon()

    async def _back(self, redis: Client, nodes: set[str]) -> set[str]:
        """Those of ``nodes``, which this node has not seen alive at its last heartbeat, that
        are alive now: one taken for lost that came back put its seeks in the pool again
        before the next heartbeat here could see it, and they stay."""
        if not nodes:
            return set()
        ordered = sorted(nodes)
        keys = await read_many(redis, [node_key(node) for node in ordered])
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
