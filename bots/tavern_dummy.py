"""A Dwarven Tavern bot that plays to win, on the Python SDK.

    python -m bots.tavern_dummy [--simulation ID] [--host H] [--port N] [--nick NAME]

Its strategy is the house pusher's (``server.games.tavern.house``): attackers push the rival barrel
home, defenders push their own barrel away from the rival's home row and then guard it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from bots.sdk import ArenaClient, JsonObject
from server.games.tavern.house import NAMES, choose_actions, view_of_wire


async def play(
    host: str, port: int, simulation_id: str | None, nick: str, seed: int | None = None
) -> JsonObject:
    """Join (or create by random join) and play one game; returns the final message."""
    async with await ArenaClient.connect(host, port) as client:
        fields: dict[str, Any] = {"names": NAMES}
        if seed is not None:
            fields["seed"] = seed
        info = await client.join(simulation_id, nick=nick, **fields)
        team, width, height = info["team"], info["width"], info["height"]

        def on_turn(message: JsonObject) -> JsonObject:
            view = view_of_wire(message["state"], team, width, height)
            actions = choose_actions(view)
            # What the bot meant, for its author: kept in the record, shown in replays.
            plan = ", ".join(f"{a['botId']} {a.get('direction', a['type'])}" for a in actions)
            return {"type": "player-turn", "actions": actions, "debug": f"orders: {plan}"}

        return await client.play(on_turn)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bots.tavern_dummy",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--simulation", help="simulation id (default: a random waiting one)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--nick", default="Tavern dummy")
    args = parser.parse_args(argv)
    final = asyncio.run(play(args.host, args.port, args.simulation, args.nick))
    result = final.get("result", {})
    print(f"{final['type']}: {result.get('reason')} {result.get('score')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
