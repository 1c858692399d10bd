"""One match: its seats, its seeded random generator, its clock and its turns. No transport.

A match is opened by the arena with all its options, and every player, whatever it plays
through (a TCP bot, a page, a house player, the Thud HTTP API, a tournament's process), takes
a seat the same way: ``match.seat(channel, request)``. The match starts itself once its seats
are full. A channel is anything that can be sent a ``SeatMessage`` and closed.

Turns are played as they arrive: ``submit`` reads the message with the game's codec, checks it
with the rules and, if it is legal, applies it at once and returns the ``TurnResult``, an
immutable record of the turn that every listener (records, spectators, the Thud API, the
tournaments) receives too; none of them ever reads a live match. The clock is one timer per
match, due by the awaited seat's deadline (a turn answered in time moves no timer): a seat that
does not answer in time plays the game's timeout action, or forfeits if it has none or timed out
too often. A game created with a time bank (``MatchLimits.bank``) has a chess clock per seat
instead: a reply spends its seat's bank and earns the increment, and a seat out of time loses.
The match's task only waits for the end and owns the helper tasks (house players thinking,
grace periods), so nothing outlives the game.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import math
import random
import time
from collections.abc import Callable, Coroutine
from enum import Enum
from typing import Any

from server.clock import Clock, Timer
from server.debug import debug_text
from server.errors import BotError
from server.games.base import (
    ActionRejected,
    AnyCodec,
    EndReason,
    JoinRejected,
    JsonObject,
    Outcome,
    SeatClock,
)
from server.match_clock import TurnTimer
from server.match_events import (
    GameFinished,
    GameStarted,
    Listener,
    SeatLeft,
    SeatsChanged,
    TurnPlayed,
)
from server.match_options import MatchLimits, MatchOptions, SeatRequest
from server.match_seat import Detached, Seat, check_answered_turn
from server.match_views import (
    MatchView,
    SeatView,
    Status,
    TurnClock,
    TurnResult,
    clock_to_wire,
)
from server.protocol import error_message
from server.seat_channel import SeatChannel, SeatMessage, SeatOutput

log = logging.getLogger(__name__)


class MatchEnd(EndReason):
    """How the arena ends a game, whatever the game: its players' faults and its own."""

    PLAYER_DISCONNECTED = BotError.PLAYER_DISCONNECTED.value  # a seat left during the game
    TURN_TIMEOUT = BotError.TURN_TIMEOUT.value  # a seat that cannot pass did not answer in time
    TOO_MANY_TIMEOUTS = "Too many timeouts"
    OUT_OF_TIME = "Out of time"  # a game with a time bank: the seat's clock ran out (its flag fell)
    SERVER_ERROR = BotError.SERVER_ERROR.value  # a bug in the game ended it


Starter = Callable[["Match"], None]


class Phase(Enum):
    """Where a match is in its life; every other fact about it follows from this and its turn."""

    WAITING = "waiting"  # its seats are being taken
    PLAYING = "playing"  # every seat taken: turns are asked for and played
    ENDED = "ended"  # decided (or stopped): each seat had its last message; the task finishes
    FINISHED = "finished"  # the end was announced to every listener: nothing more happens


class Match:
    """A game between seats, from the first seat taken to the result."""

    def __init__(
        self,
        match_id: str,
        codec: AnyCodec,
        seed: int,
        limits: MatchLimits,
        options: MatchOptions,
        notify: Listener,
        start: Starter,
        clock: Clock,
    ) -> None:
        self.id = match_id
        self.codec = codec
        self.rules = codec.rules
        self.seed = seed
        self.limits = limits
        self.options = options
        self.clock = clock
        self._notify = notify
        self._start = start
        seat_count = len(codec.seat_names)
        self.seat_bots = options.seat_bots or (None,) * seat_count
        self.seats: list[Seat | None] = [None] * seat_count
        self.phase = Phase.WAITING
        self.state: Any = None
        self.outcome: Outcome | None = None  # once ENDED: None if it was stopped
        resume = options.resume
        self.rng = resume.rng if resume is not None else random.Random(seed)
        self.turn_count = resume.turn_count if resume is not None else 0
        self.started_at: float | None = None  # wall-clock seconds, for the records
        self.finished_at: float | None = None
        self.timer = TurnTimer(clock, limits.bank, seat_count, self._timed_out)
        self._graces: set[Timer] = set()  # seats that lost their connection, until they rejoin
        self._ended = asyncio.Event()  # the phase left PLAYING: the task may finish
        self.done = asyncio.Event()  # FINISHED
        self._seated = asyncio.Event()
        self._tasks: asyncio.TaskGroup | None = None
        self._helpers: set[asyncio.Task[None]] = set()
        self.outputs: dict[int, SeatOutput] = {}  # by seat: set by whoever runs its bot

    @property
    def status(self) -> Status:
        """The phase as lobbies and records show it: an ended game plays until it is announced."""
        return _STATUS[self.phase]

    @property
    def is_on(self) -> bool:
        """Turns are being played."""
        return self.phase is Phase.PLAYING

    # --- views ---------------------------------------------------------------------------------
    def view(self) -> MatchView:
        names = self.codec.seat_names
        return MatchView(
            match_id=self.id,
            codec=self.codec,
            seed=self.seed,
            status=self.status,
            players=tuple(
                None
                if seat is None
                else SeatView(
                    names[index], seat.player.nick, seat.player.names, seat.kind, seat.bot
                )
                for index, seat in enumerate(self.seats)
            ),
            turn=self.turn_count,
            state=self.state,
            outcome=self.outcome,
            origin=None if self.options.resume is None else self.options.resume.origin,
            tournament_id=self.options.tournament_id,
            pairing=self.options.pairing,
            limits=self.limits,
            clock=self._next_clock(),
            rated=self.options.rated,
        )

    def _next_clock(self) -> TurnClock | None:
        """The seat on move and its time, while the game is on."""
        if not self.is_on or self.state is None or self.rules.outcome(self.state) is not None:
            return None
        return self._clock_of(self.rules.to_move(self.state))

    def _clock_of(self, seat: int, timeout_s: float | None = None) -> TurnClock:
        """The clock of a turn of ``seat`` that may take ``timeout_s`` (by default, its whole
        time for a turn); with a time bank, that is the seat's time left."""
        timeout = self._turn_timeout_s(seat) if timeout_s is None else timeout_s
        return self.timer.clock_of(seat, timeout)

    def _turn_timeout_s(self, seat: int) -> float:
        if self.limits.bank is not None:
            return self.timer.banks[seat]
        occupant = self.seats[seat]
        if occupant is None:
            return self.limits.turn_timeout_s
        if not occupant.replies and not occupant.consecutive_timeouts:
            # Its very first turn: the bot may still be starting up.
            return max(occupant.turn_timeout_s, self.limits.first_turn_timeout_s)
        return occupant.turn_timeout_s

    def free_seats(self) -> list[int]:
        return [index for index, seat in enumerate(self.seats) if seat is None]

    def is_full(self) -> bool:
        return None not in self.seats

    def is_empty(self) -> bool:
        return all(seat is None for seat in self.seats)

    # --- seats ---------------------------------------------------------------------------------
    def seat(self, channel: SeatChannel, request: SeatRequest) -> int:
        """Seat a player (raises ``JoinRejected``); the match starts once every seat is taken."""
        if self.phase is not Phase.WAITING or self.is_full():
            raise JoinRejected(BotError.SIMULATION_FULL, f"simulation {self.id} has no free seat")
        free = self.free_seats()
        seat = (
            request.seat if request.seat in free else self.codec.choose_seat(free, request.fields)
        )
        player = self.codec.player_from_join(request.fields)
        timeout = (
            self.limits.turn_timeout_s
            if request.turn_timeout_s is None
            else (request.turn_timeout_s)
        )
        bot = self.seat_bots[seat] or request.bot
        occupant = Seat(channel, player, timeout, request.kind, bot)
        occupant.hears_opponent = request.fields.get("opponentNotices") is True
        self.seats[seat] = occupant
        self._seated.set()
        channel.send(self._game_info(seat, occupant))
        self._notify(SeatsChanged(self.view()))
        if self.is_full():
            self._start(self)
        return seat

    def _game_info(self, seat: int, occupant: Seat) -> SeatMessage:
        limits = self.limits
        turn_timeout_ms = round(occupant.turn_timeout_s * 1000)
        first_turn_timeout_ms = round(
            max(occupant.turn_timeout_s, limits.first_turn_timeout_s) * 1000
        )
        if limits.bank is not None:  # no reply can take longer than a whole bank
            turn_timeout_ms = first_turn_timeout_ms = limits.bank.initial_ms
        clock = SeatClock(
            turn_timeout_ms=turn_timeout_ms,
            first_turn_timeout_ms=first_turn_timeout_ms,
            max_consecutive_timeouts=limits.max_consecutive_timeouts,
            # Only a TCP bot can rejoin (see ``leave``).
            reconnect_grace_ms=round(limits.reconnect_grace_s * 1000)
            if occupant.kind == "bot"
            else 0,
            bank=limits.bank,
        )
        info = self.codec.game_info_message(self.id, seat, self.seed, occupant.token, clock)
        return SeatMessage(info)

    async def wait_seated(self, seat: int) -> None:
        """Until someone takes ``seat``."""
        while self.seats[seat] is None:
            self._seated.clear()
            await self._seated.wait()

    def leave(self, seat: int, channel: SeatChannel) -> None:
        """The seat's channel is gone: free it before the game; during it, forfeit once the
        grace period for rejoining has passed. A channel the seat no longer uses is ignored."""
        occupant = self.seats[seat]
        if occupant is None or occupant.channel is not channel:
            return
        if self.phase is Phase.WAITING:
            # A full match has started (its task begins it shortly): the seat is held, and
            # the game begins as lost by whoever left, with no grace to rejoin. Freed, the game
            # would begin short of a player, or seat another and start twice.
            if self.options.hold_seats or self.is_full():
                occupant.gone = True
            else:
                self.seats[seat] = None
            self._notify(SeatsChanged(self.view()))
        elif self.is_on:
            # Only a TCP bot holds a token it can rejoin with; a closed page cannot come back.
            if self.limits.reconnect_grace_s > 0 and occupant.kind == "bot":
                detached = Detached()
                occupant.channel = detached
                self._hold_for_rejoin(seat, occupant, detached)
                seconds = math.ceil(self.limits.reconnect_grace_s)
                self._tell_opponents(seat, self.codec.opponent_gone_message(seconds))
            else:
                self._forfeit_left(seat)

    def _hold_for_rejoin(self, seat: int, occupant: Seat, detached: Detached) -> None:
        """Forfeit once the grace period is over if the seat is still on the channel it got
        when it left: a rejoin, even one followed by another loss (with its own grace period),
        replaced it."""

        def grace_over() -> None:
            self._graces.discard(timer)
            if occupant.channel is detached and self.is_on:
                self._forfeit_left(seat)

        timer = self.clock.call_later(self.limits.reconnect_grace_s, grace_over)
        self._graces.add(timer)

    def _tell_opponents(self, seat: int, message: JsonObject) -> None:
        """A notice about ``seat`` to the other seats that asked for such notices."""
        for index, other in enumerate(self.seats):
            if other is not None and index != seat and other.hears_opponent:
                other.channel.send(SeatMessage(message))

    def _forfeit_left(self, seat: int) -> None:
        occupant = self.seats[seat]
        for index, other in enumerate(self.seats):
            if other is not None and index != seat:
                other.channel.send(SeatMessage(error_message(BotError.PLAYER_DISCONNECTED)))
        self._notify(SeatLeft(self.id, seat, occupant.player.nick if occupant else ""))
        self._end(Outcome(self._opponent(seat), MatchEnd.PLAYER_DISCONNECTED))

    def rejoin(self, channel: SeatChannel, token: object) -> int:
        """Give a seat back to the player holding its token; returns the seat.

        The new channel replaces the old one (which is closed if still open), gets the seat's
        ``game-info`` again and, if the seat is on move, the current turn.
        """
        if self.phase in (Phase.ENDED, Phase.FINISHED):
            raise JoinRejected(BotError.GAME_OVER, f"simulation {self.id} has ended")
        for seat, occupant in enumerate(self.seats):
            if (
                occupant is not None
                and isinstance(token, str)
                and hmac.compare_digest(occupant.token.encode(), token.encode())
            ):
                old = occupant.channel
                occupant.channel, occupant.gone = channel, False
                if old is not channel:
                    old.close()
                if isinstance(old, Detached):  # it was gone: its opponents were told
                    self._tell_opponents(seat, self.codec.opponent_back_message())
                channel.send(self._game_info(seat, occupant))
                turn = self.timer.turn
                if turn is not None and turn.seat == seat:
                    left_s = turn.deadline - self.clock.now()
                    channel.send(self._turn_message(seat, max(0.0, left_s)))
                return seat
        raise JoinRejected(BotError.INVALID_TOKEN, "no seat of this simulation has that token")

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run a helper task (an in-process player's thinking) owned by this match.

        Once the game is over there is nothing left to help with: the work is dropped.
        """
        if self._tasks is None or not self.is_on:
            work.close()
            return
        try:
            helper = self._tasks.create_task(work)
        except RuntimeError:  # the match's TaskGroup is already shutting down
            work.close()
            return
        self._helpers.add(helper)
        helper.add_done_callback(self._helpers.discard)

    def _opponent(self, seat: int) -> int | None:
        others = [index for index in range(len(self.seats)) if index != seat]
        return others[0] if len(others) == 1 else None

    # --- turns ---------------------------------------------------------------------------------
    def submit(self, seat: int, message: JsonObject, channel: SeatChannel) -> TurnResult | None:
        """A seat's ``player-turn``: the turn it played, or ``None`` if it was refused (the
        seat was told why, and nothing changed). The turn being played is ``turn_count + 1``,
        the number the last ``turn`` message carried.

        Only the seat's current channel acts for it: after a rejoin, the old one cannot.
        """
        occupant = self.seats[seat]
        if occupant is None or occupant.channel is not channel:
            channel.send(
                SeatMessage(error_message(BotError.NOT_YOUR_SEAT, "this seat was rejoined"))
            )
            return None
        if self.phase is Phase.WAITING:
            channel.send(
                SeatMessage(error_message(BotError.GAME_NOT_STARTED, "waiting for the other"))
            )
            return None
        turn = self.timer.turn
        if not self.is_on:
            channel.send(SeatMessage(error_message(BotError.GAME_OVER, "this game has ended")))
            return None
        try:
            # A late reply is stale whoever is on move now: it must never become a next move.
            check_answered_turn(message, self.turn_count + 1)
            if turn is None or seat != turn.seat:
                raise ActionRejected(BotError.NOT_YOUR_TURN, "wait for a turn message")
            action = self.rules.check(self.state, seat, self.codec.candidate(message))
        except ActionRejected as rejected:
            self._reject(occupant, rejected)
            return None
        occupant.consecutive_timeouts = 0
        now = self.clock.now()
        elapsed = now - turn.started
        if not self.timer.spend(seat, elapsed):
            self._flag_fell(seat)
            return None
        occupant.replied(elapsed)
        return self._play(seat, action, now, timed_out=False, debug=debug_text(message))

    def _flag_fell(self, seat: int) -> None:
        """The seat's time bank ran out: it loses, whatever the game's rules on timeouts."""
        self.timer.banks[seat] = 0.0
        self._end(Outcome(self._opponent(seat), MatchEnd.OUT_OF_TIME))

    def _reject(self, occupant: Seat, rejected: ActionRejected) -> None:
        occupant.errors += 1
        occupant.last_error = f"{rejected.message}: {rejected.reason}"
        occupant.channel.send(SeatMessage(error_message(rejected.message, rejected.reason)))

    def _ask(self, seat: int, timeout_s: float, started: float) -> None:
        """Send the seat on move (``seat``) its turn and start its clock at ``started`` (the
        clock's time, read once by the caller: a turn reads it once)."""
        occupant = self.seats[seat]
        assert occupant is not None
        occupant.channel.send(self._turn_message(seat, timeout_s))
        if (output := self.outputs.get(seat)) is not None:
            output.turn_opened()
        self.timer.open(seat, timeout_s, started)

    def _turn_message(self, seat: int, timeout_s: float) -> SeatMessage:
        clock = None
        if self.limits.bank is not None:
            clock = clock_to_wire(self.codec, self._clock_of(seat, timeout_s))
        body = self.codec.turn_message(
            self.state, seat, self.turn_count + 1, round(timeout_s * 1000), clock
        )
        return SeatMessage(body, self.state)

    def _timed_out(self, seat: int) -> None:
        """Pass for the seat, or forfeit it when it has timed out too often or cannot pass; with
        a time bank, its bank ran out: it loses."""
        occupant = self.seats[seat]
        turn = self.timer.turn
        if occupant is None or turn is None or turn.seat != seat or not self.is_on:
            return
        if self.limits.bank is not None:
            self._flag_fell(seat)
            return
        occupant.consecutive_timeouts += 1
        action = self.rules.timeout_action(self.state, seat)
        if action is None:
            self._end(Outcome(self._opponent(seat), MatchEnd.TURN_TIMEOUT))
            return
        if occupant.consecutive_timeouts >= self.limits.max_consecutive_timeouts:
            self._end(Outcome(self._opponent(seat), MatchEnd.TOO_MANY_TIMEOUTS))
            return
        reason = f"no reply in {occupant.turn_timeout_s:g} s: you passed"
        occupant.channel.send(SeatMessage(error_message(BotError.TURN_TIMEOUT, reason)))
        self._play(seat, action, self.clock.now(), timed_out=True)

    def _play(
        self, seat: int, action: Any, now: float, timed_out: bool, debug: str | None = None
    ) -> TurnResult | None:
        """Apply a checked action played at ``now`` (the clock's time), tell everyone, and ask
        for the next turn (its clock starting then) or end the game."""
        turn = self.timer.close()
        reply_ms = 0 if turn is None else round(1000 * (now - turn.started))
        output = self.outputs.get(seat)
        stderr = None if output is None else output.turn_closed()
        before = self.state
        try:
            self.state, events = self.rules.apply(before, seat, action, self.rng)
            self.turn_count += 1
            outcome = self.rules.outcome(self.state)
            clock = None
            if outcome is None:
                clock = self._clock_of(self.rules.to_move(self.state))
            result = TurnResult(
                self.id,
                self.codec,
                self.turn_count,
                seat,
                self.codec.action_to_wire(action),
                timed_out,
                events,
                self.state,
                outcome,
                reply_ms,
                clock,
                played_at=now,
                debug=debug,
                stderr=stderr,
            )
            for target, message in self.codec.after_turn_messages(before, self.state, events):
                occupant = self.seats[target]
                if occupant is not None:
                    occupant.channel.send(SeatMessage(message))
            self._notify(TurnPlayed(result))
            if clock is None:
                self._end(outcome)
            else:
                self._ask(clock.seat, clock.timeout_s, now)
        except Exception:  # a bug in a game must end that game, not the arena
            log.exception("simulation %s failed on turn %d", self.id, self.turn_count)
            self._end(Outcome(None, MatchEnd.SERVER_ERROR))
            return None
        return result

    def _end(self, outcome: Outcome | None) -> None:
        """The game is decided (``None``: stopped with no result): each seat gets its last
        message, and the match's task finishes."""
        if self.phase in (Phase.ENDED, Phase.FINISHED):
            return
        self.timer.stop()
        for timer in self._graces:
            timer.cancel()
        self._graces.clear()
        self.phase = Phase.ENDED
        self.outcome = outcome
        self._ended.set()
        if self.state is None or outcome is None:
            return
        for index, occupant in enumerate(self.seats):
            if occupant is not None:
                message = self.codec.end_message(self.state, outcome, index)
                occupant.channel.send(SeatMessage(message))

    # --- the match's life ---------------------------------------------------------------------
    async def run(self, on_finished: Callable[[Match], None]) -> None:
        """Play the game to its end; never raises, so one broken game cannot stop the others.

        Cancelled (the arena stops), the game ends with no result: it is kept as unfinished.
        """
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = tasks
                self._begin()
                await self._ended.wait()
                for helper in self._helpers:
                    helper.cancel()  # a player still thinking about a game that is over
        except Exception:
            log.exception("simulation %s failed", self.id)
            if self.outcome is None:
                self.outcome = Outcome(None, MatchEnd.SERVER_ERROR)
                self.phase = Phase.ENDED
        finally:
            self._tasks = None
            self._end(None)  # cancelled: stopped with no result
            self.phase = Phase.FINISHED
            self.finished_at = time.time()
            for seat in self.seats:
                if seat is not None:
                    seat.channel.close()
            if self.outcome is not None:
                stats = tuple(None if s is None else s.stats() for s in self.seats)
                self._notify(GameFinished(self.view(), self.outcome, stats, self.finished_at))
            self.done.set()
            on_finished(self)

    def _begin(self) -> None:
        resume = self.options.resume
        players = [seat.player for seat in self.seats if seat is not None]
        self.state = resume.state if resume is not None else self.rules.initial_state(players)
        self.phase = Phase.PLAYING
        self.started_at = time.time()
        copied = () if resume is None else resume.turns
        self._notify(GameStarted(self.view(), self.started_at, copied))
        gone = [index for index, seat in enumerate(self.seats) if seat is not None and seat.gone]
        if gone:
            winner = self._opponent(gone[0]) if len(gone) == 1 else None
            self._end(Outcome(winner, MatchEnd.PLAYER_DISCONNECTED))
        elif (outcome := self.rules.outcome(self.state)) is not None:
            self._end(outcome)
        else:
            seat = self.rules.to_move(self.state)
            self._ask(seat, self._turn_timeout_s(seat), self.clock.now())

    def stop(self) -> None:
        """The arena is stopping: the game ends here with no result (it is kept as unfinished),
        whatever its players do meanwhile."""
        self._end(None)

    async def finished(self) -> GameFinished | None:
        """Wait for the end; the game as it finished (``None`` if it was cut short)."""
        await self.done.wait()
        if self.outcome is None:
            return None
        stats = tuple(None if s is None else s.stats() for s in self.seats)
        return GameFinished(self.view(), self.outcome, stats, self.finished_at or time.time())


_STATUS = {
    Phase.WAITING: Status.WAITING,
    Phase.PLAYING: Status.PLAYING,
    Phase.ENDED: Status.PLAYING,
    Phase.FINISHED: Status.FINISHED,
}
