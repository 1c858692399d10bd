"""One client of the arena, and every command it gives: checked and carried out here, once.

A ``Session`` is one client, whatever it connects through: a bot on TCP, a page's websocket, a
player of the Thud HTTP API, or a seat another node asks for on behalf of its own client. Its
front end turns bytes into messages and calls the session; the session checks each command
and carries it out through the arena and its matches, and answers through the client's
``SessionChannel``, which the front end turns into bytes (the h11 and websockets shape: no
transport, no clock, tested in memory).

A command that names a registered bot (``bot`` and ``key``), and a registration, is checked
first, off the event loop (``server.identity``): the session holds the client's next messages
meanwhile, and carries them out in order once it is done.

Joining gives the session a ``SeatHandle`` (submit, leave), whether the match is played here
(``LocalSeat``) or by another node (``server.cluster``'s): where a join goes is decided here
and nowhere else.
"""

from __future__ import annotations

import itertools
import logging
import secrets
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from server.arena import MAX_SEED, Arena, SeatHandle, Standing
from server.challenges import Challenge
from server.errors import BotError, Rejected
from server.games import DEFAULT_GAME
from server.games.base import JoinRejected, JsonObject, TimeBank
from server.ladder import Seeker
from server.league import NEW_RATING
from server.match import Match
from server.match_options import MatchLimits, MatchOptions, SeatRequest
from server.match_views import Status, TurnResult
from server.names import same_name
from server.played_on import StartingPoint, resume_at
from server.seat_channel import SeatMessage


class SessionChannel(Protocol):
    """Where a session reaches its client: what each front end implements."""

    def send(self, message: SeatMessage) -> None:
        """A message for the client: its seat's, as the match sends them."""

    def send_data(self, data: bytes) -> None:
        """A message for the client's seat, already encoded by the node that plays it."""

    def error(self, message: str, reason: str | None) -> None:
        """A command was refused; nothing changed and the client may go on."""

    def refuse(self, message: str, reason: str) -> None:
        """A limit was reached: say which, then close the client."""

    def seated(self) -> None:
        """The client has a seat now (at once, or once another node gave it one)."""

    def close(self) -> None:
        """The seat's channel was closed (the game is over, or the seat was rejoined)."""


@dataclass(frozen=True, slots=True)
class Client:
    """Who a session's client is, as the checks and the seats need it."""

    address: str  # where it connects from: the per-address caps count by it
    kind: str = "bot"  # SeatRequest.kind: "bot", "person", "client", "http"
    turn_timeout_s: float | None = None  # a person's time for a turn (None: the match's)
    routes: bool = True  # may reach other nodes (False: a seat another node asked for)
    # Its ``bot`` was proved by the node it connects through (a seat another node asked for,
    # which forwards the name and never the key).
    checked: bool = False
    noun: str = "connection"  # what one client is called in a refusal ("one game per ...")


class LocalSeat:
    """A seat of a match played here."""

    def __init__(self, arena: Arena, match: Match, seat: int, channel: SessionChannel) -> None:
        self.arena = arena
        self.match = match
        self.seat = seat
        self.channel = channel

    @property
    def playing(self) -> bool:
        return self.match.status is not Status.FINISHED

    def submit(self, message: JsonObject) -> TurnResult | None:
        return self.match.submit(self.seat, message, self.channel)

    def leave(self) -> None:
        """The client is gone: the seat is freed (before the start) or forfeited; a match a
        random join opened is dropped once nobody is left in it."""
        self.match.leave(self.seat, self.channel)
        if self.match.options.by_join:
            self.arena.drop_if_abandoned(self.match)


_SEEK_NUMBERS = itertools.count(1)
log = logging.getLogger(__name__)
# The commands whose ``bot`` and ``key`` are checked before they are carried out.
IDENTIFIED = ("join-simulation", "create-simulation", "seek", "challenge")
MAX_HELD = 64  # a client's messages held while its key is checked; more are refused


@dataclass(frozen=True, slots=True)
class Proof:
    """A message whose ``bot`` and ``key`` were checked: the bot they prove (None: a guest),
    and its standing, for a seek or a challenge."""

    fields: JsonObject
    bot: str | None
    standing: Standing | None


class Session:
    """One client's commands: create, join (by id or at random), seek, rejoin, move, leave."""

    def __init__(self, arena: Arena, client: Client, channel: SessionChannel) -> None:
        self.arena = arena
        self.client = client
        self.channel = channel
        self.seat: SeatHandle | None = None  # asked for, or taken
        self.created: list[str] = []  # the simulations it created (maxSimulationsPerConnection)
        self._random_join: JsonObject | None = None  # the random join another node answers
        self._claimed = False  # the random join went through the nodes' claim
        self._gone = False
        self.bot: str | None = None  # the registered bot its last command proved it is
        self._seek: tuple[str, JsonObject] | None = None  # the seek waiting: its id, its fields
        self._paired_seek: JsonObject | None = None  # paired into another node's match, asked
        self._checking = False  # a message's identity is being checked
        self._held: deque[JsonObject] = deque()  # the messages that came meanwhile
        self._proof: Proof | None = None  # of the message being carried out
        self._standing: Standing | None = None  # the bot's, as its last seek was checked
        self._present: str | None = None  # the registered name it is present as (challenges)
        # A ladder client (a registered bot, or one that seeks): its connection outlives its
        # games; a client of the original protocol is closed with its game, as it expects.
        self._stays = False

    @property
    def in_game(self) -> bool:
        """It holds a seat (or asked for one) of a game that has not finished."""
        return self.seat is not None and self.seat.playing

    @property
    def game_over(self) -> bool:
        """Its seat's game is over (the seat is kept, not playing, until its next game)."""
        return self.seat is not None and not self.seat.playing

    @property
    def stays_connected(self) -> bool:
        """Its game is over and it is a ladder client: its connection stays, free to seek
        again or be challenged. Otherwise, as the seat's channel closes (at the game's end for
        a client of the original protocol; a seat taken by a rejoin, or lost with its node),
        the connection closes."""
        return self._stays and self.game_over

    @property
    def idle(self) -> bool:
        """Nothing keeps it connected: no game, no seek waiting, and not a registered bot
        present for challenges (``idleTimeoutMs`` counts only meanwhile, ``server.tcp``)."""
        return not (self.in_game or self.seeking or self._present is not None)

    # --- the bot protocol ---------------------------------------------------------------------
    def handle(self, message: JsonObject) -> None:
        """One message of the bot protocol (docs/protocol.md): carried out now, or once the
        identity check in progress is done."""
        if self._checking:
            if len(self._held) >= MAX_HELD:
                self.channel.refuse(
                    BotError.TOO_MANY_MESSAGES, f"at most {MAX_HELD} while a key is checked"
                )
            else:
                self._held.append(message)
            return
        kind = message["type"]
        if kind == "register" or (
            kind in IDENTIFIED and "bot" in message and not self.client.checked
        ):
            self._checking = True
            self.arena.spawn(self._check(message), name="identity")
            return
        self._carry_out(message)

    async def _check(self, message: JsonObject) -> None:
        """Check a message's identity (or register), then carry it out, then the messages
        held meanwhile."""
        try:
            if message["type"] == "register":
                await self._register(message)
            else:
                await self._identify(message)
        except Exception:  # a bug must cost this request, not the arena
            log.exception("checking %r failed", message["type"])
            self.channel.error(BotError.SERVER_ERROR, "the request failed; it was logged")
        finally:
            self._checking = False
        while self._held and not self._checking and not self._gone:
            held = self._held.popleft()
            try:
                self.handle(held)
            except Exception:
                log.exception("handling %r failed", held["type"])
                self.channel.error(BotError.SERVER_ERROR, "the request failed; it was logged")
        if self._gone:
            self._held.clear()

    async def _identify(self, message: JsonObject) -> None:
        try:
            bot = await self.arena.roster.identify(message, self.client.address)
            standing = None
            if bot is not None and message["type"] in ("seek", "challenge"):
                standing = await self.arena.standing(bot)
        except Rejected as rejected:
            if not self._gone:
                self._refused(rejected)
            return
        if self._gone:
            return
        self._proof = Proof(message, bot, standing)
        try:
            self._carry_out(message)
        finally:
            self._proof = None

    def _carry_out(self, message: JsonObject) -> None:
        kind = message["type"]
        if kind == "player-turn":
            self.move(message)
        elif kind == "join-simulation":
            self.join(message)
        elif kind == "create-simulation":
            match = self.create(message)
            if match is not None:
                self.channel.send(SeatMessage(match.codec.ready_message(match.id, match.seed)))
        elif kind == "rejoin":
            self.rejoin(message)
        elif kind == "seek":
            self.seek(message)
        elif kind == "challenge":
            self.challenge(message)
        elif kind == "accept":
            self.accept(message)
        elif kind == "decline":
            self.decline(message)
        else:
            self.channel.error(BotError.UNKNOWN_MESSAGE_TYPE, f"unknown type {kind!r}")

    # --- commands -----------------------------------------------------------------------------
    async def _register(self, fields: JsonObject) -> None:
        """A bot registers its name, where registration is open: its key is answered once."""
        try:
            name, key = await self.arena.roster.register(fields.get("bot"), self.client.address)
        except Rejected as rejected:
            self._refused(rejected)
            return
        if not self._gone:
            self.channel.send(SeatMessage({"type": "registered", "bot": name, "key": key}))

    def seek(self, fields: JsonObject) -> None:
        """Wait in the pool for an opponent of about the same rating (``server.ladder``); the
        pairing seats the client as a join would (``paired``)."""
        try:
            fields = self.identified(fields)
        except Rejected as rejected:
            self._refused(rejected)
            return
        self._enqueue(fields)

    def _enqueue(self, fields: JsonObject) -> None:
        """A seek's checks, with fields already ``identified``, then its place in the pool."""
        try:
            self.check_free()
            self.arena.check_open()  # a draining node takes no seeks: its bots go to the others
            game = self.game_of(fields)
            rated = fields.get("rated", False)
            if not isinstance(rated, bool):
                raise Rejected(BotError.INVALID_SEEK, '"rated" must be true or false')
            if rated and self.bot is None:
                raise Rejected(BotError.INVALID_SEEK, "rated games are for registered bots")
            self.arena.codec(game).player_from_join(fields)
            name = self.bot or str(fields.get("nick", "anonymous"))
            if self.bot is not None:
                self._check_bot(self.bot)
        except Rejected as rejected:
            self._refused(rejected)
            return
        self.stop_seeking()
        if self.bot is not None and self._standing is not None:
            last_opponent = self._standing.last_opponent
            had_first_seat = self._standing.had_first_seat
        else:
            last_opponent, had_first_seat = self.arena.last_game(name)
        seeker = Seeker(
            id=f"{self.client.address}/{next(_SEEK_NUMBERS)}",
            bot=name,
            game=game,
            rated=rated,
            rating=self.arena.roster.rating(game, name) or NEW_RATING[0],
            since=self.arena.clock.now(),
            last_opponent=last_opponent,
            had_first_seat=had_first_seat,
        )
        seat_fields = {key: value for key, value in fields.items() if key not in ("side", "type")}
        self._seek = (seeker.id, seat_fields)
        self._stays = True
        try:
            self.arena.seek(seeker, self, self.client.address)
        except Rejected as rejected:
            self._seek = None
            self._refused(rejected)

    def paired(self, match: Match, seat: int) -> None:
        """The pool paired this client's seek: it takes ``seat`` of ``match``."""
        seek, self._seek = self._seek, None
        if seek is None or self._gone:
            return
        try:
            self._sit(match, seek[1], seat)
        except Rejected as rejected:
            self._refused(rejected)

    # --- challenges (server.challenges) --------------------------------------------------------
    @property
    def free(self) -> bool:
        return not self._gone and not self.in_game

    def challenge(self, fields: JsonObject) -> None:
        """Challenge a registered bot by name, wherever it is present."""
        try:
            fields = self.identified(fields)
            self.check_free()
            self.arena.check_open()
            if self.bot is None:
                raise Rejected(BotError.INVALID_CHALLENGE, "challenges are for registered bots")
            self._check_bot(self.bot)
            game = self.game_of(fields)
            opponent, rated, side = (
                fields.get("opponent"),
                fields.get("rated", False),
                fields.get("side"),
            )
            codec = self.arena.codec(game)
            if not isinstance(opponent, str) or same_name(opponent, self.bot):
                raise Rejected(BotError.INVALID_CHALLENGE, '"opponent" must name another bot')
            if not isinstance(rated, bool):
                raise Rejected(BotError.INVALID_CHALLENGE, '"rated" must be true or false')
            if side is not None and side not in codec.seat_names:
                sides = ", ".join(codec.seat_names)
                raise Rejected(BotError.INVALID_CHALLENGE, f'"side" must be one of: {sides}')
            if self.arena.roster.get(opponent) is None:  # every node knows every registered bot
                raise Rejected(BotError.UNKNOWN_BOT, f"no bot named {opponent} is registered")
            board = self.arena.challenges
            seat_fields = {k: value for k, value in fields.items() if k not in ("side", "type")}
            challenge = Challenge(
                id=board.new_id(),
                challenger=self.bot,
                opponent=opponent,
                game=game,
                seat=None if side is None else codec.seat_names.index(side),
                rated=rated,
                fields=seat_fields,
                answer=lambda simulation_id, reason: self._answered(
                    challenge, simulation_id, reason
                ),
            )
            board.send(challenge)  # past the sender's cap: refused, and nothing is sent
        except Rejected as rejected:
            self._refused(rejected)
            return
        self.channel.send(
            SeatMessage({"type": "challenge-sent", "challenge": challenge.id, "opponent": opponent})
        )
        target = board.find(opponent)
        if target is not None:
            board.offer(challenge, target)
        elif self.arena.elsewhere is not None and self.client.routes:
            self.arena.elsewhere.challenge(challenge)
        else:
            self._answered(challenge, None, f"{opponent} is not connected")

    def barred(self, message: str, reason: str) -> None:
        """The bot this client proved it is was banned, or its key revoked or replaced
        (``server.challenges.ChallengeBoard.barred``): its seek is withdrawn (and a pairing
        whose game never began goes back to the pool no more); it is told, unless it is
        playing, and its game is played to its end; its next seek or challenge is checked
        afresh (and refused)."""
        self.bot = None
        self._paired_seek = None
        if not self._gone and (self.stop_seeking() or not self.in_game):
            self.channel.error(message, reason)

    def challenged(self, challenge: Challenge) -> None:
        codec = self.arena.codec(challenge.game)
        self.channel.send(SeatMessage(challenge.to_wire(codec.seat_names, codec.seat_field)))

    def accept(self, fields: JsonObject) -> None:
        """Accept a challenge sent to this client: the match opens here, and the challenger
        is seated in it wherever it is connected."""
        challenge = self.arena.challenges.take(fields.get("challenge"), self)
        try:
            if challenge is None:
                raise Rejected(BotError.UNKNOWN_CHALLENGE, "no open challenge of that id for you")
            self.check_free()
            self.arena.check_open()
            match = self.arena.open(
                challenge.game, MatchOptions(rated=challenge.rated, by_join=True)
            )
            challenger_seat = challenge.seat or 0
            self._sit(match, {**fields, "bot": self.bot, "nick": self.bot}, 1 - challenger_seat)
        except Rejected as rejected:
            self._refused(rejected)
            if challenge is not None:
                challenge.answer(None, f"{challenge.opponent} could not accept: {rejected.reason}")
            return
        challenge.answer(match.id, None)

    def decline(self, fields: JsonObject) -> None:
        challenge = self.arena.challenges.take(fields.get("challenge"), self)
        if challenge is None:
            self.channel.error(BotError.UNKNOWN_CHALLENGE, "no open challenge of that id for you")
            return
        reason = fields.get("reason")
        challenge.answer(None, reason[:200] if isinstance(reason, str) and reason else "declined")

    def _answered(
        self, challenge: Challenge, simulation_id: str | None, reason: str | None
    ) -> None:
        """The challenged bot answered (or did not in time): sit in its match, or hear why not."""
        self.arena.challenges.answered(challenge)
        if self._gone:
            return
        if simulation_id is None:
            self.channel.send(
                SeatMessage(
                    {"type": "challenge-declined", "challenge": challenge.id, "reason": reason}
                )
            )
            return
        match = self.arena.get(simulation_id)
        try:
            self.check_free()
            if match is None:
                self._reach(simulation_id, challenge.fields, False)
            else:
                self._sit(match, challenge.fields, challenge.seat or 0)
        except Rejected as rejected:
            self._refused(rejected)

    def ended(self) -> None:
        """The game another node played is over: its seat is kept (no longer playing) until
        the next, and the channel is closed (``stays_connected``)."""
        self.channel.close()

    def paired_elsewhere(self, simulation_id: str) -> None:
        """The pool paired this client's seek into a match another node plays."""
        seek, self._seek = self._seek, None
        if seek is not None and not self._gone:
            self._paired_seek = seek[1]
            self._reach(simulation_id, seek[1], False)

    @property
    def seeking(self) -> bool:
        """Its seek waits in the pool (not paired yet)."""
        return self._seek is not None

    def stop_seeking(self) -> bool:
        """Withdraw the seek waiting, if any (a page's Cancel): whether there was one."""
        seek, self._seek = self._seek, None
        if seek is not None:
            self.arena.unseek(seek[0])
        return seek is not None

    def _check_bot(self, bot: str) -> None:
        """A registered bot may seek or challenge unless banned or at its games' limit: the
        games and seeks it holds on every node, as its command was checked (this client's
        own seek aside, which a new one replaces)."""
        registered = self.arena.roster.get(bot)
        if registered is not None and registered.banned:
            raise Rejected(BotError.BOT_BANNED, f"{bot} is banned from the ladder")
        most = self.arena.config.max_games_per_bot
        held = self.arena.bot_games(bot) if self._standing is None else self._standing.games
        if held - (1 if self.seeking else 0) >= most:
            raise Rejected(BotError.TOO_MANY_GAMES, f"a bot may play {most} games at once")

    def create(self, fields: JsonObject, played_on: StartingPoint | None = None) -> Match | None:
        """A new, empty simulation, which the client does not sit in; with ``position``, begun
        there; ``played_on``, a recorded game's turn to play on from (the replay page's "Play
        from here"), with that game's settings, seed and draws."""
        try:
            self.identified(fields)
            game, seed = self.game_of(fields), self._seed(fields)
            self.arena.check_open()
            limit = self.arena.config.max_simulations_per_connection
            if len(self.created) >= limit:
                reason = f"at most {limit} per {self.client.noun}"
                self.channel.refuse(BotError.TOO_MANY_SIMULATIONS, reason)
                return None
            resume, codec = None, None
            if played_on is not None:
                codec, seed, resume = played_on.codec, played_on.seed, played_on.resume
                if codec.rules.outcome(resume.state) is not None:
                    raise Rejected(BotError.INVALID_POSITION, "the game is over at that turn")
            elif "position" in fields:
                seed = secrets.randbits(32) if seed is None else seed
                resume = resume_at(self.arena.codec(game), fields["position"], seed, None)
            options = MatchOptions(
                seed=seed,
                creator=self.client.address,
                limits=self._limits(fields.get("clock")),
                resume=resume,
                codec=codec,
            )
            match = self.arena.open(game, options)
        except Rejected as rejected:
            self._refused(rejected)
            return None
        self.created.append(match.id)
        return match

    def join(self, fields: JsonObject) -> None:
        """Sit in the simulation ``simulationId`` names, or at random in a waiting one."""
        try:
            fields = self.identified(fields)
            self.check_free()
            simulation_id = fields.get("simulationId")
            if not simulation_id:
                self._random(fields)
                return
            match = self.arena.get(simulation_id)
            if match is None:
                if not (
                    isinstance(simulation_id, str) and self._reach(simulation_id, fields, False)
                ):
                    raise Rejected(BotError.WRONG_SIMULATION_ID)
                return
            named_game = fields.get("game")
            if named_game is not None and named_game != match.codec.name:
                raise Rejected(
                    BotError.WRONG_GAME, f"simulation {match.id} is a {match.codec.name} game"
                )
            self._sit(match, fields)
        except Rejected as rejected:
            self._refused(rejected)

    def open_and_join(self, game: str, fields: JsonObject, clock: object = None) -> Match | None:
        """A new simulation with the client in it (a person on /play/thud), with a time bank if
        ``clock`` asks for one; it is dropped if the client leaves it before anyone else sits
        down."""
        try:
            fields = self.identified(fields)
            self.check_free()
            self.arena.check_open()
            options = MatchOptions(
                creator=self.client.address, by_join=True, limits=self._limits(clock)
            )
            match = self.arena.open(game, options)
            self._sit(match, fields)
        except Rejected as rejected:
            self._refused(rejected)
            return None
        return match

    def rejoin(self, fields: JsonObject) -> None:
        """Take a seat back with its token, after a lost connection."""
        try:
            self.check_free()
            simulation_id = fields.get("simulationId")
            match = self.arena.get(simulation_id)
            if match is None:
                if not (
                    isinstance(simulation_id, str) and self._reach(simulation_id, fields, True)
                ):
                    raise Rejected(BotError.WRONG_SIMULATION_ID)
                return
            seat = match.rejoin(self.channel, fields.get("token"))
        except Rejected as rejected:
            self._refused(rejected)
            return
        self._took(LocalSeat(self.arena, match, seat, self.channel))

    def move(self, fields: JsonObject) -> TurnResult | None:
        """The client's turn: the turn played, or None (refused, or played on another node)."""
        if self.seat is None:
            self.channel.error(BotError.NOT_IN_A_GAME, "join a simulation first")
            return None
        return self.seat.submit(fields)

    def closed(self) -> None:
        """The client is gone: its seat is freed or forfeited, its seek withdrawn; the
        simulations it created and left waiting no longer count against its address."""
        self._gone = True
        self.stop_seeking()
        self.arena.creator_left(self.created)
        if self._present is not None:
            self.arena.challenges.gone(self._present, self)
        seat, self.seat = self.seat, None
        if seat is not None:
            seat.leave()

    # --- another node's answers (server.arena.RandomJoiner) -----------------------------------
    def send_data(self, data: bytes) -> None:
        self.channel.send_data(data)

    def remote_seated(self) -> None:
        self._paired_seek = None
        self.channel.seated()

    def remote_refused(self, message: str, reason: str | None) -> None:
        self.seat = None
        random_join = self._random_join
        elsewhere = self.arena.elsewhere
        paired_seek, self._paired_seek = self._paired_seek, None
        if paired_seek is not None and not self._gone:
            # The opponent left before this client came: the seek goes back to the pool.
            self._enqueue(paired_seek)
        elif random_join is None or self._gone:
            self.channel.error(message, reason)
        elif not self._claimed and elsewhere is not None:
            # Taken meanwhile: the nodes agree on where the next one opens.
            self._claimed = True
            self.seat = elsewhere.random_join(self, self.game_of(random_join), random_join)
        else:  # refused even so: it waits for a partner here
            self.open_here(None)

    def open_here(self, simulation_id: str | None) -> None:
        self.seat = None
        random_join, self._random_join = self._random_join, None
        if random_join is not None and not self._gone:
            try:
                self._random_here(random_join, simulation_id)
            except Rejected as rejected:
                self._refused(rejected)

    def close(self) -> None:
        """The seat another node played was taken by a rejoin, or lost with its node."""
        self.seat = None
        self.channel.close()

    # --- the checks ---------------------------------------------------------------------------
    def identified(self, fields: JsonObject) -> JsonObject:
        """The command's fields once its ``bot`` and ``key`` are checked (``server.identity``):
        without the key, and with the registered name as its nick; a guest's as they are
        (a nick that is a registered name is refused). Raises ``Rejected``."""
        if self.client.checked:
            bot = fields.get("bot")
            self.bot = bot if isinstance(bot, str) else None
            return fields
        proof = self._proof
        if proof is None or proof.fields is not fields:  # no bot named: a guest's command
            self.arena.roster.guest(fields)
            self.bot = None
            return {name: value for name, value in fields.items() if name not in ("bot", "key")}
        self.bot = proof.bot
        if proof.standing is not None:
            self._standing = proof.standing
        if self.bot is None:
            return fields
        if self._present is not None and self._present.casefold() != self.bot.casefold():
            self.arena.challenges.gone(self._present, self)  # present as one bot at a time
        self._present = self.bot
        self._stays = True
        self.arena.challenges.here(self.bot, self)
        if self.arena.elsewhere is not None and self.client.routes:
            self.arena.elsewhere.present(self.bot)
        checked = {name: value for name, value in fields.items() if name != "key"}
        checked["bot"] = checked["nick"] = self.bot
        return checked

    def _refused(self, rejected: Rejected) -> None:
        self.channel.error(rejected.message, rejected.reason)

    def check_free(self) -> None:
        if self.in_game:
            raise Rejected(BotError.ALREADY_IN_A_GAME, f"one game per {self.client.noun}")

    def game_of(self, fields: JsonObject) -> str:
        name = fields.get("game", DEFAULT_GAME)
        if name is None:
            name = DEFAULT_GAME
        if not isinstance(name, str) or name not in self.arena.games:
            games = ", ".join(self.arena.games)
            raise Rejected(BotError.UNKNOWN_GAME, f"game must be one of: {games}")
        return name

    def _limits(self, clock: object) -> MatchLimits | None:
        """A create's ``clock``: the arena's limits with that time bank per seat instead of the
        flat turn timeout (raises ``Rejected``), or ``None`` (the arena's own) without one."""
        return None if clock is None else self.arena.limits(TimeBank.from_wire(clock))

    @staticmethod
    def _seed(fields: JsonObject) -> int | None:
        seed = fields.get("seed")
        if seed is not None and (
            isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED
        ):
            raise Rejected(BotError.INVALID_SEED, f"seed must be an integer from 0 to {MAX_SEED}")
        return seed

    # --- where a join goes --------------------------------------------------------------------
    def _reach(self, simulation_id: str, fields: JsonObject, rejoin: bool) -> bool:
        """Ask the node that plays ``simulation_id`` for the seat, if the arena has others."""
        elsewhere = self.arena.elsewhere
        if elsewhere is None or not self.client.routes:
            return False
        self.seat = elsewhere.seat(self, simulation_id, fields, rejoin, self.client.kind)
        return True

    def _random(self, fields: JsonObject) -> None:
        """A random join: a waiting match here, else one on another node, else the one the
        nodes agree is opened for the random joins arriving at this moment."""
        game = self.game_of(fields)
        self._seed(fields)
        here = self.arena.waiting(game, fields)  # checks the request before any look-up
        elsewhere = self.arena.elsewhere
        if here is None and elsewhere is not None and self.client.routes:
            found = elsewhere.waiting(game, fields)
            if found is None:
                self.arena.check_open()  # a draining node claims no new simulation for the nodes
            self._random_join = fields
            self._claimed = found is None
            if found is not None:
                self.seat = elsewhere.seat(self, found, fields, False, self.client.kind)
            else:
                self.seat = elsewhere.random_join(self, game, fields)
            return
        self._random_here(fields, None, here)

    def _random_here(
        self, fields: JsonObject, new_id: str | None, waiting: Match | None = None
    ) -> None:
        """Sit in a waiting match here, or in a new one (with ``new_id``, if the nodes agreed
        on it)."""
        game, seed = self.game_of(fields), self._seed(fields)
        options = MatchOptions(
            seed=seed, creator=self.client.address, by_join=True, match_id=new_id
        )
        match = waiting or self.arena.waiting(game, fields)
        if match is None:
            self.arena.check_open()
            match = self.arena.open(game, options)
        self._sit(match, fields)

    def sit(self, match: Match, fields: JsonObject) -> None:
        """Take a seat of ``match``, which the front end chose (the Thud API's games); raises
        ``Rejected`` if it cannot be taken."""
        self._sit(match, self.identified(fields))

    def _sit(self, match: Match, fields: JsonObject, seat_given: int | None = None) -> None:
        """Take a seat with fields already ``identified`` (``seat_given``: matchmaking's)."""
        request = SeatRequest(
            fields,
            kind=self.client.kind,
            turn_timeout_s=self.client.turn_timeout_s,
            bot=self.bot,
            seat=seat_given,
        )
        try:
            seat = match.seat(self.channel, request)
        except JoinRejected:
            if match.options.by_join:
                self.arena.drop_if_abandoned(match)
            raise
        self._took(LocalSeat(self.arena, match, seat, self.channel))

    def _took(self, seat: LocalSeat) -> None:
        self.stop_seeking()
        self.seat = seat
        self.channel.seated()
