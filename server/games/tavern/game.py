"""Dwarven Tavern as the arena knows it: its settings section, house players, league, picture.

Its section of ``config.json`` holds the original server's keys (``width``, ``height``,
``botsPerPlayer``, ``pointsToWin``, ``positions``) and the arena's ``turnLimit``; the original's
own file has them at its top level, where they are still read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from server.games.base import Game, JsonObject, LeagueRules
from server.games.settings import TURN_LIMITS, Section, SettingsError
from server.games.tavern import house, rules
from server.games.tavern.codec import TavernCodec
from server.games.tavern.picture import TavernPicture
from server.games.tavern.pieces import TEAM_NAMES, Coords, Settings
from server.games.web import WebSide

BOARD_SIDES = (5, 200)
DEFAULT_TURN_LIMIT = 1000
DEFAULT_POSITIONS: dict[str, Any] = {
    "team1": {
        "barrel": {"x": 8, "y": 10},
        "bots": [{"x": x, "y": 18} for x in (4, 7, 10, 13, 16)],
    },
    "team2": {
        "barrel": {"x": 11, "y": 10},
        "bots": [{"x": x, "y": 2} for x in (4, 7, 10, 13, 16)],
    },
}
ORIGINAL_KEYS = frozenset({"width", "height", "botsPerPlayer", "pointsToWin", "positions"})


class TavernGame(Game):
    codec = TavernCodec
    top_level_keys = ORIGINAL_KEYS | {"turnLimit"}
    house_players = house.PLAYERS
    league = LeagueRules(table_per_seat=False, both_ways=True)
    picture = TavernPicture()
    web = WebSide(Path(__file__).resolve().parent / "web", title="Dwarven Tavern")

    def settings(self, section: Section) -> JsonObject:
        section.unknown(self.top_level_keys)
        width = section.integer("width", 21, *BOARD_SIDES)
        height = section.integer("height", 21, *BOARD_SIDES)
        bots_per_player = section.integer("botsPerPlayer", 5, 1, 100)
        barrels, dwarves = _positions(
            section, section.values.get("positions", DEFAULT_POSITIONS), width, height
        )
        if any(len(starts) < bots_per_player for starts in dwarves):
            raise SettingsError(
                f"key {section.key('positions')}: {bots_per_player} dwarves a team "
                f"(botsPerPlayer) need as many positions in each team's 'bots'"
            )
        try:
            settings = Settings(
                width=width,
                height=height,
                points_to_win=section.integer("pointsToWin", 3, 1, 1000),
                turn_limit=section.integer("turnLimit", DEFAULT_TURN_LIMIT, *TURN_LIMITS),
                barrel_starts=barrels,
                dwarf_starts=(dwarves[0][:bots_per_player], dwarves[1][:bots_per_player]),
            )
        except ValueError as error:
            raise SettingsError(f"key {section.key('positions')}: {error}") from None
        return TavernCodec(rules.TavernRules(settings)).settings()

    def house_join(self, seat_name: str | None) -> JsonObject:
        # Seats go by join order; a house player's dwarves have names of their own.
        return {"names": house.HOUSE_NAMES}


def _positions(
    section: Section, raw: object, width: int, height: int
) -> tuple[tuple[Coords, Coords], tuple[tuple[Coords, ...], tuple[Coords, ...]]]:
    """Each team's barrel and dwarves' starts as written, read square by square."""
    key = "positions"
    if not isinstance(raw, Mapping) or set(raw) != set(TEAM_NAMES):
        raise SettingsError(
            f"key {section.key(key)}: must be an object with exactly 'team1' and 'team2'"
        )
    barrels: list[Coords] = []
    dwarves: list[tuple[Coords, ...]] = []
    for team in TEAM_NAMES:
        entry = raw[team]
        if not isinstance(entry, Mapping) or set(entry) != {"barrel", "bots"}:
            raise SettingsError(
                f"key {section.key(f'{key}.{team}')}: must be an object with 'barrel' and 'bots'"
            )
        barrels.append(_square(section, f"{key}.{team}.barrel", entry["barrel"], width, height))
        starts = entry["bots"]
        if not isinstance(starts, list):
            raise SettingsError(
                f"key {section.key(f'{key}.{team}.bots')}: must be a list of positions"
            )
        dwarves.append(
            tuple(
                _square(section, f"{key}.{team}.bots[{i}]", start, width, height)
                for i, start in enumerate(starts)
            )
        )
    return (barrels[0], barrels[1]), (dwarves[0], dwarves[1])


def _square(section: Section, key: str, raw: object, width: int, height: int) -> Coords:
    if not isinstance(raw, Mapping) or set(raw) != {"x", "y"}:
        raise SettingsError(
            f'key {section.key(key)}: must be an object {{"x": X, "y": Y}}, got {raw!r}'
        )
    x = section.bounded(f"{key}.x", raw["x"], 0, width - 1)
    y = section.bounded(f"{key}.y", raw["y"], 0, height - 1)
    return Coords(x, y)


TAVERN = TavernGame()
