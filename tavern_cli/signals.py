"""Stopping a command on SIGINT or SIGTERM once it has cleaned up (a tournament's games in
progress kept unfinished, its bots killed, its records closed), then exiting with the signal's
status, 128 plus its number, as a shell expects.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Stopped(Exception):
    """The command was stopped by a signal (after cleaning up); ``code`` is its exit status."""

    def __init__(self, signal_number: int) -> None:
        super().__init__(signal.Signals(signal_number).name)
        self.code = 128 + signal_number


async def until_signalled(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work``; the first SIGINT or SIGTERM cancels it, and once it has cleaned up (its
    ``finally`` blocks ran), raises ``Stopped``. A second signal is ignored, so that a
    tournament's records are closed properly even when Ctrl-C is pressed twice."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def on_signal(number: int) -> None:
        if not received:
            received.append(number)
            task.cancel()

    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, on_signal, number)
    try:
        return await work
    except asyncio.CancelledError:
        if not received:
            raise
        task.uncancel()
        raise Stopped(received[0]) from None
    finally:
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(number)
