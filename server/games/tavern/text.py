"""Dwarven Tavern in words: the board in letters (a, b... and A, B... for the teams' dwarves,
1 and 2 for their barrels, ~ for the home rows), each turn's steps, pushes, throws and points."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from server.games.tavern.pieces import (
    TEAM_NAMES,
    BarrelMoved,
    BoardReset,
    Coords,
    DwarfHit,
    DwarfMoved,
    Event,
    PointScored,
    Settings,
    State,
)
from server.games.text import GameText


class TavernText(GameText[State]):
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def render_text(self, state: State) -> str:
        """Team1's dwarves a, b, c..., team2's A, B, C..., barrels 1 and 2, home rows ~."""
        width, height = self.settings.width, self.settings.height
        rows = [["~" if y in (0, height - 1) else "." for _ in range(width)] for y in range(height)]
        counts = [0, 0]
        for dwarf in state.dwarves:
            letter = chr((ord("a") if dwarf.team == 0 else ord("A")) + counts[dwarf.team] % 26)
            counts[dwarf.team] += 1
            rows[dwarf.coords.y][dwarf.coords.x] = letter
        for team, barrel in enumerate(state.barrels):
            rows[barrel.y][barrel.x] = str(team + 1)
        return "\n".join("".join(row) for row in rows)

    def legend_text(self, state: State) -> list[str]:
        lines = []
        for team, first in enumerate("aA"):
            dwarves = [d for d in state.dwarves if d.team == team]
            pieces = ", ".join(
                f"{chr(ord(first) + i % 26)} {d.name} ({d.id})" for i, d in enumerate(dwarves)
            )
            lines.append(f"{TEAM_NAMES[team]}: {pieces}; its barrel {team + 1}")
        lines.append("~ the home rows: team1 scores in the bottom one, team2 in the top one")
        return lines

    def events_text(self, events: Sequence[Any]) -> list[str]:
        return [_event_text(event) for event in events]


def _square(coords: Coords) -> str:
    return f"{coords.x},{coords.y}"


def _path(start: Coords, end: Coords) -> str:
    return f"{_square(start)} -> {_square(end)}" if start != end else f"stays on {_square(start)}"


def _event_text(event: Event) -> str:
    match event:
        case DwarfMoved(dwarf_id=dwarf_id, name=name, direction=direction):
            return f"{name} ({dwarf_id}) {direction.name} {_path(event.start, event.end)}"
        case BarrelMoved(team=team, direction=direction):
            return f"  barrel {team + 1} pushed {direction.name} {_path(event.start, event.end)}"
        case DwarfHit(dwarf_id=dwarf_id, name=name, direction=direction):
            return f"  {name} ({dwarf_id}) thrown {direction.name} {_path(event.start, event.end)}"
        case PointScored(team=team, scores=scores):
            return f"point for {TEAM_NAMES[team]}: {scores[0]}-{scores[1]}"
        case BoardReset():
            return "every piece back on its start"
    raise AssertionError(f"unknown event {event!r}")
