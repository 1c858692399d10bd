"""The games' own pages and files, routed from the registered games (``server.games.GAMES``).

Each game's package has a folder of web files (``server.games.web.WebSide``): the visor serves
it under ``/games/<name>/``, its rules page at ``/rules/<name>``, its other pages at the routes it
names, and the list of the games at ``/games/index.json``, from which the shared pages load each
game's module by name. Adding a game adds its routes here without a line of the visor changing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from server.games import GAMES
from server.games.base import Game, JsonObject
from visor.responses import json_response

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
NO_CACHE = {"Cache-Control": "no-cache"}
# A script that runs a person's code in a Web Worker (``WebSide.sandboxed``) gets its own policy,
# which allows eval there and no network, no nested workers and nothing else; every other file
# and page keeps the visor's.
SANDBOX_POLICY = (
    "default-src 'none'; script-src 'self' 'unsafe-eval'; connect-src 'none'; worker-src 'none'"
)


def games_index() -> JsonObject:
    """Every game as the shared pages need it before its module loads: its name and title, where
    its module, rules page and play page are, its seats and score names, its house players."""
    return {
        "games": [
            {
                **game.web.to_wire(name),
                "seats": list(game.seat_names),
                "scores": list(game.score_names),
                "tablePerSeat": game.league.table_per_seat,
                "house": [
                    {"name": player.name, "description": player.description, "sides": player.sides}
                    for player in game.house_players.values()
                ],
            }
            for name, game in GAMES.items()
        ]
    }


def page(path: Path) -> Handler:
    async def serve(request: web.Request) -> web.StreamResponse:
        return web.FileResponse(path, headers=NO_CACHE)

    return serve


def game_files(game: Game) -> Handler:
    """The files of the game's web folder, by name (no sub-folders, nothing hidden)."""
    folder = game.web.folder

    async def serve(request: web.Request) -> web.StreamResponse:
        name = request.match_info["file"]
        path = folder / name
        if name != Path(name).name or name.startswith(".") or not path.is_file():
            raise web.HTTPNotFound()
        headers = dict(NO_CACHE)
        if path.suffix == ".js":
            headers["Content-Type"] = "text/javascript; charset=utf-8"
        if name in game.web.sandboxed:
            headers["Content-Security-Policy"] = SANDBOX_POLICY
        return web.FileResponse(path, headers=headers)

    return serve


def add_routes(app: web.Application) -> None:
    index = games_index()

    async def serve_index(request: web.Request) -> web.Response:
        return json_response(index)

    app.router.add_get("/games/index.json", serve_index)
    for name, game in GAMES.items():
        for route, path in game.web.page_routes(name).items():
            app.router.add_get(route, page(path))
        app.router.add_get(f"/games/{name}/{{file}}", game_files(game))
