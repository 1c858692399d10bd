"""This node's live simulations as the arena sees them: their directory entries and other names,
written to Redis and announced on the lobby as they change (in the link's next write),
refreshed every heartbeat with their latest turn; and the games finished here, announced once.
"""

from __future__ import annotations

import logging
import time

import orjson
from redis.exceptions import RedisError

from server.cluster.keys import FINISHED, FINISHED_KEPT, LOBBY, alias_key, sim_key
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
        self._turned: dict[str, TurnResult] = {}  # last turn of each, written every heartbeat
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
        try:
            await redis.set(alias_key(name), self._alias_value(simulation_id), px=self.link.ttl_ms)
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
        ttl_ms = self.link.ttl_ms
        commands: list[Command] = []
        entries = [self.entries[name] for name in changed if name in self.entries]
        for entry in entries:
            key = sim_key(entry["simulationId"])
            commands.append(("SET", key, orjson.dumps(entry), "PX", ttl_ms))
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
            commands.append(("PEXPIRE", FINISHED, ttl_ms))
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
        """A heartbeat's: every entry (with its latest turn) and name written whole, not just
        given more time, so that an entry that expired while this node was too busy to say it
        is alive comes back; the entries whose turn changed announced."""
        turned, self._turned = self._turned, {}
        commands: list[Command] = []
        updated = []
        for name, entry in self.entries.items():
            result = turned.get(name)
            if result is not None:
                entry["turn"], entry["scores"] = result.number, result.scores
                updated.append(entry)
            commands.append(("SET", sim_key(name), orjson.dumps(entry), "PX", self.link.ttl_ms))
            commands += self._alias_writes(name)
        if updated:
            change = {"node": self.link.node_id, "set": updated, "del": []}
            commands.append(("PUBLISH", LOBBY, orjson.dumps(change)))
        return commands

    def _alias_writes(self, simulation_id: str) -> list[Command]:
        names = self._aliases.get(simulation_id, ())
        value = self._alias_value(simulation_id)
        return [("SET", alias_key(name), value, "PX", self.link.ttl_ms) for name in names]

    def _alias_value(self, simulation_id: str) -> bytes:
        return orjson.dumps({"simulationId": simulation_id, "node": self.link.node_id})
