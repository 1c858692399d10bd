"""This node's live simulations as the arena sees them: their directory entries and other names,
written to Redis and announced on the lobby as they change (in the link's next write; a turn
played at most once a heartbeat per game, with the others of that heartbeat), listed in the
node's ``tavern:owned:{id}`` so that they go with it; and the games finished here, announced
once. Nothing is written again that did not change: a node's work in Redis grows with what
happens in its games, not with how many it holds."""

from __future__ import annotations

import logging
import time

import orjson
from redis.exceptions import RedisError

from server.cluster.keys import (
    FINISHED,
    FINISHED_KEPT,
    LOBBY,
    NODES,
    alias_key,
    node_key,
    owned_key,
    sim_key,
)
from server.cluster.link import Command, Link
from server.games.base import JsonObject
from server.match_events import GameFinished, GameStarted, Removed, SeatsChanged, TurnPlayed, Update
from server.match_views import MatchView, TurnResult

log = logging.getLogger(__name__)


def lobby_entry(view: MatchView, node_id: str, created: float) -> JsonObject:
    """A simulation as the directory keeps it: a lobby row, with its node and free seats."""
    return {
        **view.lobby_row(spectators=0),
        "node": node_id,
        "free": [index for index, p in enumerate(view.players) if p is None],
        "created": created,
    }


class Listing:
    """The directory entries of the simulations played here (an arena listener)."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.entries: dict[str, JsonObject] = {}  # by simulation id
        self._created: dict[str, float] = {}
        self._turned: dict[str, TurnResult] = {}  # last turn of each since the last heartbeat
        self._aliases: dict[str, set[str]] = {}  # other names of each
        # Due in the link's next write:
        self._changed: set[str] = set()  # entries to write and announce
        self._removed: set[str] = set()
        self._removed_aliases: set[str] = set()
        self._finished: list[JsonObject] = []  # lobby rows of games finished here

    def on_update(self, update: Update) -> None:
        if isinstance(update, TurnPlayed):
            self._turned[update.result.match_id] = update.result
        elif isinstance(update, SeatsChanged | GameStarted):
            view = update.view
            created = self._created.setdefault(view.match_id, time.time())
            self.entries[view.match_id] = lobby_entry(view, self.link.node_id, created)
            self._changed.add(view.match_id)
            self.link.flush_soon()
        elif isinstance(update, GameFinished | Removed):
            match_id = update.view.match_id if isinstance(update, GameFinished) else update.match_id
            self.entries.pop(match_id, None)
            created = self._created.pop(match_id, time.time())
            if isinstance(update, GameFinished):
                self._finished.append(lobby_entry(update.view, self.link.node_id, created))
                del self._finished[:-FINISHED_KEPT]  # while Redis is away, only the last few
            self._turned.pop(match_id, None)
            self._changed.discard(match_id)
            self._removed.add(match_id)
            self._removed_aliases.update(self._aliases.pop(match_id, ()))
            self.link.flush_soon()

    async def alias(self, name: str, simulation_id: str) -> None:
        """Another name for a live simulation here, written at once (if the link is up;
        with everything else once it is back otherwise)."""
        self._aliases.setdefault(simulation_id, set()).add(name)
        redis = self.link.redis
        if redis is None:
            return
        key = alias_key(name)
        try:
            async with redis.pipeline(transaction=False) as pipe:
                pipe.sadd(owned_key(self.link.node_id), key)
                pipe.set(key, self._alias_value(simulation_id))
                await pipe.execute()
        except (RedisError, OSError) as error:
            log.warning("node %s: cannot name %s: %s", self.link.node_id, simulation_id, error)

    def relinked(self) -> None:
        """Every entry is due again: Redis may have lost them all."""
        self._changed.update(self.entries)

    def writes(self) -> list[Command]:
        """What changed since the last write: entries set and deleted, names deleted, games
        finished, and the lobby's announcement of it."""
        if not (self._changed or self._removed or self._removed_aliases or self._finished):
            return []  # the common case: a loop round's frames and nothing else
        changed, self._changed = self._changed, set()
        removed, self._removed = self._removed, set()
        owned = owned_key(self.link.node_id)
        entries = [self.entries[name] for name in changed if name in self.entries]
        commands = self._entry_writes(entries)
        removed_aliases, self._removed_aliases = self._removed_aliases, set()
        gone = [sim_key(name) for name in removed] + [alias_key(n) for n in removed_aliases]
        if gone:
            # One DEL a key: on a Redis Cluster, the keys are in slots of their own.
            commands += [*(("DEL", key) for key in gone), ("SREM", owned, *gone)]
        finished, self._finished = self._finished, []
        if finished:
            commands.append(("LPUSH", FINISHED, *(orjson.dumps(entry) for entry in finished)))
            commands.append(("LTRIM", FINISHED, 0, FINISHED_KEPT - 1))
            commands.append(("PEXPIRE", FINISHED, self.link.ttl_ms))
        if entries or removed:
            change = {
                "node": self.link.node_id,
                "set": entries,
                "del": sorted(removed),
                "ended": finished,
            }
            commands.append(("PUBLISH", LOBBY, orjson.dumps(change)))
        return commands

    def refresh(self) -> list[Command]:
        """A heartbeat's: the entries whose turn changed since the last one, written and
        announced together (however many turns each played meanwhile); the others are not
        written again, nor the names and the list, which a turn does not change."""
        turned, self._turned = self._turned, {}
        updated = []
        for name, result in turned.items():
            entry = self.entries.get(name)
            if entry is not None:
                entry["turn"], entry["scores"] = result.number, result.scores
                updated.append(entry)
        if not updated:
            return []
        change = {"node": self.link.node_id, "set": updated, "del": []}
        writes: list[Command] = [
            ("SET", sim_key(e["simulationId"]), orjson.dumps(e)) for e in updated
        ]
        return [*writes, ("PUBLISH", LOBBY, orjson.dumps(change))]

    def _entry_writes(self, entries: list[JsonObject]) -> list[Command]:
        """These entries and their names written, each listed as the node's first (so that a
        node that dies between the two leaves no key unlisted)."""
        if not entries:
            return []
        keys, commands = [], []
        for entry in entries:
            name = entry["simulationId"]
            keys.append(sim_key(name))
            commands.append(("SET", sim_key(name), orjson.dumps(entry)))
            value = self._alias_value(name)
            for alias in self._aliases.get(name, ()):
                keys.append(alias_key(alias))
                commands.append(("SET", alias_key(alias), value))
        return [("SADD", owned_key(self.link.node_id), *keys), *commands]

    def leaving(self) -> list[Command]:
        """A clean stop: this node's keys deleted (one DEL a key: on a Redis Cluster, each in
        a slot of its own), its id out of the arena's, and every lobby told."""
        node = self.link.node_id
        keys = [node_key(node), owned_key(node), *map(sim_key, self.entries)]
        keys += [alias_key(alias) for aliases in self._aliases.values() for alias in aliases]
        change = {"node": node, "set": [], "del": list(self.entries)}
        return [
            *(("DEL", key) for key in keys),
            ("SREM", NODES, node),
            ("PUBLISH", LOBBY, orjson.dumps(change)),
        ]

    def _alias_value(self, simulation_id: str) -> bytes:
        return orjson.dumps({"simulationId": simulation_id, "node": self.link.node_id})
