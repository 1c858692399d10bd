"""One simulation: its seats, its seeded random generator, and the match loop.

Nothing here knows a particular game: the ``Game`` object turns messages into actions and
states into messages, and its pure rules decide what happens. The loop owns the clock: a turn
timeout after which the seat on move plays the game's timeout action (or forfeits if it has
none), a limit of consecutive timeouts, and forfeits for seats that leave.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import random
import secrets
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from server.games.base import ActionRejected, Game, JoinRejected, JsonObject, Outcome, Player
from server.protocol import error_message

log = logging.getLogger(__name__)

PLAYER_DISCONNECTED = "Player disconnected"
TOO_MANY_TIMEOUTS = "Too many timeouts"
TURN_TIMEOUT = "Turn timeout"


class SeatChannel(Protocol):
    """Where a seat's messages go: a TCP connection, a browser, or an in-process house bot."""

    def send(self, message: JsonObject) -> None:
        """Queue a message; never blocks the match."""

    def close(self) -> None:
        """Close once everything queued has been sent."""


class Status(StrEnum):
    WAITING = "waiting"
    PLAYING = "playing"
    FINISHED = "finished"


@dataclass(frozen=True, slots=True)
class MatchLimits:
    """The clock's rules for one simulation."""

    turn_timeout_s: float
    max_consecutive_timeouts: int
    first_turn_timeout_s: float = 0.0  # a seat's first reply may take this long (start-up)
    reconnect_grace_s: float = 0.0  # how long a seat that lost its connection can rejoin


class _Detached:
    """The channel of a seat whose player lost its connection and may rejoin."""

    def send(self, message: JsonObject) -> None:
        """Dropped: a rejoining player gets the current turn again."""

    def close(self) -> None:
        """Nothing to close."""


@dataclass(slots=True)
class Seat:
    channel: SeatChannel
    player: Player
    turn_timeout_s: float
    kind: str = "bot"  # "bot" (TCP), "house" or "person": for lobbies and records
    bot: str | None = None  # which entrant plays this seat, when a tournament knows it
    # Proves a rejoining connection is this seat's player; sent only in its game-info.
    token: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    consecutive_timeouts: int = 0
    errors: int = 0
    last_error: str | None = None  # the last error it was sent, with its reason
    gone: bool = False  # left before the start of a game whose seats are held
    # Its replies' times, as the records keep them: a count, a total and the slowest.
    replies: int = 0
    reply_total_s: float = 0.0
    reply_worst_s: float = 0.0

    def replied(self, seconds: float) -> None:
        self.replies += 1
        self.reply_total_s += seconds
        self.reply_worst_s = max(self.reply_worst_s, seconds)


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn as played: enough, with the seed, to replay the game."""

    number: int
    seat: int
    action: JsonObject
    timed_out: bool


@dataclass(frozen=True, slots=True)
class SeatsChanged:
    """Someone took or gave up a seat before the game started."""


@dataclass(frozen=True, slots=True)
class GameStarted:
    """Every seat is taken; ``simulation.state`` holds the first position."""


@dataclass(frozen=True, slots=True)
class TurnPlayed:
    """A turn was played; ``simulation.state`` is the position after it."""

    record: TurnRecord
    events: list[Any]


@dataclass(frozen=True, slots=True)
class SeatLeft:
    """A seat's player went away during the game (it forfeits)."""

    seat: int


@dataclass(frozen=True, slots=True)
class GameFinished:
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class Removed:
    """The arena dropped a simulation that nobody played (its last waiting player left)."""


Update = SeatsChanged | GameStarted | TurnPlayed | SeatLeft | GameFinished | Removed
Listener = Callable[["Simulation", Update], None]


class _Wake:
    """Wakes the match loop without an action (a seat left, or its time ran out)."""


_TIMED_OUT = _Wake()


class Simulation:
    """A game between seats, from the first join to the result."""

    def __init__(
        self,
        simulation_id: str,
        game: Game[Any, Any],
        seed: int,
        limits: MatchLimits,
        *,
        created_by_join: bool = False,
        listener: Listener | None = None,
    ) -> None:
        self.id = simulation_id
        self.game = game
        self.seed = seed
        self.limits = limits
        self.created_by_join = created_by_join
        self.rng = random.Random(seed)
        self.seats: list[Seat | None] = [None] * len(game.seat_names)
        self.status = Status.WAITING
        self.state: Any = None
        self.outcome: Outcome | None = None
        self.turn_count = 0  # the turns themselves go to the listeners (records), not here
        self._awaited_seat: int | None = None
        self._reply: asyncio.Future[Any] | None = None
        self._forfeit: Outcome | None = None
        self._turn_started = 0.0
        self._listener = listener
        self._tasks: asyncio.TaskGroup | None = None
        self._helpers: set[asyncio.Task[None]] = set()
        self.tournament_id: str | None = None
        self.pairing: str | None = None  # the tournament's name for this game
        self.seat_bots: list[str | None] = [None] * len(game.seat_names)  # entrants, by seat
        # A tournament's seats belong to their bots: one that leaves before the start forfeits
        # instead of freeing its seat for someone else.
        self.hold_seats = False
        self.done = asyncio.Event()  # set once the game is over and recorded as such
        self._seated = asyncio.Event()
        self._resume_state: Any = None
        self.started_at: float | None = None  # wall-clock seconds
        self.finished_at: float | None = None

    def resume(self, state: Any, turn_count: int, rng: random.Random) -> None:
        """Play on from a recorded position instead of the start, once the seats are taken."""
        self._resume_state = state
        self.turn_count = turn_count
        self.rng = rng

    # --- seats -------------------------------------------------------------------------------
    def free_seats(self) -> list[int]:
        return [index for index, seat in enumerate(self.seats) if seat is None]

    def is_full(self) -> bool:
        return not self.free_seats()

    def join(
        self,
        channel: SeatChannel,
        request: JsonObject,
        turn_timeout_s: float | None = None,
        kind: str = "bot",
    ) -> int:
        """Seat a player; raises ``JoinRejected``. The caller starts the match when full."""
        if self.status is not Status.WAITING or self.is_full():
            raise JoinRejected("Simulation full", f"simulation {self.id} has no free seat")
        seat = self.game.choose_seat(self.free_seats(), request)
        player = self.game.player_from_join(request)
        timeout = self.limits.turn_timeout_s if turn_timeout_s is None else turn_timeout_s
        occupant = Seat(channel, player, timeout, kind, self.seat_bots[seat])
        self.seats[seat] = occupant
        self._seated.set()
        channel.send(self._game_info(seat, occupant))
        self._notify(SeatsChanged())
        return seat

    def _game_info(self, seat: int, occupant: Seat) -> JsonObject:
        info = self.game.game_info_message(self.id, seat, self.seed)
        info["token"] = occupant.token
        return info

    def leave(self, seat: int, channel: SeatChannel) -> None:
        """The seat's channel is gone: free it before the game; during it, forfeit once the
        grace period for rejoining has passed. A channel the seat no longer uses is ignored."""
        occupant = self.seats[seat]
        if occupant is None or occupant.channel is not channel:
            return
        if self.status is Status.WAITING:
            if self.hold_seats:
                occupant.gone = True
            else:
                self.seats[seat] = None
            self._notify(SeatsChanged())
        elif self.status is Status.PLAYING and self._forfeit is None and self.outcome is None:
            # Only a TCP bot holds a token it can rejoin with; a closed page cannot come back.
            if self.limits.reconnect_grace_s > 0 and occupant.kind == "bot":
                detached = _Detached()
                occupant.channel = detached
                self.spawn(self._forfeit_unless_back(seat, occupant, detached))
            else:
                self._forfeit_left(seat)

    async def _forfeit_unless_back(self, seat: int, occupant: Seat, detached: _Detached) -> None:
        """Forfeit if the seat is still on the channel it got when it left: a rejoin, even one
        followed by another loss (with its own grace period), replaced it."""
        await asyncio.sleep(self.limits.reconnect_grace_s)
        if occupant.channel is detached and self.status is Status.PLAYING and self._forfeit is None:
            self._forfeit_left(seat)

    def _forfeit_left(self, seat: int) -> None:
        self._forfeit = Outcome(self._opponent(seat), PLAYER_DISCONNECTED)
        for index, other in enumerate(self.seats):
            if other is not None and index != seat:
                other.channel.send(error_message(PLAYER_DISCONNECTED))
        self._notify(SeatLeft(seat))
        self._wake(_Wake())

    def rejoin(self, channel: SeatChannel, token: object) -> int:
        """Give a seat back to the player holding its token; returns the seat.

        The new channel replaces the old one (which is closed if still open), gets the seat's
        ``game-info`` again and, if the seat is on move, the current turn.
        """
        if self.status is Status.FINISHED or self._forfeit is not None:
            raise JoinRejected("Game over", f"simulation {self.id} has ended")
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
                channel.send(self._game_info(seat, occupant))
                if seat == self._awaited_seat:
                    channel.send(self.game.turn_message(self.state, seat))
                return seat
        raise JoinRejected("Invalid token", "no seat of this simulation has that token")

    async def wait_seated(self, seat: int) -> None:
        """Until someone takes ``seat``."""
        while self.seats[seat] is None:
            self._seated.clear()
            await self._seated.wait()

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run a helper task (an in-process player's thinking) owned by this match.

        Once the game is over there is nothing left to help with: the work is dropped.
        """
        if self._tasks is None or self.outcome is not None:
            work.close()
            return
        try:
            helper = self._tasks.create_task(work)
        except RuntimeError:  # the match's TaskGroup is already shutting down
            work.close()
            return
        self._helpers.add(helper)
        helper.add_done_callback(self._helpers.discard)

    def _notify(self, update: Update) -> None:
        if self._listener is not None:
            self._listener(self, update)

    def is_empty(self) -> bool:
        return all(seat is None for seat in self.seats)

    def _opponent(self, seat: int) -> int | None:
        others = [index for index in range(len(self.seats)) if index != seat]
        return others[0] if len(others) == 1 else None

    # --- turns -------------------------------------------------------------------------------
    def submit(self, seat: int, message: JsonObject, channel: SeatChannel) -> None:
        """A seat's turn message; errors go back to that seat and change nothing.

        Only the seat's current channel acts for it: after a rejoin, the old one cannot.
        """
        if self._seat(seat).channel is not channel:
            channel.send(error_message("Not your seat", "this seat was rejoined elsewhere"))
            return
        if self.status is Status.WAITING:
            channel.send(error_message("Game not started", "waiting for the other player"))
            return
        if self.status is Status.FINISHED or self._forfeit is not None:
            channel.send(error_message("Game over", "this game has ended"))
            return
        if seat != self._awaited_seat or self._reply is None or self._reply.done():
            self._reject(seat, ActionRejected("Not your turn", "wait for a turn message"))
            return
        try:
            action = self.game.parse_action(self.state, seat, message)
        except ActionRejected as rejected:
            self._reject(seat, rejected)
            return
        self._reply.set_result(action)

    def _reject(self, seat: int, rejected: ActionRejected) -> None:
        occupant = self._seat(seat)
        occupant.errors += 1
        occupant.last_error = f"{rejected.message}: {rejected.reason}"
        occupant.channel.send(error_message(rejected.message, rejected.reason))

    def _wake(self, value: object) -> None:
        if self._reply is not None and not self._reply.done():
            self._reply.set_result(value)

    def _seat(self, seat: int) -> Seat:
        occupant = self.seats[seat]
        if occupant is None:
            raise LookupError(f"seat {seat} of {self.id} is empty")
        return occupant

    async def run(self, on_finished: Callable[[Simulation], None]) -> None:
        """Play the game to its end; never raises, so one broken game cannot stop the others.

        The match's TaskGroup owns every helper task (``spawn``), so none outlives the game.
        """
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = tasks
                await self._play()
                for helper in self._helpers:
                    helper.cancel()  # a player still thinking about a game that is over
        except Exception:
            log.exception("simulation %s failed", self.id)
            if self.outcome is None:
                self.outcome = Outcome(None, "Server error")
        finally:
            self._tasks = None
            self.status = Status.FINISHED
            self.finished_at = time.time()
            for seat in self.seats:
                if seat is not None:
                    seat.channel.close()
            if self.outcome is not None:
                self._notify(GameFinished(self.outcome))
            self.done.set()
            on_finished(self)

    async def _play(self) -> None:
        game = self.game
        players = [self._seat(index).player for index in range(len(self.seats))]
        resumed = self._resume_state is not None
        self.state = self._resume_state if resumed else game.initial_state(players)
        self.status = Status.PLAYING
        self.started_at = time.time()
        self._notify(GameStarted())
        gone = [index for index, seat in enumerate(self.seats) if seat is not None and seat.gone]
        if gone:
            winner = self._opponent(gone[0]) if len(gone) == 1 else None
            self._forfeit = Outcome(winner, PLAYER_DISCONNECTED)
        loop = asyncio.get_running_loop()
        while self._forfeit is None and game.outcome(self.state) is None:
            seat_index = game.seat_to_move(self.state)
            seat = self._seat(seat_index)
            self._reply = loop.create_future()
            self._awaited_seat = seat_index
            self._turn_started = time.monotonic()
            seat.channel.send(game.turn_message(self.state, seat_index))
            timeout = seat.turn_timeout_s
            if not seat.replies and not seat.consecutive_timeouts:
                # Its very first turn: the bot may still be starting up.
                timeout = max(timeout, self.limits.first_turn_timeout_s)
            # The clock resolves the reply with a marker rather than cancelling the wait:
            # cheaper than a timeout scope, and nothing else is interrupted.
            clock = loop.call_later(timeout, self._wake, _TIMED_OUT)
            try:
                action = await self._reply
            finally:
                clock.cancel()
                self._awaited_seat = None
            timed_out = action is _TIMED_OUT
            if timed_out:
                action = self._on_timeout(seat_index, seat)
            if isinstance(action, _Wake) or action is None:
                continue  # someone left (the loop sees the forfeit) or the seat forfeited
            if not timed_out:
                seat.consecutive_timeouts = 0
                seat.replied(time.monotonic() - self._turn_started)
            self._play_action(seat_index, action, timed_out)
        # A move already accepted when its player left still counts: if it ended the game,
        # that result stands over the forfeit.
        self.outcome = game.outcome(self.state) or self._forfeit
        assert self.outcome is not None
        for index, seat_or_none in enumerate(self.seats):
            if seat_or_none is not None:
                seat_or_none.channel.send(game.end_message(self.state, self.outcome, index))

    def _on_timeout(self, seat_index: int, seat: Seat) -> Any:
        """Pass for the seat, or forfeit it when it has timed out too often or cannot pass."""
        seat.consecutive_timeouts += 1
        action = self.game.timeout_action(self.state, seat_index)
        if action is None:
            self._forfeit = Outcome(self._opponent(seat_index), TURN_TIMEOUT)
            return None
        if seat.consecutive_timeouts >= self.limits.max_consecutive_timeouts:
            self._forfeit = Outcome(self._opponent(seat_index), TOO_MANY_TIMEOUTS)
            return None
        seat.channel.send(
            error_message(TURN_TIMEOUT, f"no reply in {seat.turn_timeout_s:g} s: you passed")
        )
        return action

    def _play_action(self, seat_index: int, action: Any, timed_out: bool) -> None:
        before = self.state
        self.state, events = self.game.apply(before, seat_index, action, self.rng)
        self.turn_count += 1
        record = TurnRecord(
            self.turn_count, seat_index, self.game.action_to_wire(action), timed_out
        )
        for target, message in self.game.after_turn_messages(before, self.state, events):
            self._seat(target).channel.send(message)
        self._notify(TurnPlayed(record, events))
