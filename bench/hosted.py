"""What running a bot isolated costs (issue 33, item 8): the same tournament of Thud games
played twice in one run, once with its dwarfs isolated (``server.jail``: bubblewrap, cgroups,
their moves relayed over stdin and stdout by the runner) and once with dwarfs connected over TCP.

    python bench/hosted.py [--bots 20] [--parallel 4] [--turn-limit 40] [--rounds 1]

Each run: ``--bots`` dwarfs, each playing one game against the house troll (a bot process over
TCP in both runs), ``--parallel`` games at once, games of ``--turn-limit`` plies. The isolated
dwarfs are tests/bots/jailed.py's honest bot, each in a folder of its own; the connected ones
the house dwarf (``bots.house_bot``). Printed for each run: a bot's start, from the runner
launching it to its seat being taken (p50, p99, max: for an isolated bot, bubblewrap's
namespaces and mounts, the launcher and the interpreter; for a connected one, the interpreter
and its imports), the moves played per second, and the runner's CPU per move (this process:
the arena, the records and, for isolated bots, the relay; every bot's own CPU is its
process's, not counted here), then the isolated run's CPU per move as a ratio to the connected
run's. With ``--rounds N`` both are measured N times, interleaved.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import percentile
from server.config import ArenaConfig, config_from_mapping
from server.match import Match
from server.records import Records
from server.records.queries import GameFilter
from server.sandbox import Sandbox
from server.tcp import TcpServer
from server.tournament.bots import BotProcess
from server.tournament.runner import TournamentRunner
from server.tournament.spec import spec_from_mapping

ROOT = Path(__file__).resolve().parent.parent
MAX_GAMES = 200  # the records' page of games, at most: --bots is bounded by it
JAILED = ROOT / "tests" / "bots" / "jailed.py"
HOUSE = (
    "{python} -m bots.house_bot {game} NAME --simulation {simulation} --side {side} --port {port}"
)


class TimedRunner(TournamentRunner):
    """A tournament runner that times each bot's start, to its seat taken."""

    starts: list[float]

    async def _seat(self, match: Match, tcp: TcpServer, bot: BotProcess, sandbox: Sandbox) -> None:
        started = time.perf_counter()
        await super()._seat(match, tcp, bot, sandbox)
        if bot.entrant.name.startswith("dwarf"):
            self.starts.append(time.perf_counter() - started)


def cup(mode: str, bots: int, parallel: int, folder: Path) -> dict[str, object]:
    dwarfs: list[dict[str, object]] = []
    for index in range(bots):
        name = f"dwarf{index:03d}"
        if mode == "isolated":
            own = folder / name
            own.mkdir()
            shutil.copy(JAILED, own / "jailed.py")
            command = ["{python}", "jailed.py", "honest"]
            dwarfs.append({"name": name, "side": "dwarf", "isolated": str(own), "command": command})
        else:
            dwarfs.append(
                {"name": name, "side": "dwarf", "command": HOUSE.replace("NAME", "dwarf")}
            )
    troll = {"name": "house troll", "side": "troll", "command": HOUSE.replace("NAME", "troll")}
    return {"name": f"hosted-{mode}", "game": "thud", "seed": 7, "parallel": parallel,
            "bots": [troll, *dwarfs]}  # fmt: skip


async def run(
    mode: str, bots: int, parallel: int, turn_limit: int
) -> tuple[list[float], float, float]:
    """(the bots' start times, moves per second, the runner's CPU seconds per move)."""
    with tempfile.TemporaryDirectory(prefix="tavern-hosted-") as scratch:
        folder = Path(scratch)
        spec = spec_from_mapping(cup(mode, bots, parallel, folder), ROOT)
        config: ArenaConfig = config_from_mapping({"thud": {"turnLimit": turn_limit}})
        records = Records(folder / "arena.db")
        await asyncio.to_thread(records.open)
        try:
            runner = TimedRunner(spec, config, records, io.StringIO())
            runner.starts = []
            cpu, wall = time.process_time(), time.perf_counter()
            await runner.run()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            played = GameFilter(tournament=spec.id, per_page=MAX_GAMES)
            page = await asyncio.to_thread(records.games, played)
        finally:
            await asyncio.to_thread(records.close)
    moves = max(1, sum(game["turnCount"] for game in page["games"]))
    return runner.starts, moves / wall, cpu / moves


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bots", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--turn-limit", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    if not 0 < args.bots <= MAX_GAMES:
        parser.error(f"--bots: 1 to {MAX_GAMES}")
    print(
        f"hosted: {args.bots} dwarfs against the house troll, {args.parallel} games at once, "
        f"{args.turn_limit} plies each",
        flush=True,
    )
    ratios = []
    for _ in range(args.rounds):
        per_move = {}
        for mode in ("isolated", "connected"):
            starts, moves_per_s, cpu = asyncio.run(
                run(mode, args.bots, args.parallel, args.turn_limit)
            )
            per_move[mode] = cpu
            print(
                f"{mode:>10}: a bot's start p50 {percentile(starts, 0.5) * 1000:.0f} ms, "
                f"p99 {percentile(starts, 0.99) * 1000:.0f} ms, max {max(starts) * 1000:.0f} ms; "
                f"{moves_per_s:,.0f} moves/s; the runner's CPU per move {cpu * 1e6:.0f} us",
                flush=True,
            )
        ratios.append(per_move["isolated"] / per_move["connected"])
        print(f"isolated / connected, the runner's CPU per move: {ratios[-1]:.2f}", flush=True)
    if args.rounds > 1:
        print(f"median over {args.rounds} rounds: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
