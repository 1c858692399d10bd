"""Unit tests for the Thud rules: each move kind, the board's edges, ordering, ends and scores."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.config import ArenaConfig, config_from_mapping
from server.games.base import ActionRejected, Outcome
from server.games.thud.board import (
    CELL_SQUARE,
    NEIGHBOURS,
    RAYS,
    SQUARES,
    Square,
    cell_of,
    is_square,
)
from server.games.thud.codec import ThudCodec
from server.games.thud.danger import danger_squares, in_danger
from server.games.thud.ends import ThudEnd
from server.games.thud.movegen import legal_moves, moves_from
from server.games.thud.pieces import (
    DWARF,
    TROLL,
    Action,
    Declared,
    GameEnded,
    Move,
    PieceMoved,
    PiecesKilled,
    Score,
    State,
    ThudEvent,
    indexed_dwarfs,
    indexed_trolls,
    initial_state,
    outcome,
    score,
    side_to_move,
    state_from_position,
)
from server.games.thud.rules import apply, check

START_DWARFS = (
    (5, 0), (6, 0), (8, 0), (9, 0), (4, 1), (10, 1), (3, 2), (11, 2), (2, 3), (12, 3),
    (1, 4), (13, 4), (0, 5), (14, 5), (0, 6), (14, 6), (0, 8), (14, 8), (0, 9), (14, 9),
    (1, 10), (13, 10), (2, 11), (12, 11), (3, 12), (11, 12), (4, 13), (10, 13),
    (5, 14), (6, 14), (8, 14), (9, 14),
)  # fmt: skip
START_TROLLS = ((6, 6), (7, 6), (8, 6), (6, 7), (8, 7), (6, 8), (7, 8), (8, 8))


def play_action(state: State, action: Action) -> tuple[State, list[ThudEvent]]:
    """Check an action and apply it, as a match does."""
    return apply(state, check(state, action))


def position(
    dwarfs: Iterable[Square],
    trolls: Iterable[Square],
    ply: int = 1,
    dwarf_slots: Iterable[int] | None = None,
    troll_slots: Iterable[int] | None = None,
) -> State:
    return state_from_position(
        dwarfs, trolls, ply=ply, dwarf_slots=dwarf_slots, troll_slots=troll_slots
    )


def ends(moves: Iterable[Move]) -> list[Square]:
    return [m.end for m in moves]


def play(state: State, start: Square, end: Square, declare: bool | None = None) -> State:
    return play_action(state, Action((start, end), declare))[0]


# --- board -------------------------------------------------------------------------------------


def test_board_has_164_squares_row_major_without_the_thudstone() -> None:
    assert len(SQUARES) == 164
    assert list(SQUARES) == sorted(SQUARES, key=lambda s: (s[1], s[0]))
    rows = [sum(1 for _, y in SQUARES if y == row) for row in range(15)]
    assert rows == [5, 7, 9, 11, 13, 15, 15, 14, 15, 15, 13, 11, 9, 7, 5]
    assert not is_square(7, 7)
    for corner in [(0, 0), (4, 0), (0, 4), (14, 0), (10, 0), (0, 14), (14, 14), (14, 10)]:
        assert not is_square(*corner)
    for outside in [(-1, 7), (15, 7), (7, -1), (7, 15)]:
        assert not is_square(*outside)
    assert all(is_square(*s) for s in SQUARES)


def test_the_thudstone_is_never_a_neighbour_and_cuts_rays() -> None:
    assert cell_of((7, 7)) not in NEIGHBOURS[cell_of((6, 6))]
    assert len(NEIGHBOURS[cell_of((6, 6))]) == 7
    assert RAYS[cell_of((7, 6))][4] == ()  # south of (7, 6) is the Thudstone
    assert RAYS[cell_of((7, 3))][4] == tuple(cell_of((7, y)) for y in (4, 5, 6))


# --- start position ----------------------------------------------------------------------------


def test_start_position_in_engine_order() -> None:
    state = initial_state()
    assert state.dwarfs == START_DWARFS
    assert state.trolls == START_TROLLS
    assert indexed_dwarfs(state) == START_DWARFS
    assert indexed_trolls(state) == START_TROLLS
    assert (state.ply, side_to_move(state), state.declared) == (1, DWARF, (False, False))
    assert state.previous_move is None
    assert state.end_reason is None
    assert score(state) == Score(dwarfs=32, trolls=32)
    assert score(state).winning is None
    assert outcome(state) is None


def test_first_dwarf_moves_come_first_in_engine_order() -> None:
    """(5, 0) is dwarf 0; its only open lines are SE (to the dwarf on (14, 9)) and S."""
    moves = legal_moves(initial_state())
    south_east = [(5 + k, k) for k in range(1, 9)]
    south = [(5, y) for y in range(1, 14)]
    assert ends(moves[:21]) == south_east + south
    assert all(m.start == (5, 0) and m.kind == "walk" and m.killed == () for m in moves[:21])
    assert moves[21].start == (6, 0)


# --- dwarfs ------------------------------------------------------------------------------------


def test_lone_dwarf_at_the_edge_walks_like_a_queen_inside_the_octagon() -> None:
    state = position([(0, 5)], [(10, 10)])
    north_east = [(1, 4), (2, 3), (3, 2), (4, 1), (5, 0)]
    east = [(x, 5) for x in range(1, 15)]
    south_east = [(k, 5 + k) for k in range(1, 10)]
    south = [(0, 6), (0, 7), (0, 8), (0, 9)]
    assert ends(moves_from(state, (0, 5))) == north_east + east + south_east + south


@pytest.mark.parametrize("distance", [1, 2, 3, 4])
def test_hurl_reaches_a_troll_up_to_the_line_length(distance: int) -> None:
    line = [(2, 5), (3, 5), (4, 5)]
    troll = (4 + distance, 5)
    state = position(line, [troll])
    east = [m for m in moves_from(state, (4, 5)) if m.end[1] == 5 and m.end[0] > 4]
    walks = [Move((4, 5), (x, 5), "walk") for x in range(5, 4 + distance)]
    hurl = [Move((4, 5), troll, "hurl", (troll,))] if distance <= len(line) else []
    assert east == walks + hurl


def test_hurls_land_only_on_trolls_and_only_the_line_end_throws() -> None:
    state = position([(2, 5), (3, 5), (4, 5)], [(9, 9)])
    for square in [(2, 5), (3, 5), (4, 5)]:
        assert all(m.kind == "walk" and not m.killed for m in moves_from(state, square))
    assert (5, 5) not in ends(moves_from(state, (3, 5)))  # blocked by its own line
    # The rear dwarf throws the other way, with the line behind it.
    state = position([(2, 5), (3, 5), (4, 5)], [(0, 5)])
    assert Move((2, 5), (0, 5), "hurl", ((0, 5),)) in moves_from(state, (2, 5))


def test_lone_dwarf_takes_an_adjacent_troll_by_a_one_square_hurl() -> None:
    state = position([(10, 10)], [(11, 10), (12, 9)])
    moves = moves_from(state, (10, 10))
    assert Move((10, 10), (11, 10), "hurl", ((11, 10),)) in moves
    assert (12, 10) not in ends(moves)  # beyond the troll
    assert [m for m in moves if m.end == (11, 9)] == [Move((10, 10), (11, 9), "walk")]


def test_hurl_kills_exactly_the_target_and_keeps_piece_order() -> None:
    dwarfs = [(9, 9), (2, 5), (3, 5), (4, 5), (5, 5)]
    trolls = [(7, 4), (7, 5), (8, 5), (8, 4)]
    state = position(dwarfs, trolls, dwarf_slots=[1, 4, 5, 6, 7], troll_slots=[0, 2, 3, 7])
    after, events = play_action(state, Action(((5, 5), (7, 5))))
    move = Move((5, 5), (7, 5), "hurl", ((7, 5),))
    assert events == [PieceMoved(DWARF, move), PiecesKilled(TROLL, ((7, 5),))]
    assert after.dwarfs == ((9, 9), (2, 5), (3, 5), (4, 5), (7, 5))
    assert after.dwarf_slots == (1, 4, 5, 6, 7)
    assert after.trolls == ((7, 4), (8, 5), (8, 4))
    assert after.troll_slots == (0, 3, 7)
    assert indexed_trolls(after) == ((7, 4), None, None, (8, 5), None, None, None, (8, 4))
    assert after.previous_move == move
    assert (after.ply, side_to_move(after)) == (2, TROLL)


def test_dwarf_lines_are_cut_by_the_thudstone() -> None:
    state = position([(4, 7), (5, 7), (6, 7)], [(8, 7), (7, 3)])
    moves = moves_from(state, (6, 7))
    assert all(m.end[0] <= 6 for m in moves if m.end[1] == 7)
    assert not any(m.kind == "hurl" for m in moves)
    # A column through the Thudstone stops there too.
    assert (7, 8) not in ends(moves_from(state, (7, 3)))


# --- trolls ------------------------------------------------------------------------------------


def test_troll_walks_come_first_then_shoves_that_need_a_dwarf_at_the_target() -> None:
    trolls = [(2, 10), (3, 10), (4, 10)]
    state = position([(7, 11)], trolls, ply=2)
    walks = [(4, 9), (5, 9), (5, 10), (5, 11), (4, 11), (3, 11), (3, 9)]
    shoves = [
        Move((4, 10), (6, 10), "shove", ((7, 11),)),
        Move((4, 10), (7, 10), "shove", ((7, 11),)),
    ]
    moves = moves_from(state, (4, 10))
    assert moves == [Move((4, 10), end, "walk") for end in walks] + shoves
    # Beyond the line's length (3) there is no shove even next to a dwarf.
    assert not any(m.kind == "shove" for m in moves_from(position([(9, 11)], trolls, 2), (4, 10)))
    # No dwarf near any target, no shove.
    assert not any(m.kind == "shove" for m in moves_from(position([], trolls, 2), (4, 10)))


def test_a_single_troll_never_shoves_and_walks_without_dwarfs_nearby() -> None:
    state = position([(10, 5)], [(4, 10)], ply=2)
    moves = moves_from(state, (4, 10))
    assert len(moves) == 8
    assert all(m.kind == "walk" and m.killed == () for m in moves)


def test_trolls_never_land_on_dwarfs_and_shoves_need_a_clear_path() -> None:
    state = position([(6, 10)], [(2, 10), (3, 10), (4, 10)], ply=2)
    moves = moves_from(state, (4, 10))
    assert (6, 10) not in ends(moves)
    assert not any(m.kind == "shove" for m in moves)
    assert Move((4, 10), (5, 10), "walk", ((6, 10),)) in moves


def test_troll_lines_are_cut_by_the_thudstone() -> None:
    state = position([(5, 6), (5, 8)], [(8, 7), (9, 7), (10, 7)], ply=2)
    assert not any(y == 7 and x < 8 for x, y in ends(moves_from(state, (8, 7))))


def test_a_troll_landing_kills_every_adjacent_dwarf_in_direction_order() -> None:
    dwarfs = [(5, 0), (11, 9), (9, 8), (6, 0), (11, 8), (9, 10)]
    state = position(dwarfs, [(10, 10)], ply=2, dwarf_slots=[0, 3, 5, 6, 9, 20])
    killed = ((11, 8), (11, 9), (9, 10), (9, 8))  # NE, E, SW, NW of (10, 9)
    move = Move((10, 10), (10, 9), "walk", killed)
    assert move in moves_from(state, (10, 10))
    after, events = play_action(state, Action(move))
    assert events == [PieceMoved(TROLL, move), PiecesKilled(DWARF, killed)]
    assert after.dwarfs == ((5, 0), (6, 0))
    assert after.dwarf_slots == (0, 6)
    assert indexed_dwarfs(after)[:7] == ((5, 0), None, None, None, None, None, (6, 0))
    assert after.trolls == ((10, 9),)


def test_a_shove_kills_all_dwarfs_around_its_landing() -> None:
    dwarfs = [(7, 11), (6, 11), (5, 11)]
    state = position(dwarfs, [(2, 10), (3, 10), (4, 10)], ply=2)
    after, events = play_action(state, Action(((4, 10), (6, 10))))
    assert events[0] == PieceMoved(
        TROLL, Move((4, 10), (6, 10), "shove", ((7, 11), (6, 11), (5, 11)))
    )
    assert after.dwarfs == ()
    assert after.end_reason == "No more dwarfs"


# --- moves of the whole side -------------------------------------------------------------------


def test_legal_moves_follow_piece_order_and_moves_from_answers_for_either_side() -> None:
    state = initial_state()
    by_piece: list[Move] = []
    for square in state.dwarfs:
        by_piece += moves_from(state, square)
    assert legal_moves(state) == by_piece
    assert moves_from(state, (6, 6))[0] == Move((6, 6), (6, 5), "walk")  # a troll, off-turn
    assert moves_from(state, (7, 0)) == []
    assert moves_from(state, (7, 7)) == []
    assert moves_from(state, (0, 0)) == []


def test_a_moved_piece_keeps_its_place_in_the_order() -> None:
    state = play(initial_state(), (0, 5), (3, 5))
    assert state.dwarfs[12] == (3, 5)
    assert state.dwarfs[:12] == START_DWARFS[:12]
    assert state.dwarfs[13:] == START_DWARFS[13:]
    state = play(state, (8, 8), (9, 9))
    assert state.trolls == ((6, 6), (7, 6), (8, 6), (6, 7), (8, 7), (6, 8), (7, 8), (9, 9))


# --- in_danger ---------------------------------------------------------------------------------


def test_dwarf_danger_is_two_squares_from_a_troll_or_next_to_a_possible_shove() -> None:
    state = position([(1, 5)], [(10, 10)])
    assert in_danger(state, DWARF, (8, 10))
    assert in_danger(state, DWARF, (12, 8))
    assert not in_danger(state, DWARF, (7, 10))
    assert not in_danger(state, DWARF, (10, 10))  # the troll's own square is distance 0
    # Across the Thudstone the distance still counts.
    assert in_danger(position([(1, 5)], [(7, 8)]), DWARF, (7, 6))
    # Two trolls in line could be shoved to (4, 10) (no dwarf needs to be there): its neighbours.
    state = position([(1, 5)], [(1, 10), (2, 10)])
    assert in_danger(state, DWARF, (5, 11))
    assert not in_danger(state, DWARF, (6, 11))


def test_troll_danger_is_where_a_dwarf_line_could_hurl() -> None:
    lone = position([(10, 5)], [(12, 9)], ply=2)
    assert not in_danger(lone, TROLL, (11, 5))  # next to a lone dwarf: not flagged
    pair = position([(9, 5), (10, 5)], [(12, 9)], ply=2)
    assert in_danger(pair, TROLL, (12, 5))
    assert not in_danger(pair, TROLL, (13, 5))
    assert not in_danger(pair, TROLL, (11, 5))  # distance 1 only counts with a troll on it
    # Judged before the move: a troll stepping straight away from a line blocks its own path.
    blocking = position([(9, 5), (10, 5)], [(11, 5)], ply=2)
    assert in_danger(blocking, TROLL, (11, 5))
    assert not in_danger(blocking, TROLL, (12, 5))


def test_danger_squares_agree_with_in_danger() -> None:
    state = initial_state()
    for side in (DWARF, TROLL):
        flagged = danger_squares(state, side)
        assert {s for s in SQUARES if in_danger(state, side, s)} == flagged
    assert not in_danger(state, DWARF, (0, 0))


# --- declaring, ends and scores ----------------------------------------------------------------


def test_declarations_persist_and_end_the_game_only_when_both_stand() -> None:
    state = initial_state()
    state, events = play_action(state, Action(((0, 5), (1, 5)), declare=True))
    assert events[-1] == Declared(DWARF, True)
    assert state.declared == (True, False)
    assert state.end_reason is None
    state, events = play_action(state, Action(((6, 6), (6, 5))))
    assert state.declared == (True, False)
    assert not any(isinstance(e, Declared) for e in events)
    state = play(state, (1, 5), (2, 5), declare=True)  # no change, no event
    state, events = play_action(state, Action(((6, 5), (6, 4)), declare=True))
    assert state.declared == (True, True)
    assert state.end_reason == "Players agreed to finish"
    assert events[-2:] == [Declared(TROLL, True), GameEnded(ThudEnd.AGREED)]
    assert outcome(state) == Outcome(None, ThudEnd.AGREED)
    assert legal_moves(state) == []


def test_a_retracted_declaration_does_not_count() -> None:
    state = play(initial_state(), (0, 5), (1, 5), declare=True)
    state = play(state, (6, 6), (6, 5))
    state = play(state, (1, 5), (2, 5), declare=False)
    state = play(state, (6, 5), (6, 4), declare=True)
    assert state.declared == (False, True)
    assert state.end_reason is None


def test_timeout_after_ply_500_even_when_the_last_ply_kills_the_last_dwarf() -> None:
    state = position([(10, 8), (0, 5)], [(10, 10), (3, 3)], ply=499)
    state = play(state, (0, 5), (0, 6))
    assert (state.ply, state.end_reason) == (500, None)
    after, events = play_action(state, Action(((10, 10), (10, 9))))
    assert after.end_reason == "Timeout"
    assert (after.ply, side_to_move(after)) == (501, DWARF)
    assert events[-1] == GameEnded(ThudEnd.TIMEOUT)
    last_dwarf = position([(10, 8)], [(10, 10)], ply=500)
    after = play(last_dwarf, (10, 10), (10, 9))
    assert after.dwarfs == ()
    assert after.end_reason == "Timeout"
    assert outcome(after) == Outcome(1, ThudEnd.TIMEOUT)


def test_no_more_trolls_and_no_more_dwarfs() -> None:
    after = play(position([(10, 10), (1, 5)], [(11, 10)]), (10, 10), (11, 10))
    assert after.end_reason == "No more trolls"
    assert outcome(after) == Outcome(0, ThudEnd.NO_MORE_TROLLS)
    after = play(position([(10, 8)], [(10, 10), (3, 3)], ply=2), (10, 10), (10, 9))
    assert after.end_reason == "No more dwarfs"
    assert outcome(after) == Outcome(1, ThudEnd.NO_MORE_DWARFS)


def test_score_and_winner_by_material() -> None:
    state = position([(1, 5), (2, 5), (3, 5), (4, 5)], [(10, 10)])
    assert score(state) == Score(4, 4)
    assert (score(state).difference, score(state).winning) == (0, None)
    assert score(position([(1, 5), (2, 5)], [(10, 10)])).winning == TROLL
    ended = replace(state, end_reason=ThudEnd.TIMEOUT)
    assert outcome(ended) == Outcome(None, ThudEnd.TIMEOUT)
    ended = replace(
        position([(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)], [(10, 10)]), end_reason=ThudEnd.NO_MOVE
    )
    assert outcome(ended) == Outcome(0, ThudEnd.NO_MOVE)
    assert score(ended).difference == 1


def test_a_side_without_moves_ends_the_game_on_material() -> None:
    """The engine just stops when the side to move cannot move; the arena needs an end."""
    state = position([(6, 0), (6, 1), (5, 1), (4, 3)], [(5, 0)])
    after, events = play_action(state, Action(((4, 3), (4, 1))))
    assert legal_moves(replace(after, end_reason=None)) == []
    assert after.end_reason == "No legal moves"
    assert events[-1] == GameEnded(ThudEnd.NO_LEGAL_MOVES)
    assert outcome(after) == Outcome(None, ThudEnd.NO_LEGAL_MOVES)


# --- rejections and purity ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("move", "reason"),
    [
        (((6, 6), (6, 5)), "there is no dwarf on"),
        (((7, 0), (7, 1)), "there is no dwarf on"),
        (((0, 0), (1, 5)), "not a square"),
        (((7, 7), (7, 5)), "not a square"),
        (((5, 0), (6, 2)), "cannot move to"),
        (((5, 0), (6, 0)), "cannot move to"),
        (((5, 0), (7, 7)), "cannot move to"),
        (Move((5, 0), (5, 1), "hurl", ((5, 1),)), "in this position"),
    ],
)
def test_illegal_moves_are_rejected_with_a_reason(
    move: Move | tuple[Square, Square], reason: str
) -> None:
    state = initial_state()
    before = replace(state)
    with pytest.raises(ActionRejected) as rejected:
        play_action(state, Action(move, declare=True))
    assert rejected.value.message == "Illegal move"
    assert reason in rejected.value.reason
    assert state == before
    assert state.cells == before.cells


def test_nothing_is_accepted_once_the_game_is_over() -> None:
    ended = replace(initial_state(), end_reason=ThudEnd.TIMEOUT)
    with pytest.raises(ActionRejected, match="game is over"):
        play_action(ended, Action(((0, 5), (1, 5))))


def test_apply_leaves_its_input_untouched_and_is_deterministic() -> None:
    state = position([(10, 8), (9, 8), (1, 5)], [(10, 10), (3, 3)], ply=2)
    before = (state.dwarfs, state.trolls, state.dwarf_slots, state.cells, state.declared)
    first = play_action(state, Action(((10, 10), (10, 9)), declare=True))
    second = play_action(state, Action(((10, 10), (10, 9)), declare=True))
    assert first == second
    assert (state.dwarfs, state.trolls, state.dwarf_slots, state.cells, state.declared) == before
    moves = legal_moves(state)
    moves.clear()
    assert legal_moves(state)


def test_state_from_position_checks_its_input() -> None:
    with pytest.raises(ValueError, match="not a square"):
        position([(7, 7)], [])
    with pytest.raises(ValueError, match="two pieces"):
        position([(1, 5)], [(1, 5)])
    with pytest.raises(ValueError, match="increasing"):
        position([(1, 5), (2, 5)], [], dwarf_slots=[3, 1])
    with pytest.raises(ValueError, match="slots"):
        position([(1, 5)], [], dwarf_slots=[32])
    assert state_from_position([[1, 5]], [[10, 10]]).dwarfs == ((1, 5),)  # JSON lists are fine


# --- random play -------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_random_play_keeps_the_invariants(data: st.DataObject) -> None:
    state = initial_state()
    for _ in range(120):
        moves = legal_moves(state)
        if not moves:
            assert state.end_reason is not None
            break
        side = side_to_move(state)
        own, other = (state.dwarfs, state.trolls) if side == DWARF else (state.trolls, state.dwarfs)
        danger = danger_squares(state, side)
        assert len({(m.start, m.end) for m in moves}) == len(moves)
        for m in moves:
            assert m.start in own
            assert set(m.killed) <= set(other)
            assert m.end not in own
            assert (m.end in other) == (m.kind == "hurl")
        move = moves[data.draw(st.integers(0, len(moves) - 1))]
        assert in_danger(state, side, move.end) == (move.end in danger)
        after, _ = play_action(state, Action(move))
        assert len(after.dwarfs) + len(after.trolls) + len(move.killed) == len(own) + len(other)
        assert len(set(after.dwarfs) | set(after.trolls)) == len(after.dwarfs) + len(after.trolls)
        assert list(after.dwarf_slots) == sorted(set(after.dwarf_slots))
        assert list(after.troll_slots) == sorted(set(after.troll_slots))
        # What ``apply`` keeps up to date is what a state built from its pieces derives.
        rebuilt = state_from_position(after.dwarfs, after.trolls)
        derived = (rebuilt.cells, rebuilt.dwarf_bits, rebuilt.troll_bits)
        assert (after.cells, after.dwarf_bits, after.troll_bits) == derived
        if after.end_reason is None:
            assert legal_moves(after)
        state = after


def test_a_shorter_turn_limit_ends_the_game_on_points_sooner() -> None:
    config = config_from_mapping({"thud": {"turnLimit": 3}})
    codec = ThudCodec.from_settings(config.game_settings["thud"])
    assert codec.settings() == {"turnLimit": 3}
    assert ThudCodec.from_settings(codec.settings()).rules.ply_limit == 3
    assert ArenaConfig().game_settings["thud"] == {}  # the engine's 500 plies
    game = codec.rules
    state = game.initial_state([])
    for ply in range(1, 4):
        assert game.outcome(state) is None, ply
        seat = game.to_move(state)
        first = legal_moves(state)[0]
        action = game.check(state, seat, Action((first.start, first.end)))
        state, _ = game.apply(state, seat, action, random.Random(0))
    assert game.outcome(state) == Outcome(None, ThudEnd.TIMEOUT)  # 32 points each: a draw


def test_check_accepts_exactly_the_listed_moves() -> None:
    """``check`` looks only along the ray toward a move's end (a troll: only at the moves onto
    it): over random games, every listed move is accepted as listed, and every other square in
    line with the piece is refused."""
    chance = random.Random(7)
    positions = 0
    for _ in range(3):
        state = initial_state()
        while state.end_reason is None:
            moves = legal_moves(state)
            for move in moves[:: max(1, len(moves) // 12)]:
                assert check(state, Action((move.start, move.end))) == Action(move)
            start = moves[0].start
            listed = {move.end for move in moves if move.start == start}
            for ray in RAYS[cell_of(start)]:
                for square in (CELL_SQUARE[end] for end in ray):
                    if square not in listed:
                        with pytest.raises(ActionRejected, match="cannot move to"):
                            check(state, Action((start, square)))
            state = apply(state, check(state, Action(chance.choice(moves))))[0]
            positions += 1
    assert positions > 400
