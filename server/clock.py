"""Time as a match sees it: the event loop's clock in the arena, a hand-wound one in tests.

A match never reads the time or sleeps by itself: it asks its ``Clock``, so that timeouts,
forfeits and grace periods can be tested in memory, to the millisecond, with no real waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    """A callback due at a time; ``asyncio.TimerHandle`` is one."""

    def cancel(self) -> None: ...

    def when(self) -> float: ...


class Clock(Protocol):
    def now(self) -> float:
        """Seconds, on a monotonic scale of the clock's own."""

    def call_later(self, delay_s: float, callback: Callable[[], object]) -> Timer:
        """Call ``callback`` once ``delay_s`` have passed."""


class LoopClock:
    """The running event loop's clock: the loop it was last read in, while that one is open
    (``asyncio.get_running_loop`` makes a system call; a turn reads the clock several times)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None

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
