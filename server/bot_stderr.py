"""What a bot process writes on stderr, read as it comes without ever blocking: the last
``STDERR_KEPT`` characters of the whole game, and while one of its turns is open, that turn's
first ``MAX_STDERR_BYTES`` (its owner's log keeps them with the turn: ``server.debug``).

The bot writes through a pipe of ours (not an asyncio stream), so that when its turn opens or
its move is in, the pipe can be read to its end at once: what the bot wrote before it answered
is in the pipe by the time its answer is in (a process writes its stderr before its move, and a
pipe's write is done when it returns), wherever the event loop was in reading either.
"""

from __future__ import annotations

import asyncio
import os

from server.debug import MAX_STDERR_BYTES, stderr_text

STDERR_KEPT = 20_000  # the last characters of a bot's stderr kept with the record
STDERR_KEPT_BYTES = 4 * STDERR_KEPT  # enough bytes for that many characters of UTF-8
READ_BYTES = 65_536  # read from a bot's stderr at once
DRAIN_READS = 64  # at a turn's start or end, at most this many reads (a bot may never stop)


class StderrPipe:
    """A bot's stderr: the write end of a pipe ``opened`` goes to its process (and is closed
    here once it started: ``started``); the loop reads the other end as it comes."""

    def __init__(self) -> None:
        self._read_end = self._write_end = -1
        self._open = False
        self.closed = asyncio.Event()  # the bot and all it started closed their end
        self._kept = bytearray()
        self._turn: bytearray | None = None  # while a turn is open: what it wrote
        self._turn_cut = 0  # bytes it wrote during the turn beyond those kept

    def opened(self) -> int:
        """A new pipe: its write end, for the process to start with."""
        self._read_end, self._write_end = os.pipe()
        self._open = True
        return self._write_end

    def started(self) -> None:
        """The process has its end: read ours from now on."""
        os.close(self._write_end)
        os.set_blocking(self._read_end, False)
        asyncio.get_running_loop().add_reader(self._read_end, self.read, 1)

    def failed(self, why: str) -> None:
        """The process never started: both ends closed, and ``why`` is what it wrote."""
        os.close(self._write_end)
        self.close()
        self._kept += why.encode()

    def read(self, reads: int = DRAIN_READS) -> None:
        """Read what the bot wrote, at most ``reads`` times ``READ_BYTES`` of it."""
        for _ in range(reads):
            if not self._open:
                return
            try:
                chunk = os.read(self._read_end, READ_BYTES)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.close()
                return
            self._kept += chunk
            if len(self._kept) > STDERR_KEPT_BYTES:
                del self._kept[:-STDERR_KEPT_BYTES]
            if self._turn is not None:
                room = MAX_STDERR_BYTES - len(self._turn)
                self._turn += chunk[:room]
                self._turn_cut += max(0, len(chunk) - room)

    def close(self) -> None:
        if self._open:
            self._open = False
            loop = asyncio.get_running_loop()
            loop.remove_reader(self._read_end)
            os.close(self._read_end)
        self.closed.set()

    @property
    def is_open(self) -> bool:
        return self._open

    def turn_opened(self) -> None:
        """Its turn was sent: what it writes from now on is that turn's."""
        self.read()
        self._turn, self._turn_cut = bytearray(), 0

    def turn_closed(self) -> str | None:
        """Its move is in (or its turn was played for it): what it wrote for it, bounded."""
        self.read()
        kept, self._turn = self._turn, None
        return None if kept is None else stderr_text(bytes(kept), self._turn_cut)

    def tail(self) -> str:
        """The last ``STDERR_KEPT`` characters it wrote in the whole game."""
        return self._kept.decode(errors="replace")[-STDERR_KEPT:]
