"""How fast the Dwarven Tavern rules play: ``python bench/tavern_rules.py [turns] [seed]``.

Plays seeded games of pushy random bots (every dwarf of the team on move gets an order, mostly
toward the opponent's barrel so pushes, throws and points happen) through ``apply_turn`` and
prints turns per second and microseconds per turn. Choosing the orders is timed separately so
the figure is the rules' own cost.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere

from server.games.tavern.rules import (
    Coords,
    Direction,
    DwarfHit,
    Order,
    Settings,
    State,
    apply_turn,
    initial_state,
)

SETTINGS = Settings(
    width=21,
    height=21,
    points_to_win=3,
    turn_limit=500,
    barrel_starts=(Coords(8, 10), Coords(11, 10)),
    dwarf_starts=(
        tuple(Coords(x, 18) for x in (4, 7, 10, 13, 16)),
        tuple(Coords(x, 2) for x in (4, 7, 10, 13, 16)),
    ),
)
NAMES = (("Carawebo", "Pantuflo", "Chistaburras", "Pontato", "Jhonny Tablas"),) * 2


def pushy_orders(rng: random.Random, state: State) -> list[Order]:
    """Each own dwarf heads for the opponent's barrel three times in four, else moves at random."""
    team = state.to_move
    target = state.barrels[1 - team]
    orders = []
    for dwarf in state.dwarves:
        if dwarf.team != team:
            continue
        if rng.random() < 0.75:
            dx, dy = target.x - dwarf.coords.x, target.y - dwarf.coords.y
            if abs(dx) > abs(dy):
                direction = Direction.EAST if dx > 0 else Direction.WEST
            else:
                direction = Direction.SOUTH if dy > 0 else Direction.NORTH
        else:
            direction = rng.choice(list(Direction))
        orders.append(Order(dwarf.id, direction))
    return orders


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 2013)
    state = initial_state(SETTINGS, NAMES)
    games = points = hits = 0
    rules_time = 0.0
    for _ in range(turns):
        if state.outcome is not None:
            games += 1
            state = initial_state(SETTINGS, NAMES)
        orders = pushy_orders(rng, state)
        started = time.perf_counter()
        new_state, events = apply_turn(state, state.to_move, orders, rng)
        rules_time += time.perf_counter() - started
        points += sum(new_state.scores) - sum(state.scores)
        hits += sum(isinstance(event, DwarfHit) for event in events)
        state = new_state
    print(f"{turns} turns ({games} games finished, {points} points, {hits} throws)")
    print(
        f"{turns / rules_time:,.0f} turns/s, {rules_time / turns * 1e6:.1f} us/turn in apply_turn"
    )


if __name__ == "__main__":
    main()
