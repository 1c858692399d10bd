"""One client of the arena, and every command it gives: checked and carried out here, once.

A ``Session`` is one client, whatever it connects through: a bot on TCP, a page's websocket, a
player of the Thud HTTP API, or a seat another node asks for on behalf of its own client. Its
front end turns bytes into commands (``server.commands``) and hands them to ``handle``; the
session carries each out through the arena and its matches and returns its effects: what it
says to its client (``server.session.effects``: a message, an error, a refusal, a seat taken)
and what the front end is to do for it (a key check, ``server.session.keys``), which the front
end carries out (``keys.carry_out``) on the client's ``SessionChannel`` and turns into bytes. It
does no I/O and spawns no task (the h11 and websockets shape: no transport, no clock, tested in
memory). A match it seats the client in writes the game's messages straight to that channel,
the hot path of a game; what the session says before it takes a seat is carried out first, so
that the client hears everything in order. Answers that come later from elsewhere (a seek
paired, a challenge answered, another node's seat given) are not a command's: what the session
says then is carried out at once, through the same ``perform`` (``effects.Outbox``).

Its parts: the key check (``keys``), seeks and challenges (``ladder``), and routing to another
node (``routing``). Its seat goes through the ``SessionState``s of one table, ``TRANSITIONS``.
Joining gives the session a ``SeatHandle`` (submit, leave), whether the match is played here
(``LocalSeat``) or by another node (``server.cluster``'s): where a join goes is decided here
and nowhere else.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from enum import Enum

from server.arena import Arena, SeatHandle
from server.commands import (
    Accept,
    Cancel,
    Command,
    Create,
    Decline,
    Identified,
    Join,
    Leave,
    Move,
    Pong,
    RandomJoin,
    Register,
    Rejoin,
    Seek,
    names_bot,
)
from server.commands import Challenge as ChallengeCommand
from server.errors import BotError, Rejected
from server.games.base import JoinRejected, JsonObject
from server.match import Match
from server.match_options import MatchLimits, MatchOptions, SeatRequest
from server.match_views import TurnResult
from server.played_on import resume_at
from server.seat_channel import SeatMessage
from server.session.channel import Client, LocalSeat, SessionChannel
from server.session.effects import (
    NO_EFFECTS,
    SEATED,
    CheckKey,
    Effect,
    Error,
    Outbox,
    Refuse,
    Send,
)
from server.session.keys import MAX_HELD, KeyHold, Outcome, Registered, identified
from server.session.ladder import Ladder
from server.session.routing import Routing

log = logging.getLogger(__name__)


class SessionState(Enum):
    """Where a session's seat stands."""

    FREE = "free"  # no seat (a seek may wait: ``Ladder.seeking``)
    ASKED = "asked"  # a seat asked of another node, not given yet
    SEATED = "seated"  # a seat, of a game playing or over (kept until the next)
    GONE = "gone"  # the client left: nothing more is done for it


class Step(Enum):
    """What moves a session's seat from one state to the next."""

    ASK = "ask"  # a seat asked of another node (``Routing``)
    SIT = "sit"  # a seat taken here (or given back by a rejoin)
    GIVEN = "given"  # the other node gave the seat asked for
    LOST = "lost"  # the seat was refused, taken by a rejoin elsewhere, or lost with its node
    LEAVE = "leave"  # the client is gone


_FREE, _ASKED, _SEATED, _GONE = SessionState
TRANSITIONS: dict[tuple[SessionState, Step], SessionState] = {
    (_FREE, Step.ASK): _ASKED,
    (_FREE, Step.SIT): _SEATED,
    (_FREE, Step.LOST): _FREE,  # a random join placed here after all (``Routing.open_here``)
    (_ASKED, Step.ASK): _ASKED,  # the nodes' claim, after a refusal
    (_ASKED, Step.SIT): _SEATED,
    (_ASKED, Step.GIVEN): _SEATED,
    (_ASKED, Step.LOST): _FREE,
    (_SEATED, Step.ASK): _ASKED,  # its game over: the next one is another node's
    (_SEATED, Step.SIT): _SEATED,  # its game over: the next one
    (_SEATED, Step.GIVEN): _SEATED,
    (_SEATED, Step.LOST): _FREE,
    **{(state, Step.LEAVE): _GONE for state in SessionState},
    # Answers that come after the client left change nothing.
    **{(_GONE, step): _GONE for step in Step},
}
# What is carried out at once (a registration only through the key check).
Carried = (
    Create | Join | RandomJoin | Rejoin | Move | Seek | Cancel | ChallengeCommand | Accept | Decline
)


class Session:
    """One client's commands: create, join (by id or at random), seek, rejoin, move, leave."""

    def __init__(self, arena: Arena, client: Client, channel: SessionChannel) -> None:
        self.arena = arena
        self.client = client
        self.channel = channel
        self.state = SessionState.FREE
        self.seat: SeatHandle | None = None  # asked for, or taken
        self.created: list[str] = []  # the simulations it created (maxSimulationsPerConnection)
        self.bot: str | None = None  # the registered bot its last command proved it is
        self.hosted = False  # proved with a hosting key: a worker plays the bot here
        self.keys = KeyHold()
        self.ladder = Ladder(self)
        self.routing = Routing(self)
        # A ladder client (a registered bot, or one that seeks): its connection outlives its
        # games; a client of the original protocol is closed with its game, as it expects.
        self.stays = False
        self.out = Outbox(channel)
        self.say = self.out.say

    # --- where it stands ------------------------------------------------------------------------
    def _to(self, step: Step) -> None:
        """Move the seat's state by ``TRANSITIONS``; a step it does not name is a bug."""
        self.state = TRANSITIONS[self.state, step]

    @property
    def gone(self) -> bool:
        return self.state is SessionState.GONE

    @property
    def in_game(self) -> bool:
        """It holds a seat (or asked for one) of a game that has not finished."""
        return self.seat is not None and self.seat.playing

    @property
    def game_over(self) -> bool:
        """Its seat's game is over (the seat is kept, not playing, until its next game)."""
        return self.seat is not None and not self.seat.playing

    @property
    def seeking(self) -> bool:
        return self.ladder.seeking

    @property
    def stays_connected(self) -> bool:
        """Its game is over and it is a ladder client: its connection stays, free to seek
        again or be challenged. Otherwise, as the seat's channel closes (at the game's end for
        a client of the original protocol; a seat taken by a rejoin, or lost with its node),
        the connection closes."""
        return self.stays and self.game_over

    @property
    def idle(self) -> bool:
        """Nothing keeps it connected: no game, no seek waiting, and not a registered bot
        present for challenges (``idleTimeoutMs`` counts only meanwhile, ``server.tcp``)."""
        return not (self.in_game or self.seeking or self.ladder.present is not None)

    # --- commands in, effects out ---------------------------------------------------------------
    def handle(self, command: Command | Rejected) -> Sequence[Effect]:
        """One command (``server.commands``), or a message the parser refused: carried out (or
        answered) now, or once the key check in progress is done, in the order they came.
        Returns its effects, for the front end to carry out in order (``keys.carry_out``): what
        to say to the client, a key to check."""
        out = self.out
        if type(command) is Move and self.seat is not None and not self.keys.checking:
            self.seat.submit(command.fields)  # the hot path: a move to a seat says nothing
            return NO_EFFECTS
        if out.gathering:  # a held command, carried out within ``checked``
            self._handle(command)
            return NO_EFFECTS
        out.gathering = True
        try:
            self._handle(command)
        except BaseException:
            out.dropped()
            raise
        finally:
            out.gathering = False
        return out.taken()

    def checked(self, outcome: Outcome) -> Sequence[Effect]:
        """The key check's outcome: the command carried out (or refused), then those held
        meanwhile, until one needs a check of its own (the last effect returned)."""
        self.out.gathering = True
        try:
            self._checked(outcome)
        finally:
            self.out.gathering = False
        return self.out.taken()

    def _handle(self, command: Command | Rejected) -> None:
        keys = self.keys
        if isinstance(command, Leave):  # at once: what is held is dropped, unanswered
            self.closed()
            return
        if isinstance(command, Pong):  # its front end's, which pings: nothing to answer
            return
        if keys.checking:
            if keys.full():
                reason = f"at most {MAX_HELD} while a key is checked"
                self.say(Refuse(BotError.TOO_MANY_MESSAGES, reason))
            else:
                keys.held.append(command)
            return
        if isinstance(command, Rejected):
            self.refused(command)
            return
        if isinstance(command, Register) or (names_bot(command) and not self.client.checked):
            keys.checking = True
            self.say(CheckKey(command))
            return
        self._carry_out(command)

    def _checked(self, outcome: Outcome) -> None:
        keys = self.keys
        keys.checking = False
        if self.gone:
            return
        try:
            if isinstance(outcome, Rejected):
                self.refused(outcome)
            elif isinstance(outcome, Registered):
                registered = {"type": "registered", "bot": outcome.bot, "key": outcome.key}
                self.say(Send(SeatMessage(registered)))
            else:
                keys.proof = outcome
                self._carry_out(outcome.command)
        except Exception:  # a bug must cost this request, not the arena
            log.exception("carrying out a checked command failed")
            self.say(Error(BotError.SERVER_ERROR, "the request failed; it was logged"))
        finally:
            keys.proof = None
        while keys.held and not keys.checking and not self.gone:
            held = keys.held.popleft()
            try:
                self._handle(held)
            except Exception:
                log.exception("handling %s failed", type(held).__name__)
                self.say(Error(BotError.SERVER_ERROR, "the request failed; it was logged"))

    def _carry_out(self, command: Carried) -> None:
        match command:
            case Move():
                self.move(command)
            case Join():
                self.join(command)
            case RandomJoin():
                self.random_join(command)
            case Create():
                created = self.create(command)
                if created is not None:
                    ready = created.codec.ready_message(created.id, created.seed)
                    self.say(Send(SeatMessage(ready)))
            case Rejoin():
                self.rejoin(command)
            case Seek():
                self.ladder.seek(command)
            case ChallengeCommand():
                self.ladder.challenge(command)
            case Accept():
                self.ladder.accept(command)
            case Decline():
                self.ladder.decline(command)
            case Cancel():
                self.ladder.stop_seeking()

    # --- the commands ---------------------------------------------------------------------------
    def create(self, command: Create) -> Match | None:
        """A new, empty simulation, which the client does not sit in; with ``position``, begun
        there; ``played_on``, a recorded game's turn to play on from (the replay page's "Play
        from here"), with that game's settings, seed and draws."""
        game, seed, played_on = command.game, command.seed, command.played_on
        try:
            self.identified(command)
            self.arena.check_open()
            limit = self.arena.config.max_simulations_per_connection
            if len(self.created) >= limit:
                reason = f"at most {limit} per {self.client.noun}"
                self.say(Refuse(BotError.TOO_MANY_SIMULATIONS, reason))
                return None
            resume, codec = None, None
            if played_on is not None:
                codec, seed, resume = played_on.codec, played_on.seed, played_on.resume
                if codec.rules.outcome(resume.state) is not None:
                    raise Rejected(BotError.INVALID_POSITION, "the game is over at that turn")
            elif command.position is not None:
                seed = secrets.randbits(32) if seed is None else seed
                resume = resume_at(self.arena.codec(game), command.position, seed, None)
            options = MatchOptions(
                seed=seed,
                creator=self.client.address,
                limits=_limits(self.arena, command),
                resume=resume,
                codec=codec,
            )
            match = self.arena.open(game, options)
        except Rejected as rejected:
            self.refused(rejected)
            return None
        self.created.append(match.id)
        return match

    def join(self, command: Join) -> None:
        """Sit in the simulation ``simulationId`` names."""
        simulation_id = command.simulation_id
        try:
            fields = self.identified(command)
            self.check_free()
            match = self.arena.get(simulation_id)
            if match is None:
                if not self.routing.reach(simulation_id, fields, False):
                    raise Rejected(BotError.WRONG_SIMULATION_ID)
                return
            named_game = command.game
            if named_game is not None and named_game != match.codec.name:
                raise Rejected(
                    BotError.WRONG_GAME, f"simulation {match.id} is a {match.codec.name} game"
                )
            self.sit_identified(match, fields)
        except Rejected as rejected:
            self.refused(rejected)

    def random_join(self, command: RandomJoin) -> None:
        """Sit at random in a waiting simulation."""
        try:
            fields = self.identified(command)
            self.check_free()
            self.routing.random(command, fields)
        except Rejected as rejected:
            self.refused(rejected)

    def open_and_join(self, command: Create) -> Match | None:
        """A new simulation with the client in it (a person on /play/thud), with a time bank if
        the command's ``clock`` asks for one; it is dropped if the client leaves it before
        anyone else sits down."""
        game = command.game
        try:
            fields = self.identified(command)
            self.check_free()
            self.arena.check_open()
            limits = _limits(self.arena, command)
            options = MatchOptions(creator=self.client.address, by_join=True, limits=limits)
            match = self.arena.open(game, options)
            self.sit_identified(match, fields)
        except Rejected as rejected:
            self.refused(rejected)
            return None
        return match

    def rejoin(self, command: Rejoin) -> None:
        """Take a seat back with its token, after a lost connection."""
        try:
            self.check_free()
            match = self.arena.get(command.simulation_id)
            if match is None:
                if not self.routing.reach(command.simulation_id, command.fields, True):
                    raise Rejected(BotError.WRONG_SIMULATION_ID)
                return
            self.out.before_seat()
            seat = match.rejoin(self.channel, command.token, self.client.round_trip)
        except Rejected as rejected:
            self.refused(rejected)
            return
        self._took(LocalSeat(self.arena, match, seat, self.channel))

    def move(self, command: Move) -> TurnResult | None:
        """The client's turn: the turn played, or None (refused, or played on another node)."""
        if self.seat is None:  # no seat: FREE (or GONE)
            self.say(Error(BotError.NOT_IN_A_GAME, "join a simulation first"))
            return None
        return self.seat.submit(command.fields)

    def closed(self) -> None:
        """The client is gone: its seat is freed or forfeited, its seek withdrawn; the
        simulations it created and left waiting no longer count against its address."""
        if self.gone:
            return
        self._to(Step.LEAVE)
        self.keys.held.clear()
        self.ladder.gone()
        self.arena.creator_left(self.created)
        seat, self.seat = self.seat, None
        if seat is not None:
            seat.leave()

    # --- the checks -----------------------------------------------------------------------------
    def identified(self, command: Identified) -> JsonObject:
        """The command's fields once its ``bot`` and ``key`` are checked (``keys.identified``)."""
        return identified(self, command)

    def refused(self, rejected: Rejected) -> None:
        self.say(Error(rejected.message, rejected.reason))

    def check_free(self) -> None:
        if self.in_game:
            raise Rejected(BotError.ALREADY_IN_A_GAME, f"one game per {self.client.noun}")

    # --- its seat -------------------------------------------------------------------------------
    def sit(self, match: Match, command: Join) -> None:
        """Take a seat of ``match``, which the front end chose (the Thud API's games); raises
        ``Rejected`` if it cannot be taken."""
        self.sit_identified(match, self.identified(command))

    def sit_identified(
        self, match: Match, fields: JsonObject, seat_given: int | None = None
    ) -> None:
        """Take a seat with fields already ``identified`` (``seat_given``: matchmaking's)."""
        request = SeatRequest(
            fields,
            kind=self.client.kind,
            turn_timeout_s=self.client.turn_timeout_s,
            bot=self.bot,
            seat=seat_given,
            hosted=self.hosted,
            round_trip=self.client.round_trip,
        )
        self.out.before_seat()
        try:
            seat = match.seat(self.channel, request)
        except JoinRejected:
            if match.options.by_join:
                self.arena.drop_if_abandoned(match)
            raise
        self._took(LocalSeat(self.arena, match, seat, self.channel))

    def _took(self, seat: LocalSeat) -> None:
        self.ladder.stop_seeking()
        self._to(Step.SIT)
        self.seat = seat
        self.say(SEATED)

    def asked(self, seat: SeatHandle) -> None:
        """A seat asked of another node (``Routing``): its handle, until the answer comes."""
        self._to(Step.ASK)
        self.seat = seat

    def given(self) -> None:
        """The other node gave the seat asked for."""
        self._to(Step.GIVEN)
        self.ladder.paired_seek = None
        self.say(SEATED)

    def lost(self) -> None:
        """The seat asked for was refused, or the other node's seat was lost."""
        self._to(Step.LOST)
        self.seat = None


def _limits(arena: Arena, command: Create) -> MatchLimits | None:
    """A create's ``clock``: the arena's limits with its time bank per seat instead of the flat
    turn timeout and charging think time if it asks, or ``None`` (the arena's own)."""
    if command.clock is None and not command.charge_think:
        return None
    return arena.limits(command.clock, command.charge_think)
