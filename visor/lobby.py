"""The lobby: every simulation of the arena (this node's, the other nodes' and the last finished
ones) as pages list it, pushed to the pages that follow it.

Lobby updates are coalesced: at most one snapshot per ``LOBBY_INTERVAL_S``, which lists
``LOBBY_ROWS`` rows however many simulations there are, is encoded once for every page that
follows it, and replaces on each page the one it was not sent yet.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping

import orjson

from server.arena import Arena
from server.cluster import OtherNodes
from server.games import GAMES
from server.games.base import JsonObject
from server.match_views import MatchView
from visor.live_views import LiveViews
from visor.lobby_order import STATUSES, LobbyOrder, OrderKey, finished_key, order_key
from visor.pages import Page

LOBBY_INTERVAL_S = 0.2
LOBBY_ROWS = 50  # rows one lobby message lists; its counts cover every simulation
FINISHED_KEPT = 100


class Lobby:
    """The lobby's rows and the pages that follow it. ``watchers``: the pages watching each
    match here (``visor.watching``'s), counted in its row.

    The order (``visor.lobby_order``): games being played (the most watched first, then the
    newest), then simulations in which a player waits, then empty ones, then finished games;
    newest first within each. A simulation nobody has joined never sits above a game being
    played. Each simulation is placed again only when it changed (``changed`` with its id,
    ``others_changed``)."""

    def __init__(
        self,
        arena: Arena,
        others: OtherNodes | None,
        live: LiveViews,
        watchers: Mapping[str, Collection[Page]],
    ) -> None:
        self.arena = arena
        self.others = others
        self.live = live
        self.watchers = watchers
        self.pages: set[Page] = set()  # the pages that follow the lobby
        self.finished: OrderedDict[str, JsonObject] = OrderedDict()  # id -> lobby entry
        self.opened_at: dict[str, float] = {}  # loop time each lobby row was first seen
        self.order = LobbyOrder()
        self._finished_count = 0  # games kept finished so far: each one's place among them
        self._finished_places: dict[str, int] = {}
        self._moved: set[str] = set()  # simulations to place again
        self._all_moved = True  # every simulation to place again (the other nodes changed)
        self._dirty = asyncio.Event()
        self._messages: dict[str | None, bytes] = {}  # by filter, until the lobby changes

    def changed(self, simulation_id: str | None = None) -> None:
        """Something a lobby shows changed: a new lobby is sent shortly. With an id: that
        simulation's place may have changed (its status, players or spectators)."""
        if simulation_id is not None:
            self._moved.add(simulation_id)
        self._dirty.set()

    def others_changed(self, simulation_ids: Collection[str] | None) -> None:
        """These of the other nodes' simulations changed (None: any of them may have)."""
        if simulation_ids is None:
            self._all_moved = True
        else:
            self._moved.update(simulation_ids)
        self._dirty.set()

    def opened(self, match_id: str) -> None:
        self.opened_at.setdefault(match_id, asyncio.get_running_loop().time())
        self.changed(match_id)

    def removed(self, match_id: str) -> None:
        """A simulation closed before it started: it leaves the lobby."""
        self.opened_at.pop(match_id, None)
        self.changed(match_id)

    def keep_finished(self, entry: JsonObject) -> None:
        simulation_id = entry["simulationId"]
        self.finished[simulation_id] = entry
        self._finished_count += 1
        self._finished_places[simulation_id] = self._finished_count
        self.changed(simulation_id)
        while len(self.finished) > FINISHED_KEPT:
            dropped = self.finished.popitem(last=False)[0]
            self.opened_at.pop(dropped, None)
            self._finished_places.pop(dropped, None)
            self.changed(dropped)

    def finished_elsewhere(self, entry: JsonObject) -> None:
        if entry["simulationId"] not in self.finished:
            self.keep_finished(entry)

    def summary(self, view: MatchView) -> JsonObject:
        """One lobby row."""
        return view.lobby_row(len(self.watchers.get(view.match_id, ())))

    def live_simulations(self) -> list[JsonObject]:
        """Every live simulation of the arena, this node's and the other nodes'."""
        live = [self.summary(view) for view in self.live.values()]
        if self.others is not None:
            live.extend(self.others.simulations())
        return live

    def lobbies(self, games: Iterable[str | None]) -> dict[str | None, JsonObject]:
        """The lobby of every game (``None``) or of one, for each of ``games``: its first
        ``LOBBY_ROWS`` rows in the lobby's order, and how many simulations each game has in each
        status."""
        loop_now, wall_now = asyncio.get_running_loop().time(), time.time()
        self._place_moved(loop_now, wall_now)
        counts = {name: dict.fromkeys(STATUSES, 0) for name in self.arena.games}
        for name, by_status in self.order.counts.items():
            counts[name] = dict(by_status)
        lobbies: dict[str | None, JsonObject] = {}
        for game in games:
            shown = self.order.first(game, LOBBY_ROWS)
            lobbies[game] = {
                "type": "lobby",
                "game": game,
                "simulations": [self._lobby_row(name, loop_now, wall_now) for name in shown],
                "counts": counts,
                "house": house_players(),
            }
        return lobbies

    def _place_moved(self, loop_now: float, wall_now: float) -> None:
        """The simulations that changed in their places; all of them, in one sort, after the
        other nodes changed wholesale (a node lost, the link made again)."""
        if self._all_moved:
            self._all_moved = False
            self._moved.clear()
            names = set(self.live) | set(self.finished)
            if self.others is not None:
                names.update(row["simulationId"] for row in self.others.simulations())
            placed = ((name, self._placement(name, loop_now, wall_now)) for name in names)
            self.order.replace((name, *found) for name, found in placed if found is not None)
            return
        moved, self._moved = self._moved, set()
        for name in moved:
            found = self._placement(name, loop_now, wall_now)
            if found is None:
                self.order.remove(name)
            else:
                self.order.put(name, *found)

    def _placement(
        self, simulation_id: str, loop_now: float, wall_now: float
    ) -> tuple[str, str, OrderKey] | None:
        """A simulation's game, status and place: live here, live on another node, finished;
        None if it is gone."""
        view = self.live.get(simulation_id)
        if view is not None:
            status = view.status.value
            spectators = len(self.watchers.get(simulation_id, ()))
            seated = any(player is not None for player in view.players)
            opened = self.opened_at.get(simulation_id, loop_now)
            return view.game, status, order_key(status, seated, spectators, opened)
        row = self.others.simulation(simulation_id) if self.others is not None else None
        if row is not None:
            opened = loop_now - (wall_now - row.get("created", wall_now))  # on the loop's clock
            seated = any(player is not None for player in row["players"])
            key = order_key(row["status"], seated, row["spectators"], opened)
            return row["game"], row["status"], key
        finished = self.finished.get(simulation_id)
        if finished is not None:
            return finished["game"], "finished", finished_key(self._finished_places[simulation_id])
        return None

    def _lobby_row(self, simulation_id: str, loop_now: float, wall_now: float) -> JsonObject:
        view = self.live.get(simulation_id)
        if view is not None:
            row = self.summary(view)
            row["ageMs"] = round(1000 * (loop_now - self.opened_at.get(simulation_id, loop_now)))
            return row
        other = self.others.simulation(simulation_id) if self.others is not None else None
        if other is not None:
            row = dict(other)
            row["ageMs"] = round(1000 * (wall_now - other.get("created", wall_now)))
            return row
        row = dict(self.finished[simulation_id])
        opened = self.opened_at.get(simulation_id)
        row["ageMs"] = None if opened is None else round(1000 * (loop_now - opened))
        return row

    def lobby_message(self, game: str | None) -> bytes:
        """The lobby as it is, unchanged since the lobby loop last ran: encoded once for every
        page that asks for it, however often they ask."""
        message = self._messages.get(game)
        if message is None:
            message = self._messages[game] = orjson.dumps(self.lobbies([game])[game])
        return message

    def join(self, page: Page, game: str | None) -> None:
        """The page follows the lobby of every game (``None``) or of one."""
        page.lobby_game = game if game in self.arena.games else None
        self.pages.add(page)
        if not self._dirty.is_set():  # else the lobby loop sends the new lobby shortly
            page.push_lobby(self.lobby_message(page.lobby_game))

    async def run(self) -> None:
        """Push a lobby snapshot whenever something changed, at most every LOBBY_INTERVAL_S."""
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            wanted = {page.lobby_game for page in self.pages}
            lobbies = self.lobbies(wanted) if wanted else {}
            self._messages = {game: orjson.dumps(lobby) for game, lobby in lobbies.items()}
            for page in self.pages:
                page.push_lobby(self._messages[page.lobby_game])
            await asyncio.sleep(LOBBY_INTERVAL_S)


def house_players() -> JsonObject:
    """The house players of each game, so pages offer exactly what the server accepts."""
    return {
        name: [
            {"name": p.name, "description": p.description, "sides": list(p.sides)}
            for p in game.house_players.values()
        ]
        for name, game in GAMES.items()
    }
