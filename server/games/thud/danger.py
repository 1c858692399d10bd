"""The engine's ``in_danger`` heuristic, which its clients are shown for each square. Pure."""

from __future__ import annotations

from server.games.thud.board import (
    CELL_SQUARE,
    NEAR,
    NEIGHBOURS,
    RAY_SLICES,
    RAYS,
    SIZE,
    Square,
    cell_of,
    is_square,
)
from server.games.thud.movegen import DWARF_BYTE, in_a_row, shove_landings
from server.games.thud.pieces import DWARF, OPPOSITE, TROLL, TROLL_PIECE, Side, State

# --- in_danger ---------------------------------------------------------------------------------


def _dwarf_danger(state: State) -> set[int]:
    """Cells within 2 of a troll, or next to where a troll could be shoved (dwarfs or not)."""
    cells = state.cells
    danger: set[int] = set()
    for x, y in state.trolls:
        cell = x + SIZE * y
        danger.update(NEAR[cell])
        for landing, _ in shove_landings(cells, cell):
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
            behind = in_a_row(cells, RAY_SLICES[cell][OPPOSITE[direction]], DWARF_BYTE)
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
