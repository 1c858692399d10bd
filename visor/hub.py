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
from collections.abc import Iterator, MutableMapping
from dataclasses import replace
from typing import Any

import orjson
from aiohttp import web

from server.arena import Arena
from server.clock import Clock
from server.cluster import Deliver, OtherNodes
from server.games.base import JsonObject
from server.house import HOUSE_PLAYERS
from server.match import (
    GameFinished,
    GameStarted,
    MatchView,
    Removed,
    SeatLeft,
    SeatsChanged,
    TurnPlayed,
    TurnResult,
    Update,
    clock_to_wire,
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
        self._hang_up = False  # close the websocket once the queue is sent

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

    def close(self, hang_up: bool = False) -> None:
        """Stop taking messages; what is queued is still sent, then, with ``hang_up``, the
        websocket is closed."""
        self._closed = True
        self._hang_up = self._hang_up or hang_up
        self._wakeup.set()

    async def write_loop(self) -> None:
        """Send queued messages until the page closes."""
        try:
            while True:
                while not self._queue:
                    if self._closed:
                        if self._hang_up:
                            await self.ws.close()
                        return
                    self._wakeup.clear()
                    await self._wakeup.wait()
                text, _ = self._queue.popleft()
                await self.ws.send_str(text)
        except (ConnectionError, RuntimeError) as error:  # the page went away mid-send
            log.debug("page write failed: %s", error)


class LiveViews(MutableMapping[str, MatchView]):
    """Every live match as pages see it, by id: its view as the arena last sent it (seats, the
    start) with its latest turn folded in, when a page reads it (a snapshot, a lobby row).

    A turn is only stored as it came (``turn_played``): a game nobody watches costs the hub no
    view, no message and no reading of the clock per turn.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._views: dict[str, MatchView] = {}
        self._since: dict[str, float] = {}  # when each view's clock started (clock time)
        self._turns: dict[str, list[TurnResult | None]] = {}  # each seat's last turn, by match

    def turn_played(self, result: TurnResult) -> None:
        turns = self._turns.get(result.match_id)
        if turns is not None:
            turns[result.seat] = result

    def _latest(self, match_id: str) -> TurnResult | None:
        played = [turn for turn in self._turns.get(match_id, ()) if turn is not None]
        return max(played, key=lambda turn: turn.number) if played else None

    def __getitem__(self, match_id: str) -> MatchView:
        view = self._views[match_id]
        latest = self._latest(match_id)
        if latest is not None and latest.number > view.turn:
            view = self._views[match_id] = replace(
                view, turn=latest.number, state=latest.state, clock=latest.clock
            )
        return view

    def __setitem__(self, match_id: str, view: MatchView) -> None:
        self._views[match_id] = view
        self._since[match_id] = self._clock.now()
        self._turns[match_id] = [None] * len(view.players)

    def __delitem__(self, match_id: str) -> None:
        del self._views[match_id]
        del self._since[match_id]
        del self._turns[match_id]

    def __contains__(self, match_id: object) -> bool:
        return match_id in self._views

    def __iter__(self) -> Iterator[str]:
        return iter(self._views)

    def __len__(self) -> int:
        return len(self._views)

    def clock_since(self, match_id: str) -> float | None:
        """When the clock of the seat on move started (the clock's time), if it is live."""
        latest = self._latest(match_id)
        return latest.played_at if latest is not None else self._since.get(match_id)

    def replies_ms(self, match_id: str) -> dict[str, int]:
        """Each seat's last reply time, by seat name, once it has replied."""
        view = self._views.get(match_id)
        if view is None:
            return {}
        names = view.codec.seat_names
        return {names[t.seat]: t.reply_ms for t in self._turns[match_id] if t is not None}


class SpectatorHub:
    """Everything the browser pages watch, kept from the arena's updates: the hub never reads
    a live match, only the immutable views and turn results the arena sends it."""

    def __init__(self, arena: Arena, others: OtherNodes | None = None) -> None:
        self.arena = arena
        self.others = others  # the arena's other nodes, when it has any
        self.pages: set[Page] = set()  # every open page, for the shutdown notice
        self.lobby_pages: set[Page] = set()
        self.watchers: dict[str, set[Page]] = {}
        self.live = LiveViews(arena.clock)  # every match not finished, as last seen
        self.finished: OrderedDict[str, JsonObject] = OrderedDict()  # id -> lobby entry
        self.opened_at: dict[str, float] = {}  # loop time each lobby row was first seen
        self.relays: dict[str, set[Deliver]] = {}  # other nodes' pages watching a match here
        self._elsewhere: set[str] = set()  # matches of other nodes that pages here watch
        self._lobby_dirty = asyncio.Event()
        arena.listeners.append(self.on_update)
        if others is not None:
            others.serve_spectators(self)

    # --- arena updates -----------------------------------------------------------------------
    def on_update(self, update: Update) -> None:
        self._lobby_dirty.set()
        text: str | None = None
        if isinstance(update, TurnPlayed):  # by far the most frequent
            result = update.result
            match_id = result.match_id
            self.live.turn_played(result)
            pages = self.watchers.get(match_id)
            relays = self.relays.get(match_id)
            if not pages and not relays:
                return  # nobody watches it
            count = len(pages or ()) + len(relays or ())
            text = (result.spectator_json() + b',"spectators":%d}' % count).decode()
        elif isinstance(update, SeatsChanged | GameStarted):
            view = self.live[update.view.match_id] = update.view
            match_id = view.match_id
            self.opened_at.setdefault(match_id, asyncio.get_running_loop().time())
            if self.watchers.get(match_id) or self.relays.get(match_id):
                text = dumps(self.snapshot(view))
        elif isinstance(update, SeatLeft):
            match_id = update.match_id
            view_or_none = self.live.get(match_id)
            if view_or_none is not None:
                seat_name = view_or_none.codec.seat_names[update.seat]
                text = dumps({"type": "left", "seat": seat_name, "nick": update.nick})
        elif isinstance(update, GameFinished):
            view = update.view
            match_id = view.match_id
            self._drop_live(match_id)
            self._keep_finished(self.summary(view))
            text = dumps(
                {
                    "type": "end",
                    "simulationId": match_id,
                    "result": view.result(),
                    "state": view.codec.state_to_wire(view.state),
                }
            )
        else:
            match_id = update.match_id
            self._drop_live(match_id)
            self.opened_at.pop(match_id, None)
            text = dumps(
                {"type": "error", "message": "This simulation was closed before it started"}
            )
        relays = self.relays.get(match_id)
        if relays and text is not None:
            for deliver in relays:
                deliver(text)
        if isinstance(update, GameFinished | Removed):
            self.relays.pop(match_id, None)
        pages = self.watchers.get(match_id)
        if not pages or text is None:
            return
        # Pushed in the loop's next round, so that the players' next turn, held briefly in a
        # server.tcp.WriteBatch, is not written after hundreds of pages' copies.
        asyncio.get_running_loop().call_soon(self._push, match_id, list(pages), text)

    def _keep_finished(self, entry: JsonObject) -> None:
        self.finished[entry["simulationId"]] = entry
        while len(self.finished) > FINISHED_KEPT:
            self.opened_at.pop(self.finished.popitem(last=False)[0], None)
        self._lobby_dirty.set()

    def _drop_live(self, match_id: str) -> None:
        self.live.pop(match_id, None)

    def _push(self, match_id: str, pages: list[Page], text: str) -> None:
        snapshot: str | None = None
        for page in pages:
            if snapshot is None and page.backlog >= MAX_QUEUED:
                view = self.live.get(match_id)
                snapshot = dumps(self.snapshot(view)) if view is not None else text
            page.push(text, snapshot=snapshot)

    # --- views -------------------------------------------------------------------------------
    def summary(self, view: MatchView) -> JsonObject:
        """One lobby row."""
        return view.lobby_row(len(self.watchers.get(view.match_id, ())))

    def snapshot(self, view: MatchView) -> JsonObject:
        """Everything a watcher needs at once, whenever it arrives."""
        codec = view.codec
        message: JsonObject = {
            "type": "snapshot",
            "simulationId": view.match_id,
            "game": codec.name,
            "status": view.status.value,
            "seats": list(codec.seat_names),
            "players": [None if p is None else p.to_wire() for p in view.players],
            "board": codec.describe(),
            "turn": view.turn,
            "state": None if view.state is None else codec.state_to_wire(view.state),
            "scores": view.scores(),
            "spectators": len(self.watchers.get(view.match_id, ())),
            "clock": clock_to_wire(codec, view.clock),
            "replyMs": self.live.replies_ms(view.match_id),
        }
        started = self.live.clock_since(view.match_id)
        if message["clock"] is not None and started is not None:
            elapsed = self.arena.clock.now() - started
            message["clock"]["elapsedMs"] = round(1000 * elapsed)
        if view.outcome is not None:
            message["result"] = view.result()
        return message

    def not_live(self, simulation_id: str) -> JsonObject:
        """What a page asking to watch a game that is not being played is told: its result,
        if it finished (on this node or another), or that there is no such game."""
        finished = self.finished.get(simulation_id)
        if finished is None:
            return {
                "type": "error",
                "message": "There is no simulation with this id",
                "simulationId": simulation_id,
            }
        return {
            "type": "error",
            "message": "This game has finished",
            "simulationId": simulation_id,
            "game": finished["game"],
            "players": finished["players"],
            "result": finished.get("result"),
        }

    def live_simulations(self) -> list[JsonObject]:
        """Every live simulation of the arena, this node's and the other nodes'."""
        live = [self.summary(view) for view in self.live.values()]
        if self.others is not None:
            live.extend(self.others.simulations())
        return live

    def lobby(self) -> JsonObject:
        live = self.live_simulations()
        live_ids = {entry["simulationId"] for entry in live}
        finished = [entry for key, entry in reversed(self.finished.items()) if key not in live_ids]
        rows = live + finished
        now = asyncio.get_running_loop().time()
        for entry in rows:  # how long ago it was opened (pages count on from there)
            opened = self.opened_at.get(entry["simulationId"])
            entry["ageMs"] = None if opened is None else round(1000 * (now - opened))
        return {"type": "lobby", "simulations": rows, "house": house_players()}

    # --- pages -------------------------------------------------------------------------------
    def join_lobby(self, page: Page) -> None:
        page.in_lobby = True
        self.lobby_pages.add(page)
        page.send(self.lobby(), droppable=True)

    def watch(self, page: Page, simulation_id: str) -> None:
        self.stop_watching(page)
        view = self.live.get(simulation_id)
        if view is None and self.others is not None and self.others.watch(simulation_id):
            # Played on another node: its snapshot and messages come through the relay.
            self._elsewhere.add(simulation_id)
            page.watching = simulation_id
            self.watchers.setdefault(simulation_id, set()).add(page)
            return
        if view is None:
            page.send(self.not_live(simulation_id))
            return
        page.watching = simulation_id
        self.watchers.setdefault(simulation_id, set()).add(page)
        self._lobby_dirty.set()
        page.send(self.snapshot(view), droppable=True)

    def stop_watching(self, page: Page) -> None:
        if page.watching is None:
            return
        pages = self.watchers.get(page.watching)
        if pages is not None:
            pages.discard(page)
            if not pages:
                del self.watchers[page.watching]
                if page.watching in self._elsewhere and self.others is not None:
                    self._elsewhere.discard(page.watching)
                    self.others.unwatch(page.watching)
        page.watching = None
        self._lobby_dirty.set()

    # --- other nodes (server.cluster.Spectators) ---------------------------------------------
    def relay(self, simulation_id: str, deliver: Deliver) -> None:
        view = self.live.get(simulation_id)
        if view is None:  # it ended a moment ago
            deliver(dumps(self.not_live(simulation_id)))
            return
        self.relays.setdefault(simulation_id, set()).add(deliver)
        self._lobby_dirty.set()
        deliver(dumps(self.snapshot(view)))

    def unrelay(self, simulation_id: str, deliver: Deliver) -> None:
        relays = self.relays.get(simulation_id)
        if relays is not None:
            relays.discard(deliver)
            if not relays:
                del self.relays[simulation_id]

    def relayed(self, simulation_id: str, text: str, last: bool) -> None:
        pages = self.watchers.get(simulation_id)
        if pages:
            self._push(simulation_id, list(pages), text)
        if last:  # its node is lost: each page is told (above), then closed
            self._elsewhere.discard(simulation_id)
            for page in self.watchers.pop(simulation_id, set()):
                page.watching = None
                page.close(hang_up=True)

    def finished_elsewhere(self, entry: JsonObject) -> None:
        if entry["simulationId"] not in self.finished:
            self._keep_finished(entry)

    def lobby_changed(self) -> None:
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
