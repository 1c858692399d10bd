"""What a game looks like to viewers, one of the three parts of its codec (wire, text, picture):
the board of one set of settings (``BoardView``: its size and what a viewer needs to draw it),
and the game's replay picture (``Picture``): what each game draws of a position, on a surface
the visor gives.

``visor.replay_image`` turns a recorded game into an animated GIF; each game says here how one
position looks (``Picture.draw``), how long a turn stays on screen and what its turns are
called. The surface is anything with Pillow's ``rectangle``, ``ellipse`` and ``line``, so the
games never import Pillow; colours are named, and the visor's palette gives their indices.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

CELL = 16  # pixels a square
MARGIN = 8
HEADER = 24  # the line of text above the board

Colour = tuple[int, int, int]
Box = tuple[int, int, int, int]  # left, top, right, bottom (inclusive), in pixels
Inset = tuple[int, int, int, int]  # from a square's left and top, and to its right and bottom

COLOURS: dict[str, Colour] = {
    "background": (27, 20, 16),
    "ink": (34, 21, 11),
    "text": (243, 232, 212),
    "muted": (191, 169, 138),
    "line": (255, 248, 230),
    "kill": (216, 54, 43),
}
"""The colours every picture may use (the visor's); each game adds its own."""


class Surface(Protocol):
    """What a picture draws with: the part of Pillow's ``ImageDraw`` it uses."""

    def rectangle(
        self, xy: Box, fill: int | None = None, outline: int | None = None, width: int = 1
    ) -> None: ...

    def ellipse(
        self, xy: Box, fill: int | None = None, outline: int | None = None, width: int = 1
    ) -> None: ...

    def line(self, xy: Box, fill: int | None = None, width: int = 0) -> None: ...


class Canvas:
    """A board's squares on a surface: where each square is, and each colour's index."""

    def __init__(self, surface: Surface, palette: Mapping[str, int]) -> None:
        self.surface = surface
        self.palette = palette

    def colour(self, name: str) -> int:
        return self.palette[name]

    def corner(self, x: int, y: int) -> tuple[int, int]:
        """The top-left pixel of square (x, y)."""
        return MARGIN + x * CELL, HEADER + y * CELL

    def centre(self, x: int, y: int) -> tuple[int, int]:
        left, top = self.corner(x, y)
        return left + CELL // 2, top + CELL // 2

    def box(self, x: int, y: int, inset: Inset = (0, 0, 1, 1)) -> Box:
        """Square (x, y), shrunk by ``inset``; by default the whole square."""
        left, top = self.corner(x, y)
        return left + inset[0], top + inset[1], left + CELL - inset[2], top + CELL - inset[3]

    def link(self, start: Sequence[int], end: Sequence[int], colour: str) -> None:
        """A line between two squares' centres, as a move is drawn."""
        self.surface.line(
            (*self.centre(start[0], start[1]), *self.centre(end[0], end[1])),
            self.colour(colour),
            width=2,
        )


class BoardView(ABC):
    """A board of one set of settings as viewers see it: the pages, the replay picture and the
    terminal draw it from these."""

    @abstractmethod
    def board_size(self) -> tuple[int, int]:
        """Width and height of the board."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What a viewer needs besides the position: board size, points to win, and so on."""


class Picture(ABC):
    """How a game's replay looks."""

    turn_ms: ClassVar[int]  # how long a turn stays on screen
    turn_word: ClassVar[str]  # what the header calls a turn
    colours: ClassVar[dict[str, Colour]]  # the game's own, besides ``COLOURS``

    @abstractmethod
    def draw(
        self,
        canvas: Canvas,
        board: Mapping[str, Any],
        state: Mapping[str, Any],
        events: Sequence[Mapping[str, Any]],
    ) -> None:
        """One position: ``board`` is the codec's ``view.describe()``, ``state`` and ``events`` are
        as spectators see them (``state_to_wire``, ``events_to_wire``)."""
