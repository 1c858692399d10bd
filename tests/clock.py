"""A hand-wound clock for in-memory tests: time moves only when the test says so."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable


class FakeTimer:
    def __init__(self, due: float, callback: Callable[[], object]) -> None:
        self.due = due
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def when(self) -> float:
        return self.due


class FakeClock:
    """``server.clock.Clock`` whose time is ``advance``d by hand: each timer due meanwhile runs
    at its own time, in order."""

    def __init__(self) -> None:
        self.time = 1000.0
        self._due: list[tuple[float, int, FakeTimer]] = []
        self._order = itertools.count()
        self.stalls: list[tuple[float, float]] = []  # noted by hand: the arena's loop stalled

    def stalled_since(self, since: float) -> bool:
        return any(until > since for _, until in self.stalls)

    def late_s(self, since: float, now: float) -> float:
        """The stalls noted by hand are the arena's lateness too."""
        return sum(max(0.0, min(until, now) - max(start, since)) for start, until in self.stalls)

    async def watch_stalls(self, limit_s: float) -> None:
        """Nothing to watch: a test notes its stalls by hand."""

    def now(self) -> float:
        return self.time

    def call_later(self, delay_s: float, callback: Callable[[], object]) -> FakeTimer:
        timer = FakeTimer(self.time + delay_s, callback)
        heapq.heappush(self._due, (timer.due, next(self._order), timer))
        return timer

    def advance(self, seconds: float) -> None:
        until = self.time + seconds
        while self._due and self._due[0][0] <= until:
            due, _, timer = heapq.heappop(self._due)
            self.time = max(self.time, due)
            if not timer.cancelled:
                timer.callback()
        self.time = until

    def step(self) -> bool:
        """Run the next timer only (at its time, however far): as one round of an event loop
        runs what is due. Whether there was one."""
        while self._due:
            due, _, timer = heapq.heappop(self._due)
            if not timer.cancelled:
                self.time = max(self.time, due)
                timer.callback()
                return True
        return False

    @property
    def pending(self) -> int:
        """Timers still to run."""
        return sum(1 for _, _, timer in self._due if not timer.cancelled)
