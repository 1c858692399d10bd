"""Draining a node before a restart: it opens no new simulation, plays its games to their end,
then lets its command stop (docs/operations.md).

``Drain.start`` (SIGUSR1 in ``tavern serve``) sets ``Arena.draining``, which the sessions check
before opening anything (``server.arena.Arena.check_open``), so that create and random join
are refused here, through every front end, and go to the other nodes. The node's ``/readyz``
fails from then on, so that a load balancer sends new connections elsewhere. ``Drain.done``
returns once nothing is left to play here: no match of this node that someone is in (playing,
or waiting with a seat taken) and no seat this node's clients play on another node; or once the
drain's time is up, when the games still playing are kept unfinished, as a stop keeps them.
A waiting match nobody is in holds no drain: it can be joined by id while the drain lasts (and
then holds it), and goes with the node when the drain ends.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from server.arena import Arena

log = logging.getLogger(__name__)

CHECK_EVERY_S = 0.05  # how often a draining node looks whether anything is left to play


class Drain:
    """One node's drain: asked for once, finished once."""

    def __init__(self, arena: Arena, seats_elsewhere: Callable[[], int] = lambda: 0) -> None:
        self.arena = arena
        self.seats_elsewhere = seats_elsewhere  # seats this node's clients play on other nodes
        self.started = asyncio.Event()

    def start(self) -> None:
        if not self.started.is_set():
            self.arena.draining = True
            self.started.set()
            log.info("draining: no new simulation here; %d left to play", self.left())

    def left(self) -> int:
        """What still plays here: matches of this node someone is in, and seats on other
        nodes."""
        return self.arena.occupied() + self.seats_elsewhere()

    async def done(self, timeout_s: float, notice_s: float = 0.0) -> int:
        """Once started, wait until nothing is left to play, or ``timeout_s``: what is left
        (0: drained). Never less than ``notice_s``: a load balancer notices a failing
        ``/readyz`` only at its next checks, and meanwhile still sends new connections here,
        which must find the node up (a join is taken, a create told to go elsewhere)."""
        await self.started.wait()
        await asyncio.sleep(min(notice_s, timeout_s))
        deadline = time.monotonic() + timeout_s - min(notice_s, timeout_s)
        # Looked at now and then: what ends here (matches, seats on other nodes, their links)
        # has no one event, and a look costs two len()s.
        while (left := self.left()) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(CHECK_EVERY_S)
        if left:
            log.warning("draining: time is up with %d games or seats still playing", left)
        else:
            log.info("draining: nothing left to play")
        return left
