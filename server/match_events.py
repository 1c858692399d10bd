"""The updates a match hands its listeners (records, spectators, metrics, the cluster's
directory): immutable, so that none of them ever reads a live match."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from server.games.base import JsonObject, Outcome
from server.match_views import MatchView, SeatStats, TurnResult

# How a game the arena broke ends (a hosted bot's worker lost mid-game, issue 33): no result,
# never rated (``server.match.MatchEnd.VOIDED``, ``server.records.writes.finished``).
VOIDED_REASON = "Game voided"


@dataclass(frozen=True, slots=True)
class SeatsChanged:
    """Someone took or gave up a seat before the game started."""

    view: MatchView


@dataclass(frozen=True, slots=True)
class GameStarted:
    """Every seat is taken; ``view.state`` is the first position (or the resumed one)."""

    view: MatchView
    started_at: float  # wall-clock seconds
    # A game played on from a recorded game's turn: that game's turns before it (as its record
    # keeps them), which the new game's record begins with.
    turns_before: tuple[JsonObject, ...] = ()


class TurnPlayed:
    """A turn was played. Made every turn: a plain class with a ``Final`` attribute, as
    ``SeatMessage``."""

    __slots__ = ("result",)

    def __init__(self, result: TurnResult) -> None:
        self.result: Final = result


@dataclass(frozen=True, slots=True)
class SeatLeft:
    """A seat's player went away during the game (it forfeits)."""

    match_id: str
    seat: int
    nick: str


@dataclass(frozen=True, slots=True)
class GameFinished:
    view: MatchView
    outcome: Outcome
    stats: tuple[SeatStats | None, ...]
    finished_at: float  # wall-clock seconds


@dataclass(frozen=True, slots=True)
class Removed:
    """The arena dropped a match that nobody played (left, or nobody joined it in time)."""

    match_id: str


Update = SeatsChanged | GameStarted | TurnPlayed | SeatLeft | GameFinished | Removed
Listener = Callable[[Update], None]
