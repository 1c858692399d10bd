"""A match's seat as the match keeps it: who sits there, the channel its messages go through
(a detached one while its player may rejoin), the token that proves a rejoining player is its
own, and how it played; and the check that a reply answers the turn being played."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from server.errors import BotError
from server.games.base import ActionRejected, JsonObject, Player
from server.match_views import SeatStats
from server.protocol import error_message
from server.round_trip import RoundTrip
from server.seat_channel import SeatChannel, SeatMessage


def check_answered_turn(message: JsonObject, current: int) -> None:
    """Raise ``ActionRejected`` unless a ``player-turn`` answers the turn being played.

    A reply names the turn it answers in ``turn`` (the number its ``turn`` message carried): one
    for an earlier turn is a late answer, and playing it as the current turn would play orders
    meant for another position. A reply without ``turn`` answers the current turn, as with the
    original server, whose bots never send it.
    """
    if "turn" not in message:
        return
    answered = message["turn"]
    if not isinstance(answered, int) or isinstance(answered, bool):
        raise ActionRejected(
            BotError.INVALID_TURN, '"turn" must be the number of the turn this reply answers'
        )
    if answered < current:
        raise ActionRejected(
            BotError.STALE_TURN,
            f"this reply answers turn {answered}; turn {current} is being played",
        )
    if answered > current:
        raise ActionRejected(
            BotError.INVALID_TURN,
            f"turn {answered} has not been sent yet; turn {current} is being played",
        )


class Detached:
    """The channel of a seat whose player lost its connection and may rejoin."""

    def send(self, message: SeatMessage) -> None:
        """Dropped: a rejoining player gets the current turn again."""

    def close(self) -> None:
        """Nothing to close."""


@dataclass(slots=True)
class Seat:
    channel: SeatChannel
    player: Player
    turn_timeout_s: float
    kind: str
    bot: str | None
    # Played for a hosted bot by a worker (``tavern worker --hosted``): its connection lost is
    # the worker lost, and the game is voided, not forfeited.
    hosted: bool = False
    # Proves a rejoining connection is this seat's player; sent only in its game-info.
    token: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    consecutive_timeouts: int = 0
    errors: int = 0
    last_error: str | None = None  # the last error it was sent, with its reason
    gone: bool = False  # left before the start of a game whose seats are held
    # Asked (``"opponentNotices": true``) to hear when the opponent's connection drops and
    # comes back: the original's bots hang up on a message type they do not know.
    hears_opponent: bool = False
    round_trip: RoundTrip | None = None  # its connection's (``SeatRequest.round_trip``)
    replies: int = 0
    reply_total_s: float = 0.0
    reply_worst_s: float = 0.0

    def replied(self, seconds: float) -> None:
        self.replies += 1
        self.reply_total_s += seconds
        self.reply_worst_s = max(self.reply_worst_s, seconds)

    def refused(self, rejected: ActionRejected) -> None:
        """Its reply was refused: it is told why, and the refusal counts in its statistics."""
        self.errors += 1
        self.last_error = f"{rejected.message}: {rejected.reason}"
        self.channel.send(SeatMessage(error_message(rejected.message, rejected.reason)))

    def stats(self) -> SeatStats:
        return SeatStats(
            replies=self.replies,
            reply_mean_ms=1000 * self.reply_total_s / self.replies if self.replies else None,
            reply_worst_ms=1000 * self.reply_worst_s if self.replies else None,
            errors=self.errors,
            last_error=self.last_error,
        )
