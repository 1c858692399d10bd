"""A game in words, one of the three parts of its codec (wire, text, picture).

Terminals (``tavern play``), game files and the commentary of a replay show a position as a few
lines of letters and a turn's events as sentences; this part says how, for one set of settings.
The wire (``server.games.base.Codec``) and the picture (``server.games.picture.BoardView``) are
the others.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

StateT = TypeVar("StateT")


class GameText(ABC, Generic[StateT]):
    """Positions and events of one game in words."""

    @abstractmethod
    def render_text(self, state: StateT) -> str:
        """The position as a few lines of text, for terminals."""

    @abstractmethod
    def legend_text(self, state: StateT) -> list[str]:
        """What the letters of ``render_text`` stand for, a line each."""

    @abstractmethod
    def events_text(self, events: Sequence[Any]) -> list[str]:
        """A turn's events in words, a line each, squares as ``x,y``."""

    def end_text(self, reason: str, last: str) -> str | None:
        """Why a game ended, in words, where its reason alone does not say it; ``last`` names
        the seat that played the last turn. ``None``: the reason says it all."""
        return None
