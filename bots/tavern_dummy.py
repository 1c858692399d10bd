"""A Dwarven Tavern bot that plays to win, on the Python SDK: a whole bot in one file, needing
nothing but ``bots.sdk`` (copy both beside your own bot and change ``choose_actions``).

    python -m bots.tavern_dummy [--simulation ID] [--host H] [--port N] [--nick NAME]

Its strategy is the arena's house pusher's (``server.games.tavern.house``, which a test keeps
it playing): every team scores by pushing toward its own home row (team1 pushes south, team2
north), so attackers get behind the rival barrel and push it home, while defenders push their
own barrel away from the rival's home row and then stand on the square the rival needs for
pushing it back. Paths go around barrels, so a barrel is only ever pushed on purpose.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import deque
from dataclasses import dataclass
from typing import Any

from bots.sdk import ArenaClient, JsonObject

NAMES = ["Rhun Diamondfighter", "Balgairen Marble-Flame", "Tavio Bluefeldspar",
         "Caith Scarletjasper", "Riagan Rubygold"]  # fmt: skip
STEPS = {"NORTH": (0, -1), "EAST": (1, 0), "SOUTH": (0, 1), "WEST": (-1, 0)}
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
    """The position of a turn message's ``state``, from ``team``'s side."""
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


async def play(
    host: str, port: int, simulation_id: str | None, nick: str, seed: int | None = None
) -> JsonObject:
    """Join (or create by random join) and play one game; returns the final message."""
    async with await ArenaClient.connect(host, port) as client:
        fields: dict[str, Any] = {"names": NAMES}
        if seed is not None:
            fields["seed"] = seed
        info = await client.join(simulation_id, nick=nick, **fields)
        team, width, height = info["team"], info["width"], info["height"]

        def on_turn(message: JsonObject) -> JsonObject:
            view = view_of_wire(message["state"], team, width, height)
            actions = choose_actions(view)
            # What the bot meant, for its author: kept in the record, shown in replays.
            plan = ", ".join(f"{a['botId']} {a.get('direction', a['type'])}" for a in actions)
            return {"type": "player-turn", "actions": actions, "debug": f"orders: {plan}"}

        return await client.play(on_turn)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bots.tavern_dummy",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--simulation", help="simulation id (default: a random waiting one)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--nick", default="Tavern dummy")
    args = parser.parse_args(argv)
    final = asyncio.run(play(args.host, args.port, args.simulation, args.nick))
    result = final.get("result", {})
    print(f"{final['type']}: {result.get('reason')} {result.get('score')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
