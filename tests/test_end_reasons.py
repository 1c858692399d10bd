"""Why a game ended is an enum, each game's in its own package and the arena's in the match,
whose values are the texts records and the wire always carried."""

from __future__ import annotations

import random
from dataclasses import replace

import orjson

from server.games.base import EndReason, Player
from server.games.tavern.ends import TavernEnd
from server.games.tavern.rules import TavernRules
from server.games.thud.ends import ThudEnd
from server.games.thud.movegen import legal_moves
from server.games.thud.pieces import initial_state, make_action
from server.games.thud.rules import ThudRules
from server.match import MatchEnd
from server.records.writes import finished
from tests.test_match import FIRST_TURN_S, settle, table
from tests.test_tavern_rules import ORIGINAL


def test_each_game_lists_its_reasons_in_its_package_with_the_texts_it_always_sent() -> None:
    assert [reason.value for reason in ThudEnd] == [
        "Timeout",
        "No more dwarfs",
        "No more trolls",
        "Players agreed to finish",
        "No legal moves",
        "No move",
    ]
    assert [reason.value for reason in TavernEnd] == [
        "Points to win reached by both",
        "Points to win reached",
        "Turn limit reached",
    ]
    assert {"Too many timeouts", "Out of time", "Player disconnected"} <= set(MatchEnd)
    for reasons in (ThudEnd, TavernEnd, MatchEnd):
        assert issubclass(reasons, EndReason)


def test_a_thud_game_ended_by_its_rules_says_why_with_its_own_enum() -> None:
    rules = ThudRules(ply_limit=1)
    state = initial_state()
    after, _ = rules.apply(state, 0, make_action(legal_moves(state)[0], None), random.Random(1))
    ended = rules.outcome(after)
    assert ended is not None and ended.reason is ThudEnd.TIMEOUT
    assert orjson.dumps({"reason": ended.reason}) == b'{"reason":"Timeout"}'


def test_a_tavern_game_at_its_turn_limit_says_why_with_its_own_enum() -> None:
    rules = TavernRules(replace(ORIGINAL, turn_limit=1))
    state = rules.initial_state([Player("a"), Player("b")])
    after, _ = rules.apply(state, 0, rules.timeout_action(state, 0), random.Random(1))
    ended = rules.outcome(after)
    assert ended is not None and ended.reason is TavernEnd.TURN_LIMIT


async def test_a_forfeit_is_the_matchs_reason_and_records_keep_its_text() -> None:
    async with table() as tables:
        await tables.start("thud")
        tables.clock.advance(FIRST_TURN_S)
        await settle()
        (update,) = tables.finished
        assert update.outcome.reason is MatchEnd.TURN_TIMEOUT
        reason = finished(update).args[1][1]
        assert type(reason) is str and reason == "Turn timeout"
