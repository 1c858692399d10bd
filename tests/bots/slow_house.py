"""A house player that takes its time over every move, so that a test can stop a tournament
while its games are being played; it plays exactly as the house player (same seed, same moves).

    tests/bots/slow_house.py GAME PLAYER --delay-ms MS --simulation ID --side S --port N --seed N

It writes its pid on stderr first, so that a test can check that it was killed. With
``--linger`` it first starts a process in a session of its own that outlives it (``sleep``), as
a bot's helper that nothing but its cgroup ends.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys

from bots.house import replies
from bots.sdk import ArenaClient, JsonObject
from server.games import GAMES


async def main(args: argparse.Namespace) -> None:
    player = GAMES[args.game].house_players[args.player]
    fields = GAMES[args.game].house_join(args.side)
    async with await ArenaClient.connect("127.0.0.1", args.port) as client:
        info = await client.join(args.simulation, nick=args.player, game=args.game, **fields)
        reply = replies(player, info, args.seed)

        async def slowly(message: JsonObject) -> JsonObject:
            await asyncio.sleep(args.delay_ms / 1000)
            return reply(message)

        await client.play(slowly)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("game")
    parser.add_argument("player")
    parser.add_argument("--delay-ms", type=int, required=True)
    parser.add_argument("--simulation", required=True)
    parser.add_argument("--side", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--linger", action="store_true")
    arguments = parser.parse_args()
    print(f"slow house pid {os.getpid()}", file=sys.stderr, flush=True)
    if arguments.linger:
        subprocess.Popen(["sleep", "300"], start_new_session=True)
    asyncio.run(main(arguments))
