"""How a match talks to a seat: the message it sends, the channel it sends through, and what a
seat's bot process writes beside its moves. Every front end (a TCP bot, a page, a house player,
the Thud HTTP API, a tournament's process) implements ``SeatChannel``."""

from __future__ import annotations

from typing import Any, Final, Protocol

from server.debug import reported_cpu_ms, reported_stderr
from server.games.base import JsonObject


class SeatMessage:
    """A message for one seat. ``state`` is, for a turn, the position to move in: in-process
    players think on it directly instead of reading the message.

    Made at least once a turn: a plain class with ``Final`` attributes (immutable as far as the
    type checker goes) builds in a third of a frozen dataclass's time, which sets each field
    through ``object.__setattr__``.
    """

    __slots__ = ("body", "state")

    def __init__(self, body: JsonObject, state: Any = None) -> None:
        self.body: Final = body
        self.state: Final[Any] = state

    def __repr__(self) -> str:
        return f"SeatMessage({self.body!r})"

    @property
    def kind(self) -> str:
        return str(self.body["type"])


class SeatChannel(Protocol):
    """Where a seat's messages go: a TCP connection, a page, an HTTP client, a house player."""

    def send(self, message: SeatMessage) -> None:
        """Queue a message; never blocks the match."""

    def close(self) -> None:
        """Close once everything queued has been sent."""


class SeatOutput(Protocol):
    """What a seat's bot process writes beside its moves (its stderr), which the match asks
    for turn by turn: it says when the seat's turn is asked for, and takes what was written
    by the time it is played."""

    def turn_opened(self) -> None:
        """The seat was just sent its turn."""

    def turn_closed(self) -> str | None:
        """The seat's turn is played (answered or timed out): what was written for it."""

    @property
    def counts_cpu(self) -> bool:
        """Is a turn charged the CPU time its processes use (an isolated bot's, where its
        group counts it), rather than the time its reply took?"""

    def turn_cpu_ms(self) -> int | None:
        """The CPU time its processes used from its turn's opening to its closing (while the
        turn is open: until now), in ms (None where it is not counted)."""


class WorkerReport:
    """A hosted bot's output as its worker reports it beside each move (``server.hosted_worker``:
    the CPU the move took and what the bot wrote on stderr meanwhile): the ``SeatOutput`` of a
    seat a hosting key proved, whose moves are charged their CPU time. ``heard`` reads each
    move; nothing else may say what a move cost."""

    counts_cpu = True

    def __init__(self) -> None:
        self._cpu_ms: int | None = None
        self._stderr: str | None = None

    def heard(self, message: JsonObject) -> None:
        self._cpu_ms, self._stderr = reported_cpu_ms(message), reported_stderr(message)

    def turn_opened(self) -> None:
        self._cpu_ms = self._stderr = None

    def turn_closed(self) -> str | None:
        return self._stderr

    def turn_cpu_ms(self) -> int | None:
        return self._cpu_ms
