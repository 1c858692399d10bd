"""Every Thud message, byte for byte, against golden files, and the SDK's view of a turn."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import orjson
import pytest

from bots.thud import ThudTurn
from server.games.base import ActionRejected, Outcome, Player, SeatClock
from server.games.thud import rules
from server.games.thud.codec import ThudCodec
from server.games.thud.ends import ThudEnd
from server.games.thud.movegen import legal_moves
from server.games.thud.pieces import Action, Move, State, Stop, initial_state, state_from_position
from server.protocol import encode
from tests.golden_files import check_golden

GAME = ThudCodec.from_settings({})
RULES = GAME.rules


def play(state: State, candidate: Action | Stop) -> tuple[State, Sequence[Any]]:
    """Check a candidate action and apply it, as a match does."""
    seat = RULES.to_move(state)
    return RULES.apply(state, seat, RULES.check(state, seat, candidate), random.Random(0))


def parse(state: State, message: dict[str, Any]) -> Action | Stop:
    """A player-turn message as the match reads and checks it."""
    return RULES.check(state, RULES.to_move(state), GAME.candidate(message))


PLAYERS = [Player("D"), Player("T")]
CLOCK = SeatClock(
    turn_timeout_ms=10_000,
    first_turn_timeout_ms=30_000,
    max_consecutive_timeouts=3,
    reconnect_grace_ms=10_000,
)
TOKEN = "kQ2xLr8uVt0aYc3nWm5e_p1s"


def opening() -> State:
    """A small position, dwarfs to move, where two dwarfs can hurl and the trolls declared."""
    return state_from_position(
        [(5, 5), (4, 4), (9, 9)], [(6, 6), (8, 8)], ply=7, declared=(False, True)
    )


def test_ready_and_game_info() -> None:
    check_golden("thud/ready", GAME.ready_message("5k2aa0q", 42))
    for seat, side in enumerate(("dwarf", "troll")):
        info = GAME.game_info_message("5k2aa0q", seat, 42, TOKEN, CLOCK)
        check_golden(f"thud/game-info-{side}", info)
        assert "maxConsecutiveTimeouts" not in info  # Thud has no pass: one timeout loses


def test_turns() -> None:
    state = RULES.initial_state(PLAYERS)
    check_golden("thud/turn-initial", GAME.turn_message(state, 0, 1, 30_000))
    after, _ = play(opening(), Action(((5, 5), (6, 6))))
    check_golden("thud/turn-after-hurl", GAME.turn_message(after, 1, 8, 10_000))


def test_end_messages() -> None:
    last_troll = state_from_position([(5, 5), (0, 5)], [(6, 6)], ply=9)
    final, _ = play(last_troll, Action(((5, 5), (6, 6))))
    outcome = RULES.outcome(final)
    assert outcome == Outcome(0, ThudEnd.NO_MORE_TROLLS)
    check_golden("thud/win-game", GAME.end_message(final, outcome, 0))
    check_golden("thud/loss-game", GAME.end_message(final, outcome, 1))
    check_golden(
        "thud/draw-game",
        GAME.end_message(RULES.initial_state(PLAYERS), Outcome(None, ThudEnd.AGREED), 1),
    )


def test_player_turn_parses_to_an_action() -> None:
    state = opening()
    action = parse(
        state, {"type": "player-turn", "move": {"from": [5, 5], "to": [6, 6]}, "declare": True}
    )
    assert isinstance(action, Action)
    assert action.declare is True
    assert isinstance(action.move, Move)
    assert (action.move.kind, action.move.killed) == ("hurl", ((6, 6),))
    assert GAME.action_to_wire(action) == {"move": {"from": [5, 5], "to": [6, 6]}, "declare": True}


def test_stop_ends_the_game_scored_as_it_stands() -> None:
    """A client that makes no move: the challenge's engine stopped and scored the position."""
    stop = parse(opening(), {"type": "player-turn", "stop": True})
    assert isinstance(stop, Stop)
    assert GAME.action_to_wire(stop) == {"stop": True}
    final, events = play(opening(), stop)
    assert RULES.outcome(final) == Outcome(1, ThudEnd.NO_MOVE)  # 3 dwarfs against 2 trolls (8)
    assert GAME.events_to_wire(events) == [{"type": "ended", "reason": "No move"}]
    assert final.dwarfs == opening().dwarfs
    with pytest.raises(ActionRejected, match="not both"):
        parse(opening(), {"type": "player-turn", "stop": True, "move": {}})


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"move": None}, "Invalid turn"),
        ({"move": {"from": [5, 5]}}, "Invalid turn"),
        ({"move": {"from": [5, 5, 1], "to": [6, 6]}}, "Invalid turn"),
        ({"move": {"from": [True, 5], "to": [6, 6]}}, "Invalid turn"),
        ({"move": {"from": [5, 5], "to": [6, 6]}, "declare": 1}, "Invalid turn"),
        ({"move": {"from": [0, 0], "to": [6, 6]}}, "Illegal move"),
        ({"move": {"from": [6, 6], "to": [7, 6]}}, "Illegal move"),
        ({"move": {"from": [5, 5], "to": [3, 3]}}, "Illegal move"),
    ],
)
def test_bad_turns(message: dict[str, object], error: str) -> None:
    with pytest.raises(ActionRejected) as rejected:
        parse(opening(), {"type": "player-turn", **message})
    assert rejected.value.message == error


def test_spectators_get_the_position_and_readable_events() -> None:
    state = opening()
    after, events = play(state, Action(((5, 5), (6, 6)), True))
    assert "moves" not in GAME.state_to_wire(after)
    assert GAME.events_to_wire(events) == [
        {
            "type": "move",
            "side": "dwarf",
            "from": [5, 5],
            "to": [6, 6],
            "kind": "hurl",
            "killed": [[6, 6]],
        },
        {"type": "killed", "side": "troll", "squares": [[6, 6]]},
        {"type": "declared", "side": "dwarf", "value": True},
        {"type": "ended", "reason": "Players agreed to finish"},
    ]
    assert dict(GAME.scores(after)) == {"dwarfs": 3, "trolls": 4}


def test_the_sdk_view_answers_from_the_message() -> None:
    turn = ThudTurn(orjson.loads(encode(GAME.turn_message(opening(), 0, 7, 10_000)))["state"])
    assert turn.side == "dwarf"
    assert turn.pieces() == [(5, 5), (4, 4), (9, 9)]
    assert turn.opponent_declared() is True
    killing = turn.killing_moves()
    assert [(m.start, m.end, m.kind, m.kills) for m in killing] == [
        ((5, 5), (6, 6), "hurl", 1),
        ((9, 9), (8, 8), "hurl", 1),
    ]
    assert turn.kills((5, 5), (6, 6)) == 1
    assert turn.kills((5, 5), (6, 8)) is None
    assert [m.end for m in turn.moves_from((9, 9))][-1] == (8, 8)
    looked_ahead = state_from_position(  # how a bot that searches gets the rules' state
        turn.dwarfs,
        turn.trolls,
        ply=turn.ply,
        declared=(turn.declared["dwarf"], turn.declared["troll"]),
    )
    assert looked_ahead.dwarfs == opening().dwarfs
    assert turn.reply(killing[0], declare=False) == {
        "type": "player-turn",
        "move": {"from": [5, 5], "to": [6, 6]},
        "declare": False,
    }


def test_the_encoded_move_list_is_every_legal_move_in_order() -> None:
    """Random games from the start: the pre-encoded list reads back as the moves themselves."""
    chooser = random.Random(7)
    for _ in range(3):
        state = initial_state()
        for _ in range(300):
            moves = legal_moves(state)
            if not moves:
                break
            sent = orjson.loads(encode(GAME.turn_message(state, 0, 1, 10_000)))["state"]["moves"]
            assert sent == [
                {"from": list(m.start), "to": list(m.end), "kind": m.kind, "kills": len(m.killed)}
                for m in moves
            ]
            state, _ = rules.apply(state, Action(chooser.choice(moves)))
