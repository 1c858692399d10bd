"""The arena's house players, for both games: built-in opponents that play real strategy.

A house player answers a turn exactly as a remote bot would, with a ``player-turn`` message.
In the arena's process it thinks on the rules' own position (``reply``); a house player that
runs as a bot process reads the turn message instead (``reply_to_wire``). Either way it is
seeded, so games between house players replay from their seeds. This package depends only on
the games.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from server.games.base import JsonObject
from server.games.thud.codec import ThudCodec
from server.games.thud.rules import SIDES, ThudRules
from server.house import tavern, thud

TavernPolicy = Callable[[tavern.View, random.Random], list[JsonObject]]
TAVERN_POLICIES: dict[str, TavernPolicy] = {"pusher": tavern.pusher, "wanderer": tavern.wanderer}
_THUD = ThudCodec(ThudRules())


@dataclass(frozen=True, slots=True)
class HousePlayer:
    """A built-in player of one game."""

    game: str
    name: str
    description: str
    sides: tuple[str, ...]  # the seats it knows how to play

    def reply(self, state: Any, seat: int, rng: random.Random) -> JsonObject:
        """The ``player-turn`` message for a position of the rules, ``seat`` on move."""
        if self.game == "thud":
            action = thud.POLICIES[self.name](state, rng)
            return {"type": "player-turn", **_THUD.action_to_wire(action)}
        return self._tavern_reply(tavern.view_of_state(state, seat), rng)

    def reply_to_wire(
        self, message: JsonObject, info: JsonObject, rng: random.Random
    ) -> JsonObject:
        """The same for a ``turn`` message, given the seat's ``game-info``."""
        if self.game == "thud":
            state = thud.state_from_wire(message["state"])
            return self.reply(state, SIDES.index(info["side"]), rng)
        view = tavern.view_of_wire(message["state"], info["team"], info["width"], info["height"])
        return self._tavern_reply(view, rng)

    def _tavern_reply(self, view: tavern.View, rng: random.Random) -> JsonObject:
        return {"type": "player-turn", "actions": TAVERN_POLICIES[self.name](view, rng)}


HOUSE_PLAYERS: dict[str, dict[str, HousePlayer]] = {
    "thud": {
        "dwarf": HousePlayer(
            "thud", "dwarf", "hurls at trolls, keeps out of reach, forms lines", ("dwarf",)
        ),
        "troll": HousePlayer(
            "thud", "troll", "kills the most dwarfs, avoids hurls, stays together", ("troll",)
        ),
        "random": HousePlayer(
            "thud", "random", "a uniformly random legal move", ("dwarf", "troll")
        ),
    },
    "tavern": {
        "pusher": HousePlayer(
            "tavern", "pusher", "pushes the rival barrel home, guards its own", ("team1", "team2")
        ),
        "wanderer": HousePlayer(
            "tavern", "wanderer", "every dwarf steps at random", ("team1", "team2")
        ),
    },
}
NAMES = ["Gimli", "Durin", "Thorin", "Balin", "Dwalin"]  # the house players' Tavern dwarves
