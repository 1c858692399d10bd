"""The ladder's API: ``/api/ladder`` (a game's table in a season) and ``/api/bots/NAME`` (a
registered bot's ratings, its rated games and head-to-head), read from the records.

``online`` says whether the bot is present on any node of the arena (connected, named, free to
be challenged: ``server.challenges``, and ``tavern:bot:{name}`` for the other nodes).
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from server.arena import Arena
from server.games import DEFAULT_GAME
from server.records import Records
from visor.responses import json_error, json_response


def add_routes(app: web.Application, arena: Arena, records: Records) -> None:
    async def api_ladder(request: web.Request) -> web.Response:
        game = request.query.get("game", DEFAULT_GAME)
        if game not in arena.games:
            return json_error(400, f"game must be one of: {', '.join(arena.games)}")
        ladder = await asyncio.to_thread(records.ladder, game, request.query.get("season"))
        if ladder is None:
            return json_error(404, "no season of that name")
        online = await arena.online([entry["bot"] for entry in ladder["bots"]])
        for entry in ladder["bots"]:
            entry["online"] = entry["bot"] in online
        return json_response(ladder)

    async def api_bot(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        found = await asyncio.to_thread(records.ladder_bot, name)
        if found is None:
            return json_error(404, "no registered bot of that name")
        found["online"] = bool(await arena.online([found["bot"]]))
        return json_response(found)

    app.router.add_get("/api/ladder", api_ladder)
    app.router.add_get("/api/bots/{name}", api_bot)
