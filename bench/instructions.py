"""The server's instructions per turn, counted by valgrind: a figure the machine's noise does
not move, beside other checkouts of this project in one run.

    python bench/instructions.py [--against CHECKOUT ...] [--games 8] [--mix thud|tavern]

On a shared machine the server's CPU time per turn (``bench/load.py``, ``bench/versus.py``) moves
by a tenth or more from round to round. This bench runs each server (this checkout's, then each
``--against`` checkout's, an older commit in a ``git worktree``, with this interpreter) under
``valgrind --tool=cachegrind --cache-sim=no``, which counts every instruction the process runs
in user space, threads and records included. Each server plays ``--games`` games at once to
their end, records on in SQLite: Thud (bots playing a random legal move) or, with ``--mix
tavern``, Dwarven Tavern (every dwarf of the team ordered one step in a random direction, as
``bench/load.py``'s bots do). The bots' draws and each game's seed (the server's draws, a
thrown dwarf's landing) are seeded: every server plays the same games, turn for turn. A
second run of the same server plays none. The
difference of the two counts over the turns played is the server's instructions per turn, a
game's start and end included. The system calls' work in the kernel is not counted: compare
with ``bench/versus.py``'s CPU time, which counts it, for the whole cost.

With ``--cache``, valgrind also simulates the caches (a 2 MiB last level, this machine's L2)
and the bench prints, beside the instructions, the misses per turn of the first-level
instruction and data caches and of the last level's data: memory stalls weigh in CPU time as
much as instructions do, and explain a CPU-time ratio above the instructions' one.

Under valgrind a server runs some fifty times slower (a hundred with ``--cache``), so the
records' 200 ms batches hold fewer turns than at full speed: the records weigh a little more
here than they do in a real run. Needs ``valgrind`` (Debian package).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import re
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import ROOT, known_settings, tavern_module, with_python_path
from bench.load import ENDS, GAME_INFO, NAMES, TURN, random_thud_move, tavern_moves

VALGRIND = ("valgrind", "--tool=cachegrind", "--cachegrind-out-file=/dev/null")
CACHES = ("--cache-sim=yes", "--LL=2097152,16,64")
FIGURES = {  # what valgrind's summary calls each figure -> how this bench names it
    "I   refs": "instructions",
    "I1  misses": "I1 misses",
    "D1  misses": "D1 misses",
    "LLd misses": "LL data misses",
}
SUMMARY = re.compile(r"(I   refs|I1  misses|D1  misses|LLd misses):\s+([\d,]+)")


@contextlib.asynccontextmanager
async def counted_server(
    root: Path, scratch: Path, caches: bool, counts: list[dict[str, int]]
) -> AsyncIterator[int]:
    """``tavern serve`` of the checkout at ``root`` under valgrind (simulating the ``caches``);
    yields its bots' port and, once it has stopped (SIGINT), appends valgrind's figures for the
    process (``FIGURES``: the instructions, and the misses if simulated) to ``counts``."""
    config = scratch / "config.json"
    settings = {"port": 0, "httpPort": 0, "database": str(scratch / "arena.db")}
    config.write_bytes(orjson.dumps(known_settings(root, settings)))
    process = await asyncio.create_subprocess_exec(
        *VALGRIND,
        *(CACHES if caches else ("--cache-sim=no",)),
        *(sys.executable, "-m", tavern_module(root), "serve", "--config", str(config)),
        cwd=root,
        env={**with_python_path(root), "PYTHONHASHSEED": "0"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    try:
        line = (await asyncio.wait_for(process.stdout.readline(), 300)).decode()
        found = re.search(r":(\d+)/?$", line.strip())  # "bots connect to HOST:PORT"
        if not found:
            raise RuntimeError(f"unexpected server output: {line!r}")
        yield int(found.group(1))
        process.send_signal(2)
        report = (await asyncio.wait_for(process.stderr.read(), 300)).decode()
        await process.wait()
        found_figures = {
            FIGURES[name]: int(value.replace(",", "")) for name, value in SUMMARY.findall(report)
        }
        if "instructions" not in found_figures:
            raise RuntimeError(f"no instruction count from valgrind: {report[-500:]!r}")
        counts.append(found_figures)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def bot(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, seed: int, mix: str
) -> int:
    """Play one side to the game's end; returns the turns it was asked to play."""
    chance, turns = random.Random(seed), 0
    dwarves: list[int] = []  # a Tavern team's dwarf ids, once its game-info has come
    while line := await asyncio.wait_for(reader.readline(), 600):
        if line.startswith(TURN):
            turns += 1
            moves = tavern_moves(dwarves, chance) if dwarves else random_thud_move(line, chance)
            writer.write(moves)
        elif line.startswith(GAME_INFO) and mix == "tavern":
            first = 1 if orjson.loads(line)["team"] == "team1" else 6  # botsPerPlayer 5
            dwarves = list(range(first, first + 5))
        elif line.startswith(ENDS):
            break
    return turns


async def game(port: int, seed: int, mix: str) -> int:
    ends = [await asyncio.open_connection("127.0.0.1", port, limit=1 << 22) for _ in range(2)]
    (first, first_writer), (_, second_writer) = ends
    try:
        create = {"type": "create-simulation", "game": mix, "seed": seed}
        first_writer.write(orjson.dumps(create) + b"\n")
        simulation_id = orjson.loads(await asyncio.wait_for(first.readline(), 600))["simulationId"]
        for _, writer in ends:
            join = {"type": "join-simulation", "game": mix, "nick": "bench", "names": NAMES}
            join["simulationId"] = simulation_id
            writer.write(orjson.dumps(join) + b"\n")
        sides = await asyncio.gather(
            *(bot(*end, seed * 2 + side, mix) for side, end in enumerate(ends))
        )
        return sum(sides)
    finally:
        first_writer.close()
        second_writer.close()


async def count(root: Path, games: int, mix: str, caches: bool) -> tuple[dict[str, int], int]:
    """(valgrind's figures, turns) of a server that played ``games`` games of ``mix``."""
    counts: list[dict[str, int]] = []
    with tempfile.TemporaryDirectory(prefix="tavern-instructions-") as scratch:
        async with counted_server(root, Path(scratch), caches, counts) as port:
            played = await asyncio.gather(*(game(port, seed, mix) for seed in range(games)))
    return counts[0], sum(played)


async def per_turn(root: Path, games: int, mix: str, caches: bool) -> tuple[dict[str, float], int]:
    """Each figure per turn and the turns played: a server with games less one without."""
    (busy, turns), (idle, _) = await asyncio.gather(
        count(root, games, mix, caches), count(root, 0, mix, caches)
    )
    return {name: (busy[name] - idle[name]) / turns for name in busy}, turns


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", action="append", default=[], type=Path)
    parser.add_argument("--games", type=int, default=8)
    parser.add_argument("--mix", choices=("thud", "tavern"), default="thud")
    parser.add_argument("--cache", action="store_true", help="simulate the caches too")
    options = parser.parse_args()
    roots = [ROOT, *(path.resolve() for path in options.against)]
    servers: dict[str, dict[str, float]] = {}
    for root in roots:
        name = "arena" if root == ROOT else root.name
        servers[name], turns = await per_turn(root, options.games, options.mix, options.cache)
        shown = ", ".join(f"{value:,.0f} {figure}" for figure, value in servers[name].items())
        print(f"{name:>16}: {shown} a turn ({turns:,} turns)", flush=True)
    for name, figures in servers.items():
        if name != "arena":
            ratios = ", ".join(
                f"{figure} {servers['arena'][figure] / value:.2f}"
                for figure, value in figures.items()
            )
            print(f"arena / {name}, per turn: {ratios}")


if __name__ == "__main__":
    asyncio.run(main())
