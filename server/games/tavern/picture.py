"""Dwarven Tavern's replay picture: the floor and the home rows, the barrels, the dwarves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from server.games.picture import Canvas, Colour, Picture
from server.games.tavern.pieces import TEAM_NAMES


class TavernPicture(Picture):
    turn_ms = 120
    turn_word = "turn"
    colours: ClassVar[dict[str, Colour]] = {
        "floor": (138, 98, 64),
        "floor_dark": (128, 89, 58),
        "team1": (217, 87, 59),
        "team2": (232, 182, 60),
        "barrel": (154, 99, 48),
    }

    def draw(
        self,
        canvas: Canvas,
        board: Mapping[str, Any],
        state: Mapping[str, Any],
        events: Sequence[Mapping[str, Any]],
    ) -> None:
        draw = canvas.surface
        team1, team2 = TEAM_NAMES
        width, height = board["width"], board["height"]
        shades = [canvas.colour("floor_dark"), canvas.colour("floor")]  # a checkerboard
        for y in range(height):
            home = team2 if y == 0 else team1 if y == height - 1 else None  # in its team's colour
            for x in range(width):
                fill = shades[(x + y) % 2] if home is None else canvas.colour(home)
                draw.rectangle(canvas.box(x, y), fill=fill)
        for event in events:  # the turn that led here, under the pieces
            start, end = event.get("from"), event.get("to")
            if start is None or end is None or start == end:
                continue
            colour = "kill" if event["kind"] == "thrown" else "line"
            canvas.link((start["x"], start["y"]), (end["x"], end["y"]), colour)
        for team in TEAM_NAMES:
            barrel = state["barrels"][team]["coords"]
            x, y = barrel["x"], barrel["y"]
            draw.ellipse(canvas.box(x, y, (2, 1, 3, 2)), canvas.colour("barrel"))
            draw.rectangle(canvas.box(x, y, (3, 6, 4, 7)), fill=canvas.colour(team))
            draw.ellipse(canvas.box(x, y, (2, 1, 3, 2)), outline=canvas.colour("ink"), width=1)
            for dwarf in state[team]:
                draw.ellipse(
                    canvas.box(dwarf["coords"]["x"], dwarf["coords"]["y"], (2, 2, 3, 3)),
                    fill=canvas.colour(team),
                    outline=canvas.colour("ink"),
                )
