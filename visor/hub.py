"""Spectators: the lobby and the live views, fed by the arena's updates.

Each browser page has one websocket and one bounded queue. A spectator must never slow a game:
updates are queued without waiting, and a page that falls behind has its backlog of spectator
messages replaced by one snapshot of the latest position. Messages for a person's own seat are
never dropped. Lobby updates are coalesced: at most one snapshot per ``LOBBY_INTERVAL_S``, which
lists ``LOBBY_ROWS`` rows however many simulations there are, is encoded once for every page
that follows it, and replaces on each page the one it was not sent yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import dataclass, replace
from typing import Any

import orjson
from aiohttp import WSCloseCode, WSMsgType, web

from server.arena import Arena
from server.clock import Clock
from server.cluster import Deliver, OtherNodes
from server.errors import BotError
from server.games import GAMES
from server.games.base import JsonObject
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


class Page:
    """One browser page (or matchmaking socket): its websocket and what waits to be sent to it.

    What waits is bounded in messages (``MAX_BACKLOG``) and in bytes: once the queue and what
    the socket's own buffer holds reach ``max_bytes``, the page reads too slowly or not at all
    and is cut off, as a bot that stops reading is. Before that, a page falling behind (
    ``MAX_QUEUED`` spectator messages, or half its bytes) has its spectator messages replaced by
    one snapshot, and the lobby is one message at most, replaced by the next. So a page holds at
    most ``max_bytes``, one lobby and the message being written.
    """

    def __init__(
        self, ws: web.WebSocketResponse, transport: asyncio.Transport | None, max_bytes: int
    ) -> None:
        self.ws = ws
        self.transport = transport
        self.max_bytes = max_bytes
        self.watching: str | None = None
        self.lobby_game: str | None = None  # the lobby's filter this page asked for
        self._queue: deque[tuple[bytes, bool]] = deque()  # (message, may be dropped)
        self._queued_bytes = 0
        self._lobby: bytes | None = None  # the newest lobby not sent yet: one at most
        self.writer: asyncio.Task[None] | None = None  # the write loop, once running
        self._wakeup = asyncio.Event()
        self._closed = False
        self._hang_up = False  # close the websocket once the queue is sent

    @property
    def backed_up(self) -> bool:
        """It does not read what it is sent: its socket took no more (bytes wait in the
        transport, the kernel's buffers toward it being full)."""
        return self.transport is not None and self.transport.get_write_buffer_size() > 0

    @property
    def behind(self) -> bool:
        """Falling behind: its spectator messages are to give way to a snapshot."""
        return len(self._queue) >= MAX_QUEUED or 2 * self._queued_bytes >= self.max_bytes

    def push(self, data: bytes, *, droppable: bool = True, snapshot: bytes | None = None) -> None:
        """Queue a message; past the bound, spectator messages give way to ``snapshot``."""
        if self._closed:
            return
        if droppable and self.behind:
            kept = [(d, keep) for d, keep in self._queue if not keep]
            self._queue.clear()
            self._queue.extend(kept)
            self._queued_bytes = sum(len(d) for d, _ in kept)
            if snapshot is not None:
                data = snapshot
        if len(self._queue) >= MAX_BACKLOG:
            # A page that reads nothing (while it sends, say, a stream of bad requests) must
            # not hold the server's memory.
            self._cut_off(f"left {len(self._queue)} messages unread")
            return
        if self._full():
            return
        self._queue.append((data, droppable))
        self._queued_bytes += len(data)
        self._wakeup.set()

    def push_lobby(self, data: bytes) -> None:
        """The lobby as it is now: it replaces one the page has not been sent yet."""
        if self._closed or self._full():
            return
        self._lobby = data
        self._wakeup.set()

    def _full(self) -> bool:
        """Whether the page has its bound waiting (then it is cut off)."""
        buffered = 0 if self.transport is None else self.transport.get_write_buffer_size()
        if self._queued_bytes + buffered < self.max_bytes:
            return False
        self._cut_off(f"left {self._queued_bytes + buffered:,} bytes unread")
        return True

    def _cut_off(self, why: str) -> None:
        log.info("a page %s: closed", why)
        self.abort()

    def abort(self) -> None:
        """Drop everything queued and cut the connection."""
        self._closed = True
        self._queue.clear()
        self._queued_bytes = 0
        self._lobby = None
        self._wakeup.set()
        if self.transport is not None:
            self.transport.abort()

    def send(self, message: JsonObject, *, droppable: bool = False) -> None:
        self.push(orjson.dumps(message), droppable=droppable)

    def close(self, hang_up: bool = False) -> None:
        """Stop taking messages; what is queued is still sent, then, with ``hang_up``, the
        websocket is closed. A lobby not sent yet is dropped: it is no message, only a view."""
        self._closed = True
        self._lobby = None
        self._hang_up = self._hang_up or hang_up
        self._wakeup.set()

    async def write_loop(self) -> None:
        """Send queued messages, then the pending lobby, until the page closes."""
        try:
            while True:
                if self._queue:
                    data, _ = self._queue.popleft()
                    self._queued_bytes -= len(data)
                elif self._lobby is not None:
                    data, self._lobby = self._lobby, None
                elif self._closed:
                    if self._hang_up:
                        await self.ws.close()
                    return
                else:
                    self._wakeup.clear()
                    await self._wakeup.wait()
                    continue
                await self.ws.send_frame(data, WSMsgType.TEXT)
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
        self._latest: dict[str, TurnResult] = {}  # the last turn played, by match
        self._replies: dict[str, list[int | None]] = {}  # each seat's last reply (ms), by match

    def turn_played(self, result: TurnResult) -> None:
        # Only the last turn is kept: the one before goes at once, with the position it holds
        # (the one this turn was played from, still in the processor's cache).
        replies = self._replies.get(result.match_id)
        if replies is not None:
            replies[result.seat] = result.reply_ms
            self._latest[result.match_id] = result

    def __getitem__(self, match_id: str) -> MatchView:
        view = self._views[match_id]
        latest = self._latest.get(match_id)
        if latest is not None and latest.number > view.turn:
            view = self._views[match_id] = replace(
                view, turn=latest.number, state=latest.state, clock=latest.clock
            )
        return view

    def __setitem__(self, match_id: str, view: MatchView) -> None:
        self._views[match_id] = view
        self._since[match_id] = self._clock.now()
        self._latest.pop(match_id, None)
        self._replies[match_id] = [None] * len(view.players)

    def __delitem__(self, match_id: str) -> None:
        del self._views[match_id]
        del self._since[match_id]
        self._latest.pop(match_id, None)
        del self._replies[match_id]

    def __contains__(self, match_id: object) -> bool:
        return match_id in self._views

    def __iter__(self) -> Iterator[str]:
        return iter(self._views)

    def __len__(self) -> int:
        return len(self._views)

    def clock_since(self, match_id: str) -> float | None:
        """When the clock of the seat on move started (the clock's time), if it is live."""
        latest = self._latest.get(match_id)
        return latest.played_at if latest is not None else self._since.get(match_id)

    def replies_ms(self, match_id: str) -> dict[str, int]:
        """Each seat's last reply time, by seat name, once it has replied."""
        view = self._views.get(match_id)
        if view is None:
            return {}
        names = view.codec.seat_names
        replies = self._replies[match_id]
        return {names[seat]: ms for seat, ms in enumerate(replies) if ms is not None}


MAX_WS_MESSAGE = 16 * 1024  # the longest message a page may send


def page_socket() -> web.WebSocketResponse:
    """A page's websocket. Not compressed: each page would hold its own compressor (hundreds
    of KiB) and compress again, for itself, the lobby and the moves every page is sent."""
    return web.WebSocketResponse(heartbeat=30, max_msg_size=MAX_WS_MESSAGE, compress=False)


async def refuse_page(ws: web.WebSocketResponse, message: bytes) -> web.WebSocketResponse:
    """Tell a page why it may not stay, then close its socket ("try again later")."""
    await ws.send_frame(message, WSMsgType.TEXT)
    await ws.close(code=WSCloseCode.TRY_AGAIN_LATER, message=b"too many pages")
    return ws


class PageQuota:
    """The pages open (websockets: the visor's ``/ws`` and the Thud API's ``/match``), in all
    and per address, against the arena's caps.

    At a cap, a new page first takes the place of a page that does not read what it is sent
    (``Page.backed_up``: of the same address at the address's cap, of any at the arena's),
    which is cut off. Else, when every page the arena takes is open, a new one from an address
    that holds fewer than the busiest address by two or more takes the place of that address's
    oldest page (cut off), as the bots' port makes room: however few addresses hold the pages,
    they cannot shut the others out.
    """

    def __init__(self, most: int, most_per_address: int) -> None:
        self.most = most
        self.most_per_address = most_per_address
        self.open = 0
        self._pages: dict[str, dict[Page, None]] = {}  # by address, oldest first

    def admit(self, address: str, page: Page) -> str | None:
        """Count ``page``, from ``address``; or, if a cap is reached, say why not."""
        mine = len(self._pages.get(address, ()))
        if mine >= self.most_per_address:
            if not self._cut_off_backed_up([address]):
                return f"at most {self.most_per_address} pages from one address: close one first"
            mine -= 1
        if (
            self.open >= self.most
            and not self._cut_off_backed_up(list(self._pages))
            and not self._make_room(mine)
        ):
            return f"the arena has {self.most} pages open already: try again later"
        self._pages.setdefault(address, {})[page] = None
        self.open += 1
        return None

    def _cut_off_backed_up(self, addresses: list[str]) -> bool:
        """Cut off a page of these addresses that does not read what it is sent, if any."""
        for address in addresses:
            for page in self._pages.get(address, ()):
                if page.backed_up:
                    log.info(
                        "the pages are all open: one of %s's, reading nothing, gives way", address
                    )
                    self.leave(address, page)
                    page.abort()
                    return True
        return False

    def _make_room(self, mine: int) -> bool:
        """Cut off the oldest page of the busiest address, if it holds more than ``mine`` + 1."""
        busiest = max(self._pages, key=lambda address: len(self._pages[address]))
        pages = self._pages[busiest]
        if len(pages) <= mine + 1:
            return False
        oldest = next(iter(pages))
        log.info("the arena's pages are all open: one of %s's %d gives way", busiest, len(pages))
        self.leave(busiest, oldest)
        oldest.abort()
        return True

    def leave(self, address: str, page: Page) -> None:
        pages = self._pages.get(address)
        if pages is None or page not in pages:
            return  # it gave way to a newcomer already
        del pages[page]
        self.open -= 1
        if not pages:
            del self._pages[address]


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
        self._lobby_messages: dict[str | None, bytes] = {}  # by filter, until the lobby changes
        arena.listeners.append(self.on_update)
        if others is not None:
            others.serve_spectators(self)

    # --- arena updates -----------------------------------------------------------------------
    def on_update(self, update: Update) -> None:
        self._lobby_dirty.set()
        text: bytes | None = None
        if isinstance(update, TurnPlayed):  # by far the most frequent
            result = update.result
            match_id = result.match_id
            self.live.turn_played(result)
            pages = self.watchers.get(match_id)
            relays = self.relays.get(match_id)
            if not pages and not relays:
                return  # nobody watches it
            count = len(pages or ()) + len(relays or ())
            text = result.spectator_json() + b',"spectators":%d}' % count
        elif isinstance(update, SeatsChanged | GameStarted):
            view = self.live[update.view.match_id] = update.view
            match_id = view.match_id
            self.opened_at.setdefault(match_id, asyncio.get_running_loop().time())
            if self.watchers.get(match_id) or self.relays.get(match_id):
                text = orjson.dumps(self.snapshot(view))
        elif isinstance(update, SeatLeft):
            match_id = update.match_id
            view_or_none = self.live.get(match_id)
            if view_or_none is not None:
                seat_name = view_or_none.codec.seat_names[update.seat]
                text = orjson.dumps({"type": "left", "seat": seat_name, "nick": update.nick})
        elif isinstance(update, GameFinished):
            view = update.view
            match_id = view.match_id
            self._drop_live(match_id)
            self._keep_finished(self.summary(view))
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
            self._drop_live(match_id)
            self.opened_at.pop(match_id, None)
            text = orjson.dumps(
                {"type": "error", "message": "This simulation was closed before it started"}
            )
        relays = self.relays.get(match_id)
        if relays and text is not None:
            relayed = text.decode()
            for deliver in relays:
                deliver(relayed)
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

    def _push(self, match_id: str, pages: list[Page], text: bytes) -> None:
        snapshot: bytes | None = None
        for page in pages:
            if snapshot is None and page.behind:
                view = self.live.get(match_id)
                snapshot = orjson.dumps(self.snapshot(view)) if view is not None else text
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
            "board": codec.view.describe(),
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
        message = self._lobby_messages.get(game)
        if message is None:
            message = self._lobby_messages[game] = orjson.dumps(self.lobbies([game])[game])
        return message

    # --- pages -------------------------------------------------------------------------------
    def join_lobby(self, page: Page, game: str | None) -> None:
        """The page follows the lobby of every game (``None``) or of one."""
        page.lobby_game = game if game in self.arena.games else None
        self.lobby_pages.add(page)
        if not self._lobby_dirty.is_set():  # else the lobby loop sends the new lobby shortly
            page.push_lobby(self.lobby_message(page.lobby_game))

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
            deliver(orjson.dumps(self.not_live(simulation_id)).decode())
            return
        self.relays.setdefault(simulation_id, set()).add(deliver)
        self._lobby_dirty.set()
        deliver(orjson.dumps(self.snapshot(view)).decode())

    def unrelay(self, simulation_id: str, deliver: Deliver) -> None:
        relays = self.relays.get(simulation_id)
        if relays is not None:
            relays.discard(deliver)
            if not relays:
                del self.relays[simulation_id]

    def relayed(self, simulation_id: str, text: str, last: bool) -> None:
        pages = self.watchers.get(simulation_id)
        if pages:
            self._push(simulation_id, list(pages), text.encode())
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

    async def run(self) -> None:
        """Push a lobby snapshot whenever something changed, at most every LOBBY_INTERVAL_S."""
        while True:
            await self._lobby_dirty.wait()
            self._lobby_dirty.clear()
            wanted = {page.lobby_game for page in self.lobby_pages}
            lobbies = self.lobbies(wanted) if wanted else {}
            self._lobby_messages = {game: orjson.dumps(lobby) for game, lobby in lobbies.items()}
            for page in self.lobby_pages:
                page.push_lobby(self._lobby_messages[page.lobby_game])
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
