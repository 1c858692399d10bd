"""A browser page's websocket, its bounded queue, and the cap on the pages open.

Each browser page has one websocket and one bounded queue. A spectator must never slow a game:
updates are queued without waiting, and a page that falls behind has its backlog of spectator
messages replaced by one snapshot of the latest position. Messages for a person's own seat are
never dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

import orjson
from aiohttp import WSCloseCode, WSMsgType, web

from server.games.base import JsonObject

log = logging.getLogger(__name__)

MAX_QUEUED = 64  # spectator messages a page may have waiting before a snapshot replaces them
MAX_BACKLOG = 256  # messages of any kind a page may leave unread before it is closed


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
