"""Thud's board as viewers see it: one octagon of 15 by 15, the Thudstone, the game's length."""

from __future__ import annotations

from typing import Any

from server.games.picture import BoardView
from server.games.thud.board import SIZE, SQUARES, THUDSTONE


class ThudBoard(BoardView):
    def __init__(self, ply_limit: int) -> None:
        self.ply_limit = ply_limit

    def board_size(self) -> tuple[int, int]:
        return SIZE, SIZE

    def describe(self) -> dict[str, Any]:
        return {
            "width": SIZE,
            "height": SIZE,
            "squares": [list(square) for square in SQUARES],
            "thudstone": list(THUDSTONE),
            "maxPlies": self.ply_limit,
        }
