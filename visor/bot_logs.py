"""A hosted bot's logs for its owner (issue 33, item 7): ``POST /api/bots/{name}/logs`` with
``{"key": KEY, "games": N}`` (JSON; the key in the body, never in an address that logs keep)
answers its last N games (``server.bot_logs.LOGGED_GAMES`` by default, at most
``MAX_LOGGED_GAMES``): how each ended for it, its stderr, and each turn's stderr and CPU time.
The key is checked as a join's is (paced per address), never stored or echoed."""

from __future__ import annotations

import asyncio

import orjson
from aiohttp import web

from server.arena import Arena
from server.bot_logs import LOGGED_GAMES, MAX_LOGGED_GAMES, bot_log
from server.errors import Rejected
from server.records import Records
from server.records.backends import RecordsOutOfReach
from visor.responses import json_error, json_response

MAX_BODY_BYTES = 4096


def add_routes(app: web.Application, arena: Arena, records: Records) -> None:
    async def logs(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        body = await request.content.read(MAX_BODY_BYTES + 1)
        try:
            fields = orjson.loads(body) if len(body) <= MAX_BODY_BYTES else None
        except orjson.JSONDecodeError:
            fields = None
        if not isinstance(fields, dict):
            return json_error(400, 'send {"key": "...", "games": N} as JSON')
        games = fields.get("games", LOGGED_GAMES)
        if (
            not isinstance(games, int)
            or isinstance(games, bool)
            or not 0 < games <= MAX_LOGGED_GAMES
        ):
            return json_error(400, f"games: a number from 1 to {MAX_LOGGED_GAMES}")
        try:
            found = await arena.roster.identify(
                {"bot": name, "key": fields.get("key")}, request.remote or ""
            )
        except Rejected as rejected:
            return json_error(403, str(rejected))
        assert found is not None
        try:
            logged = await asyncio.to_thread(bot_log, records, found, games)
        except RecordsOutOfReach:
            return json_error(503, "the records are out of reach: try again shortly")
        return json_response({"bot": found, "games": logged})

    app.router.add_post("/api/bots/{name}/logs", logs)
