"""Think time through a delaying proxy (issue 34, item 4): how close the arena's measure of a
bot's thinking comes to the bot's own, with 100 ms of round trip (50 ms each way) between them.

    python bench/think_time.py [--games 5] [--turns 40]

Each game: a dwarf bot on the SDK in a process of its own, behind a proxy that holds every line
50 ms each way, thinking 20 to 60 ms a turn, against a troll connected directly that answers at
once, on a real arena in this process (``tests/test_think_time.think_errors``). Printed: each
game's median, 90th percentile and largest difference (ms), then all games' together.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.test_think_time import think_errors


def figures(errors: list[float]) -> str:
    ordered = sorted(errors)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return (f"{len(ordered)} turns: median {statistics.median(ordered):.1f} ms, "
            f"p90 {p90:.1f} ms, largest {ordered[-1]:.1f} ms")  # fmt: skip


async def run(games: int, turns: int) -> None:
    every: list[float] = []
    for game in range(1, games + 1):
        errors = await think_errors(turns)
        every += errors
        print(f"game {game}: {figures(errors)}", flush=True)
    print(f"all games: {figures(every)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=5)
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    asyncio.run(run(args.games, args.turns))


if __name__ == "__main__":
    main()
