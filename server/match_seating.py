"""A match's seats as a table: taking one, freeing it, the grace period of a seat whose player
lost its connection, and giving a seat back to the player holding its token. The match decides
when each may happen (its phase) and what a seat's leaving costs the game; this table only keeps
who sits where and tells the seats about each other."""

from __future__ import annotations

import asyncio
import hmac
import math
from collections.abc import Callable
from typing import Any

from server.clock import Clock, Timer
from server.errors import BotError
from server.games.base import AnyCodec, JoinRejected, JsonObject, Outcome, SeatClock
from server.match_options import MatchLimits, SeatRequest
from server.match_seat import Detached, Seat
from server.match_views import SeatStats, SeatView
from server.protocol import error_message
from server.round_trip import RoundTrip
from server.seat_channel import SeatChannel, SeatMessage, SeatOutput, WorkerReport


class Seating:
    """Who sits in each seat of one match, from the first seat taken to the last message.

    ``seats`` is one list for the match's life (never replaced): the match reads it directly
    on every turn."""

    def __init__(
        self,
        match_id: str,
        codec: AnyCodec,
        seed: int,
        limits: MatchLimits,
        seat_bots: tuple[str | None, ...],
        clock: Clock,
    ) -> None:
        self.match_id = match_id
        self.codec = codec
        self.seed = seed
        self.limits = limits
        self.clock = clock
        seat_count = len(codec.seat_names)
        self.seat_bots = seat_bots or (None,) * seat_count
        self.seats: list[Seat | None] = [None] * seat_count
        self.outputs: dict[int, SeatOutput] = {}  # by seat: set by whoever runs its bot
        self._graces: set[Timer] = set()  # seats that lost their connection, until they rejoin
        self._seated = asyncio.Event()

    def free_seats(self) -> list[int]:
        return [index for index, seat in enumerate(self.seats) if seat is None]

    def is_full(self) -> bool:
        return None not in self.seats

    def is_empty(self) -> bool:
        return all(seat is None for seat in self.seats)

    def views(self) -> tuple[SeatView | None, ...]:
        """Who sits where, as the match's views show it."""
        names = self.codec.seat_names
        return tuple(
            None
            if seat is None
            else SeatView(names[index], seat.player.nick, seat.player.names, seat.kind, seat.bot)
            for index, seat in enumerate(self.seats)
        )

    def turn_timeout_s(self, seat: int) -> float:
        """How long the seat may take for a turn (a game without a time bank)."""
        occupant = self.seats[seat]
        if occupant is None:
            return self.limits.turn_timeout_s
        if not occupant.replies and not occupant.consecutive_timeouts:
            # Its very first turn: the bot may still be starting up.
            return max(occupant.turn_timeout_s, self.limits.first_turn_timeout_s)
        return occupant.turn_timeout_s

    def turn_cpu_ms(self, seat: int, message: JsonObject) -> int | None:
        """The CPU time a turn charged so took (issue 33): as the hosted bot's worker reports it
        beside the move (in the reference machine's ms), or as the seat's bot process's group
        counts it here."""
        output = self.outputs.get(seat)
        if isinstance(output, WorkerReport):
            output.heard(message)
        return None if output is None else output.turn_cpu_ms()

    def opponent(self, seat: int) -> int | None:
        """The other seat of a two-seat game (``None`` with more seats: no single winner)."""
        others = [index for index in range(len(self.seats)) if index != seat]
        return others[0] if len(others) == 1 else None

    def take(self, channel: SeatChannel, request: SeatRequest) -> int:
        """Seat a player in the seat it asked for if free, or the one its game chooses, and
        send it its ``game-info``; the match checked that a seat is free."""
        free = self.free_seats()
        seat = (
            request.seat if request.seat in free else self.codec.choose_seat(free, request.fields)
        )
        player = self.codec.player_from_join(request.fields)
        timeout = (
            self.limits.turn_timeout_s if request.turn_timeout_s is None else request.turn_timeout_s
        )
        bot = self.seat_bots[seat] or request.bot
        occupant = Seat(channel, player, timeout, request.kind, bot, request.hosted)
        occupant.round_trip = request.round_trip
        occupant.hears_opponent = request.fields.get("opponentNotices") is True
        self.seats[seat] = occupant
        if request.hosted:  # its worker reports what each move cost and what the bot wrote
            self.outputs[seat] = WorkerReport()
        self._seated.set()
        channel.send(self._game_info(seat, occupant))
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
            # Only a TCP bot can rejoin (``may_rejoin``).
            reconnect_grace_ms=round(limits.reconnect_grace_s * 1000)
            if occupant.kind == "bot"
            else 0,
            bank=limits.bank,
            network_credit_max_ms=round(limits.network_credit_max_s * 1000)
            if limits.charge_think
            else None,
        )
        info = self.codec.game_info_message(self.match_id, seat, self.seed, occupant.token, clock)
        return SeatMessage(info)

    async def wait_seated(self, seat: int) -> None:
        """Until someone takes ``seat``."""
        while self.seats[seat] is None:
            self._seated.clear()
            await self._seated.wait()

    def may_rejoin(self, seat: int) -> bool:
        """The seat's player can come back after losing its connection: only a TCP bot holds a
        token it can rejoin with (a closed page cannot come back), and only with a grace."""
        occupant = self.seats[seat]
        return occupant is not None and occupant.kind == "bot" and self.limits.reconnect_grace_s > 0

    def release(self, seat: int, hold: bool) -> None:
        """The seat's player left before the game: the seat is free again, or, ``hold``, kept
        as it is and marked gone (the game begins as lost by whoever left)."""
        occupant = self.seats[seat]
        if hold and occupant is not None:
            occupant.gone = True
        else:
            self.seats[seat] = None

    def detach(self, seat: int, grace_over: Callable[[int], None]) -> None:
        """The seat's player lost its connection during the game: its messages are dropped, its
        opponents told, and ``grace_over`` hears of it once the grace period has passed if it
        is still on the channel it got now (a rejoin, even one followed by another loss with
        its own grace period, replaced it)."""
        occupant = self.seats[seat]
        assert occupant is not None
        detached = Detached()
        occupant.channel = detached

        def over() -> None:
            self._graces.discard(timer)
            if occupant.channel is detached:
                grace_over(seat)

        timer = self.clock.call_later(self.limits.reconnect_grace_s, over)
        self._graces.add(timer)
        seconds = math.ceil(self.limits.reconnect_grace_s)
        self.tell_opponents(seat, self.codec.opponent_gone_message(seconds))

    def end_graces(self) -> None:
        """The game is over: no seat is waited for any more."""
        for timer in self._graces:
            timer.cancel()
        self._graces.clear()

    def tell_opponents(self, seat: int, message: JsonObject) -> None:
        """A notice about ``seat`` to the other seats that asked for such notices."""
        for index, other in enumerate(self.seats):
            if other is not None and index != seat and other.hears_opponent:
                other.channel.send(SeatMessage(message))

    def tell_others_left(self, seat: int) -> None:
        """Every other seat hears that ``seat``'s player left the game for good."""
        for index, other in enumerate(self.seats):
            if other is not None and index != seat:
                other.channel.send(SeatMessage(error_message(BotError.PLAYER_DISCONNECTED)))

    def give_back(
        self, channel: SeatChannel, token: object, round_trip: RoundTrip | None = None
    ) -> int:
        """The seat whose token ``token`` is, on ``channel`` (whose round trip is
        ``round_trip``) from now on (raises ``JoinRejected``): the old channel is closed if
        still open, the opponents told if the seat was detached, and the seat sent its
        ``game-info`` again."""
        for seat, occupant in enumerate(self.seats):
            if (
                occupant is not None
                and isinstance(token, str)
                and hmac.compare_digest(occupant.token.encode(), token.encode())
            ):
                old = occupant.channel
                occupant.channel, occupant.gone = channel, False
                occupant.round_trip = round_trip
                if old is not channel:
                    old.close()
                if isinstance(old, Detached):  # it was gone: its opponents were told
                    self.tell_opponents(seat, self.codec.opponent_back_message())
                channel.send(self._game_info(seat, occupant))
                return seat
        raise JoinRejected(BotError.INVALID_TOKEN, "no seat of this simulation has that token")

    def tell_end(self, state: Any, outcome: Outcome) -> None:
        """Each seat's last message: how the game ended, as it sees it."""
        for index, occupant in enumerate(self.seats):
            if occupant is not None:
                occupant.channel.send(SeatMessage(self.codec.end_message(state, outcome, index)))

    def stats(self) -> tuple[SeatStats | None, ...]:
        """How each seat played, for the records."""
        return tuple(None if seat is None else seat.stats() for seat in self.seats)

    def close_all(self) -> None:
        """The game is finished: every seat's channel is closed."""
        for seat in self.seats:
            if seat is not None:
                seat.channel.close()
