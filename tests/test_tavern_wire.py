"""Every Dwarven Tavern message, byte for byte, against golden files."""

from __future__ import annotations

import dataclasses
import random

import pytest

from server.config import ArenaConfig
from server.games.base import ActionRejected, Outcome, Player, SeatClock
from server.games.tavern import pieces
from server.games.tavern.codec import TavernCodec, orders_from_wire
from server.games.tavern.ends import TavernEnd
from server.games.tavern.pieces import Direction, Order
from server.match_seat import check_answered_turn
from server.protocol import error_message
from tests.golden_files import check_golden

GAME = TavernCodec.from_settings(ArenaConfig().game_settings["tavern"])
RULES = GAME.rules
CLOCK = SeatClock(
    turn_timeout_ms=10_000,
    first_turn_timeout_ms=30_000,
    max_consecutive_timeouts=3,
    reconnect_grace_ms=10_000,
)
TOKEN = "kQ2xLr8uVt0aYc3nWm5e_p1s"
PLAYERS = [
    Player("Dummy", ("Carawebo", "Pantuflo", "Chistaburras", "Pontato", "Jhonny Tablas")),
    Player("Rival", ("Rhun", "Balgairen", "Tavio")),
]


def test_ready() -> None:
    check_golden("tavern/ready", GAME.ready_message("64lfbem", 12345))


def test_game_info_for_each_team() -> None:
    for seat, team in enumerate(("team1", "team2")):
        info = GAME.game_info_message("64lfbem", seat, 12345, TOKEN, CLOCK)
        check_golden(f"tavern/game-info-{team}", info)
        # The original's fields first, in its order: its bots read them unchanged.
        assert list(info)[:5] == ["type", "simulationId", "team", "width", "height"]


def test_first_turn() -> None:
    state = RULES.initial_state(PLAYERS)
    turn = GAME.turn_message(state, 0, 1, 30_000)
    check_golden("tavern/turn-initial", turn)
    assert list(turn) == ["type", "state", "turn", "score", "timeoutMs"]


def test_a_turn_counts_turns_and_scores() -> None:
    state = dataclasses.replace(RULES.initial_state(PLAYERS), scores=(2, 1), current_turn=41)
    check_golden("tavern/turn-scored", GAME.turn_message(state, 1, 42, 9_950))


def test_score_end_and_draw() -> None:
    state = RULES.initial_state(PLAYERS)
    # Move team2's barrel next to team1's home row and push it in: team1 scores.
    near_home = Coords(11, 19)
    pusher = dataclasses.replace(state.dwarves[0], coords=Coords(11, 18))
    state = dataclasses.replace(
        state,
        barrels=(state.barrels[0], near_home),
        dwarves=(pusher, *state.dwarves[1:]),
        scores=(2, 1),
    )
    after, events = RULES.apply(state, 0, (Order(1, Direction.SOUTH),), random.Random(1))
    messages = GAME.after_turn_messages(state, after, events)
    assert [seat for seat, _ in messages] == [0, 1]
    check_golden("tavern/score", messages[0][1])
    outcome = RULES.outcome(after)
    assert outcome == Outcome(0, TavernEnd.POINTS_TO_WIN)
    check_golden("tavern/win-game", GAME.end_message(after, outcome, 0))
    check_golden("tavern/loss-game", GAME.end_message(after, outcome, 1))
    draw = Outcome(None, TavernEnd.TURN_LIMIT)
    check_golden("tavern/draw-game", GAME.end_message(state, draw, 1))


def test_visor_events_keep_the_original_texts() -> None:
    state = RULES.initial_state(PLAYERS)
    _, events = RULES.apply(state, 0, (Order(1, Direction.NORTH), Order(2, None)), random.Random(1))
    start = state.dwarves[0].coords
    assert GAME.events_to_wire(events) == [
        {
            "type": 0,
            "message": "Carawebo moves toward 0",
            "kind": "move",
            "dwarf": 1,
            "from": {"x": start.x, "y": start.y},
            "to": {"x": start.x, "y": start.y - 1},
        }
    ]


def test_visor_events_say_where_each_piece_went() -> None:
    """A push and a throw, with the squares pages draw their arrows between."""
    state = RULES.initial_state(PLAYERS)
    team1_barrel = state.barrels[0]
    pusher = pieces.Coords(team1_barrel.x, team1_barrel.y + 1)
    victim = pieces.Coords(team1_barrel.x, team1_barrel.y - 1)
    dwarves = tuple(
        dataclasses.replace(d, coords={1: pusher, 6: victim}.get(d.id, d.coords))
        for d in state.dwarves
    )
    state = dataclasses.replace(state, dwarves=dwarves)
    after, events = RULES.apply(state, 0, (Order(1, Direction.NORTH),), random.Random(1))
    thrown_to = next(d.coords for d in after.dwarves if d.id == 6)
    wire = GAME.events_to_wire(events)
    assert [(e["kind"], e.get("dwarf"), e.get("team"), e["from"], e["to"]) for e in wire] == [
        ("move", 1, None, {"x": pusher.x, "y": pusher.y}, {"x": pusher.x, "y": pusher.y - 1}),
        (
            "barrel",
            None,
            "team1",
            {"x": victim.x, "y": victim.y + 1},
            {"x": victim.x, "y": victim.y},
        ),
        ("thrown", 6, None, {"x": victim.x, "y": victim.y}, {"x": thrown_to.x, "y": thrown_to.y}),
    ]
    assert thrown_to != victim


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "invalid-json",
            error_message("Invalid JSON", "not a JSON object (unexpected byte at offset 0)"),
        ),
        ("wrong-simulation-id", error_message("Wrong simulation ID")),
        ("player-disconnected", error_message("Player disconnected")),
        ("invalid-turn", error_message("Invalid turn", "dwarf 6 is not one of yours")),
    ],
)
def test_errors(name: str, message: dict[str, object]) -> None:
    check_golden(f"errors/{name}", message)


@pytest.mark.parametrize(
    ("name", "turn"), [("stale-turn", 1), ("invalid-turn-number", 4), ("invalid-turn-type", "1")]
)
def test_a_reply_naming_another_turn_than_the_current_one(name: str, turn: object) -> None:
    reply = {"type": "player-turn", "turn": turn, "actions": [{"botId": 1, "type": "PASS"}]}
    with pytest.raises(ActionRejected) as rejected:
        check_answered_turn(reply, 3)
    check_golden(f"errors/{name}", error_message(rejected.value.message, rejected.value.reason))


def test_actions_round_trip_through_the_wire() -> None:
    wire = {
        "actions": [
            {"botId": 1, "type": "MOVE", "direction": "WEST"},
            {"botId": 2, "type": "PASS"},
        ]
    }
    orders = orders_from_wire(wire["actions"])
    assert orders == (Order(1, Direction.WEST), Order(2, None))
    assert GAME.action_to_wire(orders) == wire


@pytest.mark.parametrize(
    "actions",
    [
        None,
        [],
        "abc",
        {"botId": 1},
        [{"botId": 0, "type": "PASS"}],
        [{"botId": True, "type": "PASS"}],
        [{"botId": 1, "type": "move", "direction": "NORTH"}],
        [{"botId": 1, "type": "MOVE", "direction": "UP"}],
        [{"botId": 1, "type": "MOVE"}],
        [5],
    ],
)
def test_malformed_actions_are_invalid_turns(actions: object) -> None:
    with pytest.raises(ActionRejected) as rejected:
        orders_from_wire(actions)
    assert rejected.value.message == "Invalid turn"
    assert rejected.value.reason


def test_a_pass_may_carry_any_direction() -> None:
    assert orders_from_wire([{"botId": 3, "type": "PASS", "direction": "UP"}]) == (Order(3, None),)


Coords = pieces.Coords
