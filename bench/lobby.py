"""What a lobby message costs a node as the arena grows: the hub's lobby (visor/lobby.py) over N
simulations of other nodes, K of them changing between two messages.

    python bench/lobby.py [--simulations 1000 10000 100000] [--changes 10 100] [--messages 50]

For each N and K: a real ``visor.lobby.Lobby`` whose other nodes hold N live simulations (lobby
rows as their nodes announce them: half playing, watched by 0-3 pages, half waiting), then
``--messages`` times: K of them change (a page starts watching, a game starts, one ends and
another is created) and the lobby is built for every game and for each game, as the lobby loop
builds it when pages follow it. Printed: the CPU per message (this process's, which does
nothing else), and once per N the cost of placing every simulation again (what a node does
when another node is lost or the link is made again, and what every message cost when the
lobby sorted everything).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from server.arena import Arena
from server.config import ArenaConfig
from server.games.base import JsonObject
from visor.live_views import LiveViews
from visor.lobby import Lobby


class OtherNodes:
    """The other nodes' live simulations, as a node's directory holds them."""

    def __init__(self) -> None:
        self.rows: dict[str, JsonObject] = {}

    def simulations(self) -> list[JsonObject]:
        return list(self.rows.values())

    def simulation(self, simulation_id: str) -> JsonObject | None:
        return self.rows.get(simulation_id)


def row(number: int, playing: bool, spectators: int, created: float) -> JsonObject:
    game = "thud" if number % 2 else "tavern"
    return {
        "simulationId": f"sim{number:07d}-node{number % 50}",
        "node": f"node{number % 50}",
        "game": game,
        "status": "playing" if playing else "waiting",
        "players": ["a", "b"] if playing else ["a", None],
        "free": [] if playing else [1],
        "spectators": spectators,
        "turn": 12,
        "created": created,
    }


async def measure(simulations: int, changes: int, messages: int) -> tuple[float, float]:
    """CPU seconds per lobby message with ``changes`` changes before it, and to place every
    simulation again."""
    arena = Arena(ArenaConfig())
    others = OtherNodes()
    lobby = Lobby(arena, others, LiveViews(arena.clock), {})  # type: ignore[arg-type]
    draw = random.Random(1)
    now = time.time()
    for number in range(simulations):
        entry = row(number, number % 2 == 0, draw.randrange(4), now - draw.uniform(0, 3600))
        others.rows[entry["simulationId"]] = entry
    games: list[str | None] = [None, "tavern", "thud"]
    lobby.lobbies(games)  # every simulation placed once
    started = time.process_time()
    lobby.others_changed(None)
    lobby.lobbies(games)
    everything = time.process_time() - started
    next_number = simulations
    names = list(others.rows)
    started = time.process_time()
    for _ in range(messages):
        changed: list[str] = []
        for _ in range(changes):
            index = draw.randrange(len(names))
            name = names[index]
            if len(changed) % 3 == 0:  # one ends, another is created
                del others.rows[name]
                entry = row(next_number, False, 0, time.time())
                next_number += 1
                names[index] = entry["simulationId"]
                others.rows[names[index]] = entry
                changed += [name, entry["simulationId"]]
            else:  # a page starts watching it, or its game starts
                entry = dict(others.rows[name])
                entry["spectators"] += 1
                entry["status"] = "playing"
                others.rows[name] = entry
                changed.append(name)
        lobby.others_changed(changed)
        lobby.lobbies(games)
    return (time.process_time() - started) / messages, everything


async def main(args: argparse.Namespace) -> None:
    for simulations in args.simulations:
        for index, changes in enumerate(args.changes):
            per_message, everything = await measure(simulations, changes, args.messages)
            print(
                f"{simulations:>7,} simulations, {changes:>4} changes a message: "
                f"{per_message * 1000:7.2f} ms of CPU a message"
                + (f"; placing all again {everything * 1000:.1f} ms" if index == 0 else ""),
                flush=True,
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--simulations", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--changes", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--messages", type=int, default=50)
    asyncio.run(main(parser.parse_args()))
