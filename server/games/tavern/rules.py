"""The rules of Dwarven Tavern, as the original 2013 Node.js server plays them.

Everything here is pure: a ``State`` goes in, a new ``State`` and the events it caused come out,
and the only randomness is the ``RandomSource`` the caller passes. The mechanics copy the
original ``Simulation.js`` move for move, because bots were written against it: orders are
applied one after the other in the order sent, pushes recurse, each thrown dwarf draws one
``randrange(3)`` before anyone knows whether the throw is blocked (pre-order), the throw clamps
are lopsided (a dwarf can be thrown onto row 0 but never onto row ``height-1`` or the side
columns, bug B11, kept because it is the game), the score is checked once after all orders,
``current_turn`` survives a restart and the non-scorer moves after a point (so an own goal gives
the same team three turns in a row, B5, kept). The arena adds one rule: ``turn_limit`` ends a
game on points (the original could run forever).

Bugs of the original fixed here:

* B4: a team may only order its own dwarves, each at most once per turn, and only on its turn
  (``check_orders``). ``play_orders`` keeps the original's permissive mechanics.
* B6: when both teams score in the same turn both points count; if both reach
  ``points_to_win`` the game is a draw instead of a silent win for team2.
* B12: the number of dwarves comes from the settings (``botsPerPlayer``), not from how many
  names a bot sends.
* B13: no two pieces ever share a cell. The original let a barrel pushed onto a dwarf standing
  on row 0 or row ``height-1`` overwrite it, leaving a "ghost" that later erased whatever stood
  on its cell. Here a barrel throws such a dwarf exactly as on any other row: one more random
  draw, and if the dwarf cannot be thrown the barrel (and its pusher) stay put, so that point
  is not scored.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from enum import IntEnum
from typing import NamedTuple

from server.errors import BotError
from server.games.base import ActionRejected, Outcome, Player, RandomSource, Rules

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


def initial_state(settings: Settings, names: tuple[Sequence[str], Sequence[str]]) -> State:
    """The starting position; ids run 1.. over team1 then team2, as the original numbers them.

    A team has ``len(settings.dwarf_starts[team])`` dwarves whatever it sends (B12 fixed);
    ``names`` only names them, missing ones default to ``"Dwarf <n>"`` and extras are ignored.
    """
    dwarves: list[Dwarf] = []
    for team, starts in enumerate(settings.dwarf_starts):
        team_names = names[team]
        for index, start in enumerate(starts):
            name = team_names[index] if index < len(team_names) else f"Dwarf {index + 1}"
            dwarves.append(Dwarf(len(dwarves) + 1, team, name, start))
    return State(
        settings=settings,
        dwarves=tuple(dwarves),
        barrels=settings.barrel_starts,
        scores=(0, 0),
        current_turn=0,
        to_move=0,
        outcome=None,
    )


def pass_orders() -> tuple[Order, ...]:
    """What a timed-out team plays: no orders. Only the arena plays it; bots cannot."""
    return ()


def check_orders(state: State, team: int, orders: Sequence[Order]) -> tuple[Order, ...]:
    """A bot's turn as ``apply_turn`` may play it; rejects what the original would have played
    although it breaks the rules (B4)."""
    if state.outcome is not None:
        raise ActionRejected(BotError.NOT_YOUR_TURN, "the game is over")
    if team != state.to_move:
        raise ActionRejected(BotError.NOT_YOUR_TURN, f"team{state.to_move + 1} moves now")
    if not orders:
        raise ActionRejected(BotError.INVALID_TURN, "a turn needs at least one action")
    own_ids = {dwarf.id for dwarf in state.dwarves if dwarf.team == team}
    seen: set[int] = set()
    for order in orders:
        if order.bot_id not in own_ids:
            raise ActionRejected(BotError.INVALID_TURN, f"dwarf {order.bot_id} is not one of yours")
        if order.bot_id in seen:
            raise ActionRejected(
                BotError.INVALID_TURN, f"dwarf {order.bot_id} has more than one action"
            )
        seen.add(order.bot_id)
    return tuple(orders)


def apply_turn(
    state: State, team: int, orders: Sequence[Order], rng: RandomSource
) -> tuple[State, list[Event]]:
    """Play one team's turn: the moves, the score check, then the end or the next team.

    ``orders`` are checked (``check_orders``) and not checked again; empty ``orders`` is the
    timed-out pass (``pass_orders``): nothing moves but it counts as a turn.
    """
    settings = state.settings
    dwarves, barrels, events = _play(state, orders, rng)
    scorers = _scoring_teams(barrels, settings.height)
    scores = state.scores
    if scorers:
        scores = (scores[0] + (0 in scorers), scores[1] + (1 in scorers))
    current_turn = state.current_turn + 1
    winners = [scorer for scorer in scorers if scores[scorer] >= settings.points_to_win]
    end: Outcome | None = None
    if len(winners) == 2:
        end = Outcome(None, "Points to win reached by both")
    elif winners:
        end = Outcome(winners[0], "Points to win reached")
    elif current_turn >= settings.turn_limit:
        leader = None if scores[0] == scores[1] else int(scores[1] > scores[0])
        end = Outcome(leader, "Turn limit reached")
    # The original hands the next turn to the non-scorer; when both scored, team1 counts as the
    # scorer, so team2 moves. Otherwise the parity of the turn count decides.
    to_move = current_turn % 2
    if scorers:
        position = Position(dwarves, barrels)
        events.extend(PointScored(scorer, scores, position) for scorer in scorers)
        to_move = int(0 in scorers)
        if end is None:
            # The board restarts after a point, unless the game is over: a finished game keeps
            # the scoring position, which is what the end messages show.
            dwarves, barrels = _starting_dwarves(state), settings.barrel_starts
            events.append(BoardReset())
    return _new_state(settings, dwarves, barrels, scores, current_turn, to_move, end), events


def scoring_teams(state: State) -> tuple[int, ...]:
    """The teams scoring in this position: team1 when team2's barrel is on the bottom row,
    team2 when team1's barrel is on the top row (checked once, after all orders)."""
    return _scoring_teams(state.barrels, state.settings.height)


def _scoring_teams(barrels: tuple[Coords, Coords], height: int) -> tuple[int, ...]:
    """``scoring_teams`` on the barrels alone, so a turn needs no ``State`` to check it."""
    team1_barrel, team2_barrel = barrels
    team2_scores = team1_barrel.y == 0
    if team2_barrel.y == height - 1:
        return (0, 1) if team2_scores else (0,)
    return (1,) if team2_scores else ()


def _starting_dwarves(state: State) -> tuple[Dwarf, ...]:
    """Every dwarf back on its start, keeping ids and names; the n-th dwarf of a team gets its
    team's n-th start."""
    count_by_team = [0, 0]
    dwarves: list[Dwarf] = []
    for dwarf in state.dwarves:
        start = state.settings.dwarf_starts[dwarf.team][count_by_team[dwarf.team]]
        count_by_team[dwarf.team] += 1
        moved = dwarf.coords != start
        dwarves.append(Dwarf(dwarf.id, dwarf.team, dwarf.name, start) if moved else dwarf)
    return tuple(dwarves)


def play_orders(
    state: State, orders: Sequence[Order], rng: RandomSource
) -> tuple[State, list[Event]]:
    """The bare mechanics of the original (SPEC 7): each order in turn, on any dwarf.

    No validation, no score check, no turn counting; orders naming no dwarf are skipped, as
    are passes. Only the pieces change in the returned state.
    """
    dwarves, barrels, events = _play(state, orders, rng)
    return replace(state, dwarves=dwarves, barrels=barrels), events


def event_text(event: Event) -> tuple[int, str]:
    """The original's visor message for an event, as ``(type, text)``.

    Events carry the dwarf's name so no state is needed. The original never logged points or
    restarts; their texts here use its unused ``SCORE`` type, so a layer reproducing the
    original's messages keeps only ``MoveEvent`` instances.
    """
    match event:
        case DwarfMoved(name=name, direction=direction):
            return MessageType.BOT_MOVE, f"{name} moves toward {int(direction)}"
        case BarrelMoved(team=team, direction=direction):
            return MessageType.BOT_MOVE, f"Barrel of team{team + 1} moves toward {int(direction)}"
        case DwarfHit(name=name):
            return MessageType.BARREL_HIT, f"{name} was hit!!"
        case PointScored(team=team):
            return MessageType.SCORE, f"Point for team{team + 1}"
        case BoardReset():
            return MessageType.SCORE, "Every piece is back on its start"


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


def _play(
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
        self.dwarf_starts = [dwarf.coords.y * width + dwarf.coords.x for dwarf in self.dwarves]
        self.dwarf_cells = self.dwarf_starts.copy()
        team1_barrel, team2_barrel = state.barrels
        self.barrel_starts = (
            team1_barrel.y * width + team1_barrel.x,
            team2_barrel.y * width + team2_barrel.x,
        )
        self.barrels = list(self.barrel_starts)
        self.cells = [_EMPTY] * len(self.geometry.coords)
        for number, cell in enumerate(self.dwarf_cells, 1):
            self.cells[cell] = number
        self.cells[self.barrels[0]] = -1
        self.cells[self.barrels[1]] = -2
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
            DwarfMoved(dwarf.id, dwarf.name, direction, coords[start], coords[target])
            if kind is None
            else DwarfHit(dwarf.id, dwarf.name, direction, kind, coords[start], coords[target]),
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
        events.insert(slot, BarrelMoved(team, direction, coords[start], coords[target]))

    def result(self, state: State) -> tuple[tuple[Dwarf, ...], tuple[Coords, Coords], list[Event]]:
        """The pieces where they ended; unmoved pieces are the same objects as in ``state``."""
        coords = self.geometry.coords
        dwarves = list(self.dwarves)
        for index, (start, cell) in enumerate(
            zip(self.dwarf_starts, self.dwarf_cells, strict=True)
        ):
            if start != cell:
                dwarves[index] = _moved_dwarf(dwarves[index], coords[cell])
        team1_barrel, team2_barrel = state.barrels
        (team1_start, team2_start), (team1_cell, team2_cell) = self.barrel_starts, self.barrels
        if team1_cell != team1_start:
            team1_barrel = coords[team1_cell]
        if team2_cell != team2_start:
            team2_barrel = coords[team2_cell]
        return tuple(dwarves), (team1_barrel, team2_barrel), self.events


# --- building the results --------------------------------------------------------------------
# A frozen dataclass's ``__init__`` stores each field through ``object.__setattr__``: building
# the five or so dwarves that moved and the new ``State`` that way cost about 1.5 us of a real
# turn's 13. These make the very same objects by storing their slots directly, in field order
# (test_results_are_ordinary_frozen_objects compares them with what ``__init__`` makes).

_new_object = object.__new__
_DWARF_SETTERS = tuple(getattr(Dwarf, field.name).__set__ for field in fields(Dwarf))
_STATE_SETTERS = tuple(getattr(State, field.name).__set__ for field in fields(State))


def _moved_dwarf(dwarf: Dwarf, coords: Coords) -> Dwarf:
    """``Dwarf(dwarf.id, dwarf.team, dwarf.name, coords)``, built directly."""
    set_id, set_team, set_name, set_coords = _DWARF_SETTERS
    moved: Dwarf = _new_object(Dwarf)
    set_id(moved, dwarf.id)
    set_team(moved, dwarf.team)
    set_name(moved, dwarf.name)
    set_coords(moved, coords)
    return moved


def _new_state(
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


class TavernRules(Rules[State, tuple[Order, ...], tuple[Order, ...]]):
    """The rules for one tavern's settings, as the arena plays them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def initial_state(self, players: Sequence[Player]) -> State:
        return initial_state(self.settings, (players[0].names, players[1].names))

    def to_move(self, state: State) -> int:
        return state.to_move

    def check(self, state: State, seat: int, candidate: tuple[Order, ...]) -> tuple[Order, ...]:
        return check_orders(state, seat, candidate)

    def apply(
        self, state: State, seat: int, action: tuple[Order, ...], rng: RandomSource
    ) -> tuple[State, list[Event]]:
        return apply_turn(state, seat, action, rng)

    def outcome(self, state: State) -> Outcome | None:
        return state.outcome

    def timeout_action(self, state: State, seat: int) -> tuple[Order, ...]:
        return pass_orders()

    def scores(self, state: State) -> tuple[int, int]:
        return state.scores
