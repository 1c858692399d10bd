"""A turn whose time ran out while the arena itself stalled is the arena's fault, not the bot's
(issue 33, item 6): the game is voided. The event loop's clock notes its stalls past
``loopStallVoidMs`` (a real loop blocked on purpose); a match on a hand-wound clock voids a turn
that timed out through one, and times out one that began after it."""

from __future__ import annotations

import asyncio
import time

from server.clock import LoopClock
from server.match import MatchEnd
from tests.test_match import TURN_S, settle, table, tavern_pass


async def test_the_loop_clock_notes_a_stall_past_its_limit() -> None:
    clock = LoopClock()
    watching = asyncio.create_task(clock.watch_stalls(0.2))
    try:
        await asyncio.sleep(0.15)  # the watch is waiting for its next wake
        before = clock.now()
        time.sleep(0.45)  # noqa: ASYNC251  # the loop blocked, as a stalled arena's
        await asyncio.sleep(0.15)
        assert len(clock.stalls) == 1, clock.stalls
        assert clock.stalled_since(before) and not clock.stalled_since(clock.now())
        await asyncio.sleep(0.3)  # the loop on time again: nothing more noted
        assert len(clock.stalls) == 1
    finally:
        watching.cancel()


async def test_a_turn_that_times_out_through_a_stall_is_voided() -> None:
    async with table(max_consecutive_timeouts=5) as tables:
        match, first, second = await tables.start("tavern")
        match.submit(0, tavern_pass(first.last("turn"), "team1"), first)
        # Team2 does not answer; its time runs out as any timeout's: it passes.
        tables.clock.advance(second.last("turn")["timeoutMs"] / 1000)
        await settle()
        assert match.turn_count == 2 and match.is_on
        # Team1's turn runs out after the arena stalled during it: nobody's fault but the
        # arena's, and the game is voided.
        now = tables.clock.now()
        tables.clock.stalls.append((now + 0.5, now + 1.5))
        tables.clock.advance(TURN_S)
        await settle()
        assert match.outcome is not None and match.outcome.reason is MatchEnd.VOIDED
        assert match.outcome.winner is None
        assert second.last("draw-game")["result"]["reason"] == "Game voided"
