"""The earlier Thud server's matchmaking socket, ``/match/{playername}``.

A player connects under a name, is listed to the others, and matches one by name: the two then
play an API game, sending ``["move", DATA]`` and the other requests of the HTTP API over the
socket, and each hears of the other's moves and of the end.
"""

from __future__ import annotations

import asyncio
import re

import orjson
from aiohttp import WSMsgType, web

from server.commands import Leave
from server.games.base import JsonObject, Outcome
from visor.errors import PageError
from visor.pages import Page, PageQuota, page_socket, refuse_page
from visor.thud_api.codec import (
    MAX_NAME,
    PLAYER_KEYS,
    RACES,
    Answer,
    BadRequest,
    Damaged,
    TooMany,
    Unavailable,
    answer,
    board_to_wire,
    parse_move,
    result_to_wire,
    string,
)
from visor.thud_api.games import HttpGame, ThudGames

NAME = re.compile(r"[A-Za-z0-9]{1,64}")  # a matchmaking player name
DUPLICATE_NAME = "Duplicate player name."


class MatchSocket:
    """A player on ``/match/{name}``: free until matched, then bound to one game."""

    def __init__(self, name: str, page: Page, address: str) -> None:
        self.name = name
        self.address = address
        self.page = page  # a bounded outgoing queue and its write loop
        self.game: HttpGame | None = None
        self.seat = 0
        self.player_token = ""
        self.busy = False  # answering a request: news of the game's end waits for the answer
        self._held: list[object] = []

    def send(self, message: object) -> None:
        self.page.push(orjson.dumps(message), droppable=False)

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


class Matchmaking:
    """The players on the socket by name, and which API game each plays."""

    def __init__(self, quota: PageQuota, max_page_bytes: int) -> None:
        self.quota = quota  # the sockets count as the visor's pages do, against the same caps
        self.max_page_bytes = max_page_bytes
        self.players: dict[str, MatchSocket] = {}  # connected players by name
        self._sockets: dict[str, list[MatchSocket | None]] = {}  # by game token, by seat
        self.games: ThudGames | None = None  # set once the games exist (they call us back)

    def _games(self) -> ThudGames:
        assert self.games is not None, "matchmaking needs the API's games"
        return self.games

    # --- news from the games -------------------------------------------------------------------
    def opponent_moved(self, game: HttpGame, seat: int, action: JsonObject, answer: Answer) -> None:
        sockets = self._sockets.get(game.token)
        opponent = sockets[1 - seat] if sockets else None
        if opponent is not None and opponent.game is game:
            move = action["move"]
            opponent.send(
                [
                    "opponent-move",
                    {"start": move["from"], "destination": move["to"], "result": answer},
                ]
            )

    def ended(self, game: HttpGame, outcome: Outcome) -> None:
        """Each matched player hears how the game ended, and is free to match again."""
        for socket in self._sockets.pop(game.token, []):
            if socket is not None and socket.game is game:
                socket.game = None
                socket.send_after_reply(["end", result_to_wire(game.state, outcome)])

    # --- requests ------------------------------------------------------------------------------
    def free_players(self, but: str) -> list[str]:
        return [name for name, s in self.players.items() if s.game is None and name != but]

    async def request(self, socket: MatchSocket, action: str, data: object) -> object:
        """One request from a socket; returns the answer to send."""
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
        games = self._games()
        try:
            if action in ("move", "test"):
                return [action, await games.move(parse_move(data), play=action == "move")]
            token = string(data, "game")
            if action == "game":
                return ["game", await games.board(token) or False]
            if action == "save":
                return ["save", await games.save(token)]
            return ["load", await games.load(token, socket.address)]
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
        games = self._games()
        try:
            game, player_tokens = games.create((socket.name, other.name), socket.address)
        except (TooMany, Unavailable) as error:
            return ["error", str(error)]
        for seat, player in enumerate((socket, other)):
            player.game, player.seat, player.player_token = game, seat, player_tokens[seat]
        try:
            await games.go_live(game)
        except Unavailable as error:
            return ["error", str(error)]
        other.send(["start", self._start_info(game, 1, player_tokens[1])])
        self._sockets[game.token] = [socket, other]
        if game.outcome is not None:  # someone left while it was starting
            self.ended(game, game.outcome)
        return ["start", self._start_info(game, 0, player_tokens[0])]

    def _start_info(self, game: HttpGame, seat: int, player_token: str) -> JsonObject:
        return {
            "game": game.token,
            "player": player_token,
            PLAYER_KEYS[seat]: player_token,
            "race": RACES[seat],
            "opponent": game.names[1 - seat],
            "board": board_to_wire(game.state),
            "simulationId": game.match.id,
        }

    def closed(self, socket: MatchSocket) -> None:
        """The name is free again; a game still running ends as a disconnect."""
        if self.players.get(socket.name) is socket:
            del self.players[socket.name]
        socket.page.close()
        game = socket.game
        if game is not None:
            socket.game = None
            sockets = self._sockets.get(game.token)
            if sockets is not None:
                sockets[socket.seat] = None
            game.sessions[socket.seat].handle(Leave())

    async def shut_down(self, app: web.Application) -> None:
        """The server is stopping: close every matchmaking socket."""
        await asyncio.gather(
            *(
                s.page.ws.close(message=b"server shutting down")
                for s in list(self.players.values())
            ),
            return_exceptions=True,
        )

    # --- the socket ----------------------------------------------------------------------------
    async def socket(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["playername"]
        if not NAME.fullmatch(name):
            return answer({"error": f"a player name is 1 to {MAX_NAME} letters and digits"}, 400)
        ws = page_socket()
        await ws.prepare(request)
        if name in self.players:
            await ws.send_str(orjson.dumps(DUPLICATE_NAME).decode())
            await ws.close()
            return ws
        address = request.remote or ""
        page = Page(ws, request.transport, self.max_page_bytes)
        refused = self.quota.admit(address, page)
        if refused is not None:
            return await refuse_page(
                ws, orjson.dumps(["error", f"{PageError.TOO_MANY_PAGES}: {refused}"])
            )
        socket = MatchSocket(name, page, address)
        self.players[name] = socket
        try:
            async with asyncio.TaskGroup() as tasks:
                socket.page.writer = tasks.create_task(socket.page.write_loop())
                try:
                    socket.send(["list", self.free_players(name)])
                    async for message in ws:
                        if message.type in (WSMsgType.TEXT, WSMsgType.BINARY):
                            socket.busy = True
                            socket.replied(await self._text(socket, message.data))
                finally:
                    self.closed(socket)
        finally:
            self.quota.leave(address, page)
            await ws.close()
        return ws

    async def _text(self, socket: MatchSocket, text: str | bytes) -> object:
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
        return await self.request(socket, action, data)
