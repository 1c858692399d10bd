"""House players for Dwarven Tavern, as wire-level policies (a turn's state in, actions out)."""

from __future__ import annotations

import random

from bots.sdk import JsonObject
from bots.tavern_dummy import choose_actions, view_of

DIRECTIONS = ("NORTH", "EAST", "SOUTH", "WEST")


def pusher(
    state: JsonObject, team: str, width: int, height: int, rng: random.Random
) -> list[JsonObject]:
    """The strategy of ``bots.tavern_dummy``: push the rival barrel home, guard our own."""
    return choose_actions(view_of(state, team, width, height))


def wanderer(
    state: JsonObject, team: str, width: int, height: int, rng: random.Random
) -> list[JsonObject]:
    """Every dwarf steps in a random direction: a baseline to beat."""
    return [
        {"botId": dwarf["id"], "type": "MOVE", "direction": rng.choice(DIRECTIONS)}
        for dwarf in state[team]
    ]
