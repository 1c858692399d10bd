"""Spectators: the lobby and the live views, fed by the arena's updates.

Each browser page has one websocket and one bounded queue. A spectator must never slow a game:
updates are queued without waiting, and a page that falls behind has its backlog of spectator
messages replaced by one snapshot of the latest position. Messages for a person's own seat are
never dropped. Lobby updates are coalesced: at most one snapshot per ``LOBBY_INTERVAL_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict, deque
from typing import Any

import orjson
from aiohttp import web

from bots.house import HOUSE_PLAYERS
from server.arena import Arena
from server.games.base import JsonObject, Outcome
from server.simulation import (
    GameFinished,
    GameStarted,
    Removed,
    SeatLeft,
    SeatsChanged,
    Simulation,
    TurnPlayed,
    Update,
)

log = logging.getLogger(__name__)

MAX_QUEUED = 64  # spectator messages a page may have waiting before a snapshot replaces them
MAX_BACKLOG = 256  # messages of any kind a page may leave unread before it is closed
LOBBY_INTERVAL_S = 0.2
FINISHED_KEPT = 100


def dumps(message: JsonObject) -> str:
    return orjson.dumps(message).decode()


class Page:
    """One browser page: its websocket and what is waiting to be sent to it."""

    def __init__(self, ws: web.WebSocketResponse, transport: asyncio.Transport | None) -> None:
        self.ws = ws
        self.transport = transport
        self.watching: str | None = None
        self.in_lobby = False
        self._queue: deque[tuple[str, bool]] = deque()  # (text, may be dropped)
        self.writer: asyncio.Task[None] | None = None  # the write loop, once running
        self._wakeup = asyncio.Event()
        self._closed = False

    def push(self, text: str, *, droppable: bool = True, snapshot: str | None = None) -> None:
        """Queue a message; past the bound, spectator messages give way to ``snapshot``."""
        if self._closed:
            return
        if droppable and len(self._queue) >= MAX_QUEUED:
            kept = [(t, d) for t, d in self._queue if not d]
            self._queue.clear()
            self._queue.extend(kept)
            if snapshot is not None:
                self._queue.append((snapshot, True))
                self._wakeup.set()
                return
        if len(self._queue) >= MAX_BACKLOG:
            # A page that reads nothing (while it sends, say, a stream of bad requests) must
            # not hold the server's memory: it is cut off, as a bot that stops reading is.
            log.info("a page left %d messages unread: closed", len(self._queue))
            self.abort()
            return
        self._queue.append((text, droppable))
        self._wakeup.set()

    def abort(self) -> None:
        """Drop everything queued and cut the connection."""
        self._closed = True
        self._queue.clear()
        self._wakeup.set()
        if self.transport is not None:
            self.transport.abort()

    @property
    def backlog(self) -> int:
        return len(self._queue)

    def send(self, message: JsonObject, *, droppable: bool = False) -> None:
        self.push(dumps(message), droppable=droppable)

    def close(self) -> None:
        """Stop taking messages; what is queued is still sent."""
        self._closed = True
        self._wakeup.set()

    async def write_loop(self) -> None:
        """Send queued messages until the page closes."""
        try:
            while True:
                while not self._queue:
                    if self._closed:
                        return
                    self._wakeup.clear()
                    await self._wakeup.wait()
                text, _ = self._queue.popleft()
                await self.ws.send_str(text)
        except (ConnectionError, RuntimeError) as error:  # the page went away mid-send
            log.debug("page write failed: %s", error)


class SpectatorHub:
    """Everything the browser pages watch."""

    def __init__(self, arena: Arena) -> None:
        self.arena = arena
        self.pages: set[Page] = set()  # every open page, for the shutdown notice
        self.lobby_pages: set[Page] = set()
        self.watchers: dict[str, set[Page]] = {}
        self.finished: OrderedDict[str, JsonObject] = OrderedDict()  # id -> lobby entry
        self._lobby_dirty = asyncio.Event()
        arena.listeners.append(self.on_update)

    # --- arena updates -----------------------------------------------------------------------
    def on_update(self, simulation: Simulation, update: Update) -> None:
        self._lobby_dirty.set()
        if isinstance(update, GameFinished):
            self.finished[simulation.id] = self.summary(simulation)
            while len(self.finished) > FINISHED_KEPT:
                self.finished.popitem(last=False)
        pages = self.watchers.get(simulation.id)
        if not pages:
            return
        if isinstance(update, SeatsChanged | GameStarted):
            message = self.snapshot(simulation)
        elif isinstance(update, TurnPlayed):
            message = self._turn_message(simulation, update)
        elif isinstance(update, SeatLeft):
            seat = simulation.seats[update.seat]
            message = {
                "type": "left",
                "seat": simulation.game.seat_names[update.seat],
                "nick": seat.player.nick if seat else None,
            }
        elif isinstance(update, GameFinished):
            message = self._end_message(simulation, update.outcome)
        else:
            assert isinstance(update, Removed)
            message = {"type": "error", "message": "This simulation was closed before it started"}
        # Pushed in the loop's next round, so that the players' next turn, held briefly in a
        # server.connection.WriteBatch, is not written after hundreds of pages' copies.
        asyncio.get_running_loop().call_soon(self._push, simulation, list(pages), dumps(message))

    def _push(self, simulation: Simulation, pages: list[Page], text: str) -> None:
        snapshot: str | None = None
        for page in pages:
            if snapshot is None and page.backlog >= MAX_QUEUED:
                snapshot = dumps(self.snapshot(simulation))
            page.push(text, snapshot=snapshot)

    def _turn_message(self, simulation: Simulation, update: TurnPlayed) -> JsonObject:
        game = simulation.game
        return {
            "type": "turn",
            "simulationId": simulation.id,
            "turn": update.record.number,
            "seat": game.seat_names[update.record.seat],
            "action": update.record.action,
            "timedOut": update.record.timed_out,
            "events": game.events_to_wire(update.events),
            "state": game.state_to_wire(simulation.state),
            "scores": dict(game.scores(simulation.state)),
            "spectators": len(self.watchers.get(simulation.id, ())),
        }

    def _end_message(self, simulation: Simulation, outcome: Outcome) -> JsonObject:
        return {
            "type": "end",
            "simulationId": simulation.id,
            "result": result_to_wire(simulation, outcome),
            "state": simulation.game.state_to_wire(simulation.state),
        }

    # --- views -------------------------------------------------------------------------------
    def players(self, simulation: Simulation) -> list[JsonObject | None]:
        names = simulation.game.seat_names
        return [
            None
            if seat is None
            else {
                "seat": names[index],
                "nick": seat.player.nick,
                "names": list(seat.player.names),
                "kind": seat.kind,
            }
            for index, seat in enumerate(simulation.seats)
        ]

    def summary(self, simulation: Simulation) -> JsonObject:
        """One lobby row."""
        playing = simulation.state is not None
        entry: JsonObject = {
            "simulationId": simulation.id,
            "game": simulation.game.name,
            "status": simulation.status.value,
            "players": self.players(simulation),
            "scores": dict(simulation.game.scores(simulation.state)) if playing else None,
            "turn": simulation.turn_count,
            "spectators": len(self.watchers.get(simulation.id, ())),
        }
        if simulation.outcome is not None:
            entry["result"] = result_to_wire(simulation, simulation.outcome)
        return entry

    def snapshot(self, simulation: Simulation) -> JsonObject:
        """Everything a watcher needs at once, whenever it arrives."""
        game = simulation.game
        playing = simulation.state is not None
        message: JsonObject = {
            "type": "snapshot",
            "simulationId": simulation.id,
            "game": game.name,
            "status": simulation.status.value,
            "seats": list(game.seat_names),
            "players": self.players(simulation),
            "board": game.describe(),
            "turn": simulation.turn_count,
            "state": game.state_to_wire(simulation.state) if playing else None,
            "scores": dict(game.scores(simulation.state)) if playing else None,
            "spectators": len(self.watchers.get(simulation.id, ())),
        }
        if simulation.outcome is not None:
            message["result"] = result_to_wire(simulation, simulation.outcome)
        return message

    def lobby(self) -> JsonObject:
        live = [self.summary(simulation) for simulation in self.arena.simulations.values()]
        live_ids = {entry["simulationId"] for entry in live}
        finished = [entry for key, entry in reversed(self.finished.items()) if key not in live_ids]
        return {"type": "lobby", "simulations": live + finished, "house": house_players()}

    # --- pages -------------------------------------------------------------------------------
    def join_lobby(self, page: Page) -> None:
        page.in_lobby = True
        self.lobby_pages.add(page)
        page.send(self.lobby(), droppable=True)

    def watch(self, page: Page, simulation_id: str) -> None:
        self.stop_watching(page)
        simulation = self.arena.simulations.get(simulation_id)
        if simulation is None:
            finished = self.finished.get(simulation_id)
            if finished is not None:
                page.send(
                    {
                        "type": "error",
                        "message": "This game has finished",
                        "simulationId": simulation_id,
                        "game": finished["game"],
                        "players": finished["players"],
                        "result": finished.get("result"),
                    }
                )
            else:
                page.send(
                    {
                        "type": "error",
                        "message": "There is no simulation with this id",
                        "simulationId": simulation_id,
                    }
                )
            return
        page.watching = simulation_id
        self.watchers.setdefault(simulation_id, set()).add(page)
        self._lobby_dirty.set()
        page.send(self.snapshot(simulation), droppable=True)

    def stop_watching(self, page: Page) -> None:
        if page.watching is None:
            return
        pages = self.watchers.get(page.watching)
        if pages is not None:
            pages.discard(page)
            if not pages:
                del self.watchers[page.watching]
        page.watching = None
        self._lobby_dirty.set()

    def forget(self, page: Page) -> None:
        self.stop_watching(page)
        self.lobby_pages.discard(page)
        self.pages.discard(page)

    async def shut_down(self, timeout_s: float) -> None:
        """Tell every page the server is stopping, and close them once that is sent."""
        notice = dumps({"type": "error", "message": "Server shutting down"})
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

    async def run(self) -> None:
        """Push a lobby snapshot whenever something changed, at most every LOBBY_INTERVAL_S."""
        while True:
            await self._lobby_dirty.wait()
            self._lobby_dirty.clear()
            if self.lobby_pages:
                text = dumps(self.lobby())
                for page in self.lobby_pages:
                    page.push(text)
            await asyncio.sleep(LOBBY_INTERVAL_S)


def house_players() -> JsonObject:
    """The house players of each game, so pages offer exactly what the server accepts."""
    return {
        game: [
            {"name": p.name, "description": p.description, "sides": list(p.sides)}
            for p in players.values()
        ]
        for game, players in HOUSE_PLAYERS.items()
    }


def result_to_wire(simulation: Simulation, outcome: Outcome) -> JsonObject:
    game = simulation.game
    scores = dict(game.scores(simulation.state)) if simulation.state is not None else None
    return {
        "reason": outcome.reason,
        "winner": None if outcome.winner is None else game.seat_names[outcome.winner],
        "score": scores,
    }


@contextlib.asynccontextmanager
async def running(hub: SpectatorHub) -> Any:
    """Run the hub's lobby loop for the duration of the block."""
    task = asyncio.create_task(hub.run(), name="lobby")
    try:
        yield hub
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
