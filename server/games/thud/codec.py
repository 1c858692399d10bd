"""Thud on the wire: the arena's Thud messages (see docs/protocol.md, "Thud").

Every turn carries the whole position and every legal move with its kind and kill count, so a
bot in any language can play well without writing the rules. Squares are ``[x, y]`` lists, ``x``
the column and ``y`` the row from the top-left, as in the king-of-the-hill engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from server.errors import BotError
from server.games.base import (
    ActionRejected,
    Codec,
    JoinRejected,
    JsonObject,
    Player,
)
from server.games.thud import position, rules
from server.games.thud.board import CELL_SQUARE, Square, is_square
from server.games.thud.movegen import Run, RunTables, legal_move_runs_as, run_tables
from server.games.thud.pieces import (
    DWARF,
    MAX_PLIES,
    SIDES,
    TROLL,
    Action,
    Declared,
    GameEnded,
    Move,
    MoveKind,
    PieceMoved,
    PiecesKilled,
    State,
    Stop,
    make_action,
    points,
    side_to_move,
)
from server.games.thud.rules import ThudRules
from server.games.thud.text import ThudText
from server.games.thud.view import ThudBoard
from server.protocol import kept_json

BOARD_SIZE = 15
MAX_NICK_LENGTH = 64


class ThudCodec(Codec[State, Action | Stop, Action | Stop]):
    """32 dwarfs against 8 trolls; see ``rules`` for the engine it reproduces."""

    name = "thud"
    seat_names = SIDES
    seat_field = "side"
    score_names = ("dwarfs", "trolls")
    tags_messages = True
    rules: rules.ThudRules
    passes_on_timeout = False

    def __init__(self, game_rules: ThudRules) -> None:
        super().__init__(game_rules, ThudText(), ThudBoard(game_rules.ply_limit))

    @classmethod
    def from_settings(cls, settings: JsonObject) -> ThudCodec:
        return cls(rules.ThudRules(settings.get("turnLimit", MAX_PLIES)))

    # --- seats -------------------------------------------------------------------------------
    def wanted_seats(self, request: JsonObject) -> tuple[int, ...]:
        wanted = request.get("side")
        if wanted is None:
            return (0, 1)  # the first joiner gets the dwarfs
        if wanted not in SIDES:
            raise JoinRejected(BotError.INVALID_JOIN, 'side must be "dwarf" or "troll"')
        return (SIDES.index(wanted),)

    def choose_seat(self, free_seats: Sequence[int], request: JsonObject) -> int:
        wanted = self.wanted_seats(request)
        for seat in wanted:
            if seat in free_seats:
                return seat
        raise JoinRejected(
            BotError.SIDE_TAKEN, f"the {SIDES[wanted[0]]} side of this simulation is taken"
        )

    def player_from_join(self, request: JsonObject) -> Player:
        nick = request.get("nick", "anonymous")
        if not isinstance(nick, str) or not 0 < len(nick) <= MAX_NICK_LENGTH:
            raise JoinRejected(
                BotError.INVALID_JOIN, f"nick must be a string of 1 to {MAX_NICK_LENGTH} characters"
            )
        return Player(nick)

    # --- messages ----------------------------------------------------------------------------
    def candidate(self, message: JsonObject) -> Action | Stop:
        if message.get("stop") is True:
            if "move" in message:
                raise ActionRejected(
                    BotError.INVALID_TURN, 'send either "move" or "stop", not both'
                )
            return Stop()
        move = message.get("move")
        if not isinstance(move, dict):
            raise ActionRejected(
                BotError.INVALID_TURN, '"move" must be {"from": [x, y], "to": [x, y]}'
            )
        start, end = _square(move.get("from"), "from"), _square(move.get("to"), "to")
        declare = message.get("declare")
        if declare is not None and not isinstance(declare, bool):
            raise ActionRejected(BotError.INVALID_TURN, '"declare" must be true or false')
        return make_action((start, end), declare)

    def action_to_wire(self, action: Action | Stop) -> JsonObject:
        if isinstance(action, Stop):
            return {"stop": True}
        start, end = (
            (action.move.start, action.move.end) if isinstance(action.move, Move) else action.move
        )
        wire: JsonObject = {"move": {"from": list(start), "to": list(end)}}
        if action.declare is not None:
            wire["declare"] = action.declare
        return wire

    def after_turn_messages(
        self, before: State, after: State, events: Sequence[Any]
    ) -> list[tuple[int, JsonObject]]:
        # Each turn message already carries the previous move and the score.
        return []

    def bot_state(self, state: State) -> JsonObject:
        return bot_state(state)

    def state_to_wire(self, state: State) -> JsonObject:
        return position_to_wire(state)

    def position_to_wire(self, state: State) -> JsonObject:
        # The turn message's fields but the move list (the position says who moves).
        wire = position_to_wire(state)
        wire["dwarfSlots"] = list(state.dwarf_slots)
        wire["trollSlots"] = list(state.troll_slots)
        return {"state": wire, "turn": state.ply, "score": wire["score"]}

    def position_from_wire(self, wire: object) -> tuple[State, int]:
        state = position.state_from_wire(self.rules.ply_limit, wire)
        return state, state.ply - 1

    def events_to_wire(self, events: Sequence[Any]) -> list[JsonObject]:
        wire: list[JsonObject] = []
        for event in events:
            if isinstance(event, PieceMoved):
                wire.append({"type": "move", "side": event.side, **move_to_wire(event.move)})
            elif isinstance(event, PiecesKilled):
                squares = [list(square) for square in event.squares]
                wire.append({"type": "killed", "side": event.side, "squares": squares})
            elif isinstance(event, Declared):
                wire.append({"type": "declared", "side": event.side, "value": event.value})
            elif isinstance(event, GameEnded):
                wire.append({"type": "ended", "reason": event.reason})
        return wire

    def counting_rules(self) -> JsonObject:
        return {"turnLimit": self.rules.ply_limit}

    def settings(self) -> JsonObject:
        # Thud has one board and one set of rules; only a shorter game says so.
        limit = self.rules.ply_limit
        return {} if limit == MAX_PLIES else {"turnLimit": limit}


def _square(value: object, field: str) -> Square:
    """A square a bot sent, ``[x, y]``, as the board's own tuple for it (``CELL_SQUARE``).

    ``type(...) is int``: what JSON decodes a number to, never a bool (a subclass of int)."""
    if (
        type(value) is not list
        or len(value) != 2
        or type(value[0]) is not int
        or type(value[1]) is not int
    ):
        raise ActionRejected(BotError.INVALID_TURN, f'"{field}" must be a square [x, y]')
    x, y = value
    if not is_square(x, y):
        raise ActionRejected(BotError.ILLEGAL_MOVE, f"{value} is not a square of the board")
    return CELL_SQUARE[x + BOARD_SIZE * y]


def move_to_wire(move: Move, *, as_lists: bool = True) -> JsonObject:
    """A move's fields; its squares as lists, or (``as_lists=False``, for a message encoded at
    once) as the move's own tuples, which orjson writes as the same arrays."""
    if not as_lists:
        return {"from": move.start, "to": move.end, "kind": move.kind, "killed": move.killed}
    return {
        "from": list(move.start),
        "to": list(move.end),
        "kind": move.kind,
        "killed": [list(square) for square in move.killed],
    }


def position_to_wire(state: State) -> JsonObject:
    """The position as spectators and records see it (no move list)."""
    return _position(state, as_lists=True)


def _position(state: State, *, as_lists: bool) -> JsonObject:
    """The position's fields; the pieces' squares as lists for readers that keep the position
    or compare it with decoded JSON, else as the state's own tuples (which orjson writes as
    arrays: the same bytes, for a message encoded at once, without 40 lists a turn)."""
    dwarfs, trolls = points(state)
    previous = state.previous_move
    return {
        "ply": state.ply,
        "side": side_to_move(state),
        "dwarfs": list(map(list, state.dwarfs)) if as_lists else state.dwarfs,
        "trolls": list(map(list, state.trolls)) if as_lists else state.trolls,
        "score": {"dwarfs": dwarfs, "trolls": trolls},
        "declared": {DWARF: state.declared[0], TROLL: state.declared[1]},
        "previousMove": None if previous is None else move_to_wire(previous, as_lists=as_lists),
    }


def bot_state(state: State) -> JsonObject:
    """The position plus every legal move for the side to move, as a bot receives it.

    It is only ever encoded (the move list is already JSON, ``moves_wire``): in-process
    readers decode the encoded message, as a bot would; so squares and slots stay tuples.
    """
    wire = _position(state, as_lists=False)
    wire["moves"] = moves_wire(state)
    # Each piece's index in the start position, for clients that keep fixed-length piece lists
    # (the challenge's indexed_dwarfs and indexed_trolls).
    wire["dwarfSlots"] = state.dwarf_slots
    wire["trollSlots"] = state.troll_slots
    return wire


def _move_json(start: Square, end: Square, kind: str, kills: int) -> bytes:
    return kept_json({"from": start, "to": end, "kind": kind, "kills": kills})


def _run_json(run: Run) -> orjson.Fragment:
    return orjson.Fragment(
        b",".join([_move_json(m.start, m.end, m.kind, len(m.killed)) for m in run])
    )


_KILL_JSON: dict[tuple[Square, int, str, int], orjson.Fragment] = {}
"""The JSON of troll moves that kill, made once each: bounded by the board's geometry."""


def _kill_json(
    cells: bytes, start: Square, end: int, kind: MoveKind, killing: int
) -> orjson.Fragment:
    kills = killing.bit_count()  # one bit per dwarf killed
    key = (start, end, kind, kills)
    encoded = _KILL_JSON.get(key)
    if encoded is None:
        encoded = _KILL_JSON[key] = orjson.Fragment(
            _move_json(start, CELL_SQUARE[end], kind, kills)
        )
    return encoded


_RUN_JSON: RunTables[orjson.Fragment] = run_tables(_run_json, _kill_json)
"""Move generation's tables with every prebuilt run as its JSON (made here once, at import)."""


def moves_wire(state: State) -> list[orjson.Fragment]:
    """The legal moves of the side to move, to encode as a JSON array: the rules' generator
    hands out each run's JSON from ``_RUN_JSON`` (its moves, comma-separated), which orjson
    writes as it stands into the message, so the hundreds of moves of a turn are never joined
    or copied in Python."""
    return legal_move_runs_as(state, _RUN_JSON)
