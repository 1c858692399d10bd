"""The arena's house players, for both games, and a command that sets two of them playing.

    python -m bots.house thud dwarf troll [--port 9000] [--games 3] [--seed 1]
    python -m bots.house tavern pusher wanderer

The first player takes the first seat (Thud: the dwarfs; Dwarven Tavern: team1). The players
themselves are ``server.house``'s; here they play over TCP, as remote bots do.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections.abc import Callable

from bots.sdk import ArenaClient, JsonObject
from server.house import HOUSE_PLAYERS, NAMES, HousePlayer


def replies(player: HousePlayer, info: JsonObject, seed: int) -> Callable[[JsonObject], JsonObject]:
    """A house player's answers to the turns of one game, given its ``game-info``; seeded."""
    rng = random.Random(seed)
    return lambda message: player.reply_to_wire(message, info, rng)


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
        return await client.play(replies(player, info, seed))


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
