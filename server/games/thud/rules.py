"""Thud exactly as the AJFaraday/Thud king-of-the-hill engine plays it: pure rules, no I/O.

Everything a client can observe is reproduced: the legal move set and its order (``movegen``),
the engine's ``in_danger`` heuristic (``danger``), the pieces, their order and the score
(``pieces``), and here checking and playing a move: the kills, the piece order after moves and
captures, and the end checks; ``ThudRules`` is what the arena asks of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import chain
from typing import Final

from server.errors import BotError
from server.games.base import ActionRejected, Outcome, Player, RandomSource, Rules
from server.games.thud.board import (
    SIZE,
    Square,
    cell_of,
    is_square,
)
from server.games.thud.ends import ThudEnd
from server.games.thud.movegen import has_legal_move, runs_toward
from server.games.thud.pieces import (
    DWARF,
    DWARF_PIECE,
    EMPTY,
    MAX_PLIES,
    SIDES,
    TROLL,
    TROLL_PIECE,
    Action,
    Declared,
    GameEnded,
    Move,
    PiecesKilled,
    Side,
    State,
    Stop,
    ThudEvent,
    initial_state,
    make_action,
    outcome,
    piece_moved,
    points,
    side_to_move,
    slot_setters,
)

# --- playing a move ----------------------------------------------------------------------------


def check(state: State, proposed: Action | Stop) -> Action | Stop:
    """The proposed action with its legal ``Move``, for the side to move.

    Raises ``ActionRejected(BotError.ILLEGAL_MOVE, reason)`` if it is not legal.
    """
    if state.end_reason is not None:
        raise ActionRejected(BotError.ILLEGAL_MOVE, f"the game is over ({state.end_reason})")
    if isinstance(proposed, Stop):
        return proposed
    return make_action(_legal_move(state, side_to_move(state), proposed.move), proposed.declare)


def apply(state: State, action: Action | Stop) -> tuple[State, list[ThudEvent]]:
    """Play a checked action (``check``) for the side to move and run the engine's end
    checks; pure. The action is not checked again."""
    if isinstance(action, Stop):
        return replace(state, end_reason=ThudEnd.NO_MOVE), [GameEnded(ThudEnd.NO_MOVE)]
    move = action.move
    assert isinstance(move, Move), "apply plays checked actions"

    side = side_to_move(state)
    dwarfs, dwarf_slots = state.dwarfs, state.dwarf_slots
    trolls, troll_slots = state.trolls, state.troll_slots
    if side == DWARF:
        dwarfs = _moved(dwarfs, move)
        trolls, troll_slots = _without(trolls, troll_slots, move.killed)
    else:
        trolls = _moved(trolls, move)
        dwarfs, dwarf_slots = _without(dwarfs, dwarf_slots, move.killed)

    events: list[ThudEvent] = [piece_moved(side, move)]
    if move.killed:
        events.append(PiecesKilled(TROLL if side == DWARF else DWARF, move.killed))
    declared = state.declared
    seat = SIDES.index(side)
    if action.declare is not None and action.declare != declared[seat]:
        declared = (action.declare, declared[1]) if seat == 0 else (declared[0], action.declare)
        events.append(Declared(side, action.declare))

    board = _board_after(state, move, side)
    cells = board[0]
    end_reason = _end_reason(state.ply, dwarfs, trolls, declared)
    if end_reason is None and not (
        has_legal_move(cells, TROLL, trolls)
        if side == DWARF
        else has_legal_move(cells, DWARF, dwarfs)
    ):
        end_reason = ThudEnd.NO_LEGAL_MOVES
    if end_reason is not None:
        events.append(GameEnded(end_reason))
    after = _state_with_board(
        board, dwarfs, trolls, dwarf_slots, troll_slots, state.ply + 1, declared, move, end_reason
    )
    return after, events


def _board_after(state: State, move: Move, side: Side) -> tuple[bytes, int, int]:
    """The board (``State.cells``) and each side's bits with ``move`` played by ``side``: its
    start and the killed squares emptied."""
    board = bytearray(state.cells)
    x, y = move.start
    start = x + SIZE * y
    x, y = move.end
    end = x + SIZE * y
    board[start] = EMPTY
    moved = 1 << start | 1 << end
    dwarf_bits, troll_bits = state.dwarf_bits, state.troll_bits
    if move.killed:
        killed = 0
        for x, y in move.killed:
            board[x + SIZE * y] = EMPTY
            killed |= 1 << x + SIZE * y
        if side == DWARF:
            troll_bits &= ~killed
        else:
            dwarf_bits &= ~killed
    # A hurl kills the troll on its landing square, so this comes last.
    if side == DWARF:
        board[end] = DWARF_PIECE
        return bytes(board), dwarf_bits ^ moved, troll_bits
    board[end] = TROLL_PIECE
    return bytes(board), dwarf_bits, troll_bits ^ moved


_STATE_SETTERS: Final = slot_setters(State)


def _state_with_board(
    board: tuple[bytes, int, int],
    dwarfs: tuple[Square, ...],
    trolls: tuple[Square, ...],
    dwarf_slots: tuple[int, ...],
    troll_slots: tuple[int, ...],
    ply: int,
    declared: tuple[bool, bool],
    previous_move: Move,
    end_reason: ThudEnd | None,
) -> State:
    """``State(...)`` given its board (cells, dwarf bits, troll bits, as ``_board_after`` makes
    them): ``State.__post_init__`` would build them again from every piece, a third of
    ``apply``'s time, where ``apply`` changes only the squares of one move. Sets every slot
    (``slot_setters``)."""
    (
        set_dwarfs,
        set_trolls,
        set_dwarf_slots,
        set_troll_slots,
        set_ply,
        set_declared,
        set_previous_move,
        set_end_reason,
        set_cells,
        set_dwarf_bits,
        set_troll_bits,
    ) = _STATE_SETTERS
    state: State = object.__new__(State)
    set_dwarfs(state, dwarfs)
    set_trolls(state, trolls)
    set_dwarf_slots(state, dwarf_slots)
    set_troll_slots(state, troll_slots)
    set_ply(state, ply)
    set_declared(state, declared)
    set_previous_move(state, previous_move)
    set_end_reason(state, end_reason)
    set_cells(state, board[0])
    set_dwarf_bits(state, board[1])
    set_troll_bits(state, board[2])
    return state


def _legal_move(state: State, side: Side, wanted: Move | tuple[Square, Square]) -> Move:
    start, end = (wanted.start, wanted.end) if isinstance(wanted, Move) else wanted
    if not is_square(*start):
        raise ActionRejected(BotError.ILLEGAL_MOVE, f"{list(start)} is not a square of the board")
    own = DWARF_PIECE if side == DWARF else TROLL_PIECE
    cells = state.cells
    if cells[cell_of(start)] != own:
        raise ActionRejected(BotError.ILLEGAL_MOVE, f"there is no {side} on {list(start)}")
    for move in chain.from_iterable(runs_toward(state, start, end)):
        if move.end == end:
            if isinstance(wanted, Move) and wanted != move:
                raise ActionRejected(
                    BotError.ILLEGAL_MOVE,
                    f"in this position {start} to {end} is {move}, not {wanted}",
                )
            return move
    raise ActionRejected(
        BotError.ILLEGAL_MOVE, f"the {side} on {list(start)} cannot move to {list(end)}"
    )


def _moved(pieces: tuple[Square, ...], move: Move) -> tuple[Square, ...]:
    """The pieces with the mover on its new square, keeping its place in the order."""
    index = pieces.index(move.start)
    return (*pieces[:index], move.end, *pieces[index + 1 :])


def _without(
    pieces: tuple[Square, ...], slots: tuple[int, ...], killed: tuple[Square, ...]
) -> tuple[tuple[Square, ...], tuple[int, ...]]:
    """The pieces and their slots with the killed ones spliced out, the others in order."""
    if not killed:
        return pieces, slots
    kept = [i for i, square in enumerate(pieces) if square not in killed]
    return tuple(pieces[i] for i in kept), tuple(slots[i] for i in kept)


def _end_reason(
    played_ply: int,
    dwarfs: tuple[Square, ...],
    trolls: tuple[Square, ...],
    declared: tuple[bool, bool],
) -> ThudEnd | None:
    """The engine's checks after each move, first match wins (it compares the ply just played)."""
    if played_ply >= MAX_PLIES:
        return ThudEnd.TIMEOUT
    if not dwarfs:
        return ThudEnd.NO_MORE_DWARFS
    if not trolls:
        return ThudEnd.NO_MORE_TROLLS
    if all(declared):
        return ThudEnd.AGREED
    return None


class ThudRules(Rules[State, Action | Stop, Action | Stop]):
    """Thud as the king-of-the-hill engine plays it; it has one board and one set of rules,
    and the arena may end a game sooner than the engine's ``MAX_PLIES`` (a quick local game)."""

    def __init__(self, ply_limit: int = MAX_PLIES) -> None:
        self.ply_limit = min(ply_limit, MAX_PLIES)

    def initial_state(self, players: Sequence[Player]) -> State:
        return initial_state()

    def to_move(self, state: State) -> int:
        return 1 - state.ply % 2  # the dwarfs (seat 0) move on odd plies

    def check(self, state: State, seat: int, candidate: Action | Stop) -> Action | Stop:
        if seat != self.to_move(state):
            raise ActionRejected(BotError.NOT_YOUR_TURN, f"the {side_to_move(state)}s move now")
        return check(state, candidate)

    def apply(
        self, state: State, seat: int, action: Action | Stop, rng: RandomSource
    ) -> tuple[State, list[ThudEvent]]:
        after, events = apply(state, action)
        if after.end_reason is None and state.ply >= self.ply_limit:
            # The engine's own end on its last ply, brought forward.
            after = replace(after, end_reason=ThudEnd.TIMEOUT)
            events.append(GameEnded(ThudEnd.TIMEOUT))
        return after, events

    def outcome(self, state: State) -> Outcome | None:
        return outcome(state)

    def timeout_action(self, state: State, seat: int) -> None:
        # Thud has no pass: a side that does not move loses.
        return None

    def scores(self, state: State) -> tuple[int, int]:
        return points(state)
