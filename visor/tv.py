"""/tv: the strongest pair playing now, for a big screen (issue 22).

``/api/tv`` names the game the page is to show; the page watches it over its websocket like
/watch does, and asks again when it ends (or, with nothing to show, when the lobby says a game
is being played).

The strongest pair is the one whose weaker bot is the strongest: a game between two bots of
this season's rating 30 is a better game to watch than 40 against 10, which the sum would rank
alike. The sum breaks ties. Ratings are this node's copy of the current season's
(``server.identity.Roster.rating``), each bot's μ in the game played. A game with a guest, or a
bot not yet rated this season, has no such pair (``bothRated`` false, whether or not the game
itself is a rated one); with no pair of rated bots playing, the page shows the most watched
game, then the one with the fewest turns played (the latest started).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from aiohttp import web

from server.arena import Arena
from server.games.base import JsonObject
from visor.hub import SpectatorHub
from visor.responses import json_response

Rating = Callable[[str, str], float | None]  # (game, registered bot) -> this season's μ


def rated_seats(row: JsonObject, rating: Rating) -> list[JsonObject]:
    """The row's seats with each registered bot's rating (None: a guest, or not rated yet)."""
    seats = []
    for player in row["players"]:
        bot = player.get("bot")
        seats.append(
            {
                "seat": player["seat"],
                "nick": player["nick"],
                "bot": bot,
                "rating": None if bot is None else rating(row["game"], bot),
            }
        )
    return seats


def tv_choice(rows: Iterable[JsonObject], rating: Rating) -> JsonObject | None:
    """The game /tv shows among these lobby rows, with its seats' ratings; None if no game is
    being played. Pure: the rows and the ratings are all it reads."""
    best: tuple[tuple[int, float, float, int, int, str], JsonObject] | None = None
    for row in rows:
        if row["status"] != "playing" or any(player is None for player in row["players"]):
            continue
        seats = rated_seats(row, rating)
        ratings = [seat["rating"] for seat in seats]
        if all(value is not None for value in ratings):
            key = (1, min(ratings), sum(ratings), 0, 0, row["simulationId"])
        else:
            key = (0, 0.0, 0.0, row["spectators"], -row["turn"], row["simulationId"])
        if best is None or key > best[0]:
            shown = {"simulationId": row["simulationId"], "game": row["game"]}
            best = (key, {**shown, "bothRated": key[0] == 1, "players": seats})
    return None if best is None else best[1]


def add_routes(app: web.Application, arena: Arena, hub: SpectatorHub) -> None:
    async def api_tv(request: web.Request) -> web.Response:
        choice = tv_choice(hub.live_simulations(), arena.roster.rating)
        return json_response({"simulation": choice})

    app.router.add_get("/api/tv", api_tv)
