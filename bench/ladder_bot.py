"""A ladder bot connected over TCP, as an author runs one, for bench/hosted_ladder.py: the same
program as tests/bots/jailed.py's honest bot (the first legal move of every turn, the standard
library only), but it connects to the arena itself and seeks its rated games, one after the
other, until it is killed.

    python bench/ladder_bot.py PORT BOT KEY

It says on stderr when it has sent its first seek: ``seeking WALL-CLOCK-TIME``.
"""

from __future__ import annotations

import json
import socket
import sys
import time

ENDS = ("win-game", "loss-game", "draw-game")


def play(port: int, bot: str, key: str, first: bool) -> bool:
    """One seek and its game; False if the seek was refused."""
    with socket.create_connection(("127.0.0.1", port)) as connection:
        lines = connection.makefile("rb")
        seek = {"type": "seek", "game": "thud", "rated": True, "bot": bot, "key": key}
        connection.sendall(json.dumps(seek).encode() + b"\n")
        if first:
            print(f"seeking {time.time()}", file=sys.stderr, flush=True)
        for line in lines:
            message = json.loads(line)
            if message["type"] == "turn":
                move = message["state"]["moves"][0]
                reply = {"type": "player-turn", "turn": message["turn"],
                         "move": {"from": move["from"], "to": move["to"]}}  # fmt: skip
                connection.sendall(json.dumps(reply).encode() + b"\n")
            elif message["type"] in ENDS:
                return True
            elif message["type"] == "error":
                return False
    return False


def main() -> None:
    port, bot, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    first = True
    while True:
        try:
            played = play(port, bot, key, first)
        except OSError:
            played = False
        if not played:
            time.sleep(0.5)
        first = False


if __name__ == "__main__":
    main()
