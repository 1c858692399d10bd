"""A tournament's wall time played here, and queued for 1, 2, 3... ``tavern worker`` processes.

    python bench/tournament_workers.py [--bots 4] [--delay-ms 5] [--workers 1 2 3]

Starts a PostgreSQL cluster and a redis-server on loopback (``tests/services.py``), writes a
Dwarven Tavern tournament of ``--bots`` house players that each wait ``--delay-ms`` before every
move, as a bot that thinks (``tests/bots/slow_house.py``; every pair meets twice, once from each
side), and times ``tavern tournament FILE`` played here, one game at a time (``--workers 0``),
then queued with ``--workers N`` (the command starts N workers on this machine), each run on a
fresh database. Prints each run's wall time, its games per second, and the CPU time of every
process it started (the commands, workers and bots: ``RUSAGE_CHILDREN``) per game, and checks
that every run printed the same league table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere

from tests.services import postgres_server, redis_server

ROOT = Path(__file__).resolve().parent.parent
SLOW_HOUSE = ROOT / "tests" / "bots" / "slow_house.py"
PLAYERS = ("pusher", "wanderer")


def tournament(bots: int, delay_ms: int) -> dict[str, object]:
    return {
        "name": "bench cup",
        "game": "tavern",
        "seed": 5,
        "parallel": 1,
        "limits": {"turn_timeout_ms": 5000},
        "bots": [
            {
                "name": f"{PLAYERS[number % 2]}{number}",
                "command": [
                    *("{python}", str(SLOW_HOUSE), "tavern", PLAYERS[number % 2]),
                    *("--delay-ms", str(delay_ms), "--simulation", "{simulation}"),
                    *("--side", "{side}", "--port", "{port}", "--seed", "{seed}"),
                ],
            }
            for number in range(bots)
        ],
    }


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(arguments: list[str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds of what it started, and the league it printed."""
    cpu, began = children_cpu_s(), time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "tavern_cli", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{arguments} failed: {result.stderr[-2000:]}")
    return time.perf_counter() - began, children_cpu_s() - cpu, result.stdout.split("\nratings")[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bots", type=int, default=4)
    parser.add_argument("--delay-ms", type=int, default=5, help="each bot's wait before a move")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3])
    options = parser.parse_args()
    games = options.bots * (options.bots - 1)
    print(
        f"{games} Tavern games of house players that wait {options.delay_ms} ms a move, "
        f"on {os.cpu_count()} cores"
    )
    print("run                  | wall    | games/s | CPU a game (commands, workers, bots)")
    with (
        tempfile.TemporaryDirectory(prefix="tavern-bench-") as scratch,
        postgres_server() as cluster,
        redis_server() as queue,
    ):
        path = Path(scratch) / "cup.json"
        path.write_text(json.dumps(tournament(options.bots, options.delay_ms)))
        log = str(Path(scratch) / "cup.log")
        runs = {"here, one at a time": ["--workers", "0", "--database", f"{scratch}/local.db"]}
        for count in options.workers:
            database = cluster.create_database(f"workers_{count}")
            runs[f"{count} worker{'s' if count > 1 else ''}"] = [
                *("--workers", str(count), "--redis", queue.url, "--database", database),
            ]
        tables = set()
        for name, arguments in runs.items():
            wall, cpu, table = timed(["tournament", str(path), "--log", log, *arguments])
            tables.add(table)
            print(f"{name:20s} | {wall:6.1f} s | {games / wall:7.2f} | {cpu / games * 1000:.0f} ms")
        print("every run printed the same league" if len(tables) == 1 else "LEAGUES DIFFER")


if __name__ == "__main__":
    main()
