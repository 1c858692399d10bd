"""A match in memory: seats that are lists, a hand-wound clock, no sockets and no real waits.

Timeouts, forfeits, rejoins, the opponent's notices and stale replies, each checked to the
millisecond: the clock moves only when a test advances it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from server.arena import Arena
from server.games.base import JsonObject
from server.match import Match, Phase
from server.match_events import GameFinished, Update
from server.match_options import SeatRequest
from server.seat_channel import SeatMessage
from tests.clock import FakeClock
from tests.conftest import test_config

TURN_S = 2.0
FIRST_TURN_S = 5.0
GRACE_S = 3.0


class Inbox:
    """A seat's channel that keeps what it is sent."""

    def __init__(self) -> None:
        self.messages: list[JsonObject] = []
        self.closed = False

    def send(self, message: SeatMessage) -> None:
        self.messages.append(message.body)

    def close(self) -> None:
        self.closed = True

    def kinds(self) -> list[str]:
        return [str(message["type"]) for message in self.messages]

    def errors(self) -> list[str]:
        return [str(m["message"]) for m in self.messages if m["type"] == "error"]

    def last(self, kind: str) -> JsonObject:
        return next(m for m in reversed(self.messages) if m["type"] == kind)


class Table:
    """An arena on a fake clock, its finished games, and a match with two seats."""

    def __init__(self, arena: Arena, clock: FakeClock) -> None:
        self.arena = arena
        self.clock = clock
        self.finished: list[GameFinished] = []
        arena.listeners.append(self._heard)

    def _heard(self, update: Update) -> None:
        if isinstance(update, GameFinished):
            self.finished.append(update)

    async def start(
        self, game: str, fields: tuple[JsonObject, JsonObject] = ({}, {})
    ) -> tuple[Match, Inbox, Inbox]:
        match = self.arena.open(game)
        first, second = Inbox(), Inbox()
        match.seat(first, SeatRequest({"nick": "first", **fields[0]}))
        match.seat(second, SeatRequest({"nick": "second", **fields[1]}))
        await settle()
        assert match.phase is Phase.PLAYING
        return match, first, second


async def settle() -> None:
    """Let the tasks the arena started take their next step (no time passes)."""
    for _ in range(3):
        await asyncio.sleep(0)


@contextlib.asynccontextmanager
async def table(**settings: Any) -> AsyncIterator[Table]:
    clock = FakeClock()
    config = test_config(
        turn_timeout_ms=round(TURN_S * 1000),
        first_turn_timeout_ms=round(FIRST_TURN_S * 1000),
        **settings,
    )
    arena = Arena(config, clock=clock)
    async with arena.running():
        yield Table(arena, clock)


def tavern_pass(turn: JsonObject, team: str) -> JsonObject:
    dwarves = turn["state"][team]
    return {
        "type": "player-turn",
        "turn": turn["turn"],
        "actions": [{"botId": d["id"], "type": "PASS"} for d in dwarves],
    }


async def test_a_silent_seat_passes_at_its_timeout_and_loses_after_too_many() -> None:
    async with table(max_consecutive_timeouts=2) as tables:
        match, first, second = await tables.start("tavern")
        assert first.last("turn")["timeoutMs"] == FIRST_TURN_S * 1000
        tables.clock.advance(FIRST_TURN_S - 0.001)
        assert first.errors() == [] and match.turn_count == 0
        tables.clock.advance(0.001)
        assert first.errors() == ["Turn timeout"]
        assert match.turn_count == 1  # it passed; team2 is on move
        turn = second.last("turn")
        match.submit(1, tavern_pass(turn, "team2"), second)
        # Its second turn has the ordinary time, and a second timeout in a row loses.
        assert first.last("turn")["timeoutMs"] == TURN_S * 1000
        tables.clock.advance(TURN_S)
        await settle()
        assert match.phase is Phase.FINISHED
        assert first.kinds()[-1] == "loss-game" and second.kinds()[-1] == "win-game"
        (finished,) = tables.finished
        assert finished.outcome.reason == "Too many timeouts"
        assert finished.outcome.winner == 1


async def test_a_thud_seat_that_does_not_move_in_time_loses_at_once() -> None:
    async with table() as tables:
        _, dwarf, troll = await tables.start("thud")
        tables.clock.advance(FIRST_TURN_S)
        await settle()
        (finished,) = tables.finished
        assert (finished.outcome.reason, finished.outcome.winner) == ("Turn timeout", 1)
        assert dwarf.kinds()[-1] == "loss-game" and troll.kinds()[-1] == "win-game"
        assert dwarf.closed and troll.closed


async def test_reply_times_are_measured_on_the_matchs_clock() -> None:
    async with table() as tables:
        match, first, second = await tables.start("tavern")
        tables.clock.advance(0.25)
        match.submit(0, tavern_pass(first.last("turn"), "team1"), first)
        tables.clock.advance(0.75)
        match.submit(1, tavern_pass(second.last("turn"), "team2"), second)
        match.stop()
        await settle()
        stats = [seat.stats() for seat in match.seats if seat is not None]
        assert [s.reply_mean_ms for s in stats] == [250.0, 750.0]


async def test_a_lost_connection_is_held_for_the_grace_period_and_a_rejoin_takes_it_back() -> None:
    async with table(reconnect_grace_ms=round(GRACE_S * 1000)) as tables:
        match, first, second = await tables.start("tavern", ({}, {"opponentNotices": True}))
        seat = match.seats[0]
        assert seat is not None
        token = seat.token
        tables.clock.advance(1.0)
        match.leave(0, first)
        assert second.last("opponent-gone")["seconds"] == GRACE_S
        tables.clock.advance(GRACE_S - 0.001)
        assert match.phase is Phase.PLAYING
        back = Inbox()
        assert match.rejoin(back, token) == 0
        assert second.kinds()[-1] == "opponent-back"
        # The rejoined seat is on move: it gets its game-info and what is left of its turn.
        assert back.kinds() == ["game-info", "turn"]
        assert back.last("turn")["timeoutMs"] == round((FIRST_TURN_S - 1.0 - GRACE_S) * 1000 + 1)
        # The first grace period is over with no effect; a second loss has a grace of its own.
        tables.clock.advance(0.5)
        match.leave(0, back)
        tables.clock.advance(GRACE_S - 0.001)
        assert match.phase is Phase.PLAYING
        tables.clock.advance(0.001)
        await settle()
        (finished,) = tables.finished
        assert (finished.outcome.reason, finished.outcome.winner) == ("Player disconnected", 1)
        assert second.errors()[-1] == "Player disconnected"
        assert second.kinds()[-1] == "win-game"


async def test_with_no_grace_period_a_lost_connection_forfeits_at_once() -> None:
    async with table() as tables:
        match, first, second = await tables.start("thud", ({}, {"opponentNotices": True}))
        match.leave(1, second)
        await settle()
        (finished,) = tables.finished
        assert (finished.outcome.reason, finished.outcome.winner) == ("Player disconnected", 0)
        assert "opponent-gone" not in first.kinds()
        assert first.kinds()[-2:] == ["error", "win-game"]


async def test_a_late_reply_is_stale_and_never_played_as_a_later_turn() -> None:
    async with table() as tables:
        match, first, second = await tables.start("tavern")
        turn_one = first.last("turn")
        tables.clock.advance(FIRST_TURN_S)  # team1 passed turn 1
        match.submit(0, tavern_pass(turn_one, "team1"), first)  # its answer, late
        assert first.errors() == ["Turn timeout", "Stale turn"]
        assert match.turn_count == 1
        match.submit(1, tavern_pass(second.last("turn"), "team2"), second)
        turn_three = first.last("turn")
        assert turn_three["turn"] == 3
        match.submit(0, tavern_pass(turn_one, "team1"), first)
        assert first.errors()[-1] == "Stale turn"
        assert match.turn_count == 2
        assert match.submit(0, tavern_pass(turn_three, "team1"), first) is not None
        assert match.turn_count == 3


def phase_of(match: Match) -> Phase:
    """The phase now (mypy would keep the one an earlier assert narrowed it to)."""
    return match.phase


async def test_a_stopped_match_ends_with_no_result_and_says_nothing_more() -> None:
    async with table() as tables:
        match, first, second = await tables.start("thud")
        match.stop()
        assert match.phase is Phase.ENDED
        tables.clock.advance(3600)  # its turn's timer was stopped with it
        await settle()
        assert phase_of(match) is Phase.FINISHED and match.outcome is None
        assert tables.finished == []
        assert first.kinds() == ["game-info", "turn"] and second.kinds() == ["game-info"]
        assert tables.clock.pending == 0
