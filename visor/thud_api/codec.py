"""The earlier Python Thud server's wire: its board, its requests and its answers.

Nothing here plays a game: requests are read into checked values (a request the API cannot
read raises ``BadRequest``, answered 400), and positions and results are written in that
server's shapes.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from typing import Any, TypeAlias

import orjson
from aiohttp import web

from server.games.base import JsonObject, Outcome
from server.games.thud.board import Square, is_square
from server.games.thud.pieces import PiecesKilled, State, initial_state, score

Answer: TypeAlias = bool | list[list[int]]
"""What ``/move`` and ``/move/validate`` answer: ``true``, the captured squares, or ``false``."""

SIZE = 15
RACES = ("Dwarf", "Troll")  # by seat: player one plays the dwarfs and moves first
PLAYER_KEYS = ("player_one", "player_two")
MAX_NAME = 64  # the arena's longest nick
CORS = {"Access-Control-Allow-Origin": "*"}  # tokens travel in bodies, never in cookies


class BadRequest(Exception):
    """A request the API cannot read: answered 400 with ``{"error": message}``."""


class TooMany(Exception):
    """One client asks for more than its share: answered 429 with ``{"error": message}``."""


class TooSlow(Exception):
    """A request's body did not arrive in time: answered 408, and the connection is closed."""


class Damaged(Exception):
    """A stored game this request needs cannot be read back: answered 409."""


class Unavailable(Exception):
    """The server cannot take the request now: answered 503 with ``{"error": message}``."""


# --- the board ----------------------------------------------------------------------------------
def _numbering(squares: Sequence[Square], first: int) -> tuple[int, ...]:
    """Each start slot's id: ``first`` upwards in order of x, then y, of the start squares."""
    ids = [0] * len(squares)
    for rank, slot in enumerate(sorted(range(len(squares)), key=lambda slot: squares[slot])):
        ids[slot] = first + rank
    return tuple(ids)


START = initial_state()
DWARF_IDS = _numbering(START.dwarfs, 1)
TROLL_IDS = _numbering(START.trolls, 1 + len(START.dwarfs))


def board_to_wire(state: State) -> JsonObject:
    """The board as the earlier server sent it: one list of 15 cells (y = 0..14) per column x."""
    pieces: dict[Square, JsonObject] = {}
    for square, slot in zip(state.dwarfs, state.dwarf_slots, strict=True):
        pieces[square] = {"id": DWARF_IDS[slot], "type": "Dwarf"}
    for square, slot in zip(state.trolls, state.troll_slots, strict=True):
        pieces[square] = {"id": TROLL_IDS[slot], "type": "Troll"}
    return {
        str(x): [
            pieces.get((x, y)) or {"id": "null", "type": "open" if is_square(x, y) else "null"}
            for y in range(SIZE)
        ]
        for x in range(SIZE)
    }


def result_to_wire(state: State, outcome: Outcome) -> JsonObject:
    """How a game ended, as matched players are told it."""
    standing = score(state)
    return {
        "reason": outcome.reason,
        "winner": None if outcome.winner is None else RACES[outcome.winner],
        "score": {"dwarfs": standing.dwarfs, "trolls": standing.trolls},
        "board": board_to_wire(state),
    }


def answer_of(events: Sequence[Any]) -> Answer:
    """A played move's answer: the squares it cleared, or ``true``."""
    for event in events:
        if isinstance(event, PiecesKilled):
            return [list(square) for square in event.squares]
    return True


# --- requests -----------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, slots=True)
class MoveRequest:
    game: str
    player: str
    start: Square
    end: Square


def digest(token: str) -> str:
    """What the records keep of a token."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def string(body: JsonObject, field: str) -> str:
    value = body.get(field)
    if not isinstance(value, str):
        raise BadRequest(f'"{field}" is missing or not a string')
    return value


def name(body: JsonObject, field: str) -> str:
    value = string(body, field)
    if not 0 < len(value) <= MAX_NAME:
        raise BadRequest(f'"{field}" must be a name of 1 to {MAX_NAME} characters')
    return value


def square(body: JsonObject, field: str) -> Square:
    value = body.get(field)
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(c, int) and not isinstance(c, bool) for c in value)
    ):
        raise BadRequest(f'"{field}" is missing or not a square [x, y] of two integers')
    return value[0], value[1]


def parse_move(body: JsonObject) -> MoveRequest:
    return MoveRequest(
        string(body, "game"),
        string(body, "player"),
        square(body, "start"),
        square(body, "destination"),
    )


def answer(body: object, status: int = 200) -> web.Response:
    """An answer of the API: JSON, readable from any page (tokens are never cookies)."""
    return web.Response(
        body=orjson.dumps(body), status=status, content_type="application/json", headers=CORS
    )
