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
``server.match_helpers``), so nothing outlives the game. Who sits where, and the grace period of
a seat whose bot lost its connection, is the match's ``Seating`` (``server.match_seating``);
the match decides when a seat may be taken, left or given back, and what leaving costs.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Coroutine
from enum import Enum
from typing import Any

from server.clock import Clock
from server.debug import DEBUG_KEY, debug_text
from server.errors import BotError
from server.games.base import (
    ActionRejected,
    AnyCodec,
    EndReason,
    JoinRejected,
    JsonObject,
    Outcome,
)
from server.match_clock import TurnTimer
from server.match_events import (
    VOIDED_REASON,
    GameFinished,
    GameStarted,
    Listener,
    SeatLeft,
    SeatsChanged,
    TurnPlayed,
)
from server.match_helpers import Helpers
from server.match_options import MatchLimits, MatchOptions, SeatRequest
from server.match_seat import check_answered_turn
from server.match_seating import Seating
from server.match_views import (
    MatchView,
    ReplyTiming,
    Status,
    TurnClock,
    TurnResult,
)
from server.protocol import error_message
from server.round_trip import RoundTrip
from server.seat_channel import SeatChannel, SeatMessage

log = logging.getLogger(__name__)


class MatchEnd(EndReason):
    """How the arena ends a game, whatever the game: its players' faults and its own."""

    PLAYER_DISCONNECTED = BotError.PLAYER_DISCONNECTED.value  # a seat left during the game
    TURN_TIMEOUT = BotError.TURN_TIMEOUT.value  # a seat that cannot pass did not answer in time
    TOO_MANY_TIMEOUTS = "Too many timeouts"
    OUT_OF_TIME = "Out of time"  # a game with a time bank: the seat's clock ran out (its flag fell)
    SERVER_ERROR = BotError.SERVER_ERROR.value  # a bug in the game ended it
    VOIDED = VOIDED_REASON  # a hosted bot's worker was lost: no result, not rated


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
        self.seating = Seating(match_id, codec, seed, limits, options.seat_bots, clock)
        self.seats = self.seating.seats  # the same list: read on every turn, never replaced
        self.phase = Phase.WAITING
        self.state: Any = None
        self.outcome: Outcome | None = None  # once ENDED: None if it was stopped
        resume = options.resume
        self.rng = resume.rng if resume is not None else random.Random(seed)
        self.turn_count = resume.turn_count if resume is not None else 0
        self.started_at: float | None = None  # wall-clock seconds, for the records
        self.finished_at: float | None = None
        turn_timeout_s = self.seating.turn_timeout_s
        self.timer = TurnTimer(clock, limits, len(self.seats), turn_timeout_s, self._timed_out)
        self._ended = asyncio.Event()  # the phase left PLAYING: the task may finish
        self.done = asyncio.Event()  # FINISHED
        self.helpers = Helpers()
        self.outputs = self.seating.outputs  # the same dict: read on every turn

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
        return MatchView(
            match_id=self.id,
            codec=self.codec,
            seed=self.seed,
            status=self.status,
            players=self.seating.views(),
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
        return self.timer.clock_of(self.rules.to_move(self.state))

    # --- seats ---------------------------------------------------------------------------------
    def seat(self, channel: SeatChannel, request: SeatRequest) -> int:
        """Seat a player (raises ``JoinRejected``); the match starts once every seat is taken."""
        if self.phase is not Phase.WAITING or self.seating.is_full():
            raise JoinRejected(BotError.SIMULATION_FULL, f"simulation {self.id} has no free seat")
        seat = self.seating.take(channel, request)
        self._notify(SeatsChanged(self.view()))
        if self.seating.is_full():
            self._start(self)
        return seat

    async def wait_seated(self, seat: int) -> None:
        """Until someone takes ``seat``."""
        await self.seating.wait_seated(seat)

    def is_empty(self) -> bool:
        return self.seating.is_empty()

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
            self.seating.release(seat, hold=self.options.hold_seats or self.seating.is_full())
            self._notify(SeatsChanged(self.view()))
        elif self.is_on:
            if occupant.hosted:  # its worker is gone: the arena's loss, not the bot's
                self.void()
            elif self.seating.may_rejoin(seat):
                self.seating.detach(seat, self._grace_over)
            else:
                self._forfeit_left(seat)

    def _grace_over(self, seat: int) -> None:
        """A detached seat's player did not come back in time."""
        if self.is_on:
            self._forfeit_left(seat)

    def _forfeit_left(self, seat: int) -> None:
        occupant = self.seats[seat]
        self.seating.tell_others_left(seat)
        self._notify(SeatLeft(self.id, seat, occupant.player.nick if occupant else ""))
        self._end(Outcome(self.seating.opponent(seat), MatchEnd.PLAYER_DISCONNECTED))

    def rejoin(self, channel: SeatChannel, token: object, trip: RoundTrip | None = None) -> int:
        """Give a seat back to the player holding its token (returns the seat): its new channel
        gets the seat's ``game-info`` again and, if it is on move, the current turn."""
        if self.phase in (Phase.ENDED, Phase.FINISHED):
            raise JoinRejected(BotError.GAME_OVER, f"simulation {self.id} has ended")
        seat = self.seating.give_back(channel, token, trip)
        turn = self.timer.turn
        if turn is not None and turn.seat == seat:
            left_s = turn.deadline - self.clock.now()
            channel.send(self._turn_message(seat, max(0.0, left_s)))
        return seat

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run a helper task (an in-process player's thinking) owned by this match (dropped
        once the game is over)."""
        if self.is_on:
            self.helpers.spawn(work)
        else:
            work.close()

    # --- turns ---------------------------------------------------------------------------------
    def submit(self, seat: int, message: JsonObject, channel: SeatChannel) -> TurnResult | None:
        """A seat's ``player-turn``: the turn it played, or ``None`` if it was refused (the
        seat was told why, and nothing changed). The turn being played is ``turn_count + 1``,
        the number the last ``turn`` message carried. Only the seat's current channel acts for
        it: after a rejoin, the old one cannot.
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
        if self.phase is not Phase.PLAYING:  # not ``is_on``: a call less, every move
            channel.send(SeatMessage(error_message(BotError.GAME_OVER, "this game has ended")))
            return None
        try:
            # A late reply is stale whoever is on move now: it must never become a next move.
            if "turn" in message:  # the original's bots never say which turn they answer
                check_answered_turn(message, self.turn_count + 1)
            if turn is None or seat != turn.seat:
                raise ActionRejected(BotError.NOT_YOUR_TURN, "wait for a turn message")
            action = self.rules.check(self.state, seat, self.codec.candidate(message))
        except ActionRejected as rejected:
            occupant.refused(rejected)
            return None
        now = self.clock.now()
        timing = self.timer.reply_timing(turn, now, occupant.round_trip)
        cpu_ms = self.seating.turn_cpu_ms(seat, message) if turn.by_cpu else None
        if not self.timer.spend(seat, self.timer.charged_s(timing, cpu_ms)):
            self._timed_out(seat)  # out of time: with a time bank its flag fell
            return None
        occupant.consecutive_timeouts = 0
        occupant.replied(timing.reply_s)
        debug = debug_text(message) if DEBUG_KEY in message else None
        return self._play(seat, action, now, debug, timing)

    def _ask(self, seat: int, timeout_s: float, started: float) -> None:
        """Send the seat on move its turn, its clock started at ``started`` (read by the caller)."""
        occupant = self.seats[seat]
        assert occupant is not None
        occupant.channel.send(self._turn_message(seat, timeout_s))
        if (output := self.outputs.get(seat)) is not None:  # a bot process's, a worker's report
            output.turn_opened()
        self.timer.open(seat, timeout_s, started, output is not None and output.counts_cpu)

    def _turn_message(self, seat: int, timeout_s: float) -> SeatMessage:
        timer = self.timer
        clock = None if timer.bank is None else timer.bank_clock(self.codec, seat, timeout_s)
        body = self.codec.turn_message(
            self.state, seat, self.turn_count + 1, round(timeout_s * 1000), clock
        )
        return SeatMessage(body, self.state)

    def _timed_out(self, seat: int) -> None:
        """Pass for the seat, or forfeit it when it has timed out too often or cannot pass; with
        a time bank, its bank ran out: it loses. A time that ran out as the arena stalled: void."""
        occupant = self.seats[seat]
        turn = self.timer.turn
        if occupant is None or turn is None or turn.seat != seat or not self.is_on:
            return
        occupant.consecutive_timeouts += 1
        action = self.rules.timeout_action(self.state, seat)
        opponent = self.seating.opponent(seat)
        if self.clock.stalled_since(turn.started):  # the arena was late, not the bot
            self.void()
        elif self.limits.bank is not None:  # its bank ran out: it loses, whatever the rules
            self.timer.banks[seat] = 0.0
            self._end(Outcome(opponent, MatchEnd.OUT_OF_TIME))
        elif action is None:
            self._end(Outcome(opponent, MatchEnd.TURN_TIMEOUT))
        elif occupant.consecutive_timeouts >= self.limits.max_consecutive_timeouts:
            self._end(Outcome(opponent, MatchEnd.TOO_MANY_TIMEOUTS))
        else:
            reason = f"no reply in {occupant.turn_timeout_s:g} s: you passed"
            occupant.channel.send(SeatMessage(error_message(BotError.TURN_TIMEOUT, reason)))
            self._play(seat, action, self.clock.now(), None, None)  # no reply: timed out

    def _play(
        self, seat: int, action: Any, now: float, debug: str | None, timing: ReplyTiming | None
    ) -> TurnResult | None:
        """Apply a checked action played at ``now`` (the clock's time), the seat's reply (its
        ``debug`` text, its ``timing``) or, without a timing, its pass for a timeout; tell
        everyone, ask for the next turn (its clock starting then) or end the game."""
        turn = self.timer.close()
        reply_ms = 0 if turn is None else round(1000 * (now - turn.started))
        output = self.outputs.get(seat)  # a bot process's: its turn's stderr and CPU time
        stderr = None if output is None else output.turn_closed()
        before = self.state
        try:
            self.state, events = self.rules.apply(before, seat, action, self.rng)
            self.turn_count += 1
            outcome = self.rules.outcome(self.state)
            clock = None
            if outcome is None:
                clock = self.timer.clock_of(self.rules.to_move(self.state))
            result = TurnResult(
                self.id,
                self.codec,
                self.turn_count,
                seat,
                self.codec.action_to_wire(action),
                timing is None,
                events,
                self.state,
                outcome,
                reply_ms,
                clock,
                played_at=now,
                debug=debug,
                stderr=stderr,
                cpu_ms=None if output is None else output.turn_cpu_ms(),
                timing=timing,
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
        self.seating.end_graces()
        self.phase = Phase.ENDED
        self.outcome = outcome
        self._ended.set()
        if self.state is not None and outcome is not None:
            self.seating.tell_end(self.state, outcome)

    # --- the match's life ---------------------------------------------------------------------
    async def run(self, on_finished: Callable[[Match], None]) -> None:
        """Play the game to its end; never raises, so one broken game cannot stop the others.

        Cancelled (the arena stops), the game ends with no result: it is kept as unfinished.
        """
        try:
            await self.helpers.run(self._begin, self._ended)
        except Exception:
            log.exception("simulation %s failed", self.id)
            if self.outcome is None:
                self.outcome = Outcome(None, MatchEnd.SERVER_ERROR)
                self.phase = Phase.ENDED
        finally:
            self._end(None)  # cancelled: stopped with no result
            self.phase = Phase.FINISHED
            self.finished_at = time.time()
            self.seating.close_all()
            if self.outcome is not None:
                stats = self.seating.stats()
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
            winner = self.seating.opponent(gone[0]) if len(gone) == 1 else None
            self._end(Outcome(winner, MatchEnd.PLAYER_DISCONNECTED))
        elif (outcome := self.rules.outcome(self.state)) is not None:
            self._end(outcome)
        else:
            clock = self.timer.clock_of(self.rules.to_move(self.state))
            self._ask(clock.seat, clock.timeout_s, self.clock.now())

    def stop(self) -> None:
        """The arena is stopping: the game ends here with no result (it is kept as unfinished),
        whatever its players do meanwhile."""
        self._end(None)

    def void(self) -> None:
        """The arena broke the game (a worker lost, a bot it could not start): no result."""
        self._end(Outcome(None, MatchEnd.VOIDED))

    async def finished(self) -> GameFinished | None:
        """Wait for the end; the game as it finished (``None`` if it was cut short)."""
        await self.done.wait()
        if self.outcome is None:
            return None
        finished_at = self.finished_at or time.time()
        return GameFinished(self.view(), self.outcome, self.seating.stats(), finished_at)


_STATUS = {
    Phase.WAITING: Status.WAITING,
    Phase.PLAYING: Status.PLAYING,
    Phase.ENDED: Status.PLAYING,
    Phase.FINISHED: Status.FINISHED,
}
