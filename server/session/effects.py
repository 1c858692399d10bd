"""What a session says to its client, as data: the effects ``Session.handle`` returns, which
its front end carries out on the client's ``SessionChannel`` (``perform``), with the key
checks it asks for (``CheckKey``, ``server.session.keys``); and its ``Outbox``.

The match's own messages to a seat (its game-info, each turn, a move's refusal, the end) are
not among them: the match writes them straight to the seat's channel, the hot path of a game,
which builds nothing per turn on the session's side."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from server.commands import Identified, Register
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


@dataclass(frozen=True, slots=True)
class CheckKey:
    """Check the command's ``bot`` and ``key`` (or register), then hand the outcome to
    ``Session.checked`` (``server.session.keys.carry_out``)."""

    command: Register | Identified


Said = Send | Error | Refuse | Seated | Close
Effect = CheckKey | Said  # what a session asks its front end to do for it
NO_EFFECTS: tuple[Effect, ...] = ()  # what most commands (every move) return: nothing built
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


class Outbox:
    """What a session says: gathered while it handles a command (or a key check's outcome),
    for ``handle`` to return; said at once on its channel otherwise (an answer from the pool, a
    challenge, another node, or a front end's direct call)."""

    def __init__(self, channel: SessionChannel) -> None:
        self.channel = channel
        self.gathering = False
        self._effects: list[Effect] = []  # one list, kept: a move builds nothing

    def say(self, effect: Effect) -> None:
        if self.gathering:
            self._effects.append(effect)
        else:
            assert not isinstance(effect, CheckKey), "a key check is asked only by a command"
            perform(self.channel, effect)

    def taken(self) -> Sequence[Effect]:
        """What was gathered, for the front end, in order; emptied."""
        effects = self._effects
        if not effects:
            return NO_EFFECTS
        gathered = tuple(effects)
        effects.clear()
        return gathered

    def dropped(self) -> None:
        """The command failed: what it said so far is not carried out."""
        self._effects.clear()

    def before_seat(self) -> None:
        """The match is about to speak on the client's channel: what the session said before
        is carried out first, so that the client hears it in order (a key check is never
        gathered before a seat: nothing is carried out past one)."""
        effects = self._effects
        if self.gathering and effects:
            for effect in effects:
                assert not isinstance(effect, CheckKey), "nothing is carried out past a check"
                perform(self.channel, effect)
            effects.clear()
