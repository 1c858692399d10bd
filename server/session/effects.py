"""What a session says to its client, as data: the effects ``Session.handle`` returns, which
its front end carries out on the client's ``SessionChannel`` (``perform``).

The match's own messages to a seat (its game-info, each turn, a move's refusal, the end) are
not among them: the match writes them straight to the seat's channel, the hot path of a game,
which builds nothing per turn on the session's side."""

from __future__ import annotations

from dataclasses import dataclass

from server.seat_channel import SeatMessage
from server.session.channel import SessionChannel


@dataclass(frozen=True, slots=True)
class Send:
    """A message for the client (a simulation made, a registration, a challenge...)."""

    message: SeatMessage


@dataclass(frozen=True, slots=True)
class Error:
    """A command was refused: the client is told why, nothing changed, and it may go on."""

    message: str
    reason: str | None


@dataclass(frozen=True, slots=True)
class Refuse:
    """A limit was reached: the client is told which, then closed."""

    message: str
    reason: str


@dataclass(frozen=True, slots=True)
class Seated:
    """The client has a seat now (at once, or once another node gave it one)."""


@dataclass(frozen=True, slots=True)
class Close:
    """The seat's channel is closed: its seat was taken by a rejoin, or lost with its node."""


Said = Send | Error | Refuse | Seated | Close
SEATED = Seated()
CLOSE = Close()


def perform(channel: SessionChannel, said: Said) -> None:
    """Carry out what the session said, on the client's channel."""
    match said:
        case Send():
            channel.send(said.message)
        case Error():
            channel.error(said.message, said.reason)
        case Refuse():
            channel.refuse(said.message, said.reason)
        case Seated():
            channel.seated()
        case Close():
            channel.close()
