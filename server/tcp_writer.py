"""What one TCP connection sends its bot, in order (``server.tcp``): written with the round's
other writes (``WriteBatch``), a message the bot did not ask for paced ``message_gap`` after the
previous one while the bot has said nothing since (the original's bots parse each read as one
message), and bounded (``max_buffered`` bytes waiting, the transport's buffer included)."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

from server.tcp_rounds import WriteBatch


class PacedWriter:
    """One connection's messages out; ``drained`` hears when the paced ones are all written."""

    def __init__(
        self, gap_s: float, max_buffered: int, batch: WriteBatch, drained: Callable[[], None]
    ) -> None:
        self.gap_s = gap_s
        self.max_buffered = max_buffered
        self.transport: asyncio.Transport | None = None
        self.last_read = 0.0  # when the bot last said something (time.monotonic)
        self._batch = batch
        self._drained = drained
        self._paced: deque[tuple[bytes, bool]] = deque()  # (data, answers a request)
        self._paced_bytes = 0
        self._unsent: list[bytes] = []  # due now, written at the end of this round (WriteBatch)
        self._unsent_bytes = 0
        self._last_write = 0.0
        self._timer: asyncio.TimerHandle | None = None

    @property
    def pacing(self) -> bool:
        """Messages wait for their pause."""
        return bool(self._paced)

    def send(self, data: bytes, is_reply: bool) -> bool:
        """Queue one encoded message (``is_reply``: an answer to the bot's own request, never
        paced); ``False`` if the bot has stopped reading: past the high-water mark it must be
        dropped, so that its backlog can never eat the server's memory."""
        transport = self.transport
        assert transport is not None
        buffered = self._paced_bytes + self._unsent_bytes + transport.get_write_buffer_size()
        if buffered + len(data) > self.max_buffered:
            return False
        if not self._paced and not self._needs_gap(is_reply):
            # Nothing is waiting and no pause is due: written at the end of this round. The
            # transport buffers what the socket cannot take yet (bounded above).
            unsent = self._unsent
            unsent.append(data)
            self._unsent_bytes += len(data)
            if len(unsent) == 1:
                self._batch.add(self)  # may write at once
            self._last_write = time.monotonic()
            return True
        self._paced.append((data, is_reply))
        self._paced_bytes += len(data)
        if len(self._paced) == 1:
            self._write_paced()
        return True

    def send_unpaced(self, data: bytes) -> None:
        """Queue a message, nothing paced waiting, that delays no later one (a ping: the bot's
        answer is no word that lets a next message through unpaced)."""
        self._unsent.append(data)
        self._unsent_bytes += len(data)
        if len(self._unsent) == 1:
            self._batch.add(self)

    def write_unsent(self) -> None:
        """Hand what ``send`` left for this round to the transport, in order."""
        unsent, self._unsent, self._unsent_bytes = self._unsent, [], 0
        transport = self.transport
        if transport is not None and not transport.is_closing() and unsent:
            transport.writelines(unsent)

    def _write_paced(self) -> None:
        """Write the paced messages, waiting out each one's pause; a message stays queued
        through its pause, so nothing sent meanwhile can overtake it."""
        self._timer = None
        while self._paced:
            data, is_reply = self._paced[0]
            if self._needs_gap(is_reply):
                wait = self.gap_s - (time.monotonic() - self._last_write)
                self._timer = asyncio.get_running_loop().call_later(wait, self._write_paced)
                return
            self._paced.popleft()
            self._paced_bytes -= len(data)
            self.write_unsent()  # what send left for this round came before this
            if self.transport is not None and not self.transport.is_closing():
                self.transport.write(data)
            self._last_write = time.monotonic()
        self._drained()

    def _needs_gap(self, is_reply: bool) -> bool:
        """A message the bot did not ask for, right after another with no word from the bot."""
        return (
            not is_reply
            and self._last_write > self.last_read
            and time.monotonic() - self._last_write < self.gap_s
        )

    def clear(self) -> None:
        """Drop whatever waits (the connection is gone, or dropped)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._paced.clear()
        self._unsent.clear()
        self._paced_bytes = self._unsent_bytes = 0
