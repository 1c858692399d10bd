"""A drain in memory: what it waits for (tests/test_operations.py drains real nodes)."""

from __future__ import annotations

import asyncio

from server.draining import Drain
from server.match_options import SeatRequest
from tests.test_match import Inbox, settle, table


async def test_a_drain_waits_for_no_simulation_nobody_is_in() -> None:
    """Two simulations wait with nobody in them: a drain ends at once (before: it waited for
    them to expire, ten minutes, or for its own time to run out). One with a seat taken holds
    it; once it is empty again it holds nothing."""
    async with table() as tables:
        arena = tables.arena
        empty = [arena.open("tavern", None) for _ in range(2)]
        drain = Drain(arena)
        drain.start()
        async with asyncio.timeout(1):  # drain.done waits at most timeout_s for what is left
            assert await drain.done(timeout_s=30) == 0
        seated = Inbox()
        seat = empty[0].seat(seated, SeatRequest({"nick": "waiting"}))
        await settle()
        assert drain.left() == 1
        assert await drain.done(timeout_s=0.1) == 1
        empty[0].leave(seat, seated)
        assert drain.left() == 0
