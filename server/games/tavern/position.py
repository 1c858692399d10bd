"""A Dwarven Tavern position given from outside, checked: ``create-simulation``'s ``position``.

Pure: wire data in, a ``State`` out, or ``PositionRejected`` naming the first thing no game of
these settings can reach. The shape is the turn message's (``state``, ``turn``, ``score``), so a
bot author can paste one; ``team`` says who moves when the turn's parity does not (after a
point the team that conceded moves).
"""

from __future__ import annotations

from collections.abc import Mapping

from server.games.base import PositionRejected
from server.games.tavern.pieces import Coords, Dwarf, Settings, State

TEAMS = ("team1", "team2")
MAX_NAME_LENGTH = 64
IGNORED_KEYS = frozenset({"type", "timeoutMs", "clock"})  # a turn message's, pasted as it is
KEYS = frozenset({"state", "turn", "score", "team"})


def state_from_wire(settings: Settings, wire: object) -> State:
    """The position ``wire`` describes, between two turns; raises ``PositionRejected``."""
    if not isinstance(wire, Mapping):
        raise PositionRejected("a position is an object with state, turn and score")
    unknown = set(wire) - KEYS - IGNORED_KEYS
    if unknown:
        raise PositionRejected(f"unknown keys {sorted(unknown)}; a position has {sorted(KEYS)}")
    turn = _integer(wire.get("turn"), "turn")
    if not 1 <= turn <= settings.turn_limit:
        raise PositionRejected(
            f"turn must be from 1 to the turn limit {settings.turn_limit}, not {turn}"
        )
    scores = _scores(settings, wire.get("score"))
    team = wire.get("team")
    if team is None:
        to_move = (turn - 1) % 2
    elif team in TEAMS:
        to_move = TEAMS.index(team)
    else:
        raise PositionRejected('team (who moves) must be "team1" or "team2"')
    state = wire.get("state")
    if not isinstance(state, Mapping) or set(state) != {"barrels", *TEAMS}:
        raise PositionRejected("state must be an object with barrels, team1 and team2")
    barrels = _barrels(settings, state["barrels"])
    dwarves = _dwarves(settings, state)
    cells = [*barrels, *(dwarf.coords for dwarf in dwarves)]
    seen: set[Coords] = set()
    for cell in cells:
        if cell in seen:
            raise PositionRejected(f"two pieces on one square ({cell.x}, {cell.y})")
        seen.add(cell)
    return State(settings, dwarves, barrels, scores, turn - 1, to_move, None)


def _integer(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PositionRejected(f"{what} must be an integer")
    return value


def _scores(settings: Settings, wire: object) -> tuple[int, int]:
    if not isinstance(wire, Mapping) or set(wire) != set(TEAMS):
        raise PositionRejected('score must be {"team1": N, "team2": N}')
    scores = (_integer(wire["team1"], "score.team1"), _integer(wire["team2"], "score.team2"))
    for team, score in zip(TEAMS, scores, strict=True):
        if not 0 <= score < settings.points_to_win:
            raise PositionRejected(
                f"{team}'s score must be from 0 to {settings.points_to_win - 1} "
                f"(pointsToWin {settings.points_to_win} ends the game), not {score}"
            )
    return scores[0], scores[1]


def _coords(settings: Settings, wire: object, what: str) -> Coords:
    if not isinstance(wire, Mapping) or set(wire) != {"x", "y"}:
        raise PositionRejected(f'{what}: coords must be {{"x": X, "y": Y}}')
    x, y = _integer(wire["x"], f"{what}.x"), _integer(wire["y"], f"{what}.y")
    if not (0 <= x < settings.width and 0 <= y < settings.height):
        raise PositionRejected(
            f"{what} ({x}, {y}) is off the {settings.width}x{settings.height} board"
        )
    return Coords(x, y)


def _barrels(settings: Settings, wire: object) -> tuple[Coords, Coords]:
    if not isinstance(wire, Mapping) or set(wire) != set(TEAMS):
        raise PositionRejected("barrels must be an object with team1 and team2")
    barrels = []
    for team in TEAMS:
        barrel = wire[team]
        if not isinstance(barrel, Mapping) or barrel.get("team", team) != team:
            raise PositionRejected(f'barrels.{team} must be {{"team": "{team}", "coords": ...}}')
        coords = _coords(settings, barrel.get("coords"), f"{team}'s barrel")
        # A barrel is never pushed into a side column or a home row: on its own it cannot get
        # there, and on the other one it has scored and the board has been reset.
        if coords.x in (0, settings.width - 1) or coords.y in (0, settings.height - 1):
            raise PositionRejected(
                f"{team}'s barrel ({coords.x}, {coords.y}) is on an edge column or a home row, "
                "where no barrel stands between turns"
            )
        barrels.append(coords)
    return barrels[0], barrels[1]


def _dwarves(settings: Settings, state: Mapping[str, object]) -> tuple[Dwarf, ...]:
    """Each team's dwarves, numbered as the game numbers them (team1's 1..n, team2's after)."""
    dwarves: list[Dwarf] = []
    for team, name in enumerate(TEAMS):
        listed = state[name]
        count = len(settings.dwarf_starts[team])
        if not isinstance(listed, list) or len(listed) != count:
            got = len(listed) if isinstance(listed, list) else "no list of"
            raise PositionRejected(f"{name} has {got} dwarves; this tavern has {count} a team")
        first = len(dwarves) + 1
        by_id: dict[int, Dwarf] = {}
        for index, dwarf in enumerate(listed):
            what = f"{name}[{index}]"
            if not isinstance(dwarf, Mapping) or not {"id", "coords"} <= set(dwarf):
                raise PositionRejected(f"{what} must be {{id, name, coords}}")
            number = _integer(dwarf["id"], f"{what}.id")
            if not first <= number < first + count or number in by_id:
                raise PositionRejected(
                    f"{name}'s dwarves have the ids {first} to {first + count - 1}, each once"
                )
            label = dwarf.get("name", f"Dwarf {number - first + 1}")
            if not isinstance(label, str) or not 0 < len(label) <= MAX_NAME_LENGTH:
                raise PositionRejected(f"{what}.name must be 1 to {MAX_NAME_LENGTH} characters")
            coords = _coords(settings, dwarf["coords"], f"dwarf {number}")
            by_id[number] = Dwarf(number, team, label, coords)
        dwarves.extend(by_id[number] for number in sorted(by_id))
    return tuple(dwarves)
