"""The helper tasks of one match (an in-process player thinking about its turn): run in the
match task's own TaskGroup while the game is on, so that none outlives the game."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any


class Helpers:
    """The TaskGroup of a match's task, and the helpers running in it."""

    def __init__(self) -> None:
        self._tasks: asyncio.TaskGroup | None = None
        self._running: set[asyncio.Task[None]] = set()

    async def run(self, begin: Callable[[], None], ended: asyncio.Event) -> None:
        """Call ``begin`` and wait for ``ended`` with the TaskGroup open; then the helpers still
        running (a player still thinking about a game that is over) are cancelled and waited
        for."""
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = tasks
                begin()
                await ended.wait()
                for helper in self._running:
                    helper.cancel()
        finally:
            self._tasks = None

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in the TaskGroup; dropped if there is none (yet, or any more)."""
        if self._tasks is None:
            work.close()
            return
        try:
            helper = self._tasks.create_task(work)
        except RuntimeError:  # the match's TaskGroup is already shutting down
            work.close()
            return
        self._running.add(helper)
        helper.add_done_callback(self._running.discard)
