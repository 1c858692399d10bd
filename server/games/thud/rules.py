"""Thud exactly as the AJFaraday/Thud king-of-the-hill engine plays it: pure rules, no I/O.

Everything a client can observe is reproduced: the legal move set, its order (pieces in engine
order, then each piece's moves in the order of the engine's ``space_info().moves``), the kills,
the engine's ``in_danger`` heuristic, piece order after moves and captures, and the end checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Final, Literal, TypeAlias

from server.games.base import ActionRejected, Outcome, Player, RandomSource, Rules
from server.games.thud.board import (
    CELL_COUNT,
    CELL_SQUARE,
    DIRECTIONS,
    NEAR,
    NEIGHBOURS,
    RAYS,
    SIZE,
    SQUARES,
    THUDSTONE,
    Square,
    cell_of,
    is_square,
    opposite,
)

__all__ = [
    "DWARF",
    "DWARF_PIECE",
    "END_REASONS",
    "MAX_PLIES",
    "NO_MOVE",
    "PREBUILT_MOVES",
    "SIDES",
    "SQUARES",
    "THUDSTONE",
    "TROLL",
    "TROLL_PIECE",
    "Action",
    "Declared",
    "GameEnded",
    "Move",
    "MoveKind",
    "PieceMoved",
    "PiecesKilled",
    "Score",
    "Side",
    "Square",
    "State",
    "Stop",
    "ThudEvent",
    "ThudRules",
    "apply",
    "check",
    "danger_squares",
    "in_danger",
    "indexed_dwarfs",
    "indexed_trolls",
    "initial_state",
    "is_square",
    "legal_moves",
    "moves_from",
    "outcome",
    "score",
    "side_to_move",
    "state_from_position",
]

Side: TypeAlias = Literal["dwarf", "troll"]
DWARF: Final = "dwarf"
TROLL: Final = "troll"
SIDES: Final[tuple[Side, Side]] = (DWARF, TROLL)
"""The sides by seat: seat 0 plays the dwarfs (and moves first), seat 1 the trolls."""

MoveKind: TypeAlias = Literal["walk", "hurl", "shove"]

MAX_PLIES: Final = 500
"""The engine stops with "Timeout" once the ply with this number has been played."""

TIMEOUT: Final = "Timeout"
NO_MORE_DWARFS: Final = "No more dwarfs"
NO_MORE_TROLLS: Final = "No more trolls"
AGREED: Final = "Players agreed to finish"
NO_LEGAL_MOVES: Final = "No legal moves"
NO_MOVE: Final = "No move"
END_REASONS: Final = (TIMEOUT, NO_MORE_DWARFS, NO_MORE_TROLLS, AGREED, NO_LEGAL_MOVES, NO_MOVE)
"""Why a game ends: the engine's four reasons, in the order it checks them, then the arena's
names for the two ways the engine simply stopped and scored the position as it stood: the side
on move had no legal move, or its client made none."""

DWARF_COUNT: Final = 32
TROLL_COUNT: Final = 8
TROLL_VALUE: Final = 4
ILLEGAL: Final = "Illegal move"

# What a cell of ``State.cells`` holds.
EMPTY: Final = 0
DWARF_PIECE: Final = 1
TROLL_PIECE: Final = 2

_OPPOSITE: Final = tuple(opposite(d) for d in range(len(DIRECTIONS)))


@dataclass(frozen=True, slots=True)
class Move:
    """One piece going from ``start`` to ``end``; ``killed`` lists the squares it clears.

    A hurl kills the troll on its landing square. A troll's walk or shove kills every dwarf next
    to its landing square; they are listed in direction order (N, NE, E, SE, S, SW, W, NW) as seen
    from ``end``. ``(start, end)`` alone identifies a move within a position.
    """

    start: Square
    end: Square
    kind: MoveKind
    killed: tuple[Square, ...] = ()


@dataclass(frozen=True, slots=True)
class Action:
    """What the side to move plays: a move, given as a ``Move`` or a ``(start, end)`` pair.

    ``declare`` sets the side's "game over" flag with the move (``None`` leaves it as it is); the
    engine never lets a declaration replace a move. ``check`` turns a proposed action into one
    whose move is the legal ``Move`` that ``apply`` plays.
    """

    move: Move | tuple[Square, Square]
    declare: bool | None = None


@dataclass(frozen=True, slots=True)
class Stop:
    """The side on move makes no move: the game ends here, scored as it stands.

    This is how the king-of-the-hill engine ended a game whose client made no move in its
    turn; clients written for it rely on it (see bots/js/thud-client.js).
    """


@dataclass(frozen=True, slots=True)
class State:
    """A position and the bookkeeping the engine exposes.

    ``dwarfs`` and ``trolls`` are in engine order: the start position's row-major order, a moved
    piece keeping its place and a captured one removed. ``dwarf_slots``/``troll_slots`` hold each
    piece's index in the start position (so they are strictly increasing), which is what the
    engine's fixed-length ``indexed_dwarfs``/``indexed_trolls`` are built from.

    ``ply`` is the engine's ``turn_number`` when the side to move is asked to move: 1 for the
    dwarfs' first move, odd for dwarfs and even for trolls. A finished game keeps counting, so
    ``ply - 1`` plies have been played and ``side_to_move`` matches the engine's last side.
    """

    dwarfs: tuple[Square, ...]
    trolls: tuple[Square, ...]
    dwarf_slots: tuple[int, ...]
    troll_slots: tuple[int, ...]
    ply: int = 1
    declared: tuple[bool, bool] = (False, False)
    previous_move: Move | None = None
    end_reason: str | None = None
    cells: bytes = field(init=False, repr=False, compare=False)
    """What stands on each cell ``x + 15 * y``: 0 empty, 1 dwarf, 2 troll (derived, for speed)."""

    def __post_init__(self) -> None:
        cells = bytearray(CELL_COUNT)
        for x, y in self.dwarfs:
            cells[x + SIZE * y] = DWARF_PIECE
        for x, y in self.trolls:
            cells[x + SIZE * y] = TROLL_PIECE
        object.__setattr__(self, "cells", bytes(cells))


@dataclass(frozen=True, slots=True)
class Score:
    """The engine's material score: 1 point per dwarf, 4 per troll."""

    dwarfs: int
    trolls: int

    @property
    def difference(self) -> int:
        return abs(self.dwarfs - self.trolls)

    @property
    def winning(self) -> Side | None:
        """The side with more points, ``None`` on a tie."""
        if self.dwarfs == self.trolls:
            return None
        return DWARF if self.dwarfs > self.trolls else TROLL


@dataclass(frozen=True, slots=True)
class PieceMoved:
    side: Side
    move: Move


@dataclass(frozen=True, slots=True)
class PiecesKilled:
    """``side`` lost the pieces on ``squares`` (the same squares as the move's ``killed``)."""

    side: Side
    squares: tuple[Square, ...]


@dataclass(frozen=True, slots=True)
class Declared:
    """A side's "game over" flag changed to ``value``."""

    side: Side
    value: bool


@dataclass(frozen=True, slots=True)
class GameEnded:
    reason: str


ThudEvent: TypeAlias = PieceMoved | PiecesKilled | Declared | GameEnded


# --- the start position ------------------------------------------------------------------------


def _on_rim(square: Square) -> bool:
    """True for squares on the octagon's outline, i.e. with an orthogonal step off the board."""
    x, y = square
    return any(
        not is_square(x + dx, y + dy) and (x + dx, y + dy) != THUDSTONE
        for dx, dy in DIRECTIONS[::2]
    )


# Dwarfs line the rim except the midpoints of the four long sides; trolls ring the Thudstone.
_START_DWARFS: Final = tuple(s for s in SQUARES if _on_rim(s) and THUDSTONE[0] not in s)
_START_TROLLS: Final = tuple(
    s for s in SQUARES if max(abs(s[0] - THUDSTONE[0]), abs(s[1] - THUDSTONE[1])) == 1
)


def initial_state() -> State:
    return State(
        dwarfs=_START_DWARFS,
        trolls=_START_TROLLS,
        dwarf_slots=tuple(range(DWARF_COUNT)),
        troll_slots=tuple(range(TROLL_COUNT)),
    )


def state_from_position(
    dwarfs: Iterable[Iterable[int]],
    trolls: Iterable[Iterable[int]],
    *,
    ply: int = 1,
    dwarf_slots: Iterable[int] | None = None,
    troll_slots: Iterable[int] | None = None,
    declared: tuple[bool, bool] = (False, False),
    previous_move: Move | None = None,
) -> State:
    """A checked ``State`` for a position given from outside (a record, a message, a test).

    Squares may be any pairs (JSON lists too). Without slots the pieces take the first slots in
    order, which only matters for ``indexed_dwarfs``/``indexed_trolls``. Raises ``ValueError``.
    """
    dwarf_squares = _squares(dwarfs)
    troll_squares = _squares(trolls)
    if len(set(dwarf_squares + troll_squares)) != len(dwarf_squares) + len(troll_squares):
        raise ValueError("two pieces on one square")
    if ply < 1:
        raise ValueError(f"ply must be at least 1, not {ply}")
    return State(
        dwarfs=dwarf_squares,
        trolls=troll_squares,
        dwarf_slots=_slots(dwarf_slots, len(dwarf_squares), DWARF_COUNT),
        troll_slots=_slots(troll_slots, len(troll_squares), TROLL_COUNT),
        ply=ply,
        declared=declared,
        previous_move=previous_move,
    )


def _squares(pairs: Iterable[Iterable[int]]) -> tuple[Square, ...]:
    squares = []
    for pair in pairs:
        x, y = pair
        if not is_square(x, y):
            raise ValueError(f"({x}, {y}) is not a square")
        squares.append(CELL_SQUARE[x + SIZE * y])
    return tuple(squares)


def _slots(given: Iterable[int] | None, count: int, limit: int) -> tuple[int, ...]:
    slots = tuple(range(count)) if given is None else tuple(given)
    if len(slots) != count:
        raise ValueError(f"{len(slots)} slots for {count} pieces")
    if count > limit or any(not 0 <= s < limit for s in slots):
        raise ValueError(f"slots must lie in 0..{limit - 1}")
    if any(a >= b for a, b in pairwise(slots)):
        raise ValueError("slots must be strictly increasing (engine order)")
    return slots


# --- queries -----------------------------------------------------------------------------------


def side_to_move(state: State) -> Side:
    return DWARF if state.ply % 2 else TROLL


def score(state: State) -> Score:
    return Score(dwarfs=len(state.dwarfs), trolls=TROLL_VALUE * len(state.trolls))


def outcome(state: State) -> Outcome | None:
    """The result once ``apply`` has ended the game: the seat with more points wins."""
    if state.end_reason is None:
        return None
    winning = score(state).winning
    return Outcome(None if winning is None else SIDES.index(winning), state.end_reason)


def indexed_dwarfs(state: State) -> tuple[Square | None, ...]:
    """The engine's ``indexed_dwarfs()``: 32 entries by start index, ``None`` once captured."""
    return _indexed(state.dwarfs, state.dwarf_slots, DWARF_COUNT)


def indexed_trolls(state: State) -> tuple[Square | None, ...]:
    return _indexed(state.trolls, state.troll_slots, TROLL_COUNT)


def _indexed(
    squares: tuple[Square, ...], slots: tuple[int, ...], count: int
) -> tuple[Square | None, ...]:
    indexed: list[Square | None] = [None] * count
    for slot, square in zip(slots, squares, strict=True):
        indexed[slot] = square
    return tuple(indexed)


# --- move generation ---------------------------------------------------------------------------
# Walks and hurls depend only on their two squares, so every possible one is built once here and
# move generation hands out the shared objects; only troll moves that kill are built on the fly.


def _moves_along_rays(kind: MoveKind) -> tuple[tuple[tuple[Move, ...], ...], ...]:
    def move(start: int, end: int) -> Move:
        killed = (CELL_SQUARE[end],) if kind == "hurl" else ()
        return Move(CELL_SQUARE[start], CELL_SQUARE[end], kind, killed)

    return tuple(
        tuple(tuple(move(cell, end) for end in ray) for ray in rays)
        for cell, rays in enumerate(RAYS)
    )


_WALKS: Final = _moves_along_rays("walk")
"""``_WALKS[cell][direction][k]``: the walk to ``RAYS[cell][direction][k]``, killing nothing."""
_HURLS: Final = _moves_along_rays("hurl")
PREBUILT_MOVES: Final = tuple(
    move for table in (_WALKS, _HURLS) for rays in table for ray in rays for move in ray
)
"""Every walk that kills nothing and every hurl: ``legal_moves`` hands out these very objects,
which live as long as the program, so a reader may key on their identity."""


def _line_length(cells: bytes, cell: int, direction: int, piece: int) -> int:
    """How many ``piece``s stand in a row from ``cell`` (included) going ``direction``."""
    length = 1
    for other in RAYS[cell][direction]:
        if cells[other] != piece:
            break
        length += 1
    return length


def _dwarf_moves(cells: bytes, cell: int, out: list[Move]) -> None:
    """Per direction: the walks by distance, then the hurl onto the first troll if in reach."""
    walks = _WALKS[cell]
    for direction, ray in enumerate(RAYS[cell]):
        distance = 0
        for end in ray:
            if cells[end]:
                break
            distance += 1
        out.extend(walks[direction][:distance])
        if (
            distance < len(ray)
            and cells[ray[distance]] == TROLL_PIECE
            and distance < _line_length(cells, cell, _OPPOSITE[direction], DWARF_PIECE)
        ):
            out.append(_HURLS[cell][direction][distance])


def _adjacent_dwarfs(cells: bytes, cell: int) -> tuple[Square, ...]:
    return tuple([CELL_SQUARE[n] for n in NEIGHBOURS[cell] if cells[n] == DWARF_PIECE])


def _shove_landings(cells: bytes, cell: int) -> Iterator[int]:
    """Empty cells at distance 2..(trolls in line) with a clear path, by direction then distance.

    These are the troll's shoves before the engine's "a dwarf must be adjacent" condition.
    """
    rays = RAYS[cell]
    for direction, ray in enumerate(rays):
        behind = rays[_OPPOSITE[direction]]
        if len(ray) < 2 or cells[ray[0]] or not behind or cells[behind[0]] != TROLL_PIECE:
            continue
        reach = min(_line_length(cells, cell, _OPPOSITE[direction], TROLL_PIECE), len(ray))
        for end in ray[1:reach]:
            if cells[end]:
                break
            yield end


def _troll_moves(cells: bytes, cell: int, out: list[Move]) -> None:
    """First every walk in direction order, then the shoves by direction and distance."""
    start = CELL_SQUARE[cell]
    walks = _WALKS[cell]
    for direction, ray in enumerate(RAYS[cell]):
        if ray and not cells[ray[0]]:
            killed = _adjacent_dwarfs(cells, ray[0])
            out.append(
                Move(start, CELL_SQUARE[ray[0]], "walk", killed) if killed else walks[direction][0]
            )
    for end in _shove_landings(cells, cell):
        killed = _adjacent_dwarfs(cells, end)
        if killed:
            out.append(Move(start, CELL_SQUARE[end], "shove", killed))


def _moves_from_cell(cells: bytes, cell: int) -> list[Move]:
    moves: list[Move] = []
    if cells[cell] == DWARF_PIECE:
        _dwarf_moves(cells, cell, moves)
    elif cells[cell] == TROLL_PIECE:
        _troll_moves(cells, cell, moves)
    return moves


def legal_moves(state: State) -> list[Move]:
    """Every move of the side to move, in engine order; none once the game is over."""
    if state.end_reason is not None:
        return []
    cells = state.cells
    moves: list[Move] = []
    if state.ply % 2:
        for x, y in state.dwarfs:
            _dwarf_moves(cells, x + SIZE * y, moves)
    else:
        for x, y in state.trolls:
            _troll_moves(cells, x + SIZE * y, moves)
    return moves


def moves_from(state: State, square: Square) -> list[Move]:
    """The moves of whichever piece stands on ``square`` (like ``space_info().moves``), else []."""
    if not is_square(*square):
        return []
    return _moves_from_cell(state.cells, cell_of(square))


def _has_legal_move(state: State) -> bool:
    """Cheaply, whether ``legal_moves`` is non-empty for a game still in play.

    A dwarf can always walk onto an empty neighbour or hurl itself one square onto a troll; a
    troll needs an empty neighbour, since shoves also start with one.
    """
    cells = state.cells
    if state.ply % 2:
        return any(
            cells[n] != DWARF_PIECE for x, y in state.dwarfs for n in NEIGHBOURS[x + SIZE * y]
        )
    return any(cells[n] == EMPTY for x, y in state.trolls for n in NEIGHBOURS[x + SIZE * y])


# --- in_danger ---------------------------------------------------------------------------------


def _dwarf_danger(state: State) -> set[int]:
    """Cells within 2 of a troll, or next to where a troll could be shoved (dwarfs or not)."""
    cells = state.cells
    danger: set[int] = set()
    for x, y in state.trolls:
        cell = x + SIZE * y
        danger.update(NEAR[cell])
        for landing in _shove_landings(cells, cell):
            danger.update(NEIGHBOURS[landing])
    return danger


def _troll_danger(state: State) -> set[int]:
    """Cells a dwarf line could hurl onto: within reach, clear path, and distance >= 2 unless a
    troll stands there (so a lone dwarf's neighbours are not flagged unless a troll is on them)."""
    cells = state.cells
    danger: set[int] = set()
    for x, y in state.dwarfs:
        cell = x + SIZE * y
        rays = RAYS[cell]
        for direction, ray in enumerate(rays):
            if not ray:
                continue
            if cells[ray[0]]:
                if cells[ray[0]] == TROLL_PIECE:
                    danger.add(ray[0])
                continue
            behind = rays[_OPPOSITE[direction]]
            if not behind or cells[behind[0]] != DWARF_PIECE:
                continue  # a lone dwarf reaches one square, which only counts with a troll on it
            reach = min(_line_length(cells, cell, _OPPOSITE[direction], DWARF_PIECE), len(ray))
            for end in ray[1:reach]:
                danger.add(end)
                if cells[end]:
                    break
    return danger


def _danger_cells(state: State, asking_side: Side) -> set[int]:
    if asking_side == DWARF:
        return _dwarf_danger(state)
    if asking_side == TROLL:
        return _troll_danger(state)
    raise ValueError(f"unknown side {asking_side!r}")


def danger_squares(state: State, asking_side: Side) -> frozenset[Square]:
    """Every square ``in_danger`` flags for ``asking_side``; use it to flag many moves at once."""
    return frozenset(map(CELL_SQUARE.__getitem__, _danger_cells(state, asking_side)))


def in_danger(state: State, asking_side: Side, square: Square) -> bool:
    """The engine's ``in_danger`` heuristic, judged on the current board (before any move).

    For a move it is asked about the move's destination by the mover's side; for
    ``space_info`` about the square itself by the asking side, whatever stands there.
    """
    return is_square(*square) and cell_of(square) in _danger_cells(state, asking_side)


# --- playing a move ----------------------------------------------------------------------------


def check(state: State, proposed: Action | Stop) -> Action | Stop:
    """The proposed action with its legal ``Move``, for the side to move.

    Raises ``ActionRejected("Illegal move", reason)`` if it is not legal.
    """
    if state.end_reason is not None:
        raise ActionRejected(ILLEGAL, f"the game is over ({state.end_reason})")
    if isinstance(proposed, Stop):
        return proposed
    return Action(_legal_move(state, side_to_move(state), proposed.move), proposed.declare)


def apply(state: State, action: Action | Stop) -> tuple[State, list[ThudEvent]]:
    """Play a checked action (``check``) for the side to move and run the engine's end
    checks; pure. The action is not checked again."""
    if isinstance(action, Stop):
        return replace(state, end_reason=NO_MOVE), [GameEnded(NO_MOVE)]
    side = side_to_move(state)
    move = action.move
    assert isinstance(move, Move), "apply plays checked actions"

    dwarfs, dwarf_slots = state.dwarfs, state.dwarf_slots
    trolls, troll_slots = state.trolls, state.troll_slots
    if side == DWARF:
        dwarfs = _moved(dwarfs, move)
        trolls, troll_slots = _without(trolls, troll_slots, move.killed)
    else:
        trolls = _moved(trolls, move)
        dwarfs, dwarf_slots = _without(dwarfs, dwarf_slots, move.killed)

    events: list[ThudEvent] = [PieceMoved(side, move)]
    if move.killed:
        events.append(PiecesKilled(TROLL if side == DWARF else DWARF, move.killed))
    declared = state.declared
    seat = SIDES.index(side)
    if action.declare is not None and action.declare != declared[seat]:
        declared = (action.declare, declared[1]) if seat == 0 else (declared[0], action.declare)
        events.append(Declared(side, action.declare))

    after = State(
        dwarfs=dwarfs,
        trolls=trolls,
        dwarf_slots=dwarf_slots,
        troll_slots=troll_slots,
        ply=state.ply + 1,
        declared=declared,
        previous_move=move,
        end_reason=_end_reason(state.ply, dwarfs, trolls, declared),
    )
    if after.end_reason is None and not _has_legal_move(after):
        after = replace(after, end_reason=NO_LEGAL_MOVES)
    if after.end_reason is not None:
        events.append(GameEnded(after.end_reason))
    return after, events


def _legal_move(state: State, side: Side, wanted: Move | tuple[Square, Square]) -> Move:
    start, end = (wanted.start, wanted.end) if isinstance(wanted, Move) else wanted
    if not is_square(*start):
        raise ActionRejected(ILLEGAL, f"{list(start)} is not a square of the board")
    own = DWARF_PIECE if side == DWARF else TROLL_PIECE
    cells = state.cells
    if cells[cell_of(start)] != own:
        raise ActionRejected(ILLEGAL, f"there is no {side} on {list(start)}")
    for move in _moves_from_cell(cells, cell_of(start)):
        if move.end == end:
            if isinstance(wanted, Move) and wanted != move:
                raise ActionRejected(
                    ILLEGAL, f"in this position {start} to {end} is {move}, not {wanted}"
                )
            return move
    raise ActionRejected(ILLEGAL, f"the {side} on {list(start)} cannot move to {list(end)}")


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
) -> str | None:
    """The engine's checks after each move, first match wins (it compares the ply just played)."""
    if played_ply >= MAX_PLIES:
        return TIMEOUT
    if not dwarfs:
        return NO_MORE_DWARFS
    if not trolls:
        return NO_MORE_TROLLS
    if all(declared):
        return AGREED
    return None


class ThudRules(Rules[State, Action | Stop, Action | Stop]):
    """Thud as the king-of-the-hill engine plays it; it has one board and one set of rules."""

    def initial_state(self, players: Sequence[Player]) -> State:
        return initial_state()

    def to_move(self, state: State) -> int:
        return SIDES.index(side_to_move(state))

    def check(self, state: State, seat: int, candidate: Action | Stop) -> Action | Stop:
        if seat != self.to_move(state):
            raise ActionRejected("Not your turn", f"the {side_to_move(state)}s move now")
        return check(state, candidate)

    def apply(
        self, state: State, seat: int, action: Action | Stop, rng: RandomSource
    ) -> tuple[State, list[ThudEvent]]:
        return apply(state, action)

    def outcome(self, state: State) -> Outcome | None:
        return outcome(state)

    def timeout_action(self, state: State, seat: int) -> None:
        # Thud has no pass: a side that does not move loses.
        return None

    def scores(self, state: State) -> tuple[int, int]:
        result = score(state)
        return result.dwarfs, result.trolls
