"""The Dwarven Tavern rules against the original server's recordings, plus the arena's fixes."""

from __future__ import annotations

import json
import random
from dataclasses import FrozenInstanceError, dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.games.base import ActionRejected, Outcome, Player
from server.games.tavern.ends import TavernEnd
from server.games.tavern.mechanics import _geometry
from server.games.tavern.pieces import (
    BarrelMoved,
    BoardReset,
    Coords,
    Direction,
    Dwarf,
    DwarfHit,
    DwarfMoved,
    Event,
    MoveEvent,
    Order,
    PointScored,
    Position,
    Settings,
    State,
    moved_dwarf,
    new_state,
)
from server.games.tavern.rules import (
    TavernRules,
    apply_turn,
    check_orders,
    event_text,
    initial_state,
    pass_orders,
    play_orders,
    scoring_teams,
)

DATA = Path(__file__).parent / "data"
VECTORS: list[dict[str, Any]] = json.loads((DATA / "tavern_vectors.json").read_text())["cases"]
# The compact copy leaves out the recorder's serverSends: their barrel coordinates are corrupted
# (the recorder aliased the live barrel objects), so only stateAfter is trusted.
GAME: dict[str, Any] = json.loads((DATA / "tavern_dummy_game.json").read_text())
TURNS: list[dict[str, Any]] = GAME["turns"]

ORIGINAL = Settings(
    width=21,
    height=21,
    points_to_win=3,
    turn_limit=1000,  # the original has no turn limit; its recorded game ends at turn 220
    barrel_starts=(Coords(8, 10), Coords(11, 10)),
    dwarf_starts=(
        tuple(Coords(x, 18) for x in (4, 7, 10, 13, 16)),
        tuple(Coords(x, 2) for x in (4, 7, 10, 13, 16)),
    ),
)
NAMES = (("Carawebo", "Pantuflo", "Chistaburras", "Pontato", "Jhonny Tablas"),) * 2


class ScriptedRandom:
    """Replays recorded throw kinds and fails on a draw more or fewer than recorded."""

    def __init__(self, kinds: list[int]) -> None:
        self.kinds = list(kinds)
        self.drawn = 0

    def randrange(self, stop: int, /) -> int:
        assert stop == 3, "only throws draw, always among 3 kinds"
        assert self.drawn < len(self.kinds), f"draw {self.drawn + 1} was not recorded"
        self.drawn += 1
        return self.kinds[self.drawn - 1]

    def assert_exhausted(self) -> None:
        assert self.drawn == len(self.kinds), f"{self.drawn} draws, {len(self.kinds)} recorded"


def texts(events: list[Event]) -> list[list[Any]]:
    """The original's visor messages, as the recordings hold them."""
    return [list(event_text(event)) for event in events if isinstance(event, MoveEvent)]


def assert_no_shared_cell(state: State) -> None:
    cells = [dwarf.coords for dwarf in state.dwarves] + list(state.barrels)
    assert len(set(cells)) == len(cells), f"two pieces share a cell: {cells}"


def orders_from(pairs: list[list[Any]]) -> list[Order]:
    return [Order(bot_id, None if d is None else Direction[d]) for bot_id, d in pairs]


# --- 1. the 37 engine vectors ----------------------------------------------------------------


def vector_state(case: dict[str, Any]) -> State:
    """The reconstructed position before a vector's orders; dwarves are named team<n>#<id>."""
    setup = case["setup"]
    (x1, y1), (x2, y2) = setup["barrels"]
    return State(
        settings=ORIGINAL,
        dwarves=tuple(
            Dwarf(bot_id, team, f"team{team + 1}#{bot_id}", Coords(x, y))
            for bot_id, team, x, y in setup["dwarves"]
        ),
        barrels=(Coords(x1, y1), Coords(x2, y2)),
        scores=(0, 0),
        current_turn=0,
        to_move=0,
        outcome=None,
    )


def grid_text(state: State) -> str:
    """The original's grid dump: its occupants in row-major order."""
    occupants = [
        ((d.coords.y, d.coords.x), f"bot{d.id}@{d.coords.x},{d.coords.y}") for d in state.dwarves
    ]
    occupants += [
        ((barrel.y, barrel.x), f"barrel:team{team + 1}@{barrel.x},{barrel.y}")
        for team, barrel in enumerate(state.barrels)
    ]
    return " ".join(text for _, text in sorted(occupants))


def play_vector(case: dict[str, Any], throws: list[int]) -> tuple[State, list[Event], list[int]]:
    rng = ScriptedRandom(throws)
    after, events = play_orders(vector_state(case), orders_from(case["orders"]), rng)
    rng.assert_exhausted()
    score = [0, 0]
    for team in scoring_teams(after):
        score[team] += 1
    return after, events, score


def positions_of(state: State) -> dict[str, Any]:
    return {
        "barrels": {f"team{team + 1}": [b.x, b.y] for team, b in enumerate(state.barrels)},
        "bots": {str(d.id): [d.coords.x, d.coords.y] for d in state.dwarves},
    }


@dataclass(frozen=True)
class GhostFix:
    """What a B13 case does now that a barrel throws a dwarf on rows 0 and h-1 too."""

    throws: list[int]
    barrels: dict[str, list[int]]
    bots: dict[str, list[int]]
    score: list[int]


# In these cases the original's barrel overwrote the dwarf on row 0 or 20 (B13: a "ghost"
# sharing its cell, which later erased the barrel from the grid). Fixed, the barrel throws the
# dwarf, which costs one more draw and adds this event right after the barrel's move. Each case
# is checked with a kind that lets the point stand and, where one exists, a kind that does not.
GHOST_HIT = "1:team2#2 was hit!!"
GHOST_FIXES: dict[str, list[GhostFix]] = {
    "GHOST: team1 barrel pushed onto bot at y=0 overwrites it": [
        # kind 0: the dwarf on (8,0) is thrown to (7,0); the barrel scores on (8,0).
        GhostFix(
            throws=[0],
            barrels={"team1": [8, 0], "team2": [11, 10]},
            bots={"1": [8, 1], "2": [7, 0]},
            score=[0, 1],
        ),
        # kind 1: clamped back onto its own cell, so the barrel and the pusher stay: no point.
        GhostFix(
            throws=[1],
            barrels={"team1": [8, 1], "team2": [11, 10]},
            bots={"1": [8, 2], "2": [8, 0]},
            score=[0, 0],
        ),
    ],
    "GHOST then ghost moves: barrel erased from grid": [
        # kind 2: thrown to (9,0), then walks east to (10,0); the barrel stays on (8,0).
        GhostFix(
            throws=[2],
            barrels={"team1": [8, 0], "team2": [11, 10]},
            bots={"1": [8, 1], "2": [10, 0]},
            score=[0, 1],
        ),
    ],
    "team2 barrel pushed onto bot at y=20 overwrites it (score)": [
        # kind 0: the dwarf on (11,20) is thrown to (10,19), never onto row 20; point.
        GhostFix(
            throws=[0],
            barrels={"team1": [8, 10], "team2": [11, 20]},
            bots={"1": [11, 19], "2": [10, 19]},
            score=[1, 0],
        ),
        # kind 1: clamped into the barrel's vacated (11,19); the barrel scores but the pusher,
        # now facing the thrown dwarf, stays on (11,18).
        GhostFix(
            throws=[1],
            barrels={"team1": [8, 10], "team2": [11, 20]},
            bots={"1": [11, 18], "2": [11, 19]},
            score=[1, 0],
        ),
    ],
}


def test_vectors_cover_the_recording() -> None:
    assert len(VECTORS) == 37
    names = {case["name"] for case in VECTORS}
    assert set(GHOST_FIXES) <= names


@pytest.mark.parametrize(
    "case",
    [case for case in VECTORS if case["name"] not in GHOST_FIXES],
    ids=lambda case: case["name"],
)
def test_engine_vector(case: dict[str, Any]) -> None:
    recorded = case["recorded"]
    assert len(case["throws"]) == recorded["randomDraws"]
    after, events, score = play_vector(case, case["throws"])
    assert positions_of(after) == recorded["result"]
    assert [f"{kind}:{text}" for kind, text in texts(events)] == recorded["events"]
    assert score == recorded["score"]
    assert grid_text(after) == recorded["grid"]


@pytest.mark.parametrize(
    ("name", "fix"),
    [(name, fix) for name, fixes in GHOST_FIXES.items() for fix in fixes],
    ids=lambda value: value if isinstance(value, str) else repr(value.throws),
)
def test_engine_vector_without_ghosts(name: str, fix: GhostFix) -> None:
    case = next(case for case in VECTORS if case["name"] == name)
    recorded = case["recorded"]
    after, events, score = play_vector(case, fix.throws)
    assert positions_of(after) == {"barrels": fix.barrels, "bots": fix.bots}
    expected_events = list(recorded["events"])
    barrel_move = next(i for i, text in enumerate(expected_events) if text.startswith("0:Barrel"))
    expected_events.insert(barrel_move + 1, GHOST_HIT)
    assert [f"{kind}:{text}" for kind, text in texts(events)] == expected_events
    assert score == fix.score
    assert_no_shared_cell(after)


# --- 2. the recorded dummy-vs-dummy game -----------------------------------------------------


def trace_position(state: State, position: dict[str, Any]) -> State:
    """``state`` with the pieces where a trace record puts them (dwarves in id order)."""
    dwarves = tuple(
        replace(dwarf, coords=Coords(x, y))
        for dwarf, (x, y) in zip(state.dwarves, position["dwarves"], strict=True)
    )
    (x1, y1), (x2, y2) = position["barrels"]
    return replace(state, dwarves=dwarves, barrels=(Coords(x1, y1), Coords(x2, y2)))


def position_record(dwarves: tuple[Dwarf, ...], barrels: tuple[Coords, Coords]) -> dict[str, Any]:
    return {
        "barrels": [[b.x, b.y] for b in barrels],
        "dwarves": [[d.coords.x, d.coords.y] for d in dwarves],
    }


@dataclass(frozen=True)
class GhostTurn:
    """A recorded turn whose barrel overwrote a dwarf on row 0 (B13), and what it does now."""

    kinds: list[int]  # the fixed turn's draws: the new throw first, then the recorded ones
    thrown: tuple[int, list[int]]  # (dwarf id, where it lands instead of sharing the cell)
    hit_event_at: int
    hit_event: list[Any]


# Both ghost turns push team1's barrel onto a team1 dwarf on row 0 and score for team2. With
# the fix the dwarf is thrown NORTH; kind 0 lands it on the free (7,0) and the point stands,
# so the game goes on exactly as recorded (178 restarts the board; 220 ends the game).
GHOST_TURNS = {
    178: GhostTurn([0, 0], (4, [7, 0]), 2, [1, "Pontato was hit!!"]),
    220: GhostTurn([0], (2, [7, 0]), 3, [1, "Pantuflo was hit!!"]),
}


def expected_turn(record: dict[str, Any]) -> tuple[list[int], dict[str, Any], list[list[Any]]]:
    """The draws, the position after and the events of a recorded turn, B13 fixed."""
    after = record["after"]
    events = record["events"]
    ghost = GHOST_TURNS.get(record["turn"])
    if ghost is None:
        return record["hitKinds"], after, events
    dwarf_id, cell = ghost.thrown
    dwarves = list(after["dwarves"])
    dwarves[dwarf_id - 1] = cell
    events = list(events)
    events.insert(ghost.hit_event_at, ghost.hit_event)
    return ghost.kinds, {**after, "dwarves": dwarves}, events


def play_recorded_turn(state: State, record: dict[str, Any]) -> State:
    """Play one recorded turn and check it against the recording; returns the state after."""
    kinds, after_position, recorded_events = expected_turn(record)
    rng = ScriptedRandom(kinds)
    after, events = apply_turn(state, record["by"], orders_from(record["actions"]), rng)
    rng.assert_exhausted()
    assert texts(events) == recorded_events
    assert list(after.scores) == record["scores"]
    assert after.current_turn == record["turn"]
    points = [event for event in events if isinstance(event, PointScored)]
    gained = [after.scores[team] - state.scores[team] for team in (0, 1)]
    assert [point.team for point in points] == [team for team in (0, 1) if gained[team]]
    assert (BoardReset() in events) == record["restarted"]
    if points:
        assert position_record(points[0].position.dwarves, points[0].position.barrels) == (
            after_position
        )
    if record["restarted"]:
        assert position_record(after.dwarves, after.barrels) == GAME["initial"]
    else:
        assert position_record(after.dwarves, after.barrels) == after_position
    if record["finished"]:
        assert after.outcome == Outcome(1, TavernEnd.POINTS_TO_WIN)
    else:
        assert after.outcome is None
        assert after.to_move == TURNS[record["turn"]]["by"]
    assert_no_shared_cell(after)
    return after


def test_trace_is_whole() -> None:
    assert [record["turn"] for record in TURNS] == list(range(1, 221))
    assert GAME["settings"]["barrels"] == [[8, 10], [11, 10]]
    assert GAME["names"] == [list(names) for names in NAMES]
    start = initial_state(ORIGINAL, NAMES)
    assert position_record(start.dwarves, start.barrels) == GAME["initial"]


@pytest.mark.parametrize("record", TURNS, ids=lambda record: f"turn{record['turn']}")
def test_recorded_turn(record: dict[str, Any]) -> None:
    """Each turn from the recorded position before it (the reset layout after a point)."""
    start = initial_state(ORIGINAL, NAMES)
    number = record["turn"]
    if number == 1:
        before = start
    else:
        previous = TURNS[number - 2]
        layout = GAME["initial"] if previous["restarted"] else previous["after"]
        before = replace(
            trace_position(start, layout),
            scores=tuple(previous["scores"]),
            current_turn=number - 1,
            to_move=record["by"],
        )
    play_recorded_turn(before, record)


def test_recorded_game_chained() -> None:
    """The whole game from the start, each turn on our own previous result."""
    state = initial_state(ORIGINAL, NAMES)
    for record in TURNS:
        assert state.to_move == record["by"]
        state = play_recorded_turn(state, record)
    assert state.outcome == Outcome(1, TavernEnd.POINTS_TO_WIN)
    assert state.scores == (1, 3)


# --- 3. the edges ----------------------------------------------------------------------------


def with_pieces(
    state: State,
    dwarves: dict[int, tuple[int, int]],
    barrels: tuple[tuple[int, int], tuple[int, int]] | None = None,
) -> State:
    """``state`` with some dwarves (by id) and optionally the barrels moved."""
    moved = tuple(
        replace(d, coords=Coords(*dwarves[d.id])) if d.id in dwarves else d for d in state.dwarves
    )
    if barrels is None:
        return replace(state, dwarves=moved)
    return replace(state, dwarves=moved, barrels=(Coords(*barrels[0]), Coords(*barrels[1])))


def start(settings: Settings = ORIGINAL) -> State:
    return initial_state(settings, NAMES)


def test_routing_by_parity() -> None:
    state = start()
    assert (state.to_move, state.current_turn) == (0, 0)
    for turn in range(1, 6):
        state, events = apply_turn(state, state.to_move, pass_orders(), ScriptedRandom([]))
        assert events == []
        assert state.current_turn == turn
        assert state.to_move == turn % 2


def test_own_goal_gives_three_turns_in_a_row() -> None:
    # SPEC 6.3's example: team2 plays turn 2 and pushes its own barrel into row 20.
    state = with_pieces(start(), {6: (11, 18)}, ((8, 10), (11, 19)))
    state, _ = apply_turn(state, 0, pass_orders(), ScriptedRandom([]))
    state, events = apply_turn(state, 1, [Order(6, Direction.SOUTH)], ScriptedRandom([]))
    assert state.scores == (1, 0)
    assert events[-1] == BoardReset()
    assert state.dwarves == start().dwarves
    assert state.barrels == ORIGINAL.barrel_starts
    movers = [state.to_move]
    for _ in range(2):
        state, _ = apply_turn(state, state.to_move, pass_orders(), ScriptedRandom([]))
        movers.append(state.to_move)
    assert movers == [1, 1, 0]  # team2 plays turns 3 and 4 too, then team1 turn 5
    assert state.current_turn == 4


def both_scoring(scores: tuple[int, int]) -> tuple[State, list[Event]]:
    """team1 pushes its own barrel to row 0 and team2's to row 20 in one turn."""
    before = replace(
        with_pieces(start(), {1: (8, 2), 2: (11, 18)}, ((8, 1), (11, 19))), scores=scores
    )
    orders = [Order(1, Direction.NORTH), Order(2, Direction.SOUTH)]
    return apply_turn(before, 0, orders, ScriptedRandom([]))


def test_both_score_both_count_and_team2_moves() -> None:
    after, events = both_scoring((0, 0))
    position = Position(
        with_pieces(start(), {1: (8, 1), 2: (11, 19)}).dwarves, (Coords(8, 0), Coords(11, 20))
    )
    assert events[-3:] == [
        PointScored(0, (1, 1), position),
        PointScored(1, (1, 1), position),
        BoardReset(),
    ]
    assert (after.scores, after.to_move, after.outcome) == ((1, 1), 1, None)
    assert after.dwarves == start().dwarves


def test_both_reach_points_to_win_is_a_draw() -> None:
    after, events = both_scoring((2, 2))
    assert after.outcome == Outcome(None, TavernEnd.POINTS_TO_WIN_BY_BOTH)
    assert after.scores == (3, 3)
    assert BoardReset() not in events
    assert after.barrels == (Coords(8, 0), Coords(11, 20))  # the scoring position is kept


def test_points_to_win_ends_on_the_scoring_position() -> None:
    before = replace(with_pieces(start(), {1: (11, 18)}, ((8, 10), (11, 19))), scores=(2, 1))
    after, events = apply_turn(before, 0, [Order(1, Direction.SOUTH)], ScriptedRandom([]))
    assert after.outcome == Outcome(0, TavernEnd.POINTS_TO_WIN)
    assert after.scores == (3, 1)
    assert after.barrels == (Coords(8, 10), Coords(11, 20))
    assert isinstance(events[-1], PointScored)
    with pytest.raises(ActionRejected, match="Not your turn"):
        check_orders(after, after.to_move, [Order(1, Direction.NORTH)])


@pytest.mark.parametrize(
    ("scores", "winner"), [((1, 0), 0), ((0, 2), 1), ((1, 1), None)], ids=["team1", "team2", "draw"]
)
def test_turn_limit_ends_on_points(scores: tuple[int, int], winner: int | None) -> None:
    state = replace(start(replace(ORIGINAL, turn_limit=3)), scores=scores)
    for _ in range(2):
        state, _ = apply_turn(state, state.to_move, pass_orders(), ScriptedRandom([]))
        assert state.outcome is None
    state, _ = apply_turn(state, state.to_move, pass_orders(), ScriptedRandom([]))
    assert state.outcome == Outcome(winner, TavernEnd.TURN_LIMIT)


def test_point_on_the_last_turn_counts_and_keeps_the_position() -> None:
    limited = start(replace(ORIGINAL, turn_limit=1))
    before = with_pieces(limited, {1: (11, 18)}, ((8, 10), (11, 19)))
    after, events = apply_turn(before, 0, [Order(1, Direction.SOUTH)], ScriptedRandom([]))
    assert after.outcome == Outcome(0, TavernEnd.TURN_LIMIT)
    assert BoardReset() not in events
    assert after.barrels[1] == Coords(11, 20)


@pytest.mark.parametrize(
    ("team", "orders", "message", "reason"),
    [
        (1, [Order(6, Direction.SOUTH)], "Not your turn", "team1 moves now"),
        (0, [], "Invalid turn", "a turn needs at least one action"),
        (0, [Order(6, Direction.SOUTH)], "Invalid turn", "dwarf 6 is not one of yours"),
        (0, [Order(99, None)], "Invalid turn", "dwarf 99 is not one of yours"),
        (
            0,
            [Order(1, Direction.NORTH), Order(2, None), Order(1, Direction.EAST)],
            "Invalid turn",
            "dwarf 1 has more than one action",
        ),
    ],
    ids=["not-your-turn", "empty", "foreign", "unknown", "duplicate"],
)
def test_check_orders_rejects(team: int, orders: list[Order], message: str, reason: str) -> None:
    state = start()
    with pytest.raises(ActionRejected) as rejected:
        check_orders(state, team, orders)
    assert (rejected.value.message, rejected.value.reason) == (message, reason)


def test_check_orders_after_the_end() -> None:
    over = replace(start(), outcome=Outcome(0, TavernEnd.POINTS_TO_WIN))
    with pytest.raises(ActionRejected, match="the game is over"):
        check_orders(over, 0, [Order(1, Direction.NORTH)])


def test_check_orders_returns_the_orders_apply_turn_plays() -> None:
    orders = [Order(2, Direction.NORTH), Order(1, None)]
    assert check_orders(start(), 0, orders) == tuple(orders)


def test_pass_is_a_turn() -> None:
    state, events = apply_turn(start(), 0, pass_orders(), ScriptedRandom([]))
    assert (events, state.current_turn, state.to_move) == ([], 1, 1)
    assert state.dwarves == start().dwarves


def test_the_rules_object_plays_the_module() -> None:
    rules = TavernRules(ORIGINAL)
    state = rules.initial_state([Player("a", NAMES[0]), Player("b", NAMES[1])])
    assert state == start()
    assert rules.to_move(state) == 0
    assert rules.timeout_action(state, 0) == pass_orders()
    checked = rules.check(state, 0, (Order(1, Direction.NORTH),))
    after, _ = rules.apply(state, 0, checked, ScriptedRandom([]))
    assert rules.scores(after) == (0, 0)
    assert rules.outcome(after) is None
    with pytest.raises(ActionRejected, match="Not your turn"):
        rules.check(after, 0, (Order(1, Direction.NORTH),))


def test_pass_orders_in_a_turn_move_nothing() -> None:
    orders = [Order(1, None), Order(2, Direction.NORTH)]
    state, events = apply_turn(start(), 0, orders, ScriptedRandom([]))
    assert [event_text(event) for event in events] == [(0, "Pantuflo moves toward 0")]
    assert state.dwarves[0] == start().dwarves[0]


def test_initial_state_counts_dwarves_from_the_settings() -> None:
    few = initial_state(ORIGINAL, (["Rhun"], []))
    defaults = [f"Dwarf {i}" for i in range(1, 6)]
    assert [d.name for d in few.dwarves] == ["Rhun", *defaults[1:], *defaults]
    assert [d.id for d in few.dwarves] == list(range(1, 11))
    assert [d.team for d in few.dwarves] == [0] * 5 + [1] * 5
    many = initial_state(ORIGINAL, ([f"a{i}" for i in range(8)], [f"b{i}" for i in range(7)]))
    assert [d.name for d in many.dwarves] == [f"a{i}" for i in range(5)] + [
        f"b{i}" for i in range(5)
    ]
    assert [d.coords for d in many.dwarves] == [
        *ORIGINAL.dwarf_starts[0],
        *ORIGINAL.dwarf_starts[1],
    ]
    three = replace(
        ORIGINAL, dwarf_starts=(ORIGINAL.dwarf_starts[0][:3], ORIGINAL.dwarf_starts[1][:3])
    )
    assert [d.id for d in initial_state(three, NAMES).dwarves if d.team == 1] == [4, 5, 6]


def test_settings_reject_a_layout_with_shared_cells() -> None:
    with pytest.raises(ValueError, match="same cell"):
        replace(ORIGINAL, barrel_starts=(Coords(4, 18), Coords(11, 10)))
    with pytest.raises(ValueError, match="outside"):
        replace(ORIGINAL, dwarf_starts=((Coords(21, 0),), ()))
    for team1_barrel in (Coords(8, 20), Coords(8, 0), Coords(0, 10)):  # its home row, the other
        with pytest.raises(ValueError, match="team1's barrel cannot start on an edge"):
            replace(ORIGINAL, barrel_starts=(team1_barrel, Coords(11, 10)))


def test_event_texts_of_points_and_restarts() -> None:
    position = Position(start().dwarves, start().barrels)
    assert event_text(PointScored(1, (0, 1), position)) == (3, "Point for team2")
    assert event_text(BoardReset())[0] == 3
    assert not isinstance(BoardReset(), MoveEvent)
    assert isinstance(DwarfHit(1, "x", Direction.NORTH, 0, Coords(0, 0), Coords(0, 0)), MoveEvent)


def random_orders(rng: random.Random, state: State) -> list[Order]:
    """A valid turn: each own dwarf once, in random order, moving or passing at random."""
    own = [d.id for d in state.dwarves if d.team == state.to_move]
    rng.shuffle(own)
    choices: list[Direction | None] = [*Direction, None]
    return [Order(bot_id, rng.choice(choices)) for bot_id in own]


def play_random_game(seed: int, turns: int) -> list[tuple[State, list[Event]]]:
    rng = random.Random(seed)
    state = start()
    history: list[tuple[State, list[Event]]] = []
    for _ in range(turns):
        if state.outcome is not None:
            break
        state, events = apply_turn(state, state.to_move, random_orders(rng, state), rng)
        history.append((state, events))
    return history


def test_same_seed_same_game() -> None:
    assert play_random_game(7, 300) == play_random_game(7, 300)
    assert play_random_game(7, 300) != play_random_game(8, 300)


def test_apply_turn_leaves_its_input_alone() -> None:
    before = with_pieces(start(), {1: (8, 11), 6: (8, 9)})
    snapshot = repr(before)
    after, events = apply_turn(before, 0, [Order(1, Direction.NORTH)], random.Random(1))
    assert repr(before) == snapshot
    assert after.barrels[0] == Coords(8, 9)
    assert any(isinstance(event, DwarfHit) for event in events)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), crowd=st.booleans())
def test_no_two_pieces_ever_share_a_cell(seed: int, crowd: bool) -> None:
    """Any dwarf ordered anywhere: cells stay exclusive and barrels stay where they may be."""
    rng = random.Random(seed)
    state = start()
    if crowd:  # everyone near team1's barrel and the top row, where pushes chain and ghosts were
        free = [(x, y) for x in range(4, 13) for y in range(5) if (x, y) != (8, 1)]
        cells = rng.sample(free, 10)
        state = with_pieces(state, dict(zip(range(1, 11), cells, strict=True)), ((8, 1), (11, 10)))
    for _ in range(60):
        orders = [Order(rng.randrange(1, 11), rng.choice(list(Direction))) for _ in range(6)]
        state, _ = play_orders(state, orders, rng)
        assert_no_shared_cell(state)
        team1_barrel, team2_barrel = state.barrels
        assert 1 <= team1_barrel.x <= 19 and 0 <= team1_barrel.y <= 19
        assert 1 <= team2_barrel.x <= 19 and 1 <= team2_barrel.y <= 20


# --- 4. what the speed-ups must not change ---------------------------------------------------


@pytest.mark.parametrize(("width", "height"), [(3, 3), (4, 7), (21, 21)])
def test_move_tables_clamp_as_the_original(width: int, height: int) -> None:
    """The tables a turn looks its moves up in hold the original's clamps, on every cell."""
    geometry = _geometry(width, height)
    steps = ((0, -1), (1, 0), (0, 1), (-1, 0))
    throws = (
        ((-1, -1), (0, -2), (1, -1)),
        ((1, -1), (2, 0), (1, 1)),
        ((-1, 1), (0, 2), (1, 1)),
        ((-1, -1), (-2, 0), (-1, 1)),
    )
    for y in range(height):
        for x in range(width):
            cell = y * width + x
            assert geometry.coords[cell] == Coords(x, y)
            for direction, (dx, dy) in zip(Direction, steps, strict=True):
                to_x, to_y = min(max(x + dx, 0), width - 1), min(max(y + dy, 0), height - 1)
                assert geometry.steps[direction][cell] == to_y * width + to_x
                for kind, (tx, ty) in enumerate(throws[direction]):
                    to_y = min(max(y + ty, 0), height - 2)
                    to_x = max(min(x + tx, width - 2), 1)
                    landing = (
                        geometry.throw_rows[direction][kind][y]
                        + geometry.throw_columns[direction][kind][x]
                    )
                    assert landing == to_y * width + to_x
                for team in (0, 1):
                    to_x, to_y = x + dx, y + dy
                    if direction == Direction.NORTH:
                        to_y = max(to_y, 1 if team == 1 else 0)
                    elif direction == Direction.SOUTH:
                        to_y = min(to_y, height - 2 if team == 0 else height - 1)
                    elif direction == Direction.EAST:
                        to_x = min(to_x, width - 2)
                    else:
                        to_x = max(to_x, 1)
                    push = (
                        geometry.barrel_rows[team][direction][y]
                        + geometry.barrel_columns[direction][x]
                    )
                    assert push == to_y * width + to_x


def test_orders_find_dwarves_by_id_in_any_numbering() -> None:
    """Dwarves numbered 1.. in order are found by position; any other numbering by id."""
    state = with_pieces(start(), {1: (8, 11), 6: (8, 9), 2: (3, 3)})
    renumbered = replace(
        state, dwarves=tuple(replace(dwarf, id=100 - dwarf.id) for dwarf in state.dwarves)
    )
    orders = [Order(1, Direction.NORTH), Order(2, Direction.EAST), Order(42, Direction.WEST)]
    after, events = play_orders(state, orders, random.Random(3))
    orders = [Order(100 - order.bot_id, order.direction) for order in orders]
    renumbered_after, renumbered_events = play_orders(renumbered, orders, random.Random(3))
    assert [d.coords for d in renumbered_after.dwarves] == [d.coords for d in after.dwarves]
    assert texts(renumbered_events) == texts(events)
    assert any(isinstance(event, DwarfHit) for event in events)


def test_results_are_ordinary_frozen_objects() -> None:
    """The moved dwarves and the new state, built without ``__init__``, are what it builds."""
    dwarf = Dwarf(7, 1, "Rhun", Coords(1, 2))
    assert moved_dwarf(dwarf, Coords(3, 4)) == replace(dwarf, coords=Coords(3, 4))
    fields = (
        ORIGINAL,
        start().dwarves,
        ORIGINAL.barrel_starts,
        (1, 2),
        3,
        1,
        Outcome(0, TavernEnd.TURN_LIMIT),
    )
    assert new_state(*fields) == State(*fields)
    before = with_pieces(start(), {1: (8, 11), 6: (8, 9)})
    after, _ = apply_turn(before, 0, [Order(1, Direction.NORTH)], random.Random(1))
    rebuilt = State(
        after.settings,
        tuple(Dwarf(d.id, d.team, d.name, d.coords) for d in after.dwarves),
        after.barrels,
        after.scores,
        after.current_turn,
        after.to_move,
        after.outcome,
    )
    assert after == rebuilt
    assert hash(after.dwarves) == hash(rebuilt.dwarves)
    assert repr(after) == repr(rebuilt)
    assert after.dwarves[6] is before.dwarves[6]  # a dwarf that did not move is kept
    with pytest.raises(FrozenInstanceError):
        after.dwarves[0].coords = Coords(0, 0)  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        after.to_move = 0  # type: ignore[misc]


def test_move_events_equal_only_events_of_their_kind() -> None:
    """Move events are NamedTuples (a turn makes several); their lengths differ by kind."""
    start_cell, end_cell = Coords(1, 1), Coords(1, 0)
    moved = DwarfMoved(1, "x", Direction.NORTH, start_cell, end_cell)
    hit = DwarfHit(1, "x", Direction.NORTH, 0, start_cell, end_cell)
    barrel = BarrelMoved(1, Direction.NORTH, start_cell, end_cell)
    assert moved == DwarfMoved(1, "x", Direction.NORTH, start_cell, end_cell)
    assert len({moved, hit, barrel}) == 3
