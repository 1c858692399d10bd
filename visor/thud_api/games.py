"""The Thud HTTP API's games: each one an arena match whose two seats are ``HttpSeat``s.

A game is opened and seated through the same match API as every front end, so it follows the
arena's rules and clock, shows in the lobby, can be watched and is recorded. ``/move`` submits
the move to the match and answers from the turn the match played (no second check here); the
API keeps each game's position from what its seats are sent and from those turns, and learns of
the other player's moves and of the end from the arena's updates.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

import orjson

from server.arena import Arena
from server.cluster import OtherNodes, Unanswered
from server.commands import Join, Move
from server.errors import Rejected
from server.games.base import ActionRejected, JoinRejected, JsonObject, Outcome
from server.games.thud import rules
from server.games.thud.game import THUD
from server.games.thud.pieces import SIDES, Action, State, side_to_move
from server.games.thud.pieces import Move as ThudMove
from server.match import Match
from server.match_events import GameFinished, TurnPlayed, Update
from server.match_options import MatchLimits, MatchOptions
from server.records import Records, RecordsOutOfReach
from server.replay import DamagedRecord, frames
from server.seat_channel import SeatMessage
from server.session import Client, Session
from visor.errors import RECORDS_UNAVAILABLE
from visor.thud_api.codec import (
    START,
    Answer,
    BadRequest,
    Damaged,
    MoveRequest,
    TooMany,
    Unavailable,
    answer_of,
    board_to_wire,
    digest,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

GAME = THUD.name  # the earlier Thud server's API plays Thud only
READY_TIMEOUT_S = 10.0  # until a new or loaded game's match asks for its first move

OpponentMoved = Callable[["HttpGame", int, JsonObject, Answer], None]
GameEnded = Callable[["HttpGame", Outcome], None]


class HttpSeat:
    """A seat played through the API, a ``server.session.SessionChannel``: the match's
    messages to it are noted, not sent anywhere.

    The player asks for the position (``/game``) and moves (``/move``) when it likes; the seat
    keeps the position of each turn it is asked for, and tells its game when the match first
    asks for a move. A refused move is answered ``false`` (the API has no error messages).
    """

    def __init__(self, game: HttpGame) -> None:
        self.game = game

    def send(self, message: SeatMessage) -> None:
        if message.kind == "turn":
            self.game.state = message.state
            self.game.ready.set()

    def send_data(self, data: bytes) -> None:
        raise AssertionError("an API game is played by the node that holds its token")

    def error(self, message: str, reason: str | None) -> None:
        """A refused move: ``/move`` answers false."""

    def refuse(self, message: str, reason: str) -> None:
        """The API's own limits are checked before a seat is asked for."""

    def seated(self) -> None:
        """The game starts once both seats are taken; ``go_live`` waits for it."""

    def close(self) -> None:
        """Nothing to release."""


class HttpGame:
    """One API game: its tokens, its match, and where it stands."""

    def __init__(
        self,
        arena: Arena,
        token: str,
        match: Match,
        player_digests: tuple[str, str],
        names: tuple[str, str],
        address: str,
    ) -> None:
        self.token = token
        self.match = match
        self.player_digests = player_digests
        self.names = names
        self.address = address  # of the client that started it, for the per-address cap
        self.sessions = (self._session(arena, address), self._session(arena, address))
        self.state: State = START
        self.outcome: Outcome | None = None
        self.ready = asyncio.Event()  # the match has asked for a move (or the game ended)
        self.lock = asyncio.Lock()  # one move at a time
        self.expiry: asyncio.TimerHandle | None = None  # ends it if nobody moves in it

    def unplayed(self) -> bool:
        """Live, and nobody has moved in it yet."""
        return not self.over() and self.ready.is_set() and self.state.ply == 1

    def stop(self) -> None:
        """End the game as it stands (``No move``, as the engine ended a game whose client made
        no move): for a game nobody plays."""
        seat = SIDES.index(side_to_move(self.state))
        self.sessions[seat].move(Move({"type": "player-turn", "stop": True}))

    def _session(self, arena: Arena, address: str) -> Session:
        """People and programs alike call the API: each move may take a person's time."""
        timeout_s = arena.config.person_turn_timeout_ms / 1000
        client = Client(address, kind="http", turn_timeout_s=timeout_s, routes=False)
        return Session(arena, client, HttpSeat(self))

    def seat_of(self, player_token: str) -> int | None:
        wanted = digest(player_token)
        found = None
        for seat, expected in enumerate(self.player_digests):
            if hmac.compare_digest(wanted, expected):
                found = seat
        return found

    def over(self) -> bool:
        return self.outcome is not None

    def kills(self, seat: int, request: MoveRequest) -> Answer:
        """What the move would capture, if the seat may play it now (``/move/validate``)."""
        state = self.state
        if self.over() or SIDES.index(side_to_move(state)) != seat:
            return False
        try:
            checked = rules.check(state, Action((request.start, request.end)))
        except ActionRejected:
            return False
        assert isinstance(checked, Action) and isinstance(checked.move, ThudMove)
        return [list(square) for square in checked.move.killed] or True


class ThudGames:
    """The live API games by game token, and the games of the records."""

    def __init__(
        self,
        arena: Arena,
        records: Records,
        opponent_moved: OpponentMoved,
        ended: GameEnded,
        others: OtherNodes | None = None,
    ) -> None:
        self.arena = arena
        self.others = others  # the arena's other nodes: requests for their games go to them
        self.records = records
        self._opponent_moved = opponent_moved
        self._ended = ended
        self.live: dict[str, HttpGame] = {}  # playable games by game token
        self._by_match: dict[str, HttpGame] = {}
        self._per_address: Counter[str] = Counter()  # live games by the address that began them
        self._making_room: dict[str, HttpGame] = {}  # games ended for a new one, until they end
        self._loading = asyncio.Lock()
        arena.listeners.append(self.on_update)

    def _options(self, **changes: Any) -> MatchOptions:
        """The seats are held: a matched player who leaves before the start forfeits. An HTTP
        seat cannot reconnect, so a matched player's closed socket forfeits at once."""
        limits = self.arena.limits()
        held = MatchLimits(
            limits.turn_timeout_s, limits.max_consecutive_timeouts, limits.first_turn_timeout_s
        )
        return MatchOptions(hold_seats=True, limits=held, **changes)

    def _seat(
        self,
        match: Match,
        token: str,
        player_digests: tuple[str, str],
        names: tuple[str, str],
        address: str,
    ) -> HttpGame:
        """Seat two HTTP seats in a waiting match, which starts it."""
        game = HttpGame(self.arena, token, match, player_digests, names, address)
        self._by_match[match.id] = game
        self._per_address[address] += 1
        for session, name, side in zip(game.sessions, names, SIDES, strict=True):
            session.sit(match, Join({"nick": name, "side": side}, match.id, None))
        return game

    def _check_share(self, address: str) -> None:
        most = self.arena.config.max_thud_api_games_per_address
        if self._per_address[address] >= most:
            raise TooMany(f"at most {most} live games from one address: finish one first")

    def _check_open(self) -> None:
        """A draining node opens no game (``Arena.check_open``): answered 503, so that the
        client asks again, and the load balancer sends it to another node."""
        try:
            self.arena.check_open()
        except Rejected as rejected:
            raise Unavailable(str(rejected)) from None

    def create(self, names: tuple[str, str], address: str) -> tuple[HttpGame, tuple[str, str]]:
        """A new game between two names; returns it and the two player tokens."""
        self._check_open()
        self._check_share(address)
        most = self.arena.config.max_thud_api_games
        if len(self._by_match) >= most and not self._make_room(address):
            raise Unavailable(f"the server plays {most} API games already: try later")
        token = secrets.token_urlsafe(24)
        player_tokens = (secrets.token_urlsafe(24), secrets.token_urlsafe(24))
        player_digests = (digest(player_tokens[0]), digest(player_tokens[1]))
        match = self.arena.open(GAME, self._options())
        game = self._seat(match, token, player_digests, names, address)
        self.records.thud_api_game_created(digest(token), match.id, player_digests, names)
        return game, player_tokens

    def _make_room(self, address: str) -> bool:
        """Every API game is taken: end one nobody has moved in, the oldest of the address that
        holds the most games, if it holds more than ``address`` does. True if one was ended."""
        mine = self._per_address[address]
        candidates = [
            (-self._per_address[game.address], order, game)
            for order, game in enumerate(self._by_match.values())  # oldest first
            if self._per_address[game.address] > mine and game.unplayed()
        ]
        if not candidates:
            return False
        _, _, game = min(candidates, key=lambda candidate: candidate[:2])
        log.info("thud api: game %s, never played, makes room for a new one", game.match.id)
        game.stop()
        self._forget(game)  # its place is free now; its end is announced once its match ends
        self._making_room[game.match.id] = game
        return True

    def _expire(self, game: HttpGame) -> None:
        game.expiry = None
        if game.unplayed():
            log.info("thud api: game %s ends: nobody moved in it", game.match.id)
            game.stop()

    async def go_live(self, game: HttpGame) -> None:
        """Once the match asks for the first move, the game's token plays it.

        Until then its position is not known to the API (a loaded game is still being rebuilt).
        """
        waiting = asyncio.ensure_future(game.ready.wait())
        ended = asyncio.ensure_future(game.match.done.wait())
        try:
            await asyncio.wait(
                {waiting, ended}, timeout=READY_TIMEOUT_S, return_when="FIRST_COMPLETED"
            )
        finally:
            waiting.cancel()
            ended.cancel()
        if game.over():
            return
        if not game.ready.is_set():
            raise Unavailable("the game did not start in time: try again")
        self.live[game.token] = game
        if game.unplayed():  # a game nobody plays gives its place back sooner
            expiry_s = self.arena.config.thud_api_unplayed_expiry_ms / 1000
            game.expiry = asyncio.get_running_loop().call_later(expiry_s, self._expire, game)
        if self.others is not None:  # the other nodes find it from now on
            await self.others.alias(node_name(game.token), game.match.id)

    def on_update(self, update: Update) -> None:
        """The arena's news of API games: the other player's moves, and the end."""
        if isinstance(update, TurnPlayed):
            game = self._by_match.get(update.result.match_id)
            if game is not None:
                result = update.result
                game.state = result.state
                if "move" in result.action:  # not the stop that ends a game nobody plays
                    self._opponent_moved(game, result.seat, result.action, answer_of(result.events))
        elif isinstance(update, GameFinished):
            match_id = update.view.match_id
            game = self._by_match.get(match_id) or self._making_room.pop(match_id, None)
            if game is not None:
                game.outcome = update.outcome
                if update.view.state is not None:
                    game.state = update.view.state
                self._forget(game)
                game.ready.set()
                self._ended(game, update.outcome)

    def _forget(self, game: HttpGame) -> None:
        if game.expiry is not None:
            game.expiry.cancel()
            game.expiry = None
        if self.live.get(game.token) is game:
            del self.live[game.token]
        if self._by_match.get(game.match.id) is game:
            del self._by_match[game.match.id]
            self._per_address[game.address] -= 1
            if not self._per_address[game.address]:
                del self._per_address[game.address]

    # --- the requests --------------------------------------------------------------------------
    async def move(self, request: MoveRequest, *, play: bool) -> Answer:
        """``/move`` (``play``) or ``/move/validate``: true, the captured squares, or false."""
        game = self.live.get(request.game)
        if game is None:
            body = {
                "game": request.game,
                "player": request.player,
                "start": list(request.start),
                "destination": list(request.end),
            }
            path = "/move" if play else "/move/validate"
            forwarded = await self._forward(request.game, path, body)
            return False if forwarded is None else forwarded[0]
        seat = game.seat_of(request.player)
        if seat is None:
            return False
        if not play:
            return game.kills(seat, request)
        async with game.lock:
            wire = {"from": list(request.start), "to": list(request.end)}
            played = game.sessions[seat].move(Move({"type": "player-turn", "move": wire}))
            if played is None:
                return False
            await self.records.flush()  # an acknowledged move is on disk
            return answer_of(played.events)

    async def board(self, token: str) -> JsonObject | None:
        """The board of a live game, else of the stored game with this token."""
        game = self.live.get(token)
        if game is not None:
            return board_to_wire(game.state)
        forwarded = await self._forward(token, "/game", {"game": token})
        if forwarded is not None:
            board = forwarded[0]
            return board if isinstance(board, dict) else None
        stored = await self._read(self.records.thud_api_game, digest(token))
        if stored is None:
            return None
        await self.records.flush()
        record = await self._stored_game(stored["gameId"])
        if record is None:
            return None
        return board_to_wire(await asyncio.to_thread(_last_state, record))

    async def _read(self, read: Callable[..., T], *args: Any) -> T:
        """A read of the records in a worker thread; their database out of reach is a 503."""
        try:
            return await asyncio.to_thread(read, *args)
        except RecordsOutOfReach:
            raise Unavailable(f"{RECORDS_UNAVAILABLE}: try again in a few seconds") from None

    async def _stored_game(self, game_id: str) -> JsonObject | None:
        """The record a token's game was kept in, which must be a Thud game that reads back."""
        try:
            record = await self._read(self.records.game, game_id)
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
        if token not in self.live:
            forwarded = await self._forward(token, "/save", {"game": token})
            if forwarded is not None:
                return forwarded[0] is True
            stored = await self._read(self.records.thud_api_game, token_digest)
            if stored is None:
                return False
        self.records.thud_api_game_saved(token_digest)
        await self.records.flush()
        return True

    async def load(self, token: str, address: str) -> bool:
        """Make a stored, unfinished game live again (after a restart); true once it is."""
        if token in self.live:
            return True
        self._check_open()
        stored = await self._read(self.records.thud_api_game, digest(token))
        if stored is None:
            return False
        async with self._loading:
            if token in self.live:
                return True
            await self.records.flush()
            record = await self._stored_game(stored["gameId"])
            if (
                record is None
                or record["status"] != "unfinished"
                or self.arena.get(record["id"]) is not None
            ):
                return False
            self._check_share(address)
            try:
                match = self.arena.restore(record, self._options())
            except DamagedRecord as error:
                log.warning("thud api: %s", error)
                raise Damaged(f"the stored game cannot be replayed: {error}") from error
            except JoinRejected as error:  # it went live meanwhile
                log.info("thud api: game %s does not restore: %s", record["id"], error)
                return False
            game = self._seat(match, token, stored["playerDigests"], stored["players"], address)
            await self.go_live(game)
        return not game.over()

    async def _forward(self, token: str, path: str, body: JsonObject) -> tuple[Any] | None:
        """The answer of the node that plays this game, if another node does (None if not),
        asked through Redis."""
        if self.others is None:
            return None
        node = await self.others.locate(node_name(token))
        if node is None:
            return None
        try:
            status, raw = await self.others.ask(node, path, orjson.dumps(body))
            answer = orjson.loads(raw)
        except (Unanswered, orjson.JSONDecodeError) as error:
            raise Unavailable(f"the node playing this game does not answer: {error}") from None
        if status != 200:
            error_text = answer.get("error") if isinstance(answer, dict) else None
            kind = {400: BadRequest, 409: Damaged, 429: TooMany}.get(status, Unavailable)
            raise kind(str(error_text or f"the arena node playing this game answered {status}"))
        return (answer,)


def node_name(token: str) -> str:
    """How the arena's nodes know an API game: never by its token, only by its digest."""
    return f"thud:{digest(token)}"


def _last_state(record: JsonObject) -> State:
    try:
        *_, last = frames(record)
    except DamagedRecord as error:
        log.warning("thud api: %s", error)
        raise Damaged(f"the stored game cannot be replayed: {error}") from error
    state: State = last.state
    return state
