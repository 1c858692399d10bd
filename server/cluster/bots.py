"""What the arena's nodes share about registered bots, in Redis: the wrong-key pacing of each
address, the arena's registrations (``registrationsPerHour``), what each bot holds (games and
seeks, for ``maxGamesPerBot``), its last ladder game (rematch avoidance, sides), and where it is
present (``online``).

A guesser switching nodes behind a balancer is paced as on one node: a check reads the
address's bucket in Redis (and waits until it holds a token), and a wrong key spends a token of
it (one script, atomically). A registration takes one of the arena's budget, in one script too,
whichever node it reaches. Each
node writes what a bot holds there as its own field of the bot's hash as it changes (and lists
the hash in its ``tavern:owned:{id}``, so that the node that finds it dead removes its field);
a reader counts the fields of the living nodes only, so what a node that dies held stops
counting as soon as the others see it gone. While Redis is away, each node paces and
counts by what it knows.
"""

from __future__ import annotations

import time

import orjson
from redis.exceptions import RedisError

from server.arena import Arena, Standing
from server.cluster import values
from server.cluster.following import Following
from server.cluster.keys import REGISTRATIONS, bot_key, held_key, last_key, owned_key, paced_key
from server.cluster.link import Command, Link
from server.cluster.repairs import Repairs
from server.identity import KEY_BURST, KEY_REFILL_S, AddressPacer, RegistrationBudget
from server.redis_client import read_many

LAST_GAME_KEPT_MS = 24 * 3600 * 1000
# GCRA: the key holds the time the address's bucket is full again (a node's wall clock, passed
# in: scripts must not read a clock of their own); a spend moves it one refill later.
SPEND = """local now, refill = tonumber(ARGV[1]), tonumber(ARGV[2])
local full = tonumber(redis.call('GET', KEYS[1]) or ARGV[1]) or now
if full < now then full = now end
full = full + refill
redis.call('SET', KEYS[1], tostring(full), 'PX', math.ceil((full - now) * 1000))
return 0"""
# The same for the arena's registrations, if one is left (else how long until one is, as text:
# a script's numbers come back as integers); a key of another type is this node's to replace.
TAKE = """local now, interval, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if redis.call('TYPE', KEYS[1]).ok ~= 'string' then redis.call('DEL', KEYS[1]) end
local full = tonumber(redis.call('GET', KEYS[1]) or ARGV[1]) or now
if full < now then full = now end
local wait = full - now - (burst - 1) * interval
if wait > 0 then return tostring(wait) end
full = full + interval
redis.call('SET', KEYS[1], tostring(full), 'PX', math.ceil((full - now) * 1000))
return '0'"""


class SharedBots:
    """This node's part of what the nodes share about bots (see the module's docstring); its
    pacer is the roster's (``server.identity.Pacer``)."""

    def __init__(self, link: Link, arena: Arena, following: Following, repairs: Repairs) -> None:
        self.link = link
        self.arena = arena
        self.following = following
        self.repairs = repairs
        self.complaints = repairs.complaints
        self.local = AddressPacer(arena.clock)  # while Redis is away
        self.local_budget = RegistrationBudget(arena.clock, arena.config.registrations_per_hour)
        self.burst, self.refill_s = KEY_BURST, KEY_REFILL_S
        self._held: dict[str, int] = {}  # casefolded name -> what it holds here (not 0)
        self._cleared: set[str] = set()  # those that hold nothing here now, cleared again once
        # the link is made again (their clearing may not have reached Redis)
        self._writes: list[Command] = []

    # --- pacing (server.identity.Pacer) -------------------------------------------------------
    async def wait_s(self, address: str) -> float:
        redis = self.link.redis
        if redis is None or not self.link.up:
            return self.local.wait_now(address)
        try:
            raw = await redis.get(paced_key(address))
        except (RedisError, OSError) as error:
            self.repairs.wrong_type(paced_key(address), error)
            return self.local.wait_now(address)
        if not isinstance(raw, bytes):
            return 0.0
        try:
            full = values.time_value(raw)
        except values.BadValue as bad:
            self.complaints(paced_key(address), bad)
            return 0.0
        return max(0.0, full - time.time() - (self.burst - 1) * self.refill_s)

    async def spend(self, address: str) -> None:
        """Spent in Redis before the answer goes (the next check may read it at once)."""
        redis = self.link.redis
        if redis is None or not self.link.up:
            self.local.spend_now(address)
            return
        try:
            await redis.eval(SPEND, 1, paced_key(address), time.time(), self.refill_s)
        except (RedisError, OSError) as error:
            self.repairs.wrong_type(paced_key(address), error)
            self.local.spend_now(address)

    # --- registrations (server.identity.Budget) ----------------------------------------------
    async def take(self) -> float:
        redis = self.link.redis
        if redis is None or not self.link.up:
            return self.local_budget.take_now()
        budget = self.local_budget
        try:
            wait = await redis.eval(
                TAKE, 1, REGISTRATIONS, time.time(), budget.interval_s, budget.per_hour
            )
        except (RedisError, OSError):
            return budget.take_now()
        return float(wait)

    # --- what bots hold, and their last games -------------------------------------------------
    def held(self, bot: str, games: int) -> None:
        """``server.arena.Elsewhere.held``."""
        name = bot.casefold()
        owned = owned_key(self.link.node_id)
        if games:
            self._held[name] = games
            self._cleared.discard(name)
            self._write(("SADD", owned, held_key(name)))
            self._write(("HSET", held_key(name), self.link.node_id, games))
        elif self._held.pop(name, None) is not None:
            self._cleared.add(name)
            self._write(("HDEL", held_key(name), self.link.node_id))
            self._write(("SREM", owned, held_key(name)))

    def paired(self, first: str, second: str) -> None:
        """``server.arena.Elsewhere.paired``: the last game of the registered ones."""
        for bot, opponent, had_first in ((first, second, True), (second, first, False)):
            if self.arena.roster.get(bot) is not None:
                value = orjson.dumps({"opponent": opponent, "first": had_first})
                self._write(("SET", last_key(bot.casefold()), value, "PX", LAST_GAME_KEPT_MS))

    async def standing(self, bot: str) -> Standing:
        """``server.arena.Elsewhere.standing``: nothing, while Redis is away."""
        redis = self.link.redis
        if redis is None or not self.link.up:
            return Standing(0)
        name = bot.casefold()
        try:
            async with redis.pipeline(transaction=False) as pipe:
                pipe.hgetall(held_key(name))
                pipe.get(last_key(name))
                entry, last = await pipe.execute(raise_on_error=False)
        except (RedisError, OSError):
            return Standing(0)
        # A key that holds another type of value is deleted, and counts as empty meanwhile.
        for key, reply in ((held_key(name), entry), (last_key(name), last)):
            if isinstance(reply, Exception) and not self.repairs.wrong_type(key, reply):
                return Standing(0)
        entry = {} if isinstance(entry, Exception) else entry
        last = None if isinstance(last, Exception) else last
        games = 0
        try:
            living = self.following.alive - {self.link.node_id}
            games = sum(n for node, n in values.held(entry).items() if node in living)
        except values.BadValue as bad:
            self.complaints(held_key(name), bad)
        if last is None:
            return Standing(games)
        try:
            opponent, had_first = values.last_game(last)
        except values.BadValue as bad:
            self.complaints(last_key(name), bad)
            return Standing(games)
        return Standing(games, opponent, had_first)

    async def online(self, bots: list[str]) -> set[str]:
        """``server.arena.Elsewhere.online``: the bots present on a living node."""
        redis = self.link.redis
        if redis is None or not self.link.up or not bots:
            return set()
        try:
            nodes = await read_many(redis, [bot_key(bot.casefold()) for bot in bots])
        except (RedisError, OSError):
            return set()
        living = self.following.alive
        found = set()
        for bot, node in zip(bots, nodes, strict=True):
            try:
                if node is not None and values.node_id(node) in living:
                    found.add(bot)
            except values.BadValue as bad:
                self.complaints(bot_key(bot.casefold()), bad)
        return found

    # --- writing ------------------------------------------------------------------------------
    def relinked(self) -> None:
        """What the bots hold here, written again whole (Redis may have lost it, or missed a
        clearing while it was away)."""
        node, owned = self.link.node_id, owned_key(self.link.node_id)
        for name in self._cleared:
            self._write(("HDEL", held_key(name), node))
        self._cleared = set()
        for name, games in self._held.items():
            self._write(("SADD", owned, held_key(name)))
            self._write(("HSET", held_key(name), node, games))

    def writes(self) -> list[Command]:
        writes, self._writes = self._writes, []
        return writes

    def _write(self, command: Command) -> None:
        if self.link.redis is not None:
            self._writes.append(command)
            self.link.flush_soon()
