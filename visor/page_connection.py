"""One page's requests on ``/ws`` (visor.app's ``websocket``): the lobby, a game to watch, or a
seat of its own, played through a ``server.session.Session`` as a bot's seat is."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

import orjson

from server.arena import Arena
from server.commands import Cancel, Command, Create, Leave, Move, Seek, game_of, parse
from server.errors import BotError, Rejected
from server.games import GAMES
from server.games.base import JsonObject
from server.match import Match
from server.match_views import Status
from server.seat_channel import SeatMessage
from server.session import Client, LocalSeat, Session, carry_out
from visor.errors import PageError
from visor.house_games import HouseGames, seat_house_player
from visor.hub import SpectatorHub
from visor.pages import Page

log = logging.getLogger(__name__)

MAX_DELAY_MS = 10_000


class PageConnection:
    """What one page asked for: the lobby, a game to watch, or a seat of its own.

    The seat is a ``server.session.Session``'s, as a bot's is: the page only adds what pages
    have of their own (a house opponent, the lobby, watching) and turns what the session says
    into the page's messages (``server.session.SessionChannel``)."""

    def __init__(
        self, arena: Arena, hub: SpectatorHub, house: HouseGames, page: Page, address: str
    ) -> None:
        self.arena = arena
        self.hub = hub
        self.house = house  # the arena's games of house players, against its caps
        self.page = page
        self.address = address
        self.session = Session(arena, self._client("person"), self)
        self.house_games: list[Match] = []  # the games between house players it started
        # (simulation id, game, side) asked; a seek's side (None) is the pairing's
        self._asking: tuple[str, str, str | None] | None = None
        self._given: tuple[str, str] | None = None  # (simulation id, side) of the seat's game-info

    def _client(self, kind: str) -> Client:
        timeout_s = self.arena.config.person_turn_timeout_ms / 1000
        return Client(self.address, kind=kind, turn_timeout_s=timeout_s, noun="page")

    def receive(self, text: str) -> None:
        try:
            message = orjson.loads(text)
        except orjson.JSONDecodeError:
            self.error(BotError.INVALID_JSON, None)
            return
        if not isinstance(message, dict):
            self.error(BotError.INVALID_JSON, None)
            return
        handlers: dict[str, Callable[[JsonObject], None]] = {
            "lobby": self.lobby,
            "watch": self.watch,
            "create": self.create,
            "run-game": self.run_game,
            "play": self.play,
            "seek": self.seek,
            "cancel-seek": self.cancel_seek,
            "move": self.move,
        }
        kind = message.get("type")
        handler = handlers.get(kind) if isinstance(kind, str) else None
        if handler is None:
            self.error(BotError.UNKNOWN_MESSAGE_TYPE, None)
            return
        try:
            handler(message)
        except Rejected as rejected:
            self.error(rejected.message, rejected.reason)
        except Exception:  # a bug must cost this request, not the page or the games
            log.exception("page request %r failed", kind)
            self.error(BotError.SERVER_ERROR, "the request failed; it was logged")

    def lobby(self, message: JsonObject) -> None:
        """Follow the lobby: of one game with ``{"game": NAME}``, else of every game."""
        game = message.get("game")
        self.hub.join_lobby(self.page, game if isinstance(game, str) else None)

    def watch(self, message: JsonObject) -> None:
        simulation_id = message.get("simulationId")
        if not isinstance(simulation_id, str):
            self.error(PageError.INVALID_WATCH, "simulationId must be a string")
            return
        self.hub.watch(self.page, simulation_id)

    def create(self, message: JsonObject) -> None:
        wire = {"type": "create-simulation", "game": message.get("game")}
        command = parse({**wire, "clock": message.get("clock")})
        assert isinstance(command, Create), "a create-simulation is parsed as a Create"
        match = self.session.create(command)
        if match is not None:
            created: JsonObject = {"type": "created", "simulationId": match.id}
            created["game"] = match.codec.name
            created["botPort"] = self.arena.bot_port  # for the command the lobby offers to copy
            self.page.send(created)

    def run_game(self, message: JsonObject) -> None:
        game = game_of(message)
        players = message.get("players")
        delay = message.get("delayMs", 0)
        if not isinstance(players, list) or not all(isinstance(p, str) for p in players):
            raise Rejected(
                PageError.INVALID_PLAYERS, "players must be a list of house player names"
            )
        if isinstance(delay, bool) or not isinstance(delay, int) or not 0 <= delay <= MAX_DELAY_MS:
            raise Rejected(PageError.INVALID_DELAY, f"delayMs must be 0 to {MAX_DELAY_MS}")
        self.house_games = [s for s in self.house_games if s.status is not Status.FINISHED]
        most = self.arena.config.max_house_games_per_page
        if len(self.house_games) >= most:
            raise Rejected(PageError.TOO_MANY_HOUSE_GAMES, f"at most {most} at once from one page")
        match = self.house.run(game, players, delay)
        self.house_games.append(match)
        self.page.send({"type": "created", "simulationId": match.id, "game": game})

    def play(self, message: JsonObject) -> None:
        """A person takes a seat, against a house player or whoever joins by id."""
        self.session.check_free()
        game = game_of(message)
        side, opponent = message.get("side"), message.get("opponent")
        seat_names = GAMES[game].seat_names
        # The page plays a side it names (a house opponent takes the other): the one check
        # of a seat's fields that is the page's own; the rest are the game's, as a bot's are.
        if not isinstance(side, str) or side not in seat_names:
            raise Rejected(BotError.INVALID_JOIN, f"side must be one of: {', '.join(seat_names)}")
        if opponent is not None and (
            not isinstance(opponent, str) or opponent not in GAMES[game].house_players
        ):
            raise Rejected(PageError.UNKNOWN_PLAYER, f"no {game} house player {opponent!r}")
        simulation_id = message.get("simulationId")
        if simulation_id is not None and opponent is not None:
            raise Rejected(BotError.INVALID_JOIN, "an existing simulation brings its own opponent")
        self._player(message)
        fields: JsonObject = {"nick": self._nick(message), "side": side, "game": game}
        if simulation_id is None:
            create = parse(
                {"type": "create-simulation", "game": game, "clock": message.get("clock")}
            )
            assert isinstance(create, Create), "a create-simulation is parsed as a Create"
            if opponent is not None:
                self.house.check_against(self.address)
            self._asking = ("", game, side)
            match = self.session.open_and_join(replace(create, fields=fields))
            if match is not None and opponent is not None:
                other = next(name for name in seat_names if name != side)
                seat_house_player(match, opponent, other, 0.0)
                self.house.started_against(match, self.address)
        else:  # a free seat of a waiting simulation, as a bot's
            command = parse({**fields, "type": "join-simulation", "simulationId": simulation_id})
            self._asking = (str(simulation_id), game, side)
            self._hand(command)

    def seek(self, message: JsonObject) -> None:
        """A person seeks an unrated game as a guest, as a bot does (``Session.seek``): the
        pairing seats them (``seated``) against whichever seeker of the game it picks."""
        self.session.check_free()
        wire = {"type": "seek", "game": message.get("game"), "nick": self._nick(message)}
        command = parse({**wire, "rated": False})
        assert isinstance(command, Seek), "a seek is parsed as a Seek"
        self._player(message)
        self._asking, self._given = ("", command.game, None), None
        self._hand(command)
        if self.session.seeking:  # not refused, nor paired at once
            self.page.send({"type": "seeking", "game": command.game})

    def cancel_seek(self, message: JsonObject) -> None:
        """Withdraw the page's seek; unless it was paired first (then ``seated`` came)."""
        if self.session.seeking:
            self._hand(Cancel())
            self.page.send({"type": "seek-cancelled"})

    def _hand(self, command: Command | Rejected) -> None:
        """A command for the page's session, and the effects it asks for carried out."""
        carry_out(self.arena, self.session, self.session.handle(command))

    @staticmethod
    def _nick(message: JsonObject) -> object:
        """The page's nick, checked with the seat's other fields by the game (a bot's are)."""
        return message.get("nick") or "player"

    def _player(self, message: JsonObject) -> None:
        """Who plays the seat: a /clients page says so (the client code it runs), else a person."""
        self.session.client = self._client("client" if message.get("client") is True else "person")

    def move(self, message: JsonObject) -> None:
        self._hand(Move({**message, "type": "player-turn"}))

    def error(self, message: str, reason: str | None) -> None:
        error: JsonObject = {"type": "error", "message": message}
        if reason:
            error["reason"] = reason
        self.page.send(error)

    def closed(self) -> None:
        self.hub.forget(self.page)
        self.page.close()
        self.session.handle(Leave())

    # --- SessionChannel: what the page's session says --------------------------------------
    def send(self, message: SeatMessage) -> None:
        self._seat_message(message.body)

    def send_data(self, data: bytes) -> None:
        self._seat_message(orjson.loads(data))

    def _seat_message(self, body: JsonObject) -> None:
        if body.get("type") == "game-info" and self._asking and self._asking[2] is None:
            # A paired seek learns its match and side here (the match may be another node's).
            seat_field = self.arena.codec(self._asking[1]).seat_field
            self._given = (str(body.get("simulationId")), str(body.get(seat_field)))
        self.page.send({"type": "seat", "message": body})

    def refuse(self, message: str, reason: str) -> None:
        self.error(message, reason)
        self.page.close()

    def seated(self) -> None:
        if self._asking is None:
            return
        simulation_id, game, side = self._asking
        if side is None and self._given is not None:  # a seek: the pairing chose
            simulation_id, side = self._given
        seat = self.session.seat
        if isinstance(seat, LocalSeat):
            simulation_id = seat.match.id
        self.hub.watch(self.page, simulation_id)
        self.page.send(
            {"type": "seated", "simulationId": simulation_id, "game": game, "side": side}
        )

    def close(self) -> None:
        """The seat is over; the page stays open, to show the result."""
