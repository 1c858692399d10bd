"""A Thud position given from outside, checked: ``create-simulation``'s ``position``.

Pure: wire data in, a ``State`` out, or ``PositionRejected`` naming the first thing no game can
reach. The shape is the turn message's (``state`` with ``ply``, ``side``, ``dwarfs``,
``trolls``, ``declared``...; ``turn`` and ``score`` beside it, checked when given), so a bot
author can paste one, or a replay's position.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import get_args

from server.games.base import PositionRejected
from server.games.thud import pieces
from server.games.thud.board import THUDSTONE, Square, is_square
from server.games.thud.movegen import legal_move_runs
from server.games.thud.pieces import (
    DWARF,
    DWARF_COUNT,
    SIDES,
    TROLL,
    TROLL_COUNT,
    Move,
    MoveKind,
    State,
    state_from_position,
)

IGNORED_KEYS = frozenset({"type", "game", "timeoutMs", "clock"})  # a turn message's, as it is
KEYS = frozenset({"state", "turn", "score"})
STATE_KEYS = frozenset({"ply", "side", "dwarfs", "trolls", "declared"})
OPTIONAL_STATE_KEYS = frozenset({"score", "previousMove", "moves", "dwarfSlots", "trollSlots"})
MOVE_KINDS: tuple[str, ...] = get_args(MoveKind)


def state_from_wire(ply_limit: int, wire: object) -> State:
    """The position ``wire`` describes, its side to move asked to move, in a game that ends
    after ply ``ply_limit``; raises ``PositionRejected``."""
    if not isinstance(wire, Mapping):
        raise PositionRejected("a position is an object with state (and turn, score)")
    unknown = set(wire) - KEYS - IGNORED_KEYS
    if unknown:
        raise PositionRejected(f"unknown keys {sorted(unknown)}; a position has {sorted(KEYS)}")
    given = wire.get("state")
    if not isinstance(given, Mapping) or not set(given) >= STATE_KEYS:
        raise PositionRejected(f"state must be an object with {sorted(STATE_KEYS)}")
    unknown = set(given) - STATE_KEYS - OPTIONAL_STATE_KEYS
    if unknown:
        raise PositionRejected(f"unknown keys {sorted(unknown)} in state")
    ply = _integer(given["ply"], "ply")
    if not 1 <= ply <= ply_limit:
        raise PositionRejected(f"ply must be from 1 to the game's last, {ply_limit}, not {ply}")
    side = given["side"]
    if side != SIDES[1 - ply % 2]:
        raise PositionRejected(
            f'side must be "{SIDES[1 - ply % 2]}" at ply {ply}: the dwarfs move on odd plies'
        )
    turn = wire.get("turn", ply)
    if turn != ply:
        raise PositionRejected(f"turn ({turn}) and ply ({ply}) must be the same number")
    dwarfs = _pieces(given["dwarfs"], "dwarfs", DWARF_COUNT)
    trolls = _pieces(given["trolls"], "trolls", TROLL_COUNT)
    declared = given["declared"]
    if (
        not isinstance(declared, Mapping)
        or set(declared) != {DWARF, TROLL}
        or not all(isinstance(value, bool) for value in declared.values())
    ):
        raise PositionRejected('declared must be {"dwarf": true|false, "troll": true|false}')
    if declared[DWARF] and declared[TROLL]:
        raise PositionRejected("both sides declared the game over: it is over")
    try:
        state = state_from_position(
            dwarfs,
            trolls,
            ply=ply,
            dwarf_slots=_slots(given.get("dwarfSlots"), "dwarfSlots"),
            troll_slots=_slots(given.get("trollSlots"), "trollSlots"),
            declared=(declared[DWARF], declared[TROLL]),
            previous_move=_move(given.get("previousMove")),
        )
    except ValueError as error:
        raise PositionRejected(str(error)) from None
    score = pieces.score(state)
    for where in (wire, given):
        if "score" in where and where["score"] != {"dwarfs": score.dwarfs, "trolls": score.trolls}:
            raise PositionRejected(
                f"score must be the pieces' worth: {score.dwarfs} for the dwarfs, "
                f"{score.trolls} for the trolls (4 a troll)"
            )
    if not legal_move_runs(state):
        raise PositionRejected(f"the {side}s have no legal move: the game is over")
    return state


def _integer(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PositionRejected(f"{what} must be an integer")
    return value


def _square(value: object, what: str) -> Square:
    if not isinstance(value, list) or len(value) != 2:
        raise PositionRejected(f"{what} must be a square [x, y]")
    x, y = _integer(value[0], what), _integer(value[1], what)
    if (x, y) == THUDSTONE:
        raise PositionRejected(f"{what} [{x}, {y}] is the Thudstone, where no piece stands")
    if not is_square(x, y):
        raise PositionRejected(f"{what} [{x}, {y}] is off the board")
    return x, y


def _pieces(value: object, what: str, most: int) -> list[Square]:
    if not isinstance(value, list):
        raise PositionRejected(f"{what} must be a list of squares")
    if not 1 <= len(value) <= most:
        raise PositionRejected(
            f"{len(value)} {what}: a game has 1 to {most} (with none left it is over)"
        )
    return [_square(square, f"a square of {what}") for square in value]


def _slots(value: object, what: str) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise PositionRejected(f"{what} must be a list of integers")
    return [_integer(slot, what) for slot in value]


def _move(value: object) -> Move | None:
    """The move that led here, as the position shows it (``None``: none given)."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or value.get("kind") not in MOVE_KINDS:
        raise PositionRejected(
            f"previousMove must be {{from, to, kind, killed}}, kind one of {MOVE_KINDS}"
        )
    killed = value.get("killed", [])
    if not isinstance(killed, list):
        raise PositionRejected("previousMove.killed must be a list of squares")
    return Move(
        _square(value.get("from"), "previousMove.from"),
        _square(value.get("to"), "previousMove.to"),
        value["kind"],
        tuple(_square(square, "previousMove.killed") for square in killed),
    )
