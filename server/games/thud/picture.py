"""Thud's replay picture: the octagon's squares, the Thudstone, dwarfs, trolls and kills."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from server.games.picture import Canvas, Colour, Picture


class ThudPicture(Picture):
    turn_ms = 350
    turn_word = "ply"
    colours: ClassVar[dict[str, Colour]] = {
        "light": (230, 213, 173),
        "dark": (205, 181, 135),
        "move": (232, 182, 60),
        "dwarf": (74, 134, 224),
        "troll": (90, 168, 69),
        "stone": (154, 154, 158),
    }

    def draw(
        self,
        canvas: Canvas,
        board: Mapping[str, Any],
        state: Mapping[str, Any],
        events: Sequence[Mapping[str, Any]],
    ) -> None:
        draw = canvas.surface
        shades = [canvas.colour("light"), canvas.colour("dark")]  # a checkerboard
        for x, y in board["squares"]:
            draw.rectangle(canvas.box(x, y), fill=shades[(x + y) % 2])
        stone_x, stone_y = board["thudstone"]
        draw.ellipse(canvas.box(stone_x, stone_y, (2, 2, 3, 3)), fill=canvas.colour("stone"))
        for event in events:  # the move that led here, under the pieces
            if event["type"] == "move":
                canvas.link(event["from"], event["to"], "move")
        ink = canvas.colour("ink")
        for x, y in state["dwarfs"]:
            draw.ellipse(canvas.box(x, y, (3, 3, 4, 4)), fill=canvas.colour("dwarf"), outline=ink)
        for x, y in state["trolls"]:
            draw.rectangle(canvas.box(x, y, (1, 1, 2, 2)), fill=canvas.colour("troll"), outline=ink)
        kill = canvas.colour("kill")
        for event in events:
            if event["type"] == "killed":
                for x, y in event["squares"]:
                    cx, cy = canvas.centre(x, y)
                    draw.line((cx - 4, cy - 4, cx + 4, cy + 4), kill, width=2)
                    draw.line((cx - 4, cy + 4, cx + 4, cy - 4), kill, width=2)
