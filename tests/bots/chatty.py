"""A Dwarven Tavern bot that writes on stderr as it plays, for the tests of per-turn stderr.

    tests/bots/chatty.py --simulation ID --port N [--loud-turn N]

It plays the house pusher's strategy (as ``bots.tavern_dummy``). Before it joins it writes
``chatty starting``; on each turn, before it answers, ``turn N: thinking`` and ``turn N:
orders ...``; on turn ``--loud-turn`` also 3000 ``y`` (more than a turn keeps).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from bots.sdk import ArenaClient, JsonObject
from server.games.tavern.house import NAMES, choose_actions, view_of_wire

LOUD_BYTES = 3000


async def main(args: argparse.Namespace) -> None:
    print("chatty starting", file=sys.stderr, flush=True)
    async with await ArenaClient.connect("127.0.0.1", args.port) as client:
        info = await client.join(args.simulation, nick="chatty", names=NAMES)
        team, width, height = info["team"], info["width"], info["height"]

        def on_turn(message: JsonObject) -> JsonObject:
            turn = message["turn"]
            print(f"turn {turn}: thinking", file=sys.stderr, flush=True)
            actions = choose_actions(view_of_wire(message["state"], team, width, height))
            plan = ", ".join(f"{a['botId']} {a.get('direction', a['type'])}" for a in actions)
            print(f"turn {turn}: orders {plan}", file=sys.stderr, flush=True)
            if turn == args.loud_turn:
                print("y" * LOUD_BYTES, file=sys.stderr, flush=True)
            return {"type": "player-turn", "actions": actions}

        await client.play(on_turn)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--simulation", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--loud-turn", type=int, default=0)
    asyncio.run(main(parser.parse_args()))
