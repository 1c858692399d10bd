"""Dwarven Tavern's board as viewers see it: its size, and its settings (the teams' starts,
the points to win), which the pages draw from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from server.games.picture import BoardView
from server.games.tavern.pieces import Settings


class TavernBoard(BoardView):
    def __init__(self, settings: Settings, wire: Callable[[], dict[str, Any]]) -> None:
        self.settings = settings
        self.wire = wire  # the settings as records keep them: what a viewer is given

    def board_size(self) -> tuple[int, int]:
        return self.settings.width, self.settings.height

    def describe(self) -> dict[str, Any]:
        return self.wire()
