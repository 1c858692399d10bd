"""The visor: the arena's web face, served by aiohttp from the same process as the TCP server.

Pages are static files (no build step, nothing from a CDN); everything live goes through one
websocket per page, ``/ws``, whose messages are JSON objects:

page -> server: ``lobby`` {game?}, ``watch`` {simulationId}, ``create`` {game, clock?},
``run-game`` {game, players, delayMs}, ``play`` {game, side, opponent, nick, simulationId?,
client?, clock?}, ``seek`` {game, nick} (an unrated seek as a guest, docs/protocol.md),
``cancel-seek``, ``move`` {move, declare, turn} (a ``player-turn`` of the page's seat). A
``clock`` is create-simulation's (docs/protocol.md): a time bank per seat for the new game.
server -> page: ``lobby`` {game, simulations, counts, house}, ``snapshot``, ``turn``, ``left``,
``end``, ``created``, ``seated``, ``seeking`` {game} (the seek waits in the pool),
``seek-cancelled``, ``seat`` {message: what a bot in that seat would receive}, ``error`` {message}.

A ``lobby`` lists the first ``visor.lobby.LOBBY_ROWS`` simulations, of one game if the page asked
for it, in the lobby's order; ``counts`` gives, for each game, how many are playing, waiting and
finished, listed or not. A page past its address's or the arena's cap (``maxPagesPerAddress``,
``maxPages``, unless the busiest address gives way: ``visor.pages.PageQuota``) gets ``error``
``Too many pages``, then its socket is closed (1013).

For spectators, ``snapshot`` and ``turn`` carry ``clock`` ({seat, timeoutMs}, plus elapsedMs in a
snapshot: the seat awaited and its time; with a time bank, remainingMs by seat and incrementMs
too; null once the game is over) and the last reply times
(``replyMs``: of the seat that played, or per seat in a snapshot); lobby rows carry ``ageMs``;
``created`` carries ``botPort``, the TCP port bots join on.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import html
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path

import orjson
from aiohttp import WSMsgType, web

from server.arena import Arena
from server.cluster import OtherNodes, Unanswered
from server.commentary import replay_result_text
from server.game_file import record_lines
from server.games.base import JsonObject
from server.league import GameResult, league_to_wire
from server.records import GameFilter, Records, RecordsOutOfReach
from server.replay import DamagedRecord, replay_to_wire, turns_to_wire
from server.tournament.schedule import format_standings
from server.tournament.spec import TournamentError, spec_from_mapping
from visor import (
    bot_logs,
    bot_versions,
    game_pages,
    ladder,
    node_requests,
    play_from,
    replay_image,
    tv,
)
from visor.connections import HttpConnections, serving_http
from visor.errors import RECORDS_UNAVAILABLE, PageError
from visor.game_export import export_games, wants_lines
from visor.health import Health
from visor.house_games import HouseGames
from visor.hub import SpectatorHub, running
from visor.metrics import Metrics
from visor.page_connection import PageConnection
from visor.pages import Page, PageQuota, page_socket, refuse_page
from visor.responses import json_error, json_response
from visor.thud_api import routes as thud_api

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
MAX_PAGE = 1_000_000  # of /api/games: far past any archive, and an OFFSET SQLite can hold
MAX_TURNS_READ = 2000  # turns one answer of /api/games/{id}/turns holds
FLUSH_WAIT_S = 5.0  # for the records to take a live game's latest turns before they are read
RETRY_AFTER_S = 5  # when to ask again while the records' database is out of reach
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'"
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ARENA = web.AppKey("arena", Arena)
HUB = web.AppKey("hub", SpectatorHub)
RECORDS = web.AppKey("records", Records)
PAGE_QUOTA = web.AppKey("page_quota", PageQuota)
HOUSE_GAMES = web.AppKey("house_games", HouseGames)


@web.middleware
async def security_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Nicks come from strangers: the pages render them as text, and this stops any script."""
    response = await handler(request)
    # A handler may bring its own policy (a game's sandbox worker); every page gets this one.
    response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@web.middleware
async def records_out_of_reach(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A request that reads the records while their database is out of reach: a 503 that
    names the outage and says when to ask again (the log says it once an outage, not per
    request: ``server.records.queries``); the games play on meanwhile."""
    try:
        return await handler(request)
    except RecordsOutOfReach:
        body = {
            "error": RECORDS_UNAVAILABLE,
            "reason": "the arena's records cannot be read now; games are played and recorded "
            "meanwhile, and can be read once the database is back",
            "retryAfterS": RETRY_AFTER_S,
        }
        response = json_response(body, 503)
        response.headers["Retry-After"] = str(RETRY_AFTER_S)
        return response


NOT_FOUND_PAGE = (STATIC / "not-found.html").read_text(encoding="utf-8")
MAX_PATH_SHOWN = 200  # characters of an unknown path the 404 page repeats


@web.middleware
async def not_found(request: web.Request, handler: Handler) -> web.StreamResponse:
    """An unknown URL: a page of the visor's own with the ways back, or, for the API and for
    anything but a page request, a JSON error as every API answer is."""
    try:
        return await handler(request)
    except web.HTTPNotFound:
        if request.path.startswith("/api/") or request.method not in ("GET", "HEAD"):
            return json_error(404, f"no such path: {request.path}")
        path = request.path
        if len(path) > MAX_PATH_SHOWN:
            path = path[:MAX_PATH_SHOWN] + "…"
        return web.Response(
            text=NOT_FOUND_PAGE.replace("{path}", html.escape(path)),
            status=404,
            content_type="text/html",
            headers={"Cache-Control": "no-cache"},
        )


def page(name: str) -> Handler:
    async def serve(request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / name, headers={"Cache-Control": "no-cache"})

    return serve


def create_app(arena: Arena, hub: SpectatorHub, records: Records) -> web.Application:
    app = web.Application(middlewares=[security_headers, not_found, records_out_of_reach])
    app[ARENA] = arena
    app[HUB] = hub
    app[RECORDS] = records
    config = arena.config
    app[PAGE_QUOTA] = quota = PageQuota(config.max_pages, config.max_pages_per_address)
    app[HOUSE_GAMES] = HouseGames(arena)
    app.router.add_get("/", page("index.html"))
    app.router.add_get("/watch/{simulation_id}", page("watch.html"))
    app.router.add_get("/replay/{game_id}", page("replay.html"))
    app.router.add_get("/replay", page("replay.html"))  # a game file, opened or dropped
    app.router.add_get("/ws", websocket)
    app.router.add_get("/api/simulations", api_simulations)
    app.router.add_get("/api/games", api_games)
    app.router.add_get("/api/games/{game_id}", api_game)
    app.router.add_get("/api/games/{game_id}/replay", api_replay)
    app.router.add_get("/api/games/{game_id}/turns", api_turns)
    app.router.add_get("/api/games/{game_id}/game.jsonl", api_game_file)
    replay_image.add_routes(app, records)  # /api/games/{game_id}/replay.gif
    play_from.add_routes(app, arena, records)  # POST /api/games/{game_id}/play-from?turn=N
    app.router.add_get("/api/tournaments", api_tournaments)
    app.router.add_get("/api/league", api_league)
    app.router.add_get("/league", page("league.html"))
    app.router.add_get("/ladder", page("ladder.html"))
    app.router.add_get("/bots/{name}", page("bot.html"))
    app.router.add_get("/tv", page("tv.html"))
    app.router.add_get("/matches", page("matches.html"))
    # Each game's rules page, its own pages (/play/thud, /clients) and files (/games/<name>/).
    game_pages.add_routes(app)
    app.router.add_static("/static", STATIC)
    # The earlier Python Thud server's HTTP API and matchmaking socket (docs/thud-api.md).
    api = thud_api.add_routes(app, arena, records, quota, hub.others)
    if hub.others is not None:  # what the other nodes ask of this one, through Redis
        turns = functools.partial(local_turns, app)
        hub.others.answer_requests(node_requests.answerer(turns, thud_api.endpoints(api)))
    ladder.add_routes(app, arena, records)  # /api/ladder, /api/bots/{name}
    bot_versions.add_routes(app, arena, records)  # /api/bots/{name}/versions
    bot_logs.add_routes(app, arena, records)  # POST /api/bots/{name}/logs
    tv.add_routes(app, arena, hub)  # /api/tv
    return app


async def api_simulations(request: web.Request) -> web.Response:
    """Every live simulation of the arena, on every node: the lobby's list."""
    return json_response({"simulations": request.app[HUB].live_simulations()})


async def api_games(request: web.Request) -> web.StreamResponse:
    """Recorded games, newest first: ?game=&player=&result=&tournament=&page=&perPage=; asked
    for JSON lines, the archive's export instead (``visor.game_export``)."""
    if wants_lines(request):
        return await export_games(request, request.app[RECORDS])
    query = request.query
    try:
        page_number = int(query.get("page", "1"))
        per_page = int(query.get("perPage", "50"))
    except ValueError:
        return json_error(400, "page and perPage must be integers")
    if not 1 <= page_number <= MAX_PAGE:
        return json_error(400, f"page must be from 1 to {MAX_PAGE}")
    where = GameFilter(
        game=query.get("game"),
        player=query.get("player"),
        result=query.get("result"),
        tournament=query.get("tournament"),
        page=page_number,
        per_page=per_page,
    )
    return json_response(await asyncio.to_thread(request.app[RECORDS].games, where))


def damaged(error: DamagedRecord) -> web.Response:
    log.warning("records: %s", error)
    return json_error(409, f"this record cannot be read back: {error}")


async def api_game(request: web.Request) -> web.Response:
    """The full record of one game (docs/records.md)."""
    try:
        record = await asyncio.to_thread(request.app[RECORDS].game, request.match_info["game_id"])
    except DamagedRecord as error:
        return damaged(error)
    if record is None:
        return json_error(404, "no recorded game with this id")
    return json_response(record)


async def api_tournaments(request: web.Request) -> web.Response:
    """Every tournament recorded, newest first."""
    return json_response(await asyncio.to_thread(request.app[RECORDS].tournaments))


async def api_league(request: web.Request) -> web.Response:
    """The league of a tournament (?tournament=ID), or of every game between named bots; a
    tournament's with the games its queue gave up on (``notPlayed``: the arena's faults)."""
    records = request.app[RECORDS]
    tournament_id = request.query.get("tournament")
    not_played: list[JsonObject] = []
    if tournament_id is not None:
        tournament = await asyncio.to_thread(records.tournament, tournament_id)
        if tournament is None:
            return json_error(404, "no tournament with this id")
        not_played = await asyncio.to_thread(records.tournament_faults, tournament_id)
    else:
        tournament = None
    results = await asyncio.to_thread(records.results, tournament_id)
    league = league_to_wire(results)
    standings = None if tournament is None else _standings(tournament, results)
    return json_response(
        {"tournament": tournament, **league, "notPlayed": not_played, "standings": standings}
    )


def _standings(tournament: JsonObject, results: list[GameResult]) -> JsonObject | None:
    """A Swiss, knockout or arena event's standings, from its file as its records keep it
    (None for another format, or a file this machine cannot read back: a bot's program
    missing here, say)."""
    try:
        spec = spec_from_mapping(tournament["spec"], Path.cwd())
    except TournamentError:
        return None
    return format_standings(spec, results)


async def api_replay(request: web.Request) -> web.Response:
    """Every position of a recorded game, recomputed from its seed and turns."""
    records = request.app[RECORDS]

    def build() -> JsonObject | None:
        record = records.game(request.match_info["game_id"])
        return None if record is None else replay_to_wire(record)

    try:
        replay = await asyncio.to_thread(build)
    except DamagedRecord as error:  # a damaged record, or one the current rules cannot replay
        return damaged(error)
    if replay is None:
        return json_error(404, "no recorded game with this id")
    return json_response(replay)


async def api_game_file(request: web.Request) -> web.Response:
    """A recorded game as a game file (JSON lines), as ``tavern play --output`` writes one."""
    game_id = request.match_info["game_id"]

    def build() -> bytes | None:
        record = request.app[RECORDS].game(game_id)
        if record is None:
            return None
        return b"".join(record_lines(record, replay_result_text(record)))

    try:
        lines = await asyncio.to_thread(build)
    except DamagedRecord as error:
        return damaged(error)
    if lines is None:
        return json_error(404, "no recorded game with this id")
    return web.Response(body=lines, content_type="application/jsonl")


async def api_turns(request: web.Request) -> web.Response:
    """Turns ``from`` to ``to`` (both included, at most MAX_TURNS_READ) of a game, live or
    recorded, with their events: the move list of a page that came late (docs/records.md).

    A game another node plays is asked of that node (through Redis), whose records have its
    turns."""
    game_id = request.match_info["game_id"]
    app = request.app
    others = app[HUB].others
    node = None if others is None or app[ARENA].get(game_id) else others.node_of(game_id)
    if others is not None and node is not None:
        try:
            status, body = await others.ask(node, request.path_qs)
        except Unanswered as error:
            return json_error(502, f"the node playing this game does not answer: {error}")
        return compressed(web.Response(body=body, status=status, content_type="application/json"))
    return compressed(await local_turns(app, game_id, request.query))


async def local_turns(app: web.Application, game_id: str, query: Mapping[str, str]) -> web.Response:
    """``api_turns`` of a game this node plays or has in its records. A live game's latest
    turns may still wait for the records' writer: they are written out first, so the answer
    holds every turn played when it was asked for."""
    try:
        first = int(query.get("from", "1"))
        last = int(query.get("to", str(first + MAX_TURNS_READ - 1)))
    except ValueError:
        return json_error(400, "from and to must be integers")
    if not 1 <= first <= last:
        return json_error(400, "from must be 1 or more, and to no less than from")
    last = min(last, first + MAX_TURNS_READ - 1)
    if app[ARENA].get(game_id) is not None:
        with contextlib.suppress(TimeoutError):  # then what is written so far
            async with asyncio.timeout(FLUSH_WAIT_S):
                await app[RECORDS].flush()

    def read() -> JsonObject | None:
        record = app[RECORDS].game(game_id)
        if record is None:
            return None
        return {"id": game_id, "turns": turns_to_wire(record, first, last)}

    try:
        turns = await asyncio.to_thread(read)
    except DamagedRecord as error:
        return damaged(error)
    if turns is None:
        return json_error(404, "no recorded game with this id")
    return json_response(turns)


def compressed(response: web.Response) -> web.Response:
    """Sent compressed to a client that takes it: a long game's events repeat themselves, and
    shrink to a twentieth (1,000 Dwarven Tavern turns: 620 kB, 34 kB compressed)."""
    response.enable_compression()
    return response


async def websocket(request: web.Request) -> web.StreamResponse:
    arena, hub, quota = request.app[ARENA], request.app[HUB], request.app[PAGE_QUOTA]
    ws = page_socket()
    await ws.prepare(request)
    address = request.remote or ""
    page = Page(ws, request.transport, arena.config.max_page_buffer_bytes)
    refused = quota.admit(address, page)
    if refused is not None:
        error = {"type": "error", "message": PageError.TOO_MANY_PAGES, "reason": refused}
        return await refuse_page(ws, orjson.dumps(error))
    connection = PageConnection(arena, hub, request.app[HOUSE_GAMES], page, address)
    hub.pages.add(page)
    try:
        async with asyncio.TaskGroup() as tasks:
            page.writer = tasks.create_task(page.write_loop())
            try:
                async for message in ws:
                    if message.type is WSMsgType.TEXT:
                        connection.receive(message.data)
            finally:
                connection.closed()
    finally:
        quota.leave(address, page)
        await ws.close()
    return ws


@contextlib.asynccontextmanager
async def serving(
    arena: Arena,
    host: str,
    port: int,
    records: Records,
    others: OtherNodes | None = None,
    metrics: Metrics | None = None,
    health: Health | None = None,
) -> AsyncIterator[int]:
    """Serve the visor until the block exits; yields the HTTP port actually bound. ``others``:
    the arena's other nodes, whose games the pages see too; ``metrics``: served on /metrics;
    ``health``: on /healthz and /readyz."""
    config = arena.config
    hub = SpectatorHub(arena, others)
    app = create_app(arena, hub, records)
    connections = HttpConnections.for_config(config)
    if metrics is not None:
        app.router.add_get("/metrics", metrics.serve)
        metrics.measure("tavern_pages", "Browser pages connected", lambda: len(hub.pages))
        metrics.measure(
            "tavern_http_connections", "HTTP connections open", lambda: connections.open
        )
    if health is not None:
        health.add_routes(app)
    names = ("the visor", '--http-port N (or "httpPort" in config.json)')
    idle_ms = config.http_idle_timeout_ms
    async with serving_http(app, host, port, connections, idle_ms, names) as bound:
        log.info("the visor is on http://%s:%s/", host, bound)
        try:
            async with (
                running(hub),
                thud_api.serving_separately(app, host, config.thud_api_port, connections),
            ):
                yield bound
        finally:
            await hub.shut_down(timeout_s=2.0)
