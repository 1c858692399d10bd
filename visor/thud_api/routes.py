"""The earlier Thud server's HTTP routes (docs/thud-api.md), served by the visor.

* A request the API cannot read (not JSON, not an object, a field missing or of the wrong type)
  is answered 400 with ``{"error": "..."}``. A well-formed request about a game or a move that is
  not allowed (unknown or wrong token, not your turn or piece, illegal move, game over) is
  answered 200 with ``false``, as the earlier server did.
* ``/move`` answers once the match has played the move and the records hold it: the client's
  next ``/game`` or ``/move`` sees it, and it survives the server.
* Tokens are ``secrets.token_urlsafe``; the records keep only their SHA-256 digests (table
  ``thud_api_games``), enough for ``/load`` to bring a game back after a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import orjson
from aiohttp import web

from server.arena import Arena
from server.cluster import OtherNodes
from server.games.base import JsonObject
from server.records import Records
from visor.connections import HttpConnections, serving_http
from visor.pages import PageQuota
from visor.thud_api.codec import (
    CORS,
    Answer,
    BadRequest,
    Damaged,
    TooMany,
    TooSlow,
    Unavailable,
    answer,
    board_to_wire,
    name,
    parse_move,
    string,
)
from visor.thud_api.games import ThudGames
from visor.thud_api.matchmaking import Matchmaking

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Endpoint = Callable[[JsonObject, str], Awaitable[object]]
"""An API call: the request's body and the client's address, to the answer."""

PREFLIGHT = {
    **CORS,
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Allow-Headers": "Content-Type",
    "Access-Control-Max-Age": "86400",
}


class ThudApi:
    """The API: its games and its matchmaking socket."""

    def __init__(
        self, arena: Arena, records: Records, quota: PageQuota, others: OtherNodes | None = None
    ) -> None:
        self.matchmaking = Matchmaking(quota, arena.config.max_page_buffer_bytes)
        self.games = ThudGames(
            arena, records, self.matchmaking.opponent_moved, self.matchmaking.ended, others
        )
        self.matchmaking.games = self.games

    async def start(self, body: JsonObject, address: str) -> JsonObject:
        # The earlier server read only the two names; its clients send all sorts of "game".
        names = (name(body, "player_one"), name(body, "player_two"))
        game, player_tokens = self.games.create(names, address)
        await self.games.go_live(game)
        await self.games.records.flush()  # the tokens are answered once the game is on disk
        return {
            "game": game.token,
            "player_one": player_tokens[0],
            "player_two": player_tokens[1],
            "board": board_to_wire(game.state),
            "simulationId": game.match.id,
        }


async def _json_body(request: web.Request, timeout_s: float) -> JsonObject:
    try:
        async with asyncio.timeout(timeout_s):
            data = await request.read()
    except TimeoutError:
        raise TooSlow(f"the request's body did not arrive within {timeout_s:g} s") from None
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise BadRequest(f"the body is not valid JSON: {error}") from None
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    return body


async def answered(work: Endpoint, body: JsonObject, address: str) -> tuple[object, int]:
    """An API call's answer and its status, as the client is answered (or another node that
    passed it on)."""
    try:
        return await work(body, address), 200
    except BadRequest as error:
        return {"error": str(error)}, 400
    except Damaged as error:
        return {"error": str(error)}, 409
    except TooMany as error:
        return {"error": str(error)}, 429
    except Unavailable as error:
        return {"error": str(error)}, 503


def _endpoint(work: Endpoint, body_timeout_s: float) -> Handler:
    """A request's body must arrive within ``body_timeout_s``, as its head must
    (``httpIdleTimeoutMs``): a client that stops halfway is answered 408 and cut off."""

    async def handle(request: web.Request) -> web.StreamResponse:
        try:
            body = await _json_body(request, body_timeout_s)
        except TooSlow as error:
            response = answer({"error": str(error)}, 408)
            response.force_close()
            return response
        except BadRequest as error:
            return answer({"error": str(error)}, 400)
        return answer(*await answered(work, body, request.remote or ""))

    return handle


async def preflight(request: web.Request) -> web.StreamResponse:
    return web.Response(status=204, headers=PREFLIGHT)


THUD_API = web.AppKey("thud_api", ThudApi)


def endpoints(api: ThudApi) -> dict[str, Endpoint]:
    """The API's calls by path."""
    games = api.games

    async def move(body: JsonObject, address: str) -> Answer:
        return await games.move(parse_move(body), play=True)

    async def validate(body: JsonObject, address: str) -> Answer:
        return await games.move(parse_move(body), play=False)

    async def game(body: JsonObject, address: str) -> object:
        return await games.board(string(body, "game")) or False

    async def save(body: JsonObject, address: str) -> bool:
        return await games.save(string(body, "game"))

    async def load(body: JsonObject, address: str) -> bool:
        return await games.load(string(body, "game"), address)

    return {
        "/start": api.start,
        "/move": move,
        "/move/validate": validate,
        "/game": game,
        "/save": save,
        "/load": load,
    }


PASSED_ON = frozenset({"/move", "/move/validate", "/game", "/save"})
"""The calls about a game that another node passes to the node playing it (``ThudGames``)."""


def _routes(app: web.Application, api: ThudApi) -> None:
    body_timeout_s = api.games.arena.config.http_idle_timeout_ms / 1000
    for path, work in endpoints(api).items():
        app.router.add_post(path, _endpoint(work, body_timeout_s))
        app.router.add_route("OPTIONS", path, preflight)
    app.router.add_get("/match/{playername}", api.matchmaking.socket)
    app.on_shutdown.append(api.matchmaking.shut_down)


def add_routes(
    app: web.Application,
    arena: Arena,
    records: Records,
    quota: PageQuota,
    others: OtherNodes | None = None,
) -> ThudApi:
    """Serve the API from the visor's app; its matchmaking sockets count against the visor's
    page ``quota``; with ``others``, requests for the games of the arena's other nodes are
    passed to the node that plays them."""
    api = ThudApi(arena, records, quota, others)
    app[THUD_API] = api
    _routes(app, api)
    return api


@contextlib.asynccontextmanager
async def serving_separately(
    app: web.Application, host: str, port: int, connections: HttpConnections
) -> AsyncIterator[int | None]:
    """Also serve the API of ``app`` (the same games and players) on ``port``, unless it is 0;
    its connections count against the visor's ``connections``."""
    if not port:
        yield None
        return
    own = web.Application()
    api = app[THUD_API]
    _routes(own, api)
    idle_ms = api.games.arena.config.http_idle_timeout_ms
    names = ("the Thud HTTP API", '"thudApiPort" in config.json')
    async with serving_http(own, host, port, connections, idle_ms, names) as bound:
        log.info("the Thud HTTP API is also on http://%s:%s/", host, bound)
        yield bound
