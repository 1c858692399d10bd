"""One house player as a standalone bot process, for tournaments and validation.

python -m bots.house_bot thud troll --simulation ID --port 9000 [--side troll]
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from bots.house import replies
from bots.sdk import ArenaClient, JsonObject
from server.games import GAMES


async def play(
    game: str, name: str, host: str, port: int, simulation: str | None, side: str | None, seed: int
) -> JsonObject:
    player = GAMES[game].house_players[name]
    fields = GAMES[game].house_join(side)
    async with await ArenaClient.connect(host, port) as client:
        info = await client.join(simulation, nick=f"house {name}", game=game, **fields)
        return await client.play(replies(player, info, seed))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bots.house_bot", description=__doc__)
    parser.add_argument("game", choices=sorted(GAMES))
    parser.add_argument("player")
    parser.add_argument("--simulation")
    parser.add_argument("--side")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    known = GAMES[args.game].house_players
    if args.player not in known:
        parser.error(f"{args.game} house players are: {', '.join(known)}")
    final = asyncio.run(
        play(args.game, args.player, args.host, args.port, args.simulation, args.side, args.seed)
    )
    print(final["type"], final.get("result"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
