"""The replay page's "Play from here": ``POST /api/games/{id}/play-from?turn=N`` opens a
simulation at turn ``N`` of a recorded game, for bots (or, in Thud, a person) to join by id.

The position is the record's own, replayed by the rules, so a page cannot claim a position a
game never had; the simulation is created as a bot's ``create-simulation`` with that
``position`` is, through ``Session`` (the same checks: a draining node, the per-address cap of
waiting simulations, an impossible or finished position), and its record names the game and turn
it was taken from.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from server.arena import Arena
from server.games.base import JsonObject
from server.match import SeatMessage
from server.records import Records
from server.replay import DamagedRecord, frames, game_of
from server.session import Client, Session
from visor.responses import json_error, json_response

ARENA = web.AppKey("play_from_arena", Arena)
RECORDS = web.AppKey("play_from_records", Records)


class Creation:
    """The ``SessionChannel`` of a session that only creates: it keeps the refusal, if any (a
    creator is never seated nor sent a seat's message)."""

    def __init__(self) -> None:
        self.refusal: tuple[str, str | None] | None = None

    def send(self, message: SeatMessage) -> None:
        raise AssertionError("a session that only creates has no seat")

    def send_data(self, data: bytes) -> None:
        raise AssertionError("a session that only creates has no seat")

    def error(self, message: str, reason: str | None) -> None:
        self.refusal = (message, reason)

    def refuse(self, message: str, reason: str) -> None:
        self.refusal = (message, reason)

    def seated(self) -> None:
        raise AssertionError("a session that only creates has no seat")

    def close(self) -> None:
        """Nothing to close: the request's answer says everything."""


def position_at(records: Records, game_id: str, turn: int) -> tuple[str, JsonObject] | None:
    """The game of a record and its position after ``turn`` turns, in wire form (``None``: no
    such game); raises ``LookupError`` if the record has no such turn, ``DamagedRecord`` if it
    does not replay."""
    record = records.game(game_id)
    if record is None:
        return None
    codec = game_of(record)
    for frame in frames(record):
        if frame.turn == turn:
            return record["game"], codec.position_to_wire(frame.state)
    raise LookupError(f"game {game_id} has no turn {turn}")


async def play_from(request: web.Request) -> web.Response:
    game_id = request.match_info["game_id"]
    try:
        turn = int(request.query["turn"])
    except (KeyError, ValueError):
        return json_error(400, "turn must be given, an integer")
    try:
        found = await asyncio.to_thread(position_at, request.app[RECORDS], game_id, turn)
    except LookupError as error:
        return json_error(404, str(error))
    except DamagedRecord as error:
        return json_error(409, f"this record cannot be read back: {error}")
    if found is None:
        return json_error(404, "no recorded game with this id")
    game, position = found
    arena = request.app[ARENA]
    creation = Creation()
    client = Client(request.remote or "", kind="person", noun="page")
    session = Session(arena, client, creation)
    match = session.create({"game": game, "position": position}, taken_from=game_id)
    if match is None:
        assert creation.refusal is not None, "a create that opens nothing says why"
        message, reason = creation.refusal
        text = f"{message}: {reason}" if reason else message
        return json_response({"error": text, "message": message, "reason": reason}, 409)
    join = {"type": "join-simulation", "game": game, "simulationId": match.id, "nick": "my bot"}
    return json_response(
        {
            "simulationId": match.id,
            "game": game,
            "turn": turn,
            "botPort": arena.bot_port,
            "join": join,
            "seats": list(match.codec.seat_names),
        }
    )


def add_routes(app: web.Application, arena: Arena, records: Records) -> None:
    app[ARENA] = arena
    app[RECORDS] = records
    app.router.add_post("/api/games/{game_id}/play-from", play_from)
