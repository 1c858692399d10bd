"""The arena's house players, for both games, and a command that sets two of them playing.

    python -m bots.house thud dwarf troll [--port 9000] [--games 3] [--seed 1]
    python -m bots.house tavern pusher wanderer

The first player takes the first seat (Thud: the dwarfs; Dwarven Tavern: team1). Each house
player answers turn messages exactly as a remote bot would, so the same objects also play
in-process seats for the visor.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass

from bots import tavern_players, thud_players
from bots.sdk import ArenaClient, JsonObject
from bots.thud import ThudTurn

NAMES = ["Gimli", "Durin", "Thorin", "Balin", "Dwalin"]


@dataclass(frozen=True, slots=True)
class HousePlayer:
    """A built-in player: ``reply`` turns a turn message into the answer to send."""

    game: str
    name: str
    description: str
    sides: tuple[str, ...]  # the seats it knows how to play

    def start(self, info: JsonObject, seed: int) -> Callable[[JsonObject], JsonObject]:
        """A reply function for one game, given its ``game-info``; seeded for replays."""
        rng = random.Random(seed)
        if self.game == "thud":
            policy = thud_players.HOUSE_POLICIES[self.name]
            return lambda message: _thud_reply(policy, message, rng)
        policy_tavern = TAVERN_POLICIES[self.name]
        team, width, height = info["team"], info["width"], info["height"]
        return lambda message: {
            "type": "player-turn",
            "actions": policy_tavern(message["state"], team, width, height, rng),
        }


def _thud_reply(policy: thud_players.Policy, message: JsonObject, rng: random.Random) -> JsonObject:
    turn = ThudTurn(message["state"])
    action = policy(turn.rules_state(), rng)
    assert not isinstance(action.move, tuple)
    reply: JsonObject = {
        "type": "player-turn",
        "move": {"from": list(action.move.start), "to": list(action.move.end)},
    }
    if action.declare is not None:
        reply["declare"] = action.declare
    return reply


TAVERN_POLICIES = {"pusher": tavern_players.pusher, "wanderer": tavern_players.wanderer}

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


SEATS = {"thud": ("dwarf", "troll"), "tavern": ("team1", "team2")}


async def play_house(
    player: HousePlayer, host: str, port: int, simulation_id: str, seed: int, seat: str
) -> JsonObject:
    """Seat a house player in a simulation over TCP and play it to the end.

    Thud seats are asked for by side; Dwarven Tavern seats go by join order.
    """
    async with await ArenaClient.connect(host, port) as client:
        fields: JsonObject = {"names": NAMES} if player.game == "tavern" else {"side": seat}
        info = await client.join(
            simulation_id, nick=f"house {player.name}", game=player.game, **fields
        )
        return await client.play(player.start(info, seed))


async def run_games(
    game: str, first: str, second: str, host: str, port: int, games: int, seed: int
) -> list[JsonObject]:
    """Play ``games`` games between two house players; returns the first seat's finals."""
    players = HOUSE_PLAYERS[game]
    results = []
    for number in range(games):
        async with await ArenaClient.connect(host, port) as creator:
            ready = await creator.create_simulation(game, seed + number)
        simulation_id = ready["simulationId"]
        seat_one = asyncio.create_task(
            play_house(players[first], host, port, simulation_id, seed + number, SEATS[game][0])
        )
        await asyncio.sleep(0.05)  # the first to join takes the first Tavern seat
        seat_two = asyncio.create_task(
            play_house(players[second], host, port, simulation_id, seed + number, SEATS[game][1])
        )
        final, _ = await asyncio.gather(seat_one, seat_two)
        results.append(final)
        result = final["result"]
        print(
            f"{simulation_id}: {result['winner'] or 'draw'} ({result['reason']}) {result['score']}"
        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bots.house",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("game", choices=sorted(HOUSE_PLAYERS))
    parser.add_argument("first", help="house player in the first seat")
    parser.add_argument("second", help="house player in the second seat")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--games", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    known = HOUSE_PLAYERS[args.game]
    for name, seat in zip((args.first, args.second), SEATS[args.game], strict=True):
        if name not in known:
            parser.error(f"{args.game} house players are: {', '.join(known)}")
        if seat not in known[name].sides:
            parser.error(f"{name} cannot play the {seat} seat")
    asyncio.run(
        run_games(args.game, args.first, args.second, args.host, args.port, args.games, args.seed)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
