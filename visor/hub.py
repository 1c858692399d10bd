"""Spectators: what the browser pages follow, fed by the arena's updates. The hub puts together
the lobby (``visor.lobby``), the pages watching a game (``visor.watching``) and the other nodes'
pages watching a game here (``visor.relays``), and tells every page when the server stops.
Each page has one bounded queue (``visor.pages.Page``): a spectator never slows a game.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection
from typing import Any

import orjson

from server.arena import Arena
from server.cluster import Deliver, OtherNodes
from server.errors import BotError
from server.games.base import JsonObject
from server.match_events import (
    GameFinished,
    GameStarted,
    Removed,
    SeatLeft,
    SeatsChanged,
    TurnPlayed,
    Update,
)
from visor.debug_delay import DelayedDebug
from visor.live_views import LiveViews
from visor.lobby import Lobby
from visor.pages import Page
from visor.relays import Relays
from visor.watching import Watching


class SpectatorHub:
    """Everything the browser pages watch, kept from the arena's updates: the hub never reads
    a live match, only the immutable views and turn results the arena sends it. It is the
    node's ``server.cluster.Spectators``, as the other nodes reach its pages."""

    def __init__(self, arena: Arena, others: OtherNodes | None = None) -> None:
        self.arena = arena
        self.others = others  # the arena's other nodes, when it has any
        self.pages: set[Page] = set()  # every open page, for the shutdown notice
        self.live = LiveViews(arena.clock)  # every match not finished, as last seen
        watchers: dict[str, set[Page]] = {}  # the pages here watching each match
        self.lobby = Lobby(arena, others, self.live, watchers)
        self.watching = Watching(arena, others, self.live, self.lobby, watchers)
        self.relays = Relays(self.watching, self.lobby)
        self.debug = DelayedDebug(arena.config.spectator_debug_delay_turns)
        arena.listeners.append(self.on_update)
        if others is not None:
            others.serve_spectators(self)

    # --- arena updates -----------------------------------------------------------------------
    def on_update(self, update: Update) -> None:
        self.lobby.changed()
        text: bytes | None = None
        if isinstance(update, TurnPlayed):  # by far the most frequent
            result = update.result
            match_id = result.match_id
            self.live.turn_played(result)
            due = self.debug.turn_played(result)  # the bots' debug texts now old enough
            count = self.watching.count(match_id) + self.relays.count(match_id)
            if not count:
                return  # nobody watches it
            text = result.spectator_json()
            if due:
                text += b',"debug":' + orjson.dumps(due)
            text += b',"spectators":%d}' % count
        elif isinstance(update, SeatsChanged | GameStarted):
            view = self.live[update.view.match_id] = update.view
            match_id = view.match_id
            self.lobby.opened(match_id)
            if self.watching.count(match_id) or self.relays.count(match_id):
                text = orjson.dumps(self.watching.snapshot(view))
        elif isinstance(update, SeatLeft):
            match_id = update.match_id
            view_or_none = self.live.get(match_id)
            if view_or_none is not None:
                self.lobby.changed(match_id)
                seat_name = view_or_none.codec.seat_names[update.seat]
                text = orjson.dumps({"type": "left", "seat": seat_name, "nick": update.nick})
        elif isinstance(update, GameFinished):
            view = update.view
            match_id = view.match_id
            self.live.pop(match_id, None)
            self.lobby.keep_finished(self.lobby.summary(view))
            text = orjson.dumps(
                {
                    "type": "end",
                    "simulationId": match_id,
                    "result": view.result(),
                    "state": view.codec.state_to_wire(view.state),
                }
            )
        else:
            match_id = update.match_id
            self.live.pop(match_id, None)
            self.lobby.removed(match_id)
            text = orjson.dumps(
                {"type": "error", "message": "This simulation was closed before it started"}
            )
        if text is not None:
            self.relays.send(match_id, text)
        if isinstance(update, GameFinished | Removed):
            self.relays.ended(match_id)
            self.debug.ended(match_id)
        if text is not None:
            self.watching.send_later(match_id, text)

    # --- pages -------------------------------------------------------------------------------
    def join_lobby(self, page: Page, game: str | None) -> None:
        """The page follows the lobby of every game (``None``) or of one."""
        self.lobby.join(page, game)

    def watch(self, page: Page, simulation_id: str) -> None:
        self.watching.watch(page, simulation_id)

    def live_simulations(self) -> list[JsonObject]:
        """Every live simulation of the arena, this node's and the other nodes'."""
        return self.lobby.live_simulations()

    def forget(self, page: Page) -> None:
        self.watching.stop_watching(page)
        self.lobby.pages.discard(page)
        self.pages.discard(page)

    async def shut_down(self, timeout_s: float) -> None:
        """Tell every page the server is stopping, and close them once that is sent."""
        notice = orjson.dumps({"type": "error", "message": BotError.SERVER_SHUTTING_DOWN})
        pages = list(self.pages)
        for page in pages:
            page.push(notice, droppable=False)
            page.close()
        try:
            writers = {page.writer for page in pages if page.writer is not None}
            if writers:  # each write loop ends once its page's queue is sent
                await asyncio.wait(writers, timeout=timeout_s)
        finally:
            # Closing the sockets ends their handlers, so the HTTP server can stop at once.
            await asyncio.gather(
                *(page.ws.close(message=b"server shutting down") for page in pages),
                return_exceptions=True,
            )

    # --- other nodes (server.cluster.Spectators) ---------------------------------------------
    def relay(self, simulation_id: str, deliver: Deliver) -> None:
        self.relays.relay(simulation_id, deliver)

    def unrelay(self, simulation_id: str, deliver: Deliver) -> None:
        self.relays.unrelay(simulation_id, deliver)

    def relayed(self, simulation_id: str, text: str, last: bool) -> None:
        self.watching.relayed(simulation_id, text, last)

    def finished_elsewhere(self, entry: JsonObject) -> None:
        self.lobby.finished_elsewhere(entry)

    def lobby_changed(self, simulation_ids: Collection[str] | None = None) -> None:
        self.lobby.others_changed(simulation_ids)


@contextlib.asynccontextmanager
async def running(hub: SpectatorHub) -> Any:
    """Run the hub's lobby loop for the duration of the block."""
    task = asyncio.create_task(hub.lobby.run(), name="lobby")
    try:
        yield hub
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
