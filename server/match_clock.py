"""A match's clock: the turn it waits for, one timer due by that turn's deadline (a turn answered
in time moves no timer: it rings, finds the next turn's later deadline and is set again), and in
a game with a time bank each seat's time left. The match says what a timeout costs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from server.clock import Clock, Timer
from server.games.base import AnyCodec, JsonObject
from server.match_options import MatchLimits
from server.match_views import ReplyTiming, TurnClock, clock_to_wire
from server.round_trip import RoundTrip

# A deadline this close when the match's timer rings has come: a clock that rings a hair early
# (a coarse timer, a float's rounding) must not set the timer again and again for nothing.
CLOCK_SLACK_S = 1e-6
# A move charged its CPU time (a hosted bot's, issue 33) may take this many times its time on the
# wall clock, and this long beside, before it is a timeout whatever its CPU: waiting costs a bot
# nothing, but it cannot hold the game for ever (a worker as slow as a third of the reference
# machine still gives a bot its whole time: ``server.calibration``).
CPU_TURN_WALL_FACTOR = 3.0
CPU_TURN_WALL_EXTRA_S = 0.5


@dataclass(slots=True)
class OpenTurn:
    """The turn being waited for: whose it is, since when, and until when (clock times)."""

    seat: int
    started: float
    deadline: float
    # A turn charged its CPU time or its think time, not its reply's: the time it may take.
    allowed_s: float | None = None
    by_cpu: bool = False  # charged its CPU time (a hosted bot's)


class TurnTimer:
    """The turn awaited and its timer; ``timed_out`` hears of a seat whose time is up."""

    def __init__(
        self,
        clock: Clock,
        limits: MatchLimits,
        seat_count: int,
        turn_timeout_s: Callable[[int], float],
        timed_out: Callable[[int], None],
    ) -> None:
        self.clock = clock
        self.bank = bank = limits.bank
        self.charge_think = limits.charge_think
        self.network_credit_max_s = limits.network_credit_max_s
        # With a time bank: each seat's time left (seconds). A resumed game starts them afresh.
        self.banks = [0.0 if bank is None else bank.initial_ms / 1000] * seat_count
        self.turn: OpenTurn | None = None  # while the game is on, the seat awaited
        self._turn_timeout_s = turn_timeout_s  # a seat's time for a turn, without a time bank
        self._timed_out = timed_out
        self._alarm: Timer | None = None  # rings by the awaited seat's deadline
        self._alarm_due = 0.0  # when it rings (clock time)

    def clock_of(self, seat: int, timeout_s: float | None = None) -> TurnClock:
        """The clock of a turn of ``seat`` that may take ``timeout_s`` (by default, its whole
        time for a turn: with a time bank, the seat's time left), with every seat's time left
        in a game with a time bank."""
        bank = self.bank
        if bank is None:
            if timeout_s is None:
                timeout_s = self._turn_timeout_s(seat)
            return TurnClock(seat, timeout_s)
        if timeout_s is None:
            timeout_s = self.banks[seat]
        remaining = [*self.banks]
        remaining[seat] = timeout_s
        return TurnClock(seat, timeout_s, tuple(remaining), bank)

    def bank_clock(self, codec: AnyCodec, seat: int, timeout_s: float) -> JsonObject | None:
        """With a time bank, the clocks a turn message of ``seat`` shows (``clock_of``)."""
        return clock_to_wire(codec, self.clock_of(seat, timeout_s))

    def reply_timing(self, turn: OpenTurn, now: float, round_trip: RoundTrip | None) -> ReplyTiming:
        """How the reply to ``turn`` handled at ``now`` splits: the round trip of the seat's
        connection (as far as it is credited: ``network_credit_max_s``), the arena's own
        lateness meanwhile, and what is left, the bot's thinking."""
        started = turn.started
        reply_s = now - started
        late_s = self.clock.late_s(started, now)
        think_s = reply_s - late_s
        round_trip_s = None
        if round_trip is not None and (round_trip_s := round_trip.estimate_s(now)) is not None:
            credit_max_s = self.network_credit_max_s  # every reply: no min() call
            think_s -= round_trip_s if round_trip_s < credit_max_s else credit_max_s
        return ReplyTiming(reply_s, round_trip_s, late_s, think_s if think_s > 0.0 else 0.0)

    def charged_s(self, timing: ReplyTiming, cpu_ms: int | None) -> float:
        """What a reply costs its seat's clock: its CPU time where it is counted (a hosted
        bot's), else its think time in a game charging it, else its whole time."""
        if cpu_ms is not None:
            return cpu_ms / 1000
        return timing.think_s if self.charge_think else timing.reply_s

    def spend(self, seat: int, elapsed_s: float) -> bool:
        """With a time bank, take a reply's time (its CPU or think time, for a turn charged
        so) from the seat's bank and add the increment; ``False`` if its time ran out first
        (its flag fell: its bank is empty). Without one, a reply handled before the timer rang
        is in time, if its turn is charged its CPU or think time, within the time allowed."""
        bank = self.bank
        if bank is None:
            allowed = None if self.turn is None else self.turn.allowed_s
            return allowed is None or elapsed_s <= allowed + CLOCK_SLACK_S
        left = self.banks[seat] - elapsed_s
        if left <= CLOCK_SLACK_S:
            self.banks[seat] = 0.0
            return False
        self.banks[seat] = left + bank.increment_ms / 1000
        return True

    def open(self, seat: int, timeout_s: float, started: float, by_cpu: bool = False) -> None:
        """Wait for ``seat``'s turn from ``started`` (the clock's time), for ``timeout_s``; a turn
        charged its CPU time (``by_cpu``) is waited for longer on the wall clock, one charged
        its think time longer by the network's credit."""
        if by_cpu:
            deadline = started + timeout_s * CPU_TURN_WALL_FACTOR + CPU_TURN_WALL_EXTRA_S
            self.turn = OpenTurn(seat, started, deadline, timeout_s, by_cpu=True)
        elif self.charge_think:
            deadline = started + timeout_s + self.network_credit_max_s
            self.turn = OpenTurn(seat, started, deadline, timeout_s)
        else:
            deadline = started + timeout_s
            self.turn = OpenTurn(seat, started, deadline)
        if self._alarm is None or self._alarm_due > deadline:
            self._set_alarm(deadline, started)

    def close(self) -> OpenTurn | None:
        """No turn is waited for any more (the timer stays set: the next turn is due later)."""
        turn, self.turn = self.turn, None
        return turn

    def stop(self) -> None:
        """The game is over: no turn, no timer."""
        self.close()
        if self._alarm is not None:
            self._alarm.cancel()
            self._alarm = None

    def _set_alarm(self, due: float, now: float) -> None:
        if self._alarm is not None:
            self._alarm.cancel()
        self._alarm = self.clock.call_later(due - now, self._alarm_rang)
        self._alarm_due = due

    def _alarm_rang(self) -> None:
        """The awaited seat's time is up, or the turn the timer was set for was answered: then
        it is set again for the turn awaited now."""
        self._alarm = None
        turn = self.turn
        if turn is None:
            return
        now = self.clock.now()
        if turn.deadline - now > CLOCK_SLACK_S:
            self._set_alarm(turn.deadline, now)
        else:
            self._timed_out(turn.seat)
