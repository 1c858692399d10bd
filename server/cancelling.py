"""A cancellation that a client library swallowed, raised again.

redis-py (8.1) sometimes answers a cancelled call normally, or with a connection error, instead
of letting ``CancelledError`` through: a loop of such calls then goes on for ever after its task
was cancelled (a worker after SIGTERM, a node's heartbeat after the node stopped, keeping the
``TaskGroup`` that waits for it open). A task that was cancelled and not uncancelled is still
``cancelling``: each such loop checks it after its calls.
"""

from __future__ import annotations

import asyncio
from typing import Any


def stop_if_cancelled(task: asyncio.Task[Any] | None = None) -> None:
    """Raise ``CancelledError`` if the running task (or ``task``, the running one as the caller
    found it once: a loop that checks after every message saves looking it up) was cancelled,
    whatever its last call said."""
    if task is None:
        task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
