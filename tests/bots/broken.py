"""Deliberately broken bots for tournament and validation tests.

    python tests/bots/broken.py KIND GAME --simulation ID --port N --side S

KIND is ``crash`` (joins, then dies with an error), ``illegal`` (answers every turn with a move
the rules reject), ``silent`` (joins and never answers) or ``quit`` (exits with status 3 at
once, without joining).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from bots.sdk import ArenaClient


async def main(kind: str, game: str, simulation: str, port: int, side: str) -> None:
    async with await ArenaClient.connect("127.0.0.1", port) as client:
        fields = {"side": side} if game == "thud" else {"names": ["X"]}
        await client.join(simulation, nick=f"broken {kind}", game=game, **fields)
        if kind == "crash":
            raise RuntimeError("this bot crashes on purpose")
        while True:
            message = await client.receive()
            if message["type"] in ("win-game", "loss-game", "draw-game"):
                return
            if message["type"] == "turn" and kind == "illegal":
                if game == "thud":
                    bad = {"from": [0, 0], "to": [0, 1]}  # (0, 0) is off the board
                    await client.send({"type": "player-turn", "move": bad})
                else:
                    await client.send(
                        {"type": "player-turn", "actions": [{"botId": 999, "type": "PASS"}]}
                    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["crash", "illegal", "silent", "quit"])
    parser.add_argument("game")
    parser.add_argument("--simulation", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--side", required=True)
    args = parser.parse_args()
    if args.kind == "quit":
        sys.exit(3)
    try:
        asyncio.run(main(args.kind, args.game, args.simulation, args.port, args.side))
    except ConnectionError:
        sys.exit(0)
