"""A Thud bot for isolated play (server.jail): it speaks over stdin and stdout, imports nothing
but the standard library (it sees only its own folder), and plays or attacks the machine:

    python3 jailed.py KIND [PATH...]

KIND: ``honest`` plays the first legal move of every turn (saying on stderr which, and in
its move that it took an hour of CPU), waiting PATH seconds (if given) before its second; the
others join, then try to get out, each saying on stderr ``ATTACK KIND: blocked (why)`` or
``ATTACK KIND: ESCAPED``: ``socket`` connects to the arena's port (PATH, a number) and to
another address; ``read`` reads each PATH (another bot's file, the records); ``write`` writes
in its own folder and in ``/usr``, then in ``/tmp``; ``forkbomb`` forks until it cannot, then
never answers; ``memory`` fills memory in four processes until it is stopped; ``sleep`` never
answers; ``setsid`` starts a process in a session of its own (``sleep 4321.5``) and exits.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def join() -> None:
    """In a tournament it is told its game and joins it; on the ladder its worker seeks for it
    and its first line is the game it was paired into."""
    simulation = os.environ.get("TAVERN_SIMULATION")
    if simulation is None:
        return
    nick, side = os.environ.get("TAVERN_NAME", "jailed"), os.environ["TAVERN_SIDE"]
    send({"type": "join-simulation", "game": "thud", "simulationId": simulation,
          "nick": nick, "side": side})  # fmt: skip


def honest(pause_s: float) -> None:
    turns = 0
    for line in sys.stdin:
        message = json.loads(line)
        if message["type"] == "turn":
            turns += 1
            say(f"thinking about turn {message['turn']}")
            if turns == 2:
                time.sleep(pause_s)  # no CPU: a hosted bot is charged none for it
            move = message["state"]["moves"][0]
            # It claims an hour of CPU: only its worker may say what a move cost.
            send({"type": "player-turn", "move": {"from": move["from"], "to": move["to"]},
                  "turn": message["turn"], "cpuMs": 3_600_000})  # fmt: skip
        elif message["type"] in ("win-game", "loss-game", "draw-game"):
            return


def attack(kind: str, paths: list[str]) -> None:
    if kind == "socket":
        for address in (("127.0.0.1", int(paths[0])), ("1.1.1.1", 53)):
            try:
                socket.create_connection(address, timeout=2).close()
                say(f"ATTACK socket: ESCAPED to {address}")
            except OSError as error:
                say(f"ATTACK socket: blocked ({error})")
    elif kind == "read":
        for path in paths:
            try:
                with open(path, "rb") as file:
                    file.read(16)
                say(f"ATTACK read: ESCAPED, read {path}")
            except OSError as error:
                say(f"ATTACK read: blocked ({error})")
    elif kind == "write":
        for path in (os.path.join(os.getcwd(), "written"), "/usr/written"):
            try:
                with open(path, "w") as file:
                    file.write("x")
                say(f"ATTACK write: ESCAPED, wrote {path}")
            except OSError as error:
                say(f"ATTACK write: blocked ({error})")
        with open(os.path.join(os.environ["HOME"], "written"), "w") as file:  # its own tmp
            file.write("x")
        say(f"wrote in its home, {os.environ['HOME']}, its own tmp")
    elif kind == "forkbomb":
        children = 0
        try:
            while True:
                if os.fork() == 0:
                    time.sleep(3600)
                    os._exit(0)
                children += 1
        except OSError as error:
            say(f"ATTACK forkbomb: blocked after {children} processes ({error})")
        time.sleep(3600)
    elif kind == "memory":  # four processes, each within its own address space's limit
        for _ in range(3):
            if os.fork() == 0:
                break
        hoard = []
        while True:
            hoard.append(bytearray(16 * 1024 * 1024))
            say(f"holding {16 * len(hoard)} MB")
    elif kind == "sleep":
        time.sleep(3600)
    elif kind == "setsid":
        if os.fork() == 0:
            os.setsid()
            os.execv("/usr/bin/sleep", ["sleep", "4321.5"])
        say("started a process in a session of its own")
    sys.exit(1)


if __name__ == "__main__":
    join()
    if sys.argv[1] == "honest":
        honest(float(sys.argv[2]) if len(sys.argv) > 2 else 0.0)
    else:
        attack(sys.argv[1], sys.argv[2:])
