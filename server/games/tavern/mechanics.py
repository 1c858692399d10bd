"""How the pieces move, copied from the original ``Simulation.js`` move for move (the module
``rules`` says why): the board's geometry, and one team's orders played on a board. Pure."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from server.games.base import RandomSource
from server.games.tavern.pieces import (
    BarrelMoved,
    Coords,
    Direction,
    Dwarf,
    DwarfHit,
    DwarfMoved,
    Event,
    Order,
    State,
    moved_dwarf,
)

# --- the mechanics ---------------------------------------------------------------------------
# Cells are numbered ``y * width + x``.

_STEPS = ((0, -1), (1, 0), (0, 1), (-1, 0))
"""One cell in each ``Direction``, indexed by its number."""

_THROWS = (
    ((-1, -1), (0, -2), (1, -1)),
    ((1, -1), (2, 0), (1, 1)),
    ((-1, 1), (0, 2), (1, 1)),
    ((-1, -1), (-2, 0), (-1, 1)),
)
"""Where a dwarf pushed in a ``Direction`` is thrown, by the random kind 0, 1 or 2."""


class _Geometry:
    """Where each move lands on one board size, worked out once instead of on every move.

    The original clamps each axis on its own, so a move lands on ``rows[y] + columns[x]``
    (``rows`` hold ``y * width``), tables that stay small on the largest boards. Steps, the
    commonest move, are also flattened into one table by cell. ``coords[cell]`` is the cell's
    ``Coords``: turns share them instead of making new ones (they are immutable).
    """

    __slots__ = (
        "barrel_columns",
        "barrel_rows",
        "coords",
        "steps",
        "throw_columns",
        "throw_rows",
        "width",
    )

    def __init__(self, width: int, height: int) -> None:
        rows, columns = range(height), range(width)
        self.width = width
        self.coords = tuple(Coords(x, y) for y in rows for x in columns)
        # moveBot, by direction: one step, the outer wall keeping the dwarf in place.
        step_rows = [[min(max(y + dy, 0), height - 1) * width for y in rows] for _, dy in _STEPS]
        step_columns = [[min(max(x + dx, 0), width - 1) for x in columns] for dx, _ in _STEPS]
        self.steps = tuple(
            tuple(row + column for row in row_table for column in column_table)
            for row_table, column_table in zip(step_rows, step_columns, strict=True)
        )
        # hitBot, by direction and kind, clamped in the original's order (B11: row 0 allowed,
        # row h-1 and the side columns not).
        self.throw_rows = tuple(
            tuple(tuple(min(max(y + dy, 0), height - 2) * width for y in rows) for _, dy in kinds)
            for kinds in _THROWS
        )
        self.throw_columns = tuple(
            tuple(tuple(max(min(x + dx, width - 2), 1) for x in columns) for dx, _ in kinds)
            for kinds in _THROWS
        )
        # moveBarrel, by team and direction (NORTH, EAST, SOUTH, WEST): never into its own
        # team's home row (team1's barrel never onto row h-1, team2's never onto row 0), nor
        # into columns 0 and w-1.
        self.barrel_rows = tuple(
            (
                tuple(max(y - 1, team) * width for y in rows),
                tuple(y * width for y in rows),
                tuple(min(y + 1, height - 2 + team) * width for y in rows),
                tuple(y * width for y in rows),
            )
            for team in (0, 1)
        )
        self.barrel_columns = (
            tuple(columns),
            tuple(min(x + 1, width - 2) for x in columns),
            tuple(columns),
            tuple(max(x - 1, 1) for x in columns),
        )


@functools.lru_cache(maxsize=4)
def _geometry(width: int, height: int) -> _Geometry:
    """One ``_Geometry`` per board size (an arena plays very few)."""
    return _Geometry(width, height)


def move_pieces(
    state: State, orders: Sequence[Order], rng: RandomSource
) -> tuple[tuple[Dwarf, ...], tuple[Coords, Coords], list[Event]]:
    """``play_orders`` without building a ``State``: the pieces after, and the events."""
    if not orders:
        return state.dwarves, state.barrels, []
    board = _Board(state, rng)
    dwarves = state.dwarves
    index_by_id: dict[int, int] | None = None
    for order in orders:
        direction = order.direction
        if direction is None:
            continue
        index = order.bot_id - 1
        if not (0 <= index < len(dwarves) and dwarves[index].id == order.bot_id):
            # ``initial_state`` numbers the dwarves 1.. in order, so only an unknown id or a
            # position built by hand gets here.
            if index_by_id is None:
                index_by_id = {dwarf.id: index for index, dwarf in enumerate(dwarves)}
            index = index_by_id.get(order.bot_id, -1)
            if index < 0:
                continue
        board.move_dwarf(index, direction)
    return board.result(state)


_EMPTY = 0
_new_tuple = tuple.__new__
"""Builds an event (a ``NamedTuple``) from its fields' tuple without the Python-level
``__new__`` that ``DwarfMoved(...)`` calls: the same object, in 40% of the time (a turn makes
five to seven)."""


class _Board:
    """The pieces during one turn; mirrors the original's grid and model.

    ``cells`` is the original's grid: _EMPTY, a dwarf as its index in ``dwarves`` plus one, or
    a barrel as -(team + 1). Each push first clears the pusher's cell, then pushes whatever is
    on its target, and moves in only if that cell is empty afterwards; otherwise it stays (the
    original's rule). Events are emitted before their consequences, so each is inserted at the
    slot it reserved once its end cell is known.
    """

    __slots__ = (
        "barrel_starts",
        "barrels",
        "cells",
        "dwarf_cells",
        "dwarf_starts",
        "dwarves",
        "events",
        "geometry",
        "rng",
    )

    def __init__(self, state: State, rng: RandomSource) -> None:
        width = state.settings.width
        self.geometry = _geometry(width, state.settings.height)
        self.rng = rng
        self.dwarves = state.dwarves
        # One loop for the dwarves' cells and the grid (a comprehension and a second loop took
        # a fifth longer).
        cells = self.cells = [_EMPTY] * len(self.geometry.coords)
        starts: list[int] = []
        self.dwarf_starts = starts
        number = 0
        for dwarf in state.dwarves:
            coords = dwarf.coords
            cell = coords.y * width + coords.x
            starts.append(cell)
            number += 1  # noqa: SIM113  # enumerate's tuples cost a tenth of the loop
            cells[cell] = number
        self.dwarf_cells = starts.copy()
        team1_barrel, team2_barrel = state.barrels
        team1_cell = team1_barrel.y * width + team1_barrel.x
        team2_cell = team2_barrel.y * width + team2_barrel.x
        self.barrel_starts = (team1_cell, team2_cell)
        self.barrels = [team1_cell, team2_cell]
        cells[team1_cell] = -1
        cells[team2_cell] = -2
        self.events: list[Event] = []

    def move_dwarf(self, index: int, direction: Direction, kind: int | None = None) -> None:
        """moveBot (``kind`` None): one step, the outer wall keeping the dwarf in place; or
        hitBot: thrown with pattern ``kind``, drawn by the pusher before knowing if it is
        blocked. One method for both saves a call per move."""
        start = self.dwarf_cells[index]
        geometry = self.geometry
        if kind is None:
            target = geometry.steps[direction][start]
        else:
            y, x = divmod(start, geometry.width)
            target = (
                geometry.throw_rows[direction][kind][y] + geometry.throw_columns[direction][kind][x]
            )
        events = self.events
        slot = len(events)
        cells = self.cells
        cells[start] = _EMPTY
        occupant = cells[target]
        if occupant > 0:
            self.move_dwarf(occupant - 1, direction, self.rng.randrange(3))
        elif occupant < 0:
            self.move_barrel(-occupant - 1, direction)
        if cells[target] != _EMPTY:
            target = start
        cells[target] = index + 1
        self.dwarf_cells[index] = target
        dwarf = self.dwarves[index]
        coords = geometry.coords
        events.insert(
            slot,
            _new_tuple(DwarfMoved, (dwarf.id, dwarf.name, direction, coords[start], coords[target]))
            if kind is None
            else _new_tuple(
                DwarfHit, (dwarf.id, dwarf.name, direction, kind, coords[start], coords[target])
            ),
        )

    def move_barrel(self, team: int, direction: Direction) -> None:
        """moveBarrel: never into columns 0 and w-1 nor into its own team's home row, and
        never into another barrel; a dwarf in the way is thrown, on every row (B13 fixed)."""
        start = self.barrels[team]
        geometry = self.geometry
        y, x = divmod(start, geometry.width)
        target = geometry.barrel_rows[team][direction][y] + geometry.barrel_columns[direction][x]
        events = self.events
        slot = len(events)
        cells = self.cells
        cells[start] = _EMPTY
        occupant = cells[target]
        if occupant > 0:
            self.move_dwarf(occupant - 1, direction, self.rng.randrange(3))
        if occupant < 0 or cells[target] != _EMPTY:
            target = start
        cells[target] = -(team + 1)
        self.barrels[team] = target
        coords = geometry.coords
        events.insert(
            slot, _new_tuple(BarrelMoved, (team, direction, coords[start], coords[target]))
        )

    def result(self, state: State) -> tuple[tuple[Dwarf, ...], tuple[Coords, Coords], list[Event]]:
        """The pieces where they ended; unmoved pieces are the same objects as in ``state``."""
        coords = self.geometry.coords
        dwarves = list(self.dwarves)
        starts = self.dwarf_starts
        for index, cell in enumerate(self.dwarf_cells):
            if cell != starts[index]:
                dwarves[index] = moved_dwarf(dwarves[index], coords[cell])
        team1_barrel, team2_barrel = state.barrels
        (team1_start, team2_start), (team1_cell, team2_cell) = self.barrel_starts, self.barrels
        if team1_cell != team1_start:
            team1_barrel = coords[team1_cell]
        if team2_cell != team2_start:
            team2_barrel = coords[team2_cell]
        return tuple(dwarves), (team1_barrel, team2_barrel), self.events
