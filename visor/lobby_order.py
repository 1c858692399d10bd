"""The lobby's order, kept up to date by the changes the hub hears rather than sorted whole at
each lobby message: with thousands of simulations across the nodes, a message costs the rows it
lists and the simulations that changed since the last one, not a sort of the arena.

Each simulation has one place, by a key that changes only when the simulation does: games
being played first (the most watched first), then simulations in which a player waits, then
empty ones, newest first within each (by when they were created: their age grows alike), then
finished games, the last to finish first. The keys sit in sorted lists (one for the arena, one
per game), where a change is one binary search and one insertion.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

OrderKey = tuple[int, int, float]
STATUSES = ("playing", "waiting", "finished")


def order_key(status: str, seated: bool, spectators: int, created: float) -> OrderKey:
    """Where a live simulation sits (lowest first); ``created``: when it was created, in
    seconds since the epoch."""
    if status == "playing":
        return (0, -spectators, -created)
    return (1 if seated else 2, 0, -created)


def finished_key(sequence: int) -> OrderKey:
    """Where a finished game sits: after every live one, the ``sequence``-th to finish
    (counting up) before those that finished earlier."""
    return (3, 0, -sequence)


class LobbyOrder:
    """Simulations in the lobby's order, by id, and how many of each game are in each
    status."""

    def __init__(self) -> None:
        self._arena: list[tuple[OrderKey, str]] = []
        self._by_game: dict[str, list[tuple[OrderKey, str]]] = {}
        self._placed: dict[str, tuple[OrderKey, str, str]] = {}  # id -> key, game, status
        self.counts: dict[str, dict[str, int]] = {}  # game -> status -> simulations

    def __len__(self) -> int:
        return len(self._placed)

    def __contains__(self, simulation_id: object) -> bool:
        return simulation_id in self._placed

    def ids(self) -> Iterable[str]:
        return self._placed.keys()

    def replace(self, placed: Iterable[tuple[str, str, str, OrderKey]]) -> None:
        """Every simulation placed anew (id, game, status, key): one sort, not an insertion
        each."""
        self._placed = {name: (key, game, status) for name, game, status, key in placed}
        self._arena = sorted((key, name) for name, (key, _, _) in self._placed.items())
        self._by_game, self.counts = {}, {}
        for key, name in self._arena:
            _, game, status = self._placed[name]
            self._by_game.setdefault(game, []).append((key, name))
            self.counts.setdefault(game, dict.fromkeys(STATUSES, 0))[status] += 1

    def put(self, simulation_id: str, game: str, status: str, key: OrderKey) -> None:
        """The simulation in its place (moved there if it was elsewhere)."""
        placed = (key, game, status)
        if self._placed.get(simulation_id) == placed:
            return
        self.remove(simulation_id)
        item = (key, simulation_id)
        bisect.insort(self._arena, item)
        bisect.insort(self._by_game.setdefault(game, []), item)
        self._placed[simulation_id] = placed
        self.counts.setdefault(game, dict.fromkeys(STATUSES, 0))[status] += 1

    def remove(self, simulation_id: str) -> None:
        placed = self._placed.pop(simulation_id, None)
        if placed is None:
            return
        key, game, status = placed
        item = (key, simulation_id)
        for items in (self._arena, self._by_game[game]):
            del items[bisect.bisect_left(items, item)]
        self.counts[game][status] -= 1

    def first(self, game: str | None, count: int) -> list[str]:
        """The first ``count`` simulations of the arena (``game`` None) or of one game."""
        items = self._arena if game is None else self._by_game.get(game, [])
        return [simulation_id for _, simulation_id in items[:count]]
