"""The pieces of a Dwarven Tavern game and what happens to them: directions, orders, settings,
dwarves, the state between turns, the events of a turn, and the fast builders of the dwarves
and states a turn makes. Pure."""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import IntEnum
from typing import NamedTuple

from server.games.base import Outcome

TEAM_NAMES = ("team1", "team2")  # as the original names the teams: team 0 is team1


class Direction(IntEnum):
    """The original's direction enum; the numbers appear in event texts."""

    NORTH = 0
    EAST = 1
    SOUTH = 2
    WEST = 3


class MessageType(IntEnum):
    """The original's visor message types (``BOT_MOVE`` is used for barrels too)."""

    BOT_MOVE = 0
    BARREL_HIT = 1  # the original uses it for every hit, dwarves included
    SCORE = 3  # defined but never emitted by the original


@dataclass(frozen=True, slots=True)
class Coords:
    """A cell: ``x`` is the column (0 = west), ``y`` the row (0 = north, team2's home row)."""

    x: int
    y: int


@dataclass(frozen=True, slots=True)
class Order:
    """One dwarf's action in a turn; ``direction`` ``None`` is a PASS."""

    bot_id: int
    direction: Direction | None


@dataclass(frozen=True, slots=True)
class Settings:
    """The tavern's size, goals and starting layout (the original's ``config.json``).

    ``turn_limit`` is the arena's addition: once ``current_turn >= turn_limit`` after a turn, the
    game ends on points. ``dwarf_starts[team]`` also fixes how many dwarves a team has.
    """

    width: int
    height: int
    points_to_win: int
    turn_limit: int
    barrel_starts: tuple[Coords, Coords]
    dwarf_starts: tuple[tuple[Coords, ...], tuple[Coords, ...]]

    def __post_init__(self) -> None:
        # The no-shared-cell invariant and the barrel clamps both assume a sane layout.
        if self.width < 3 or self.height < 3:
            raise ValueError("the tavern must be at least 3x3")
        cells = [*self.barrel_starts, *self.dwarf_starts[0], *self.dwarf_starts[1]]
        for cell in cells:
            if not (0 <= cell.x < self.width and 0 <= cell.y < self.height):
                raise ValueError(f"start {cell} is outside the tavern")
        if len(set(cells)) != len(cells):
            raise ValueError("two pieces start on the same cell")
        # A barrel never stands in an edge column nor in its own home row, and one that starts
        # on the other home row would score before anyone moved.
        for team, barrel in enumerate(self.barrel_starts):
            if barrel.x in (0, self.width - 1) or barrel.y in (0, self.height - 1):
                raise ValueError(f"team{team + 1}'s barrel cannot start on an edge row or column")


@dataclass(frozen=True, slots=True)
class Dwarf:
    """A dwarf; ``team`` 0 is team1 (the first to join), 1 is team2."""

    id: int
    team: int
    name: str
    coords: Coords


@dataclass(frozen=True, slots=True)
class State:
    """The whole game between two turns.

    ``dwarves`` are ordered by id (team1's first). ``barrels`` and ``scores`` are indexed by
    team. ``current_turn`` counts the turns played, passes included, never reset by a point.
    """

    settings: Settings
    dwarves: tuple[Dwarf, ...]
    barrels: tuple[Coords, Coords]
    scores: tuple[int, int]
    current_turn: int
    to_move: int
    outcome: Outcome | None


@dataclass(frozen=True, slots=True)
class Position:
    """Where the pieces stood, e.g. at the moment a point was scored (before the restart)."""

    dwarves: tuple[Dwarf, ...]
    barrels: tuple[Coords, Coords]


# The move events are NamedTuples: a real turn makes about seven, and a NamedTuple is built in
# less than half a frozen dataclass's time. Each kind has its own number of fields, so events of
# different kinds never compare equal (test_move_events_equal_only_events_of_their_kind).


class DwarfMoved(NamedTuple):
    """A dwarf carried out a move order; emitted even when it stays (``start == end``)."""

    dwarf_id: int
    name: str
    direction: Direction
    start: Coords
    end: Coords


class BarrelMoved(NamedTuple):
    """A barrel was pushed; emitted even when it stays (``start == end``)."""

    team: int
    direction: Direction
    start: Coords
    end: Coords


class DwarfHit(NamedTuple):
    """A dwarf was pushed and thrown with pattern ``kind`` (0, 1 or 2, the random draw)."""

    dwarf_id: int
    name: str
    direction: Direction
    kind: int
    start: Coords
    end: Coords


@dataclass(frozen=True, slots=True)
class PointScored:
    """``team`` scored; ``scores`` are the scores after the whole turn (both points counted)."""

    team: int
    scores: tuple[int, int]
    position: Position


@dataclass(frozen=True, slots=True)
class BoardReset:
    """After a point that did not end the game, every piece went back to its start."""


MoveEvent = DwarfMoved | BarrelMoved | DwarfHit
"""The events the original logged in a visor ``turn``'s messages (``isinstance`` works on it)."""

Event = DwarfMoved | BarrelMoved | DwarfHit | PointScored | BoardReset


# --- building the results --------------------------------------------------------------------
# A frozen dataclass's ``__init__`` stores each field through ``object.__setattr__``: building
# the five or so dwarves that moved and the new ``State`` that way cost about 1.5 us of a real
# turn's 13. These make the very same objects by storing their slots directly, in field order
# (test_results_are_ordinary_frozen_objects compares them with what ``__init__`` makes).

_new_object = object.__new__
_DWARF_SETTERS = tuple(getattr(Dwarf, field.name).__set__ for field in fields(Dwarf))
_STATE_SETTERS = tuple(getattr(State, field.name).__set__ for field in fields(State))


def moved_dwarf(dwarf: Dwarf, coords: Coords) -> Dwarf:
    """``Dwarf(dwarf.id, dwarf.team, dwarf.name, coords)``, built directly."""
    set_id, set_team, set_name, set_coords = _DWARF_SETTERS
    moved: Dwarf = _new_object(Dwarf)
    set_id(moved, dwarf.id)
    set_team(moved, dwarf.team)
    set_name(moved, dwarf.name)
    set_coords(moved, coords)
    return moved


def new_state(
    settings: Settings,
    dwarves: tuple[Dwarf, ...],
    barrels: tuple[Coords, Coords],
    scores: tuple[int, int],
    current_turn: int,
    to_move: int,
    outcome: Outcome | None,
) -> State:
    """``State(settings, dwarves, ...)``, built directly."""
    set_settings, set_dwarves, set_barrels, set_scores, set_turn, set_to_move, set_outcome = (
        _STATE_SETTERS
    )
    state: State = _new_object(State)
    set_settings(state, settings)
    set_dwarves(state, dwarves)
    set_barrels(state, barrels)
    set_scores(state, scores)
    set_turn(state, current_turn)
    set_to_move(state, to_move)
    set_outcome(state, outcome)
    return state
