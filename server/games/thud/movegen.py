"""Thud's move generation, exactly as the engine orders it (pieces in engine order, then each
piece's moves in the order of its ``space_info().moves``), and fast: the hot path of every turn
and of the house players' search. Pure."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Final, Generic, NamedTuple, TypeAlias, TypeVar

from server.games.thud.board import (
    CELL_COUNT,
    CELL_SQUARE,
    NEAR,
    NEIGHBOURS,
    RAY_SLICES,
    RAYS,
    SIZE,
    SQUARES,
    Square,
    cell_of,
    is_square,
)
from server.games.thud.pieces import (
    DWARF,
    DWARF_PIECE,
    EMPTY,
    OPPOSITE,
    TROLL_PIECE,
    Move,
    MoveKind,
    Side,
    State,
    mask,
    slot_setters,
)

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
DWARF_BYTE: Final = bytes([DWARF_PIECE])
_TROLL_BYTE: Final = bytes([TROLL_PIECE])
_DWARF_LINES: Final = tuple(DWARF_BYTE * length for length in range(SIZE))
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
    hurl = (len(ray), _HURL_RUNS[cell][direction], RAY_SLICES[cell][OPPOSITE[direction]])
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


_AROUND: Final = tuple(map(mask, NEIGHBOURS))
"""``_AROUND[cell]``: the mask of the squares next to ``cell`` (shared by the tables below)."""


def _troll_square(cell: int) -> _TrollSquare:
    rays = RAYS[cell]
    return _TrollSquare(
        mask(NEAR[cell]),
        _AROUND[cell],
        tuple(
            (
                ray[0],
                rays[OPPOSITE[direction]][0],
                RAY_SLICES[cell][OPPOSITE[direction]],
                tuple((end, _AROUND[end]) for end in ray[1:]),
            )
            for direction, ray in enumerate(rays)
            if len(ray) > 1 and rays[OPPOSITE[direction]]
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
    the squares of the dwarfs it kills as bits (see ``mask``), as a run of its own."""


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


def in_a_row(cells: bytes, ray: slice, piece: bytes) -> int:
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


_MOVE_SETTERS: Final = slot_setters(Move)


def _killing(cells: bytes, start: Square, end: int, kind: MoveKind, killing: int) -> Run:
    """A troll's move onto ``end``, killing the dwarfs next to it, as a run of its own.

    The ``Move`` is built by storing its slots (``slot_setters``): a trolls' turn makes a
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


def shove_landings(cells: bytes, cell: int) -> Iterator[tuple[int, int]]:
    """Empty cells at distance 2..(trolls in line) with a clear path, by direction then distance,
    each with the mask of the squares next to it.

    These are the troll's shoves before the engine's "a dwarf must be adjacent" condition.
    """
    for first, back, behind, landings in _TROLL_SQUARES[cell].shoves:
        if cells[back] == TROLL_PIECE and not cells[first]:
            for end, around in landings[: in_a_row(cells, behind, _TROLL_BYTE)]:
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
            for end, around in shove_landings(cells, cell):
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


def runs_toward(state: State, start: Square, end: Square) -> list[Run]:
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


def has_legal_move(cells: bytes, side: Side, pieces: tuple[Square, ...]) -> bool:
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
