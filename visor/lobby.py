"""The lobby: every simulation of the arena (this node's, the other nodes' and the last finished
ones) as pages list it, pushed to the pages that follow it.

Lobby updates are coalesced: at most one snapshot per ``LOBBY_INTERVAL_S``, which lists
``LOBBY_ROWS`` rows however many simulations there are, is encoded once for every page that
follows it, and replaces on each page the one it was not sent yet.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

import orjson

from server.arena import Arena
from server.cluster import OtherNodes
from server.games import GAMES
from server.games.base import JsonObject
from server.match_views import MatchView
from visor.live_views import LiveViews
from visor.pages import Page

LOBBY_INTERVAL_S = 0.2
LOBBY_ROWS = 50  # rows one lobby message lists; its counts cover every simulation
FINISHED_KEPT = 100
STATUSES = ("playing", "waiting", "finished")


def lobby_order(status: str, seated: bool, spectators: int, age_s: float) -> tuple[int, int, float]:
    """Where a live simulation sits in the lobby (lowest first); finished games come after."""
    if status == "playing":
        return (0, -spectators, age_s)
    return (1 if seated else 2, 0, age_s)


@dataclass(frozen=True, slots=True)
class LobbyEntry:
    """One simulation as the lobby orders it; its row is built only if it is listed."""

    order: tuple[int, int, float]
    game: str
    status: str
    source: MatchView | JsonObject  # a live match here, or another node's or a finished row
    age_s: float | None  # since it was opened, when known

    @property
    def simulation_id(self) -> str:
        source = self.source
        return source.match_id if isinstance(source, MatchView) else str(source["simulationId"])


class Lobby:
    """The lobby's rows and the pages that follow it. ``watchers``: the pages watching each
    match here (``visor.watching``'s), counted in its row."""

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
        self._dirty = asyncio.Event()
        self._messages: dict[str | None, bytes] = {}  # by filter, until the lobby changes

    def changed(self) -> None:
        """Something a lobby shows changed: a new lobby is sent shortly."""
        self._dirty.set()

    def opened(self, match_id: str) -> None:
        self.opened_at.setdefault(match_id, asyncio.get_running_loop().time())

    def removed(self, match_id: str) -> None:
        """A simulation closed before it started: it leaves the lobby."""
        self.opened_at.pop(match_id, None)

    def keep_finished(self, entry: JsonObject) -> None:
        self.finished[entry["simulationId"]] = entry
        while len(self.finished) > FINISHED_KEPT:
            self.opened_at.pop(self.finished.popitem(last=False)[0], None)
        self._dirty.set()

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
        status.

        The order: games being played (the most watched first, then the newest), then
        simulations in which a player waits, then empty ones, then finished games; newest
        first within each. A simulation nobody has joined never sits above a game being played.
        """
        loop_now, wall_now = asyncio.get_running_loop().time(), time.time()
        entries: list[LobbyEntry] = []
        for view in self.live.values():
            age_s = loop_now - self.opened_at.get(view.match_id, loop_now)
            spectators = len(self.watchers.get(view.match_id, ()))
            seated = any(player is not None for player in view.players)
            order = lobby_order(view.status.value, seated, spectators, age_s)
            entries.append(LobbyEntry(order, view.game, view.status.value, view, age_s))
        for row in self.others.simulations() if self.others is not None else ():
            age_s = wall_now - row.get("created", wall_now)
            seated = any(player is not None for player in row["players"])
            order = lobby_order(row["status"], seated, row["spectators"], age_s)
            entries.append(LobbyEntry(order, row["game"], row["status"], row, age_s))
        live_ids = {entry.simulation_id for entry in entries}
        for index, finished in enumerate(reversed(self.finished.values())):
            if finished["simulationId"] not in live_ids:
                opened = self.opened_at.get(finished["simulationId"])
                age = None if opened is None else loop_now - opened
                entries.append(
                    LobbyEntry((3, 0, index), finished["game"], "finished", finished, age)
                )
        counts = {name: dict.fromkeys(STATUSES, 0) for name in self.arena.games}
        for entry in entries:
            counts.setdefault(entry.game, dict.fromkeys(STATUSES, 0))[entry.status] += 1
        entries.sort(key=lambda entry: entry.order)
        lobbies: dict[str | None, JsonObject] = {}
        for game in games:
            shown = (entry for entry in entries if game is None or entry.game == game)
            lobbies[game] = {
                "type": "lobby",
                "game": game,
                "simulations": [self._lobby_row(e) for e in itertools.islice(shown, LOBBY_ROWS)],
                "counts": counts,
                "house": house_players(),
            }
        return lobbies

    def _lobby_row(self, entry: LobbyEntry) -> JsonObject:
        source = entry.source
        row = self.summary(source) if isinstance(source, MatchView) else dict(source)
        row["ageMs"] = None if entry.age_s is None else round(1000 * entry.age_s)
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
