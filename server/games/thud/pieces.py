"""The pieces of a Thud game as the AJFaraday/Thud king-of-the-hill engine keeps them: the sides,
the pieces and their order, the moves and events, the start position, the score and the outcome.
Pure."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from itertools import pairwise
from typing import Any, Final, Literal, NamedTuple, TypeAlias

from server.games.base import Outcome
from server.games.thud.board import (
    CELL_COUNT,
    CELL_SQUARE,
    DIRECTIONS,
    SIZE,
    SQUARES,
    THUDSTONE,
    Square,
    is_square,
    opposite,
)
from server.games.thud.ends import ThudEnd

Side: TypeAlias = Literal["dwarf", "troll"]
DWARF: Final = "dwarf"
TROLL: Final = "troll"
SIDES: Final[tuple[Side, Side]] = (DWARF, TROLL)
"""The sides by seat: seat 0 plays the dwarfs (and moves first), seat 1 the trolls."""

MoveKind: TypeAlias = Literal["walk", "hurl", "shove"]

MAX_PLIES: Final = 500
"""The engine stops with "Timeout" once the ply with this number has been played."""


DWARF_COUNT: Final = 32
TROLL_COUNT: Final = 8
TROLL_VALUE: Final = 4

# What a cell of ``State.cells`` holds.
EMPTY: Final = 0
DWARF_PIECE: Final = 1
TROLL_PIECE: Final = 2

OPPOSITE: Final = tuple(opposite(d) for d in range(len(DIRECTIONS)))


def mask(cells: Iterable[int]) -> int:
    """Bit ``cell`` set for each of ``cells``: with a side's pieces as such bits
    (``State.dwarf_bits``), ``pieces & mask`` asks about many squares at once, in C."""
    return sum(1 << cell for cell in cells)


def slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
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
    end_reason: ThudEnd | None = None
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
        object.__setattr__(self, "dwarf_bits", mask(dwarfs))
        object.__setattr__(self, "troll_bits", mask(trolls))


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
    reason: ThudEnd


ThudEvent: TypeAlias = PieceMoved | PiecesKilled | Declared | GameEnded

_ACTION_SETTERS: Final = slot_setters(Action)
_PIECE_MOVED_SETTERS: Final = slot_setters(PieceMoved)


def make_action(move: Move | tuple[Square, Square], declare: bool | None) -> Action:
    """``Action(move, declare)``, built by its slots (``slot_setters``): a turn makes two (a
    bot's candidate, then the checked action)."""
    set_move, set_declare = _ACTION_SETTERS
    action: Action = object.__new__(Action)
    set_move(action, move)
    set_declare(action, declare)
    return action


def piece_moved(side: Side, move: Move) -> PieceMoved:
    """``PieceMoved(side, move)``, built by its slots (``slot_setters``): one a turn."""
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
