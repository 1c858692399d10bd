"""The replay page's "Play from here": ``POST /api/games/{id}/play-from?turn=N`` opens a
simulation at turn ``N`` of a recorded game, for bots (or, in Thud, a person) to join by id.

It is the game ``tavern play --from ID --turn N`` plays (``server.played_on``): the recorded
game's position after turn ``N``, replayed by the rules from its record (a page cannot claim a
position a game never had), with its settings, its seed and its random draws going on from
there, so that the new game replays as the recorded one would have gone on; its record begins
with the recorded game's first ``N`` turns and names it. The simulation is created as a bot's
``create-simulation`` is, through ``Session`` (the same checks: a draining node, the per-address
cap of waiting simulations), with the recorded game's clock if it had one; a turn after which
the game is over is refused (``Invalid position``).
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from server.arena import Arena
from server.commands import Create
from server.errors import Rejected
from server.games.base import TimeBank
from server.played_on import NoStartingPoint, starting_point
from server.records import Records
from server.replay import CHARGE_KEY, CLOCK_KEY, DamagedRecord
from server.seat_channel import SeatMessage
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


async def play_from(request: web.Request) -> web.Response:
    game_id = request.match_info["game_id"]
    try:
        turn = int(request.query["turn"])
    except (KeyError, ValueError):
        return json_error(400, "turn must be given, an integer")
    try:
        record = await asyncio.to_thread(request.app[RECORDS].game, game_id)
        if record is None:
            return json_error(404, "no recorded game with this id")
        point = await asyncio.to_thread(starting_point, record, turn)
    except NoStartingPoint as error:
        return json_error(404, str(error))
    except DamagedRecord as error:
        return json_error(409, f"this record cannot be read back: {error}")
    game = record["game"]
    arena = request.app[ARENA]
    creation = Creation()
    client = Client(request.remote or "", kind="person", noun="page")
    session = Session(arena, client, creation)
    clock = record["settings"].get(CLOCK_KEY)
    match = None
    try:
        bank = None if clock is None else TimeBank.from_wire(clock)
    except Rejected as rejected:  # a record's clock was checked as its game was created
        creation.error(rejected.message, rejected.reason)
    else:
        think = record["settings"].get(CHARGE_KEY) == "think"  # its clock charged think time
        match = session.create(
            Create({"game": game}, game, None, bank, None, point, charge_think=think)
        )
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
            "seed": match.seed,
            "botPort": arena.bot_port,
            "join": join,
            "seats": list(match.codec.seat_names),
        }
    )


def add_routes(app: web.Application, arena: Arena, records: Records) -> None:
    app[ARENA] = arena
    app[RECORDS] = records
    app.router.add_post("/api/games/{game_id}/play-from", play_from)
