"""Thud in words: the board in letters, its moves as ``d 4,13 -> 5,12 hurl x 6,11``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from server.games.text import GameText
from server.games.thud.board import SIZE, SQUARES, THUDSTONE, Square
from server.games.thud.ends import ThudEnd
from server.games.thud.pieces import DWARF, Declared, GameEnded, Move, PieceMoved, State


class ThudText(GameText[State]):
    def render_text(self, state: State) -> str:
        """d for a dwarf, T for a troll, * for the Thudstone, . for an empty square."""
        rows = [[" "] * SIZE for _ in range(SIZE)]
        for x, y in SQUARES:
            rows[y][x] = "."
        rows[THUDSTONE[1]][THUDSTONE[0]] = "*"
        for x, y in state.dwarfs:
            rows[y][x] = "d"
        for x, y in state.trolls:
            rows[y][x] = "T"
        return "\n".join("".join(row).rstrip() for row in rows)

    def legend_text(self, state: State) -> list[str]:
        return ["d a dwarf, T a troll, * the Thudstone, . an empty square"]

    def events_text(self, events: Sequence[Any]) -> list[str]:
        lines = []
        for event in events:
            if isinstance(event, PieceMoved):
                lines.append(move_text(event.side, event.move))
            elif isinstance(event, Declared):
                verb = "declares the game over" if event.value else "withdraws its declaration"
                lines.append(f"the {event.side} side {verb}")
            elif isinstance(event, GameEnded):
                lines.append(f"game over: {event.reason}")
            # PiecesKilled repeats the move's kills, already in its line.
        return lines

    def end_text(self, reason: str, last: str) -> str | None:
        if reason == ThudEnd.NO_MOVE:
            return f"{last} made no move, so the game was scored as it stood"
        return None


def move_text(side: str, move: Move) -> str:
    """A move as ``d 4,13 -> 5,12 hurl x 6,11``: the piece, its squares, its kind (walks go
    unnamed) and each square it clears."""

    def square(value: Square) -> str:
        return f"{value[0]},{value[1]}"

    text = f"{'d' if side == DWARF else 'T'} {square(move.start)} -> {square(move.end)}"
    if move.kind != "walk":
        text += f" {move.kind}"
    return text + "".join(f" x {square(killed)}" for killed in move.killed)
