"""The other nodes as this node follows them: which are alive, their live simulations (the
directory, loaded from Redis and kept up to date by the lobby's announcements), and where to
find a simulation or a name one of them plays. Whatever is read is checked first
(``server.cluster.values``): a value that does not read is skipped and said, a key that holds
another type of value is deleted (``server.cluster.repairs``)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection

from redis.exceptions import RedisError, ResponseError

from server.cluster import Spectators, values, wire
from server.cluster.directory import Directory
from server.cluster.keys import (
    FINISHED,
    FINISHED_KEPT,
    LOBBY,
    NODES,
    OWNED_KINDS,
    PREFIX,
    alias_key,
    kind_of,
    node_key,
    owned_key,
    sim_key,
)
from server.cluster.link import Link
from server.cluster.repairs import Repairs
from server.games.base import JsonObject
from server.match_views import Status
from server.redis_client import Client, read_many

log = logging.getLogger(__name__)

LOOK_UP_FIRST_PAUSE_S = 0.005
LOOK_UP_WAIT_S = 1.0
READ_BATCH = 1000  # keys read at once (MGET) of a node's entries
# A key holding a node's id (a bot's presence: KEYS[1]) deleted if it is still that node's
# (ARGV[1]).
DELETE_IF_NODE = """if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0"""


class Following:
    """The other nodes' state, as far as this node knows it."""

    def __init__(self, link: Link, repairs: Repairs) -> None:
        self.link = link
        self.repairs = repairs
        self.complaints = repairs.complaints
        self.directory = Directory()  # the other nodes' live simulations
        self.alive: set[str] = set()  # the other nodes, at the last heartbeat
        self.other_wire: dict[str, int] = {}  # the living nodes speaking other frames, said once
        self._other_type: dict[str, float] = {}  # nodes whose key holds another type: since when
        self.spectators: Spectators | None = None  # this node's pages, told of changes
        self._finished_read = False  # the arena's finished games, since the link was made

    # --- the heartbeat ------------------------------------------------------------------------
    async def living(self, redis: Client, members: set[bytes] | None, known: set[str]) -> set[str]:
        """The other nodes alive (those whose key has not expired) among ``tavern:nodes``'s
        ``members``, those alive at the last heartbeat and the ``known`` ones (a node adds
        itself to the set again at its next heartbeat, should the set have lost it); the dead
        ones, and whatever else is there, are removed from it. ``members`` None: the set could
        not be read (it held another type of value, and is deleted)."""
        ids, strangers = (set(), []) if members is None else self._node_ids(members)
        # Whose keys may go if it is dead: a node listed (it set its key before listing itself)
        # or alive at the last heartbeat. Not one only ``known``: after a Redis restart, a
        # node rewrites its keys before its own, and must not lose them to a node that looks.
        listed = (ids | self.alive) - {self.link.node_id}
        ids |= self.alive | known
        ids.discard(self.link.node_id)
        alive: set[str] = set()
        if ids:
            ordered = sorted(ids)
            entries = await read_many(redis, [node_key(node) for node in ordered])
            alive = {node for node, entry in zip(ordered, entries, strict=True) if entry}
            self._check_wire(dict(zip(ordered, entries, strict=True)))
            alive |= await self._unreadable(redis, sorted(ids - alive))
        dead = ids - alive
        for node in sorted(dead & listed):
            await self._delete_owned(redis, node)
        gone: list[str | bytes] = [*dead, *strangers]
        if gone and members is not None:
            try:
                await redis.srem(NODES, *gone)
            except ResponseError as error:  # another type since it was read
                self.repairs.check(NODES, error)
        return alive

    async def _delete_owned(self, redis: Client, node: str) -> None:
        """A dead node's keys go (those listed in its ``tavern:owned:{id}``: its entries and
        names, its field of a bot's holdings, a bot's presence while still its own), then the
        list. One command per key, each in its key's slot (a Redis Cluster spreads them).
        Should the node come back meanwhile, it writes them all again at its next heartbeats
        (``ClusterNode._taken_for_lost``). A list of another type is deleted."""
        key = owned_key(node)
        names = await self._owned(redis, node, OWNED_KINDS - {"owned"})
        if names is None:
            return
        pipe = redis.pipeline(transaction=False)
        for name in names:
            kind = kind_of(name)
            if kind == "held":
                pipe.hdel(name, node)
            elif kind == "bot":
                pipe.eval(DELETE_IF_NODE, 1, name, node)
            else:
                pipe.delete(name)
        pipe.delete(key)
        replies = await pipe.execute(raise_on_error=False)
        for name, reply in zip([*names, key], replies, strict=True):
            self.repairs.check(name, reply)
        if names:
            log.info(
                "node %s: %d keys of dead node %s deleted", self.link.node_id, len(names), node
            )

    async def _unreadable(self, redis: Client, nodes: list[str]) -> set[str]:
        """Those of these nodes whose key is there though it did not read: it holds another type
        of value, which a living node writes over at its next heartbeat. Such a node is taken
        for alive for ``nodeTtlMs`` from then; past it, for dead, and the key is deleted."""
        if not nodes:
            self._other_type.clear()
            return set()
        async with redis.pipeline(transaction=False) as pipe:
            for node in nodes:
                pipe.type(node_key(node))
            kinds = await pipe.execute()
        now, ttl_s = time.monotonic(), self.link.ttl_ms / 1000
        found, since = set(), self._other_type
        self._other_type = {}
        for node, kind in zip(nodes, kinds, strict=True):
            if kind == b"none":
                continue
            self._other_type[node] = since.get(node, now)
            if now - self._other_type[node] < ttl_s:
                found.add(node)
                what = f"a {kind.decode()}: its node taken for alive until it writes it again"
                self.complaints(node_key(node), what)
            else:
                self.repairs.other_type(node_key(node))
        return found

    def _check_wire(self, entries: dict[str, bytes | str | None]) -> None:
        """Say, once per node, that a living node speaks other frames than this one: in the
        middle of an upgrade that changes them, seats cannot cross between the two."""
        other: dict[str, int] = {}
        for node, entry in entries.items():
            if entry is None:
                continue
            try:
                version = values.node_wire(entry)
            except values.BadValue as bad:
                self.complaints(node_key(node), bad)
                continue
            if version != wire.VERSION:
                other[node] = version
                if node not in self.other_wire:
                    log.warning(
                        "node %s: node %s speaks the nodes' frames version %d, this one %d: "
                        "seats cannot cross between them (docs/operations.md, a rolling upgrade)",
                        self.link.node_id,
                        node,
                        version,
                        wire.VERSION,
                    )
        self.other_wire = other

    async def follow(self, redis: Client, alive: set[str]) -> None:
        """These nodes are alive now: the entries of those that are new (or were taken for
        dead and were only slow) are read from their lists of keys; the first time (or after
        a lost link), the arena's last finished games too."""
        new = alive - self.alive
        self.alive = alive
        for node in sorted(new):
            await self._load(redis, node)
        if not self._finished_read and self.spectators is not None:
            await self._load_finished(redis)
            self._finished_read = True
        if new and self.spectators is not None:
            self.spectators.lobby_changed()

    def _node_ids(self, members: set[bytes]) -> tuple[set[str], list[bytes]]:
        """The node ids in ``tavern:nodes``, and what else is there (said, to be removed)."""
        ids, strangers = set(), []
        for member in members:
            try:
                ids.add(values.node_id(member))
            except values.BadValue as bad:
                self.complaints(NODES, bad)
                strangers.append(member)
        return ids, strangers

    async def _owned(self, redis: Client, node: str, kinds: Collection[str]) -> list[str] | None:
        """The keys of these kinds a node lists as its own (``tavern:owned:{id}``), sorted: only
        the arena's (anything else written there is no key of the node's); None if the list
        holds another type of value (deleted)."""
        key = owned_key(node)
        try:
            listed = await redis.smembers(key)
        except ResponseError as error:
            self.repairs.check(key, error)
            return None
        decoded = (n.decode(errors="replace") if isinstance(n, bytes) else n for n in listed)
        return sorted(
            name for name in decoded if name.startswith(PREFIX) and kind_of(name) in kinds
        )

    async def _load(self, redis: Client, node: str) -> None:
        """A node's live simulations, read from its list of keys; an entry that does not read,
        or says it is another node's, is said and skipped."""
        names = await self._owned(redis, node, {"sim"})
        if names is None:
            return
        for start in range(0, len(names), READ_BATCH):
            batch = names[start : start + READ_BATCH]
            for name, raw in zip(batch, await read_many(redis, batch), strict=True):
                if raw is None:
                    continue
                try:
                    entry = values.directory_entry(raw)
                except values.BadValue as bad:
                    self.complaints(name, bad)
                    continue
                if entry["node"] == node:
                    self.directory.put(entry)
                else:
                    self.complaints(name, f"an entry of node {entry['node']} listed by {node}")

    async def _load_finished(self, redis: Client) -> None:
        """The arena's last finished games, for this node's lobby."""
        assert self.spectators is not None
        try:
            finished = await redis.lrange(FINISHED, 0, FINISHED_KEPT - 1)
        except ResponseError as error:
            self.repairs.check(FINISHED, error)
            finished = []
        for raw in reversed(finished):
            try:
                entry = values.finished_entry(raw)
            except values.BadValue as bad:
                self.complaints(FINISHED, bad)
                continue
            if entry["node"] != self.link.node_id:
                self.spectators.finished_elsewhere(entry)

    def drop(self, nodes: set[str]) -> int:
        """These nodes are lost: their simulations leave the directory; how many there were."""
        return self.directory.drop_nodes(nodes)

    def clear(self) -> None:
        """Redis is out of reach: no other node is followed."""
        self.directory.clear()
        self.alive.clear()
        self._finished_read = False
        if self.spectators is not None:
            self.spectators.lobby_changed()

    # --- the lobby's announcements ------------------------------------------------------------
    def announced(self, data: bytes) -> None:
        """A message published on the lobby, where anyone who reaches the Redis can publish: one
        that does not read costs only itself."""
        try:
            self._lobby_message(data)
        except values.BadValue as bad:
            self.complaints(LOBBY, bad)
        except Exception:  # a bug: one announcement must not cost the link
            self.complaints(LOBBY, "a message failed", exc_info=True)

    def _lobby_message(self, data: bytes) -> None:
        """A node's announcement: each entry is read on its own, and only its node's entries
        are taken."""
        change = values.lobby_change(data)
        node = change.node
        if node == self.link.node_id:
            return
        taken = self._entries_of(node, change.set, values.directory_entry)
        for entry in taken:
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
            changed = [str(entry["simulationId"]) for entry in taken]
            self.spectators.lobby_changed([*changed, *change.deleted])

    def _entries_of(
        self, node: str, entries: list[object], read: Callable[[object], JsonObject]
    ) -> list[JsonObject]:
        """The entries a node announced that read, and are its own."""
        kept = []
        for value in entries:
            try:
                entry = read(value)
            except values.BadValue as bad:
                self.complaints(f"{LOBBY} from {node}", bad)
                continue
            if entry["node"] == node:
                kept.append(entry)
            else:
                self.complaints(f"{LOBBY} from {node}", f"an entry of node {entry['node']}")
        return kept

    # --- look-ups -----------------------------------------------------------------------------
    async def look_up(self, simulation_id: str, wanted: Callable[[], bool]) -> JsonObject | None:
        """The directory entry of a simulation this node does not follow (yet): one created a
        moment ago is announced a little after its creator hears its id, so a miss is asked
        again for up to ``LOOK_UP_WAIT_S`` (while ``wanted``) before it is None."""
        pause, waited = LOOK_UP_FIRST_PAUSE_S, 0.0
        while True:
            entry = self.directory.get(simulation_id)
            redis = self.link.redis
            if entry is None and redis is not None:
                entry = await self._stored_entry(redis, sim_key(simulation_id))
            if entry is not None or waited >= LOOK_UP_WAIT_S or not wanted():
                return entry
            await asyncio.sleep(pause)
            waited += pause
            pause *= 2

    async def _stored_entry(self, redis: Client, key: str) -> JsonObject | None:
        """An entry as Redis has it, if its node is alive: entries live as long as their node,
        and a dead node's go only once a node has found it dead."""
        try:
            raw = await redis.get(key)
            entry = None if raw is None else values.directory_entry(raw)
            node = None if entry is None else str(entry["node"])
            if node is not None and node not in self.alive and node != self.link.node_id:
                return entry if await redis.exists(node_key(node)) else None
            return entry
        except (RedisError, OSError) as error:
            self.repairs.wrong_type(key, error)
            return None
        except values.BadValue as bad:
            self.complaints(key, bad)
            return None

    async def locate(self, name: str) -> str | None:
        """The id of the other node with a live simulation of this name, if any, and if its
        entry (``tavern:node:{id}``) says it is in the arena: an alias may outlive its node,
        or name a node that never was."""
        key = alias_key(name)
        raw = await self._read(key, name)
        if raw is None:
            return None
        try:
            _, node = values.alias(raw)
        except values.BadValue as bad:
            self.complaints(key, bad)
            return None
        if node == self.link.node_id:
            return None
        entry_key = node_key(node)
        entry = await self._read(entry_key, name)
        if entry is None:
            return None
        try:
            values.node_wire(entry)  # an entry that reads
        except values.BadValue as bad:
            self.complaints(entry_key, bad)
            return None
        return node

    async def _read(self, key: str, looked_for: str) -> bytes | str | None:
        """A key's value; None when Redis is out of reach (said in the log)."""
        redis = self.link.redis
        if redis is None:
            return None
        try:
            value: bytes | str | None = await redis.get(key)
        except (RedisError, OSError) as error:
            if not self.repairs.wrong_type(key, error):
                log.warning("node %s: cannot locate %s: %s", self.link.node_id, looked_for, error)
            return None
        return value
