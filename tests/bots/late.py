"""A Dwarven Tavern bot on the Python SDK that thinks too long on some turns, for the tests of
late replies.

    tests/bots/late.py --simulation ID --port N --late 3,11 --late-ms MS --log PATH

On the turns listed in ``--late`` it answers after ``--late-ms`` milliseconds. Each turn it moves
one dwarf, a different one from one of its turns to the next, so a reply played on another turn
than the one it answers shows in the game. It writes each reply it computes (with the turn it
answers) and each notice it gets as JSON lines to ``--log``.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import IO

import orjson

from bots.sdk import ArenaClient, JsonObject
from server.games.tavern.house import HOUSE_NAMES


def keep(log: IO[bytes], entry: JsonObject) -> None:
    log.write(orjson.dumps(entry) + b"\n")
    log.flush()


async def main(args: argparse.Namespace, log: IO[bytes]) -> None:
    late = {int(turn) for turn in args.late.split(",")}
    async with await ArenaClient.connect("127.0.0.1", args.port) as client:
        info = await client.join(args.simulation, nick="late", names=HOUSE_NAMES)
        team = info["team"]

        async def on_turn(message: JsonObject) -> JsonObject:
            turn = message["turn"]
            if turn in late:
                await asyncio.sleep(args.late_ms / 1000)
            dwarves = message["state"][team]
            dwarf = dwarves[(turn // 2) % len(dwarves)]
            direction = "NORTH" if turn % 4 == 1 else "SOUTH"
            actions = [{"botId": dwarf["id"], "type": "MOVE", "direction": direction}]
            keep(log, {"turn": turn, "actions": actions})
            return {"type": "player-turn", "actions": actions}  # the SDK adds the turn

        def on_notice(message: JsonObject) -> None:
            keep(log, {"notice": message.get("message"), "reason": message.get("reason")})

        final = await client.play(on_turn, on_notice)
        keep(log, {"end": final["type"]})


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--simulation", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--late", required=True, help="the turns to answer late, comma-separated")
    parser.add_argument("--late-ms", type=int, required=True)
    parser.add_argument("--log", required=True)
    arguments = parser.parse_args()
    with open(arguments.log, "wb") as kept:
        asyncio.run(main(arguments, kept))
