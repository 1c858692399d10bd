"""Time as a match sees it: the event loop's clock in the arena, a hand-wound one in tests.

A match never reads the time or sleeps by itself: it asks its ``Clock``, so that timeouts,
forfeits and grace periods can be tested in memory, to the millisecond, with no real waits.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Protocol

STALL_WATCH_S = 0.1  # how often the loop's lateness is measured
STALLS_KEPT = 64  # the last stalls noted (a turn is shorter than the time they span)
LATE_NOTED_S = 0.001  # the loop woke the watch later than this: the arena was late meanwhile
LATENESS_KEPT = 256  # the last late spans noted (some 25 s of them at most: longer than a turn)


class Timer(Protocol):
    """A callback due at a time; ``asyncio.TimerHandle`` is one."""

    def cancel(self) -> None: ...

    def when(self) -> float: ...


class Clock(Protocol):
    def now(self) -> float:
        """Seconds, on a monotonic scale of the clock's own."""

    def call_later(self, delay_s: float, callback: Callable[[], object]) -> Timer:
        """Call ``callback`` once ``delay_s`` have passed."""

    def stalled_since(self, since: float) -> bool:
        """Did the arena itself stall (its event loop late past the stated limit) after
        ``since``? A turn whose time ran out through one is the arena's fault."""

    def late_s(self, since: float, now: float) -> float:
        """How long the arena itself was late (its event loop behind its timers) from ``since``
        to ``now`` (the clock's time, read by the caller): time a bot's reply waited on the
        arena, not on the bot or the network."""

    async def watch_stalls(self, limit_s: float) -> None:
        """Note the stalls past ``limit_s`` as they come (for as long as the arena runs), and
        every lateness (``late_s``)."""


class LoopClock:
    """The running event loop's clock: the loop it was last read in, while that one is open
    (``asyncio.get_running_loop`` makes a system call; a turn reads the clock several times).
    ``watch_stalls`` notes when the loop ran late past a limit (``loopStallVoidMs``)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self.stalls: deque[tuple[float, float]] = deque(maxlen=STALLS_KEPT)  # (from, to)
        self.late: deque[tuple[float, float]] = deque(maxlen=LATENESS_KEPT)  # (from, to)
        self._watch_due = float("inf")  # when the watch is due to wake next (while it runs)
        self._late_until = float("-inf")  # the end of the last lateness noted

    def _running(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is None or loop.is_closed():
            loop = self._loop = asyncio.get_running_loop()
        return loop

    def now(self) -> float:
        loop = self._loop  # ``_running``, inline: read at least twice a turn
        if loop is None or loop.is_closed():
            loop = self._running()
        return loop.time()

    def call_later(self, delay_s: float, callback: Callable[[], object]) -> Timer:
        return self._running().call_later(delay_s, callback)

    def stalled_since(self, since: float) -> bool:
        return any(until > since for _, until in self.stalls)

    def late_s(self, since: float, now: float) -> float:
        late = now - max(self._watch_due, since)  # the watch is overdue: late now
        if late <= 0.0:
            late = 0.0
            if self._late_until <= since:  # nothing noted since: the common case, every turn
                return late
        for due, woke in reversed(self.late):
            if woke <= since:
                break
            late += min(woke, now) - max(due, since)
        return late

    async def watch_stalls(self, limit_s: float) -> None:
        """Every ``STALL_WATCH_S``, how late the loop woke this task: later than
        ``LATE_NOTED_S``, the span is noted as lateness; later than ``limit_s``, as a stall (a
        blocking call, the machine starved of CPU)."""
        loop = self._running()
        try:
            while True:
                due = self._watch_due = loop.time() + STALL_WATCH_S
                await asyncio.sleep(STALL_WATCH_S)
                woke = loop.time()
                if woke - due > LATE_NOTED_S:
                    self.late.append((due, woke))
                    self._late_until = woke
                    if woke - due > limit_s:
                        self.stalls.append((due, woke))
        finally:
            self._watch_due = float("inf")
