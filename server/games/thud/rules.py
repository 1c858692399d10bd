"""Thud exactly as the AJFaraday/Thud king-of-the-hill engine plays it: pure rules, no I/O.

Everything a client can observe is reproduced: the legal move set, its order (pieces in engine
order, then each piece's moves in the order of the engine's ``space_info().moves``), the kills,
the engine's ``in_danger`` heuristic, piece order after moves and captures, and the end checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from itertools import chain, pairwise
from typing import Any, Final, Generic, Literal, NamedTuple, TypeAlias, TypeVar

from server.errors import BotError
from server.games.base import ActionRejected, Outcome, Player, RandomSource, Rules
from server.games.thud.board import (
    CELL_COUNT,
    CELL_SQUARE,
    DIRECTIONS,
    NEAR,
    NEIGHBOURS,
    RAY_SLICES,
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
    "Run",
    "RunTables",
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
    "legal_move_runs",
    "legal_move_runs_as",
    "legal_moves",
    "make_action",
    "moves_from",
    "outcome",
    "points",
    "run_tables",
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

# What a cell of ``State.cells`` holds.
EMPTY: Final = 0
DWARF_PIECE: Final = 1
TROLL_PIECE: Final = 2

_OPPOSITE: Final = tuple(opposite(d) for d in range(len(DIRECTIONS)))


def _mask(cells: Iterable[int]) -> int:
    """Bit ``cell`` set for each of ``cells``: with a side's pieces as such bits
    (``State.dwarf_bits``), ``pieces & mask`` asks about many squares at once, in C."""
    return sum(1 << cell for cell in cells)


def _slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """Each field's slot setter of a frozen slotted dataclass, in field order.

    Storing the slots directly builds the very object ``cls(...)`` makes, in less than half the
    time: a frozen dataclass's ``__init__`` goes through ``object.__setattr__`` for each field.
    The few objects made every turn (a state, its move's event, the actions) are built so.
    """
    return tuple(getattr(cls, field.name).__set__ for field in fields(cls))


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
    turn; clients written for it rely on it (see server/games/thud/web/thud-client.js).
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
    dwarf_bits: int = field(init=False, repr=False, compare=False)
    """Bit ``cell`` set where a dwarf stands (derived: a troll's moves test masks of squares
    on it; 225 bits, where ``int.from_bytes(cells)`` would take 1,800 and each test seven
    times as long)."""
    troll_bits: int = field(init=False, repr=False, compare=False)
    """Bit ``cell`` set where a troll stands (derived, as ``dwarf_bits``)."""

    def __post_init__(self) -> None:
        dwarfs = [x + SIZE * y for x, y in self.dwarfs]
        trolls = [x + SIZE * y for x, y in self.trolls]
        board = bytearray(CELL_COUNT)
        for cell in dwarfs:
            board[cell] = DWARF_PIECE
        for cell in trolls:
            board[cell] = TROLL_PIECE
        object.__setattr__(self, "cells", bytes(board))
        object.__setattr__(self, "dwarf_bits", _mask(dwarfs))
        object.__setattr__(self, "troll_bits", _mask(trolls))


class Score(NamedTuple):
    """The engine's material score: 1 point per dwarf, 4 per troll.

    A named tuple rather than a frozen dataclass: every turn message builds two, and a frozen
    dataclass's ``__init__`` takes more than twice as long.
    """

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

_ACTION_SETTERS: Final = _slot_setters(Action)
_PIECE_MOVED_SETTERS: Final = _slot_setters(PieceMoved)


def make_action(move: Move | tuple[Square, Square], declare: bool | None) -> Action:
    """``Action(move, declare)``, built by its slots (``_slot_setters``): a turn makes two (a
    bot's candidate, then the checked action)."""
    set_move, set_declare = _ACTION_SETTERS
    action: Action = object.__new__(Action)
    set_move(action, move)
    set_declare(action, declare)
    return action


def _piece_moved(side: Side, move: Move) -> PieceMoved:
    """``PieceMoved(side, move)``, built by its slots (``_slot_setters``): one a turn."""
    set_side, set_move = _PIECE_MOVED_SETTERS
    event: PieceMoved = object.__new__(PieceMoved)
    set_side(event, side)
    set_move(event, move)
    return event


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
    return Score(*points(state))


def points(state: State) -> tuple[int, int]:
    """``score`` as a plain (dwarfs, trolls) pair: every turn message reads it twice, and a
    named tuple takes several times as long to make."""
    return len(state.dwarfs), TROLL_VALUE * len(state.trolls)


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
# Moves come out in runs, tuples of consecutive moves: a dwarf's walks in one direction are one
# prebuilt run, so generating them is one slice of the board and one append. Generation reads its
# runs from tables (``RunTables``) that a reader may rebuild with each run in its own form (the
# codec: each run's JSON), so that one generator serves both and the reader's form of a run is
# made once for good.

Run: TypeAlias = tuple[Move, ...]
"""Consecutive legal moves; ``legal_move_runs`` hands out runs whose concatenation is
``legal_moves``."""

_EMPTY_BYTE: Final = bytes([EMPTY])
_DWARF_BYTE: Final = bytes([DWARF_PIECE])
_TROLL_BYTE: Final = bytes([TROLL_PIECE])
_DWARF_LINES: Final = tuple(_DWARF_BYTE * length for length in range(SIZE))
"""``_DWARF_LINES[n]``: n dwarfs in a row, as the board's bytes show them."""


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

_WALK_RUNS: Final = tuple(
    tuple(tuple(walks[:length] for length in range(1, len(walks) + 1)) for walks in rays)
    for rays in _WALKS
)
"""``_WALK_RUNS[cell][direction][k]``: the first k + 1 walks along the ray, as one run."""
_HURL_RUNS: Final = tuple(
    tuple(tuple((hurl,) for hurl in hurls) for hurls in rays) for rays in _HURLS
)

RunForm = TypeVar("RunForm")
"""A reader's form of a run of moves (``Run`` itself for the rules; its JSON for the codec)."""

_DwarfRay: TypeAlias = tuple[
    slice, tuple[RunForm | None, ...], tuple[int, tuple[RunForm, ...], slice]
]
_TrollStep: TypeAlias = tuple[int, int, RunForm]


def _dwarf_ray(cell: int, direction: int) -> _DwarfRay[Run]:
    ray = RAYS[cell][direction]
    walks_by_rest = (*reversed(_WALK_RUNS[cell][direction]), ())
    hurl = (len(ray), _HURL_RUNS[cell][direction], RAY_SLICES[cell][_OPPOSITE[direction]])
    return RAY_SLICES[cell][direction], walks_by_rest, hurl


_DWARF_RAYS: Final = tuple(
    tuple(_dwarf_ray(cell, direction) for direction, ray in enumerate(rays) if ray)
    for cell, rays in enumerate(RAYS)
)
"""``_DWARF_RAYS[cell]``: for each direction with a square, the ray's slice of the board, its
walk runs by the number of squares left from the first piece on (``len(ray)`` when it is next to
the dwarf, 0 when the ray is clear), and for a hurl: the ray's length, its hurls (one run each,
by distance) and the slice of the ray behind the dwarf."""


class _TrollSquare(NamedTuple):
    """What a troll's move generation looks up for the square it stands on."""

    near: int
    """The mask of the squares within two: with no dwarf there, no walk of this troll kills."""
    around: int
    """The mask of the squares next to it: with no troll there, it has no shove."""
    shoves: tuple[tuple[int, int, slice, tuple[tuple[int, int], ...]], ...]
    """Per direction a shove could go (two squares ahead, one behind): the first square ahead,
    the first behind, the slice of the ray behind, and each landing from distance 2 on with the
    mask of the squares next to it."""


_AROUND: Final = tuple(map(_mask, NEIGHBOURS))
"""``_AROUND[cell]``: the mask of the squares next to ``cell`` (shared by the tables below)."""


def _troll_square(cell: int) -> _TrollSquare:
    rays = RAYS[cell]
    return _TrollSquare(
        _mask(NEAR[cell]),
        _AROUND[cell],
        tuple(
            (
                ray[0],
                rays[_OPPOSITE[direction]][0],
                RAY_SLICES[cell][_OPPOSITE[direction]],
                tuple((end, _AROUND[end]) for end in ray[1:]),
            )
            for direction, ray in enumerate(rays)
            if len(ray) > 1 and rays[_OPPOSITE[direction]]
        ),
    )


_TROLL_SQUARES: Final = {cell_of(square): _troll_square(cell_of(square)) for square in SQUARES}

_TROLL_STEPS: Final = tuple(
    tuple(
        (ray[0], _AROUND[ray[0]], _WALK_RUNS[cell][direction][0])
        for direction, ray in enumerate(rays)
        if ray
    )
    for cell, rays in enumerate(RAYS)
)
"""``_TROLL_STEPS[cell]``: per direction with a square, the neighbour, the mask of the squares
next to that one, and the walk there (as a run) for when it kills nothing."""


@dataclass(frozen=True, slots=True)
class RunTables(Generic[RunForm]):
    """Move generation's tables of prebuilt runs, each run in a reader's form ``RunForm``.

    Generation appends what it reads here, so a reader gets its form of each run with no
    lookup; ``killing`` makes a troll's move that kills (built for its position). An empty run
    (a dwarf's ray blocked next to it) is ``None`` in every form: generation skips it.
    """

    dwarf_rays: tuple[tuple[_DwarfRay[RunForm], ...], ...]
    """``_DWARF_RAYS`` in the reader's form."""
    troll_steps: tuple[tuple[_TrollStep[RunForm], ...], ...]
    """``_TROLL_STEPS`` in the reader's form."""
    killing: Callable[[bytes, Square, int, MoveKind, int], RunForm]
    """A troll's move from ``start`` onto the cell ``end`` of this board, of ``kind``, with
    the squares of the dwarfs it kills as bits (see ``_mask``), as a run of its own."""


def run_tables(
    form: Callable[[Run], RunForm], killing: Callable[[bytes, Square, int, MoveKind, int], RunForm]
) -> RunTables[RunForm]:
    """The generator's tables with each prebuilt run as ``form`` makes it, made once (at a
    reader's import): ``form`` is called once per prebuilt run."""
    return RunTables(
        tuple(
            tuple(
                (
                    ray,
                    tuple(form(run) if run else None for run in walks),
                    (length, tuple(map(form, hurls)), behind),
                )
                for ray, walks, (length, hurls, behind) in rays
            )
            for rays in _DWARF_RAYS
        ),
        tuple(
            tuple((end, around, form(walk)) for end, around, walk in steps)
            for steps in _TROLL_STEPS
        ),
        killing,
    )


def _in_a_row(cells: bytes, ray: slice, piece: bytes) -> int:
    """How many ``piece``s stand in a row along ``ray`` from its first square."""
    along = cells[ray]
    return len(along) - len(along.lstrip(piece))


def _dwarf_runs(
    cells: bytes, rays_by_dwarf: Iterable[Iterable[_DwarfRay[RunForm]]]
) -> list[RunForm]:
    """Dwarf by dwarf, along each of its rays given (its entries of ``RunTables.dwarf_rays``):
    the walks by distance, then the hurl onto the first troll if in reach. (One call for all
    the dwarfs: this loop is most of a dwarfs' turn.)"""
    runs: list[RunForm] = []
    for rays in rays_by_dwarf:
        for ray, walks_by_rest, hurl in rays:
            rest = cells[ray].lstrip(_EMPTY_BYTE)  # from the first piece on the ray
            walks = walks_by_rest[len(rest)]
            if walks is not None:
                runs.append(walks)
            if rest >= _TROLL_BYTE:  # it starts with a troll (pieces are 1 and 2)
                length, hurls, behind = hurl
                distance = length - len(rest)
                # distance + 1 dwarfs in a line, this one at its front, reach the troll.
                if cells[behind].startswith(_DWARF_LINES[distance]):
                    runs.append(hurls[distance])
    return runs


def _adjacent_dwarfs(cells: bytes, cell: int) -> tuple[Square, ...]:
    return tuple([CELL_SQUARE[n] for n in NEIGHBOURS[cell] if cells[n] == DWARF_PIECE])


_MOVE_SETTERS: Final = _slot_setters(Move)


def _killing(cells: bytes, start: Square, end: int, kind: MoveKind, killing: int) -> Run:
    """A troll's move onto ``end``, killing the dwarfs next to it, as a run of its own.

    The ``Move`` is built by storing its slots (``_slot_setters``): a trolls' turn makes a
    dozen. The dwarfs' squares are read from the board; ``killing``, their mask, serves readers
    that only count them.
    """
    set_start, set_end, set_kind, set_killed = _MOVE_SETTERS
    move: Move = object.__new__(Move)
    set_start(move, start)
    set_end(move, CELL_SQUARE[end])
    set_kind(move, kind)
    set_killed(move, _adjacent_dwarfs(cells, end))
    return (move,)


def _shove_landings(cells: bytes, cell: int) -> Iterator[tuple[int, int]]:
    """Empty cells at distance 2..(trolls in line) with a clear path, by direction then distance,
    each with the mask of the squares next to it.

    These are the troll's shoves before the engine's "a dwarf must be adjacent" condition.
    """
    for first, back, behind, landings in _TROLL_SQUARES[cell].shoves:
        if cells[back] == TROLL_PIECE and not cells[first]:
            for end, around in landings[: _in_a_row(cells, behind, _TROLL_BYTE)]:
                if cells[end]:
                    break
                yield end, around


def _troll_runs(
    state: State, trolls: Iterable[Square], tables: RunTables[RunForm], toward: int = -1
) -> list[RunForm]:
    """Troll by troll (of ``state``'s ``trolls``): first every walk in direction order, then
    the shoves by direction and distance; with ``toward`` (a cell), only the moves onto it,
    which checking a move needs."""
    runs: list[RunForm] = []
    cells, dwarf_bits, troll_bits = state.cells, state.dwarf_bits, state.troll_bits
    troll_steps, killing_run = tables.troll_steps, tables.killing
    for x, y in trolls:
        cell = x + SIZE * y
        start = CELL_SQUARE[cell]
        near, around_start, _ = _TROLL_SQUARES[cell]
        steps = troll_steps[cell]
        if toward >= 0:
            steps = tuple(step for step in steps if step[0] == toward)
        if dwarf_bits & near:
            for end, around, walk in steps:
                if not cells[end]:
                    killing = dwarf_bits & around
                    runs.append(
                        killing_run(cells, start, end, "walk", killing) if killing else walk
                    )
        else:
            for end, _, walk in steps:
                if not cells[end]:
                    runs.append(walk)
        if troll_bits & around_start:
            for end, around in _shove_landings(cells, cell):
                if toward >= 0 and end != toward:
                    continue
                killing = dwarf_bits & around
                if killing:
                    runs.append(killing_run(cells, start, end, "shove", killing))
    return runs


_RUNS: Final = run_tables(lambda run: run, _killing)
"""The tables with the rules' own runs, for ``legal_moves``, ``moves_from`` and ``check``."""


def _runs_from(state: State, square: Square) -> list[Run]:
    """The runs of whichever piece stands on ``square``, a square of the board."""
    cell = cell_of(square)
    piece = state.cells[cell]
    if piece == DWARF_PIECE:
        return _dwarf_runs(state.cells, (_RUNS.dwarf_rays[cell],))
    if piece == TROLL_PIECE:
        return _troll_runs(state, (square,), _RUNS)
    return []


def _ray_toward(cell: int) -> dict[Square, int]:
    """Each square in line with ``cell`` mapped to the index of its ray among the non-empty
    rays of ``cell`` (as ``_DWARF_RAYS[cell]`` lists them)."""
    return {
        CELL_SQUARE[end]: index
        for index, ray in enumerate(ray for ray in RAYS[cell] if ray)
        for end in ray
    }


_DWARF_RAY_TOWARD: Final = tuple(map(_ray_toward, range(CELL_COUNT)))


def _runs_toward(state: State, start: Square, end: Square) -> list[Run]:
    """The runs of the piece on ``start`` that may hold its move to ``end`` (what checking a
    move needs): a dwarf's along the one ray toward ``end``, a troll's onto ``end``."""
    cell = cell_of(start)
    piece = state.cells[cell]
    if piece == DWARF_PIECE:
        index = _DWARF_RAY_TOWARD[cell].get(end)
        if index is None:
            return []
        return _dwarf_runs(state.cells, ((_RUNS.dwarf_rays[cell][index],),))
    if piece == TROLL_PIECE and is_square(*end):
        return _troll_runs(state, (start,), _RUNS, cell_of(end))
    return []


def legal_move_runs_as(state: State, tables: RunTables[RunForm]) -> list[RunForm]:
    """``legal_moves`` in runs, each in the form of ``tables`` (see ``run_tables``): for
    readers that encode every move."""
    if state.end_reason is not None:
        return []
    if state.ply % 2:
        dwarf_rays = tables.dwarf_rays
        return _dwarf_runs(state.cells, [dwarf_rays[x + SIZE * y] for x, y in state.dwarfs])
    return _troll_runs(state, state.trolls, tables)


def legal_move_runs(state: State) -> list[Run]:
    """``legal_moves`` in runs, whose concatenation is ``legal_moves``."""
    return legal_move_runs_as(state, _RUNS)


def legal_moves(state: State) -> list[Move]:
    """Every move of the side to move, in engine order; none once the game is over."""
    return list(chain.from_iterable(legal_move_runs(state)))


def moves_from(state: State, square: Square) -> list[Move]:
    """The moves of whichever piece stands on ``square`` (like ``space_info().moves``), else []."""
    if not is_square(*square):
        return []
    return list(chain.from_iterable(_runs_from(state, square)))


def _has_legal_move(cells: bytes, side: Side, pieces: tuple[Square, ...]) -> bool:
    """Cheaply, whether ``side``, owning ``pieces``, has a legal move on this board.

    A dwarf can always walk onto an empty neighbour or hurl itself one square onto a troll; a
    troll needs an empty neighbour, since shoves also start with one.
    """
    blocking = (DWARF_PIECE,) if side == DWARF else (DWARF_PIECE, TROLL_PIECE)
    for x, y in pieces:
        for neighbour in NEIGHBOURS[x + SIZE * y]:
            if cells[neighbour] not in blocking:
                return True
    return False


# --- in_danger ---------------------------------------------------------------------------------


def _dwarf_danger(state: State) -> set[int]:
    """Cells within 2 of a troll, or next to where a troll could be shoved (dwarfs or not)."""
    cells = state.cells
    danger: set[int] = set()
    for x, y in state.trolls:
        cell = x + SIZE * y
        danger.update(NEAR[cell])
        for landing, _ in _shove_landings(cells, cell):
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
            behind = _in_a_row(cells, RAY_SLICES[cell][_OPPOSITE[direction]], _DWARF_BYTE)
            if not behind:
                continue  # a lone dwarf reaches one square, which only counts with a troll on it
            for end in ray[1 : behind + 1]:
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
        return replace(state, end_reason=NO_MOVE), [GameEnded(NO_MOVE)]
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

    events: list[ThudEvent] = [_piece_moved(side, move)]
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
        _has_legal_move(cells, TROLL, trolls)
        if side == DWARF
        else _has_legal_move(cells, DWARF, dwarfs)
    ):
        end_reason = NO_LEGAL_MOVES
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


_STATE_SETTERS: Final = _slot_setters(State)


def _state_with_board(
    board: tuple[bytes, int, int],
    dwarfs: tuple[Square, ...],
    trolls: tuple[Square, ...],
    dwarf_slots: tuple[int, ...],
    troll_slots: tuple[int, ...],
    ply: int,
    declared: tuple[bool, bool],
    previous_move: Move,
    end_reason: str | None,
) -> State:
    """``State(...)`` given its board (cells, dwarf bits, troll bits, as ``_board_after`` makes
    them): ``State.__post_init__`` would build them again from every piece, a third of
    ``apply``'s time, where ``apply`` changes only the squares of one move. Sets every slot
    (``_slot_setters``)."""
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
    for move in chain.from_iterable(_runs_toward(state, start, end)):
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
            after = replace(after, end_reason=TIMEOUT)
            events.append(GameEnded(TIMEOUT))
        return after, events

    def outcome(self, state: State) -> Outcome | None:
        return outcome(state)

    def timeout_action(self, state: State, seat: int) -> None:
        # Thud has no pass: a side that does not move loses.
        return None

    def scores(self, state: State) -> tuple[int, int]:
        return points(state)
