"""House players for Dwarven Tavern: the pusher (the strategy of ``bots.tavern_dummy``) and the
wanderer, on a ``View`` of the position from one team's side.

The pusher plays to win: every team scores by pushing toward its own home row (team1 pushes
south, team2 north), so attackers get behind the rival barrel and push it home, while defenders
get behind their own barrel and push it the same way, away from the rival's home row. Once the
own barrel is as far as it can go, defenders stand on the square the rival needs for pushing it
back. Paths go around barrels, so a barrel is only ever pushed on purpose.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from server.games.base import HousePlayer, JsonObject
from server.games.tavern.pieces import TEAM_NAMES, State

NAMES = ["Rhun Diamondfighter", "Balgairen Marble-Flame", "Tavio Bluefeldspar",
         "Caith Scarletjasper", "Riagan Rubygold"]  # fmt: skip
HOUSE_NAMES = ["Gimli", "Durin", "Thorin", "Balin", "Dwalin"]  # the house players' dwarves
STEPS = {"NORTH": (0, -1), "EAST": (1, 0), "SOUTH": (0, 1), "WEST": (-1, 0)}
DIRECTIONS = tuple(STEPS)
Cell = tuple[int, int]


@dataclass(frozen=True, slots=True)
class View:
    """The position from one team's side."""

    width: int
    height: int
    own: list[tuple[int, Cell]]  # (dwarf id, cell)
    own_barrel: Cell
    rival_barrel: Cell
    push: str  # the direction that scores for this team


def view_of_wire(state: JsonObject, team: str, width: int, height: int) -> View:
    """The view of a turn message's ``state`` (for players that get it over the network)."""
    rival = "team2" if team == "team1" else "team1"
    barrels = state["barrels"]

    def cell(coords: dict[str, int]) -> Cell:
        return coords["x"], coords["y"]

    return View(
        width=width,
        height=height,
        own=[(dwarf["id"], cell(dwarf["coords"])) for dwarf in state[team]],
        own_barrel=cell(barrels[team]["coords"]),
        rival_barrel=cell(barrels[rival]["coords"]),
        push="SOUTH" if team == "team1" else "NORTH",
    )


def first_step(view: View, start: Cell, goal: Cell) -> str | None:
    """The first move of a shortest path from ``start`` to ``goal``, or None if unreachable.

    Barrels are walls; dwarves are not, since walking into one pushes it aside.
    """
    blocked = {view.own_barrel, view.rival_barrel}
    first: dict[Cell, str] = {start: ""}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            return first[cell]
        x, y = cell
        for name, (dx, dy) in STEPS.items():
            nxt = (x + dx, y + dy)
            if nxt in first or nxt in blocked:
                continue
            if not (0 <= nxt[0] < view.width and 0 <= nxt[1] < view.height):
                continue
            first[nxt] = first[cell] or name
            queue.append(nxt)
    return None


def choose_actions(view: View) -> list[JsonObject]:
    """One order per dwarf: a pusher and flankers for each barrel."""
    dx, dy = STEPS[view.push]
    behind_rival = (view.rival_barrel[0] - dx, view.rival_barrel[1] - dy)
    behind_own = (view.own_barrel[0] - dx, view.own_barrel[1] - dy)
    own_is_safe = view.own_barrel[1] == (view.height - 2 if view.push == "SOUTH" else 1)
    rival_push_square = (view.own_barrel[0] + dx, view.own_barrel[1] + dy)
    defend_at = rival_push_square if own_is_safe else behind_own
    cells = dict(view.own)

    def distance_order(target: Cell, candidates: list[int]) -> list[int]:
        return sorted(candidates, key=lambda i: _distance(cells[i], target))

    attackers = [dwarf_id for index, (dwarf_id, _) in enumerate(view.own) if index % 2 == 0]
    defenders = [dwarf_id for index, (dwarf_id, _) in enumerate(view.own) if index % 2 == 1]
    targets: dict[int, tuple[Cell, bool]] = {}
    for group, target, pushes in (
        (defenders, defend_at, not own_is_safe),
        (attackers, behind_rival, True),
    ):
        for rank, dwarf_id in enumerate(distance_order(target, group)):
            if rank == 0:
                targets[dwarf_id] = (target, pushes)
            else:
                side = -1 if rank % 2 else 1
                targets[dwarf_id] = ((target[0] + side * (1 + rank // 2), target[1]), False)
    actions: list[JsonObject] = []
    for dwarf_id, cell in view.own:
        target, pushes = targets[dwarf_id]
        if cell == target:
            if pushes:
                actions.append({"botId": dwarf_id, "type": "MOVE", "direction": view.push})
            else:
                actions.append({"botId": dwarf_id, "type": "PASS"})
            continue
        step = first_step(view, cell, target)
        if step:
            actions.append({"botId": dwarf_id, "type": "MOVE", "direction": step})
        else:
            actions.append({"botId": dwarf_id, "type": "PASS"})
    # Pushers first: they must act before a teammate walks into their square.
    actions.sort(key=lambda action: action.get("direction") != view.push)
    return actions


def _distance(a: Cell, b: Cell) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def view_of_state(state: State, team: int) -> View:
    """The view of the rules' position, for players in the arena's own process."""
    own_barrel, rival_barrel = state.barrels[team], state.barrels[1 - team]
    return View(
        width=state.settings.width,
        height=state.settings.height,
        own=[
            (dwarf.id, (dwarf.coords.x, dwarf.coords.y))
            for dwarf in state.dwarves
            if dwarf.team == team
        ],
        own_barrel=(own_barrel.x, own_barrel.y),
        rival_barrel=(rival_barrel.x, rival_barrel.y),
        push="SOUTH" if team == 0 else "NORTH",
    )


def pusher(view: View, rng: random.Random) -> list[JsonObject]:
    """Push the rival barrel home, guard our own."""
    return choose_actions(view)


def wanderer(view: View, rng: random.Random) -> list[JsonObject]:
    """Every dwarf steps in a random direction: a baseline to beat."""
    return [
        {"botId": dwarf_id, "type": "MOVE", "direction": rng.choice(DIRECTIONS)}
        for dwarf_id, _ in view.own
    ]


Policy = Callable[[View, random.Random], list[JsonObject]]


@dataclass(frozen=True, slots=True)
class TavernHousePlayer(HousePlayer):
    policy: Policy

    def reply(self, state: State, seat: int, rng: random.Random) -> JsonObject:
        return {"type": "player-turn", "actions": self.policy(view_of_state(state, seat), rng)}

    def reply_to_wire(
        self, message: JsonObject, info: JsonObject, rng: random.Random
    ) -> JsonObject:
        view = view_of_wire(message["state"], info["team"], info["width"], info["height"])
        return {"type": "player-turn", "actions": self.policy(view, rng)}


PLAYERS: dict[str, HousePlayer] = {
    player.name: player
    for player in (
        TavernHousePlayer(
            "pusher", "pushes the rival barrel home, guards its own", TEAM_NAMES, pusher
        ),
        TavernHousePlayer("wanderer", "every dwarf steps at random", TEAM_NAMES, wanderer),
    )
}
