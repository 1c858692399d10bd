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

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from server.games.base import ActionRejected, Outcome, Player, RandomSource, Rules

NOT_YOUR_TURN = "Not your turn"
INVALID_TURN = "Invalid turn"


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
        team1_barrel, team2_barrel = self.barrel_starts
        if not all(1 <= barrel.x <= self.width - 2 for barrel in self.barrel_starts) or not (
            team1_barrel.y <= self.height - 2 and team2_barrel.y >= 1
        ):
            raise ValueError("a barrel starts where the rules never let a barrel be")


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


@dataclass(frozen=True, slots=True)
class DwarfMoved:
    """A dwarf carried out a move order; emitted even when it stays (``start == end``)."""

    dwarf_id: int
    name: str
    direction: Direction
    start: Coords
    end: Coords


@dataclass(frozen=True, slots=True)
class BarrelMoved:
    """A barrel was pushed; emitted even when it stays (``start == end``)."""

    team: int
    direction: Direction
    start: Coords
    end: Coords


@dataclass(frozen=True, slots=True)
class DwarfHit:
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
        raise ActionRejected(NOT_YOUR_TURN, "the game is over")
    if team != state.to_move:
        raise ActionRejected(NOT_YOUR_TURN, f"team{state.to_move + 1} moves now")
    if not orders:
        raise ActionRejected(INVALID_TURN, "a turn needs at least one action")
    own_ids = {dwarf.id for dwarf in state.dwarves if dwarf.team == team}
    seen: set[int] = set()
    for order in orders:
        if order.bot_id not in own_ids:
            raise ActionRejected(INVALID_TURN, f"dwarf {order.bot_id} is not one of yours")
        if order.bot_id in seen:
            raise ActionRejected(INVALID_TURN, f"dwarf {order.bot_id} has more than one action")
        seen.add(order.bot_id)
    return tuple(orders)


def apply_turn(
    state: State, team: int, orders: Sequence[Order], rng: RandomSource
) -> tuple[State, list[Event]]:
    """Play one team's turn: the moves, the score check, then the end or the next team.

    ``orders`` are checked (``check_orders``) and not checked again; empty ``orders`` is the
    timed-out pass (``pass_orders``): nothing moves but it counts as a turn.
    """
    played, events = play_orders(state, orders, rng)
    scorers = scoring_teams(played)
    scores = (
        state.scores[0] + (0 in scorers),
        state.scores[1] + (1 in scorers),
    )
    current_turn = state.current_turn + 1
    settings = state.settings
    winners = [scorer for scorer in scorers if scores[scorer] >= settings.points_to_win]
    end: Outcome | None = None
    if len(winners) == 2:
        end = Outcome(None, "Points to win reached by both")
    elif winners:
        end = Outcome(winners[0], "Points to win reached")
    elif current_turn >= settings.turn_limit:
        leader = None if scores[0] == scores[1] else int(scores[1] > scores[0])
        end = Outcome(leader, "Turn limit reached")
    position = Position(played.dwarves, played.barrels)
    events.extend(PointScored(scorer, scores, position) for scorer in scorers)
    # The original hands the next turn to the non-scorer; when both scored, team1 counts as the
    # scorer, so team2 moves. Otherwise the parity of the turn count decides.
    to_move = int(0 in scorers) if scorers else current_turn % 2
    dwarves, barrels = played.dwarves, played.barrels
    if scorers and end is None:
        # The board restarts after a point, unless the game is over: a finished game keeps the
        # scoring position, which is what the end messages show.
        dwarves, barrels = _starting_dwarves(state), settings.barrel_starts
        events.append(BoardReset())
    after = State(
        settings=settings,
        dwarves=dwarves,
        barrels=barrels,
        scores=scores,
        current_turn=current_turn,
        to_move=to_move,
        outcome=end,
    )
    return after, events


def scoring_teams(state: State) -> tuple[int, ...]:
    """The teams scoring in this position: team1 when team2's barrel is on the bottom row,
    team2 when team1's barrel is on the top row (checked once, after all orders)."""
    team1_barrel, team2_barrel = state.barrels
    team1_scores = team2_barrel.y == state.settings.height - 1
    team2_scores = team1_barrel.y == 0
    return tuple(team for team, scores in enumerate((team1_scores, team2_scores)) if scores)


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
    board = _Board(state, rng)
    index_by_id = {dwarf.id: index for index, dwarf in enumerate(state.dwarves)}
    for order in orders:
        index = index_by_id.get(order.bot_id)
        if index is not None and order.direction is not None:
            board.move_dwarf(index, order.direction)
    return board.result(state), board.events


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

_STEPS = ((0, -1), (1, 0), (0, 1), (-1, 0))
"""One cell in each ``Direction``, indexed by its number."""

_THROWS = (
    ((-1, -1), (0, -2), (1, -1)),
    ((1, -1), (2, 0), (1, 1)),
    ((-1, 1), (0, 2), (1, 1)),
    ((-1, -1), (-2, 0), (-1, 1)),
)
"""Where a dwarf pushed in a ``Direction`` is thrown, by the random kind 0, 1 or 2."""

_EMPTY = 0
# A cell holds _EMPTY, a dwarf as its index in State.dwarves plus one, or a barrel as -(team + 1).


class _Board:
    """The scratch grid of one ``play_orders`` call; mirrors the original's grid and model.

    Each push first clears the pusher's cell, then pushes whatever is on its target, and moves
    in only if that cell is empty afterwards; otherwise it stays (the original's rule). Events
    are emitted before their consequences, so each is inserted at the slot it reserved once its
    end cell is known.
    """

    __slots__ = ("barrels", "cells", "dwarf_cells", "dwarves", "events", "height", "rng", "width")

    def __init__(self, state: State, rng: RandomSource) -> None:
        self.width = state.settings.width
        self.height = state.settings.height
        self.rng = rng
        self.dwarves = state.dwarves
        self.dwarf_cells = [(dwarf.coords.x, dwarf.coords.y) for dwarf in state.dwarves]
        self.barrels = [(barrel.x, barrel.y) for barrel in state.barrels]
        self.cells = [_EMPTY] * (self.width * self.height)
        for index, (x, y) in enumerate(self.dwarf_cells):
            self.cells[y * self.width + x] = index + 1
        for team, (x, y) in enumerate(self.barrels):
            self.cells[y * self.width + x] = -(team + 1)
        self.events: list[Event] = []

    def move_dwarf(self, index: int, direction: Direction) -> None:
        """moveBot: one step, the outer wall keeping the dwarf in place."""
        x, y = self.dwarf_cells[index]
        step_x, step_y = _STEPS[direction]
        to_x = min(max(x + step_x, 0), self.width - 1)
        to_y = min(max(y + step_y, 0), self.height - 1)
        slot = len(self.events)
        end = self._settle_dwarf(index, to_x, to_y, direction)
        dwarf = self.dwarves[index]
        self.events.insert(slot, DwarfMoved(dwarf.id, dwarf.name, direction, Coords(x, y), end))

    def hit_dwarf(self, index: int, direction: Direction) -> None:
        """hitBot: throw a pushed dwarf; the kind is drawn before knowing if it is blocked."""
        x, y = self.dwarf_cells[index]
        kind = self.rng.randrange(3)
        throw_x, throw_y = _THROWS[direction][kind]
        to_x, to_y = x + throw_x, y + throw_y
        # The original's clamps, in its order (B11: row 0 allowed, row h-1 and the sides not).
        to_y = min(max(to_y, 0), self.height - 2)
        to_x = max(min(to_x, self.width - 2), 1)
        slot = len(self.events)
        end = self._settle_dwarf(index, to_x, to_y, direction)
        dwarf = self.dwarves[index]
        self.events.insert(slot, DwarfHit(dwarf.id, dwarf.name, direction, kind, Coords(x, y), end))

    def move_barrel(self, team: int, direction: Direction) -> None:
        """moveBarrel: never into columns 0 and w-1 nor into its own team's home row, and
        never into another barrel; a dwarf in the way is thrown, on every row (B13 fixed)."""
        x, y = self.barrels[team]
        step_x, step_y = _STEPS[direction]
        to_x, to_y = x + step_x, y + step_y
        if direction == Direction.NORTH:
            to_y = max(to_y, 1 if team == 1 else 0)
        elif direction == Direction.SOUTH:
            to_y = min(to_y, self.height - 2 if team == 0 else self.height - 1)
        elif direction == Direction.EAST:
            to_x = min(to_x, self.width - 2)
        else:
            to_x = max(to_x, 1)
        slot = len(self.events)
        self.cells[y * self.width + x] = _EMPTY
        if self.cells[to_y * self.width + to_x] < 0 or not self._make_room(to_x, to_y, direction):
            to_x, to_y = x, y
        self.cells[to_y * self.width + to_x] = -(team + 1)
        self.barrels[team] = (to_x, to_y)
        self.events.insert(slot, BarrelMoved(team, direction, Coords(x, y), Coords(to_x, to_y)))

    def _settle_dwarf(self, index: int, to_x: int, to_y: int, direction: Direction) -> Coords:
        """Leave the dwarf's cell, push what is on the target, and take it only if now empty."""
        x, y = self.dwarf_cells[index]
        self.cells[y * self.width + x] = _EMPTY
        if not self._make_room(to_x, to_y, direction):
            to_x, to_y = x, y
        self.cells[to_y * self.width + to_x] = index + 1
        self.dwarf_cells[index] = (to_x, to_y)
        return Coords(to_x, to_y)

    def _make_room(self, x: int, y: int, direction: Direction) -> bool:
        """Push the occupant of (x, y), if any, in ``direction``; True if the cell is now empty."""
        occupant = self.cells[y * self.width + x]
        if occupant == _EMPTY:
            return True
        if occupant > 0:
            self.hit_dwarf(occupant - 1, direction)
        else:
            self.move_barrel(-occupant - 1, direction)
        return self.cells[y * self.width + x] == _EMPTY

    def result(self, state: State) -> State:
        """``state`` with the pieces where they ended; unmoved pieces are the same objects."""
        dwarves = tuple(
            dwarf
            if (dwarf.coords.x, dwarf.coords.y) == cell
            else Dwarf(dwarf.id, dwarf.team, dwarf.name, Coords(*cell))
            for dwarf, cell in zip(state.dwarves, self.dwarf_cells, strict=True)
        )
        team1_barrel, team2_barrel = (
            barrel if (barrel.x, barrel.y) == cell else Coords(*cell)
            for barrel, cell in zip(state.barrels, self.barrels, strict=True)
        )
        return State(
            settings=state.settings,
            dwarves=dwarves,
            barrels=(team1_barrel, team2_barrel),
            scores=state.scores,
            current_turn=state.current_turn,
            to_move=state.to_move,
            outcome=state.outcome,
        )


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
