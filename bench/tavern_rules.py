"""How fast the Dwarven Tavern rules play: ``python bench/tavern_rules.py [turns] [seed]``.

Plays seeded games of real turns, every dwarf of the team on move ordered, as two kinds of bots
send them: pushers (mostly toward the opponent's barrel, so pushes, throws and points happen)
and wanderers (every dwarf a random direction, as ``bench/load.py``'s bots play). For each it
prints the microseconds per turn of ``apply_turn`` and of ``check_orders`` plus ``apply_turn``
(what the arena runs for each turn a bot sends), the best of five rounds over the same turns.
Choosing the orders is not timed, so the figures are the rules' own cost.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere

from server.games.tavern.pieces import Coords, Direction, DwarfHit, Order, Settings, State
from server.games.tavern.rules import apply_turn, check_orders, initial_state

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
DIRECTIONS = list(Direction)
ROUNDS = 5

Bot = Callable[[random.Random, State], list[Order]]


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
            direction = rng.choice(DIRECTIONS)
        orders.append(Order(dwarf.id, direction))
    return orders


def wandering_orders(rng: random.Random, state: State) -> list[Order]:
    """Each own dwarf moves in a random direction."""
    return [
        Order(dwarf.id, rng.choice(DIRECTIONS))
        for dwarf in state.dwarves
        if dwarf.team == state.to_move
    ]


def play(name: str, bot: Bot, turns: int, seed: int) -> None:
    """Play ``turns`` turns of ``bot`` against itself, then time the rules on those turns."""
    rng = random.Random(seed)
    state = initial_state(SETTINGS, NAMES)
    played: list[tuple[State, list[Order]]] = []
    games = points = hits = 0
    for _ in range(turns):
        if state.outcome is not None:
            games += 1
            state = initial_state(SETTINGS, NAMES)
        orders = bot(rng, state)
        played.append((state, orders))
        new_state, events = apply_turn(state, state.to_move, orders, rng)
        points += sum(new_state.scores) - sum(state.scores)
        hits += sum(isinstance(event, DwarfHit) for event in events)
        state = new_state
    print(f"{name}: {turns} turns ({games} games finished, {points} points, {hits} throws)")
    # Each turn is played again from its recorded position, so the throws' draws may differ
    # from the game's; the best of several rounds leaves out what other processes cost.
    apply_time = check_time = float("inf")
    for round_number in range(ROUNDS):
        rng = random.Random(seed + round_number)
        started = time.perf_counter()
        for state, orders in played:
            check_orders(state, state.to_move, orders)
        checked_at = time.perf_counter()
        for state, orders in played:
            apply_turn(state, state.to_move, orders, rng)
        applied_at = time.perf_counter()
        check_time = min(check_time, checked_at - started)
        apply_time = min(apply_time, applied_at - checked_at)
    print(
        f"  apply_turn {apply_time / turns * 1e6:.1f} us/turn ({turns / apply_time:,.0f} turns/s);"
        f" check_orders + apply_turn {(check_time + apply_time) / turns * 1e6:.1f} us/turn"
    )


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 2013
    play("pushers", pushy_orders, turns, seed)
    play("wanderers", wandering_orders, turns, seed)


if __name__ == "__main__":
    main()
