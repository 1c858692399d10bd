"""The HTTP API and websocket matchmaking of the earlier Python Thud server (docs/thud-api.md).

Its clients start games and move with JSON POSTs and find opponents on ``/match/{name}``; here
every such game is an arena simulation of ``thud`` whose two seats are ``HttpSeat``s, so it
follows the arena's rules and clock, shows in the lobby, can be watched and is recorded.

* A request the API cannot read (not JSON, not an object, a field missing or of the wrong type)
  is answered 400 with ``{"error": "..."}``. A well-formed request about a game or a move that is
  not allowed (unknown or wrong token, not your turn or piece, illegal move, game over) is
  answered 200 with ``false``, as the earlier server did.
* ``/move`` answers once the match loop has applied the move: the client's next ``/game`` or
  ``/move`` sees it.
* Tokens are ``secrets.token_urlsafe``; the records keep only their SHA-256 digests (table
  ``thud_api_games``), enough for ``/load`` to bring a game back after a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import hmac
import logging
import re
import secrets
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeAlias

import orjson
from aiohttp import WSMsgType, web

from server.arena import Arena
from server.config import ListenError
from server.games.base import JoinRejected, JsonObject, Outcome
from server.games.thud import rules
from server.games.thud.rules import Square, State
from server.records import Records
from server.replay import DamagedRecord, frames
from server.simulation import GameFinished, Simulation, Status, TurnPlayed, Update
from visor.hub import Page

log = logging.getLogger(__name__)

Answer: TypeAlias = bool | list[list[int]]
"""What ``/move`` and ``/move/validate`` answer: ``true``, the captured squares, or ``false``."""
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

GAME = "thud"
SIZE = 15
RACES = ("Dwarf", "Troll")  # by seat: player one plays the dwarfs and moves first
PLAYER_KEYS = ("player_one", "player_two")
MAX_NAME = 64  # the arena's longest nick
NAME = re.compile(r"[A-Za-z0-9]{1,64}")  # a matchmaking player name
DUPLICATE_NAME = "Duplicate player name."
MAX_LIVE_GAMES = 1000  # live HTTP API games at once; /start answers 503 beyond
READY_TIMEOUT_S = 10.0  # until a new or loaded game's match loop asks for its first move
APPLY_TIMEOUT_S = 10.0  # until the match loop has applied a move it accepted
MAX_WS_MESSAGE = 16 * 1024
CORS = {"Access-Control-Allow-Origin": "*"}  # tokens travel in bodies, never in cookies
PREFLIGHT = {
    **CORS,
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Allow-Headers": "Content-Type",
    "Access-Control-Max-Age": "86400",
}


# --- the board ----------------------------------------------------------------------------------
def _numbering(squares: Sequence[Square], first: int) -> tuple[int, ...]:
    """Each start slot's id: ``first`` upwards in order of x, then y, of the start squares."""
    ids = [0] * len(squares)
    for rank, slot in enumerate(sorted(range(len(squares)), key=lambda slot: squares[slot])):
        ids[slot] = first + rank
    return tuple(ids)


_START = rules.initial_state()
DWARF_IDS = _numbering(_START.dwarfs, 1)
TROLL_IDS = _numbering(_START.trolls, 1 + len(_START.dwarfs))


def board_to_wire(state: State) -> JsonObject:
    """The board as the earlier server sent it: one list of 15 cells (y = 0..14) per column x."""
    pieces: dict[Square, JsonObject] = {}
    for square, slot in zip(state.dwarfs, state.dwarf_slots, strict=True):
        pieces[square] = {"id": DWARF_IDS[slot], "type": "Dwarf"}
    for square, slot in zip(state.trolls, state.troll_slots, strict=True):
        pieces[square] = {"id": TROLL_IDS[slot], "type": "Troll"}
    return {
        str(x): [
            pieces.get((x, y))
            or {"id": "null", "type": "open" if rules.is_square(x, y) else "null"}
            for y in range(SIZE)
        ]
        for x in range(SIZE)
    }


# --- requests -----------------------------------------------------------------------------------
class BadRequest(Exception):
    """A request the API cannot read: answered 400 with ``{"error": message}``."""


class TooMany(Exception):
    """One client asks for more than its share: answered 429 with ``{"error": message}``."""


class Damaged(Exception):
    """A stored game this request needs cannot be read back: answered 409."""


class Unavailable(Exception):
    """The server cannot take the request now: answered 503 with ``{"error": message}``."""


@dataclasses.dataclass(frozen=True, slots=True)
class MoveRequest:
    game: str
    player: str
    start: Square
    end: Square


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _string(body: JsonObject, field: str) -> str:
    value = body.get(field)
    if not isinstance(value, str):
        raise BadRequest(f'"{field}" is missing or not a string')
    return value


def _name(body: JsonObject, field: str) -> str:
    value = _string(body, field)
    if not 0 < len(value) <= MAX_NAME:
        raise BadRequest(f'"{field}" must be a name of 1 to {MAX_NAME} characters')
    return value


def _square(body: JsonObject, field: str) -> Square:
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
        _string(body, "game"),
        _string(body, "player"),
        _square(body, "start"),
        _square(body, "destination"),
    )


def _answer_of(events: Sequence[Any]) -> Answer:
    for event in events:
        if isinstance(event, rules.PiecesKilled):
            return [list(square) for square in event.squares]
    return True


# --- games --------------------------------------------------------------------------------------
class HttpSeat:
    """A seat played through the API: the match's messages to it are noted, not sent anywhere.

    The player asks for the position (``/game``) and moves (``/move``) when it likes; the seat
    only tells its game when the match loop first asks for a move, and keeps the error the
    match answers a refused move with.
    """

    def __init__(self, game: HttpGame) -> None:
        self.game = game
        self.rejected: JsonObject | None = None

    def send(self, message: JsonObject) -> None:
        kind = message.get("type")
        if kind == "turn":
            self.game.ready.set()
        elif kind == "error":
            self.rejected = message

    def close(self) -> None:
        """Nothing to release."""


class HttpGame:
    """One API game: its tokens, its simulation, and the sockets of matched players."""

    def __init__(
        self,
        token: str,
        simulation: Simulation,
        player_digests: tuple[str, str],
        names: tuple[str, str],
        address: str,
    ) -> None:
        self.token = token
        self.address = address  # of the client that started it, for the per-address cap
        self.simulation = simulation
        self.player_digests = player_digests
        self.names = names
        self.channels = (HttpSeat(self), HttpSeat(self))
        self.lock = asyncio.Lock()  # one move or validation at a time
        self.ready = asyncio.Event()  # the match loop has asked for a move (or the game ended)
        self.applied: asyncio.Future[Answer] | None = None  # the move being applied
        self.sockets: list[MatchSocket | None] = [None, None]

    def seat_of(self, player_token: str) -> int | None:
        wanted = digest(player_token)
        found = None
        for seat, expected in enumerate(self.player_digests):
            if hmac.compare_digest(wanted, expected):
                found = seat
        return found

    def state(self) -> State:
        state = self.simulation.state
        return state if state is not None else rules.initial_state()

    def over(self) -> bool:
        return self.simulation.status is Status.FINISHED or self.simulation.outcome is not None

    def legal_move(self, seat: int, start: Square, end: Square) -> rules.Move | None:
        """The move, if the seat may play it now."""
        state = self.simulation.state
        if self.simulation.status is not Status.PLAYING or self.over() or state is None:
            return None
        if state.end_reason is not None or rules.side_to_move(state) != rules.SIDES[seat]:
            return None
        if start not in (state.dwarfs if seat == 0 else state.trolls):
            return None
        for move in rules.moves_from(state, start):
            if move.end == end:
                return move
        return None


def result_to_wire(game: HttpGame, outcome: Outcome) -> JsonObject:
    score = rules.score(game.state())
    return {
        "reason": outcome.reason,
        "winner": None if outcome.winner is None else RACES[outcome.winner],
        "score": {"dwarfs": score.dwarfs, "trolls": score.trolls},
        "board": board_to_wire(game.state()),
    }


class MatchSocket:
    """A player on ``/match/{name}``: free until matched, then bound to one game."""

    def __init__(
        self,
        name: str,
        ws: web.WebSocketResponse,
        transport: asyncio.Transport | None,
        address: str,
    ) -> None:
        self.name = name
        self.address = address
        self.page = Page(ws, transport)  # a bounded outgoing queue and its write loop
        self.game: HttpGame | None = None
        self.seat = 0
        self.player_token = ""
        self.busy = False  # answering a request: news of the game's end waits for the answer
        self._held: list[object] = []

    def send(self, message: object) -> None:
        self.page.push(orjson.dumps(message).decode(), droppable=False)

    def send_after_reply(self, message: object) -> None:
        if self.busy:
            self._held.append(message)
        else:
            self.send(message)

    def replied(self, reply: object) -> None:
        self.send(reply)
        self.busy = False
        held, self._held = self._held, []
        for message in held:
            self.send(message)


class ThudApi:
    """The API's state: live games by game token, and the players on the matchmaking socket."""

    def __init__(self, arena: Arena, records: Records) -> None:
        self.arena = arena
        self.records = records
        self.games: dict[str, HttpGame] = {}  # live games by game token
        self._by_simulation: dict[str, HttpGame] = {}
        self.players: dict[str, MatchSocket] = {}  # connected matchmaking players by name
        self._loading = asyncio.Lock()
        self._per_address: Counter[str] = Counter()  # live games by the address that began them
        arena.listeners.append(self.on_update)

    @property
    def turn_timeout_s(self) -> float:
        """People and programs alike call the API: each move may take a person's time."""
        return self.arena.config.person_turn_timeout_ms / 1000

    # --- games ---------------------------------------------------------------------------------
    def _seat(
        self,
        simulation: Simulation,
        token: str,
        player_digests: tuple[str, str],
        names: tuple[str, str],
        address: str,
    ) -> HttpGame:
        """Seat two HTTP seats in a waiting simulation and start its match."""
        # The seats are held: a matched player who leaves before the start forfeits. An HTTP
        # seat cannot reconnect, so a matched player's closed socket forfeits at once.
        simulation.hold_seats = True
        simulation.limits = dataclasses.replace(simulation.limits, reconnect_grace_s=0.0)
        game = HttpGame(token, simulation, player_digests, names, address)
        for seat, name in enumerate(names):
            simulation.join(
                game.channels[seat],
                {"nick": name, "side": rules.SIDES[seat]},
                turn_timeout_s=self.turn_timeout_s,
                kind="http",
            )
        self._by_simulation[simulation.id] = game
        self._per_address[address] += 1
        self.arena.start_match(simulation)
        return game

    def _check_share(self, address: str) -> None:
        most = self.arena.config.max_thud_api_games_per_address
        if self._per_address[address] >= most:
            raise TooMany(f"at most {most} live games from one address: finish one first")

    def create_game(self, names: tuple[str, str], address: str) -> tuple[HttpGame, tuple[str, str]]:
        """A new game between two names; returns it and the two player tokens."""
        if len(self._by_simulation) >= MAX_LIVE_GAMES:
            raise Unavailable(f"the server plays {MAX_LIVE_GAMES} API games already: try later")
        self._check_share(address)
        token = secrets.token_urlsafe(24)
        player_tokens = (secrets.token_urlsafe(24), secrets.token_urlsafe(24))
        player_digests = (digest(player_tokens[0]), digest(player_tokens[1]))
        simulation = self.arena.create_simulation(GAME)
        game = self._seat(simulation, token, player_digests, names, address)
        self.records.thud_api_game_created(digest(token), simulation.id, player_digests, names)
        return game, player_tokens

    async def _until(self, game: HttpGame, event: Awaitable[Any], timeout_s: float) -> None:
        """Until ``event`` or the end of the game's match, at most ``timeout_s``."""
        waiting = asyncio.ensure_future(event)
        ended = asyncio.ensure_future(game.simulation.done.wait())
        try:
            await asyncio.wait({waiting, ended}, timeout=timeout_s, return_when="FIRST_COMPLETED")
        finally:
            waiting.cancel()
            ended.cancel()

    async def go_live(self, game: HttpGame) -> None:
        """Once the match asks for the first move, the game's token plays it.

        Until then its position is not known to the API (a loaded game is still being rebuilt).
        """
        await self._until(game, game.ready.wait(), READY_TIMEOUT_S)
        if game.over():
            return
        if not game.ready.is_set():
            raise Unavailable("the game did not start in time: try again")
        self.games[game.token] = game

    def on_update(self, simulation: Simulation, update: Update) -> None:
        """The arena's news: a move applied, or the end of an API game."""
        game = self._by_simulation.get(simulation.id)
        if game is None:
            return
        if isinstance(update, TurnPlayed):
            answer = _answer_of(update.events)
            if game.applied is not None and not game.applied.done():
                game.applied.set_result(answer)
            move = update.record.action["move"]
            opponent = game.sockets[1 - update.record.seat]
            if opponent is not None and opponent.game is game:
                opponent.send(
                    [
                        "opponent-move",
                        {"start": move["from"], "destination": move["to"], "result": answer},
                    ]
                )
        elif isinstance(update, GameFinished):
            self._forget(game)
            if game.applied is not None and not game.applied.done():
                game.applied.set_result(False)
            game.ready.set()
            self._tell_the_end(game, update.outcome)

    def _forget(self, game: HttpGame) -> None:
        if self.games.get(game.token) is game:
            del self.games[game.token]
        if self._by_simulation.get(game.simulation.id) is game:
            del self._by_simulation[game.simulation.id]
            self._per_address[game.address] -= 1
            if not self._per_address[game.address]:
                del self._per_address[game.address]

    def _tell_the_end(self, game: HttpGame, outcome: Outcome) -> None:
        """Each matched player hears how the game ended, and is free to match again."""
        for socket in game.sockets:
            if socket is not None and socket.game is game:
                socket.game = None
                socket.send_after_reply(["end", result_to_wire(game, outcome)])

    # --- the endpoints -------------------------------------------------------------------------
    async def start(self, body: JsonObject, address: str) -> JsonObject:
        # The earlier server read only the two names; its clients send all sorts of "game".
        names = (_name(body, "player_one"), _name(body, "player_two"))
        game, player_tokens = self.create_game(names, address)
        await self.go_live(game)
        await self.records.flush()  # the tokens are answered once the game is on disk
        return {
            "game": game.token,
            "player_one": player_tokens[0],
            "player_two": player_tokens[1],
            "board": board_to_wire(game.state()),
            "simulationId": game.simulation.id,
        }

    async def move(self, request: MoveRequest, *, play: bool) -> Answer:
        """``/move`` (``play``) or ``/move/validate``: true, the captured squares, or false."""
        game = self.games.get(request.game)
        if game is None:
            return False
        seat = game.seat_of(request.player)
        if seat is None:
            return False
        async with game.lock:
            move = game.legal_move(seat, request.start, request.end)
            if move is None:
                return False
            if not play:
                return [list(square) for square in move.killed] if move.killed else True
            applied: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
            game.applied = applied
            channel = game.channels[seat]
            channel.rejected = None
            wire = {"from": list(request.start), "to": list(request.end)}
            game.simulation.submit(seat, {"type": "player-turn", "move": wire}, channel)
            try:
                if channel.rejected is not None:  # the match refused it (the game is ending)
                    return False
                await self._until(game, asyncio.shield(applied), APPLY_TIMEOUT_S)
                if not applied.done():
                    return False
                await self.records.flush()  # an acknowledged move is on disk
                return applied.result()
            finally:
                game.applied = None

    async def board(self, token: str) -> JsonObject | None:
        """The board of a live game, else of the stored game with this token."""
        game = self.games.get(token)
        if game is not None:
            return board_to_wire(game.state())
        stored = await asyncio.to_thread(self.records.thud_api_game, digest(token))
        if stored is None:
            return None
        await self.records.flush()
        record = await self._stored_game(stored["gameId"])
        if record is None:
            return None
        return board_to_wire(await asyncio.to_thread(_last_state, record))

    async def _stored_game(self, game_id: str) -> JsonObject | None:
        """The record a token's game was kept in, which must be a Thud game that reads back."""
        try:
            record = await asyncio.to_thread(self.records.game, game_id)
        except DamagedRecord as error:
            log.warning("thud api: %s", error)
            raise Damaged(f"the stored game cannot be read back: {error}") from error
        if record is not None and record["game"] != GAME:
            log.warning("thud api: a token points at game %s, a %s game", game_id, record["game"])
            raise Damaged(f"the stored game {game_id} is not a Thud game")
        return record

    async def save(self, token: str) -> bool:
        """Every move played so far is on disk: true once it is."""
        token_digest = digest(token)
        if token not in self.games:
            stored = await asyncio.to_thread(self.records.thud_api_game, token_digest)
            if stored is None:
                return False
        self.records.thud_api_game_saved(token_digest)
        await self.records.flush()
        return True

    async def load(self, token: str, address: str) -> bool:
        """Make a stored, unfinished game live again (after a restart); true once it is."""
        if token in self.games:
            return True
        stored = await asyncio.to_thread(self.records.thud_api_game, digest(token))
        if stored is None:
            return False
        async with self._loading:
            if token in self.games:
                return True
            await self.records.flush()
            record = await self._stored_game(stored["gameId"])
            if (
                record is None
                or record["status"] != "unfinished"
                or record["id"] in self.arena.simulations
            ):
                return False
            self._check_share(address)
            try:
                simulation = self.arena.restore_simulation(record)
            except DamagedRecord as error:
                log.warning("thud api: %s", error)
                raise Damaged(f"the stored game cannot be replayed: {error}") from error
            except JoinRejected as error:  # it went live meanwhile
                log.info("thud api: game %s does not restore: %s", record["id"], error)
                return False
            game = self._seat(
                simulation, token, stored["playerDigests"], stored["players"], address
            )
            await self.go_live(game)
        return not game.over()

    # --- matchmaking ---------------------------------------------------------------------------
    def free_players(self, but: str) -> list[str]:
        return [name for name, s in self.players.items() if s.game is None and name != but]

    async def socket_request(self, socket: MatchSocket, action: str, data: object) -> object:
        """One matchmaking request; returns the answer to send."""
        if action == "match":
            return await self._match(socket, data)
        if action == "list":
            return ["list", self.free_players(socket.name)]
        if action not in ("move", "test", "game", "save", "load"):
            return ["error", f"unknown request {action!r}: use match, move, test, game, save, load"]
        if data is None:
            data = {}
        if not isinstance(data, dict):
            return ["error", f"the data of {action!r} must be a JSON object"]
        if socket.game is not None:  # a matched player may leave out its own tokens
            data = {"game": socket.game.token, "player": socket.player_token, **data}
        try:
            if action in ("move", "test"):
                return [action, await self.move(parse_move(data), play=action == "move")]
            token = _string(data, "game")
            if action == "game":
                return ["game", await self.board(token) or False]
            if action == "save":
                return ["save", await self.save(token)]
            return ["load", await self.load(token, socket.address)]
        except (BadRequest, Damaged, TooMany, Unavailable) as error:
            return ["error", str(error)]

    async def _match(self, socket: MatchSocket, other_name: object) -> object:
        if socket.game is not None:
            return ["error", "you are in a game already"]
        if not isinstance(other_name, str):
            return ["error", 'name the player to match: ["match", NAME]']
        other = self.players.get(other_name)
        if other is None or other is socket or other.game is not None:
            return ["list", self.free_players(socket.name)]
        try:
            game, player_tokens = self.create_game((socket.name, other.name), socket.address)
        except (TooMany, Unavailable) as error:
            return ["error", str(error)]
        for seat, player in enumerate((socket, other)):
            player.game, player.seat, player.player_token = game, seat, player_tokens[seat]
        try:
            await self.go_live(game)
        except Unavailable as error:
            return ["error", str(error)]
        other.send(["start", self._start_info(game, 1, player_tokens[1])])
        game.sockets = [socket, other]
        if game.simulation.outcome is not None:  # someone left while it was starting
            self._tell_the_end(game, game.simulation.outcome)
        return ["start", self._start_info(game, 0, player_tokens[0])]

    def _start_info(self, game: HttpGame, seat: int, player_token: str) -> JsonObject:
        return {
            "game": game.token,
            "player": player_token,
            PLAYER_KEYS[seat]: player_token,
            "race": RACES[seat],
            "opponent": game.names[1 - seat],
            "board": board_to_wire(game.state()),
            "simulationId": game.simulation.id,
        }

    def socket_closed(self, socket: MatchSocket) -> None:
        """The name is free again; a game still running ends as a disconnect."""
        if self.players.get(socket.name) is socket:
            del self.players[socket.name]
        socket.page.close()
        game = socket.game
        if game is not None:
            socket.game = None
            game.sockets[socket.seat] = None
            game.simulation.leave(socket.seat, game.channels[socket.seat])

    async def shut_down(self, app: web.Application) -> None:
        """The server is stopping: close every matchmaking socket."""
        await asyncio.gather(
            *(
                s.page.ws.close(message=b"server shutting down")
                for s in list(self.players.values())
            ),
            return_exceptions=True,
        )

    # --- HTTP ----------------------------------------------------------------------------------
    async def match_socket(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["playername"]
        if not NAME.fullmatch(name):
            return answer({"error": f"a player name is 1 to {MAX_NAME} letters and digits"}, 400)
        ws = web.WebSocketResponse(heartbeat=30, max_msg_size=MAX_WS_MESSAGE)
        await ws.prepare(request)
        if name in self.players:
            await ws.send_str(orjson.dumps(DUPLICATE_NAME).decode())
            await ws.close()
            return ws
        socket = MatchSocket(name, ws, request.transport, request.remote or "")
        self.players[name] = socket
        try:
            async with asyncio.TaskGroup() as tasks:
                socket.page.writer = tasks.create_task(socket.page.write_loop())
                try:
                    socket.send(["list", self.free_players(name)])
                    async for message in ws:
                        if message.type in (WSMsgType.TEXT, WSMsgType.BINARY):
                            socket.busy = True
                            socket.replied(await self._socket_text(socket, message.data))
                finally:
                    self.socket_closed(socket)
        finally:
            await ws.close()
        return ws

    async def _socket_text(self, socket: MatchSocket, text: str | bytes) -> object:
        try:
            message = orjson.loads(text)
        except orjson.JSONDecodeError:
            return ["error", "not valid JSON"]
        if isinstance(message, list) and 1 <= len(message) <= 2 and isinstance(message[0], str):
            action, data = message[0], message[1] if len(message) == 2 else None
        elif isinstance(message, dict) and len(message) == 1:
            action, data = next(iter(message.items()))
        else:
            return ["error", 'send ["request", DATA] or {"request": DATA}']
        return await self.socket_request(socket, action, data)


def _last_state(record: JsonObject) -> State:
    try:
        *_, last = frames(record)
    except DamagedRecord as error:
        log.warning("thud api: %s", error)
        raise Damaged(f"the stored game cannot be replayed: {error}") from error
    state: State = last.state
    return state


def answer(body: object, status: int = 200) -> web.Response:
    return web.Response(
        body=orjson.dumps(body), status=status, content_type="application/json", headers=CORS
    )


async def _json_body(request: web.Request) -> JsonObject:
    try:
        body = orjson.loads(await request.read())
    except orjson.JSONDecodeError as error:
        raise BadRequest(f"the body is not valid JSON: {error}") from None
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    return body


Endpoint = Callable[[JsonObject, str], Awaitable[object]]
"""An API call: the request's body and the client's address, to the answer."""


def _endpoint(work: Endpoint) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        try:
            return answer(await work(await _json_body(request), request.remote or ""))
        except BadRequest as error:
            return answer({"error": str(error)}, 400)
        except Damaged as error:
            return answer({"error": str(error)}, 409)
        except TooMany as error:
            return answer({"error": str(error)}, 429)
        except Unavailable as error:
            return answer({"error": str(error)}, 503)

    return handle


async def preflight(request: web.Request) -> web.StreamResponse:
    return web.Response(status=204, headers=PREFLIGHT)


THUD_API = web.AppKey("thud_api", ThudApi)


def _routes(app: web.Application, api: ThudApi) -> None:
    async def move(body: JsonObject, address: str) -> Answer:
        return await api.move(parse_move(body), play=True)

    async def validate(body: JsonObject, address: str) -> Answer:
        return await api.move(parse_move(body), play=False)

    async def game(body: JsonObject, address: str) -> object:
        return await api.board(_string(body, "game")) or False

    async def save(body: JsonObject, address: str) -> bool:
        return await api.save(_string(body, "game"))

    async def load(body: JsonObject, address: str) -> bool:
        return await api.load(_string(body, "game"), address)

    endpoints: dict[str, Endpoint] = {
        "/start": api.start,
        "/move": move,
        "/move/validate": validate,
        "/game": game,
        "/save": save,
        "/load": load,
    }
    for path, work in endpoints.items():
        app.router.add_post(path, _endpoint(work))
        app.router.add_route("OPTIONS", path, preflight)
    app.router.add_get("/match/{playername}", api.match_socket)
    app.on_shutdown.append(api.shut_down)


def add_routes(app: web.Application, arena: Arena, records: Records) -> ThudApi:
    """Serve the API from the visor's app."""
    api = ThudApi(arena, records)
    app[THUD_API] = api
    _routes(app, api)
    return api


@contextlib.asynccontextmanager
async def serving_separately(
    app: web.Application, host: str, port: int
) -> AsyncIterator[int | None]:
    """Also serve the API of ``app`` (the same games and players) on ``port``, unless it is 0."""
    if not port:
        yield None
        return
    own = web.Application()
    _routes(own, app[THUD_API])
    runner = web.AppRunner(own, access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, host, port, reuse_address=True).start()
        except OSError as error:
            change = '"thudApiPort" in config.json'
            raise ListenError("the Thud HTTP API", host, port, error, change) from error
        log.info("the Thud HTTP API is also on http://%s:%s/", host, port)
        yield port
    finally:
        await runner.cleanup()
