"""The arena's house players, for both games, and a command that sets two of them playing.

    python -m bots.house thud dwarf troll [--port 9000] [--games 3] [--seed 1]
    python -m bots.house tavern pusher wanderer

The first player takes the first seat (Thud: the dwarfs; Dwarven Tavern: team1). The players
themselves are each game's (``Game.house_players``); here they play over TCP, as remote bots do.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections.abc import Callable

from bots.sdk import ArenaClient, JsonObject
from server.games import GAMES
from server.games.base import HousePlayer


def replies(player: HousePlayer, info: JsonObject, seed: int) -> Callable[[JsonObject], JsonObject]:
    """A house player's answers to the turns of one game, given its ``game-info``; seeded."""
    rng = random.Random(seed)
    return lambda message: player.reply_to_wire(message, info, rng)


async def play_house(
    game: str, player: HousePlayer, host: str, port: int, simulation_id: str, seed: int, seat: str
) -> JsonObject:
    """Seat a house player in a simulation over TCP and play it to the end.

    Thud seats are asked for by side; Dwarven Tavern seats go by join order.
    """
    async with await ArenaClient.connect(host, port) as client:
        fields = GAMES[game].house_join(seat)
        info = await client.join(simulation_id, nick=f"house {player.name}", game=game, **fields)
        return await client.play(replies(player, info, seed))


async def run_games(
    game: str, first: str, second: str, host: str, port: int, games: int, seed: int
) -> list[JsonObject]:
    """Play ``games`` games between two house players; returns the first seat's finals."""
    players = GAMES[game].house_players
    first_seat, second_seat = GAMES[game].seat_names
    results = []
    for number in range(games):
        async with await ArenaClient.connect(host, port) as creator:
            ready = await creator.create_simulation(game, seed + number)
        simulation_id = ready["simulationId"]
        seat_one = asyncio.create_task(
            play_house(game, players[first], host, port, simulation_id, seed + number, first_seat)
        )
        await asyncio.sleep(0.05)  # the first to join takes the first Tavern seat
        seat_two = asyncio.create_task(
            play_house(game, players[second], host, port, simulation_id, seed + number, second_seat)
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
    parser.add_argument("game", choices=sorted(GAMES))
    parser.add_argument("first", help="house player in the first seat")
    parser.add_argument("second", help="house player in the second seat")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--games", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    known = GAMES[args.game].house_players
    for name, seat in zip((args.first, args.second), GAMES[args.game].seat_names, strict=True):
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
