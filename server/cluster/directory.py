"""The other nodes' live simulations, as this node follows them (``tavern:sim:*`` and the
lobby's announcements), with their waiting ones indexed by game and free seat, as a node's own
are (``server.arena.WaitingIndex``): a random join finds one without looking at the others."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from server.arena import WaitingIndex
from server.games.base import JsonObject
from server.match_views import Status


class Directory:
    """Directory entries by simulation id (read by ``server.cluster.values``: trusted shapes)."""

    def __init__(self) -> None:
        self._entries: dict[str, JsonObject] = {}
        self._waiting = WaitingIndex()

    def get(self, simulation_id: str) -> JsonObject | None:
        return self._entries.get(simulation_id)

    def __contains__(self, simulation_id: object) -> bool:
        return simulation_id in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def values(self) -> Iterable[JsonObject]:
        return self._entries.values()

    def put(self, entry: JsonObject) -> None:
        simulation_id = entry["simulationId"]
        self._entries[simulation_id] = entry
        free = entry["free"] if entry["status"] == Status.WAITING.value else []
        self._waiting.update(simulation_id, entry["game"], len(entry["players"]), free)

    def pop(self, simulation_id: str) -> None:
        self._entries.pop(simulation_id, None)
        self._waiting.remove(simulation_id)

    def replace(self, entries: Iterable[JsonObject]) -> None:
        self.clear()
        for entry in entries:
            self.put(entry)

    def drop_nodes(self, nodes: set[str]) -> int:
        """Forget the simulations of these nodes; how many there were."""
        gone = [name for name, entry in self._entries.items() if entry["node"] in nodes]
        for name in gone:
            self.pop(name)
        return len(gone)

    def clear(self) -> None:
        self._entries.clear()
        self._waiting = WaitingIndex()

    def waiting(self, game: str, seats: Sequence[int]) -> str | None:
        """A waiting simulation of this game with one of ``seats`` free: one where a player
        already waits first."""
        return self._waiting.find(game, seats)
