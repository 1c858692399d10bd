"""Arena nodes on Redis under load: bench/load.py's real-move games with the two seats of each
game on different nodes, against the same load on one node.

    python bench/cluster.py [--games 100] [--seconds 10] [--think-ms 0] [--mix tavern|thud|both]
                            [--loop asyncio|uvloop] [--rounds 1] [--cluster]
                            [--against CHECKOUT ...]

Three figures, each with fresh processes:

* ``one node``: ``tavern serve`` alone (no Redis), both seats of every game on it;
* ``two nodes, seats local``: two nodes on one redis-server, each game's seats on the node that
  plays it (what Redis costs when nothing crosses);
* ``two nodes, seats across``: each game is created on one node (half on each) and its second
  bot connects to the other node, so every turn crosses once (a move in, or a turn out).

With ``--cluster``, each round also measures ``two nodes, seats across`` on a Redis Cluster of
three masters (``across, Redis Cluster``; every server's CPU counted). With ``--against
CHECKOUT`` (an older commit in a ``git worktree``, run with this interpreter),
each round also measures ``two nodes, seats across`` with that checkout's nodes, right after
this one's: the cost of a crossing turn, side by side.

For each: turns per second, the reply latency (a bot sending its move to the other bot
receiving its turn), and the CPU per turn of every process (each node and redis-server: CPU
seconds over turns played), then all processes together as a ratio to the one node's; on
Redis, the commands Redis ran a turn (its ``INFO commandstats``, every server of a cluster) and
the share of the seats held through another node (the nodes' ``tavern_seats`` gauges, read
halfway through). With
``--rounds N`` the three figures are measured N times over, interleaved, and the medians of the
ratios close the report: this shared machine's load drifts by more than the differences measured.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import (
    CLOCK_TICKS,
    ROOT,
    ServerProcess,
    describe_ms,
    known_settings,
    percentile,
    tavern_serve,
    use_loop,
)
from bench.load import UNCAPPED, Pair
from bench.redis_rest import command_calls
from tests.services import RedisCluster, RedisServer, redis_cluster, redis_server

SETTINGS = {
    "maxConnectionsPerAddress": 100_000,
    "maxConnections": 100_000,
    # bench/ladder.py's bots all seek from 127.0.0.1
    "maxSeeksPerAddress": 100_000,
    "seeksPerAddressPerMinute": 1_000_000,
    "reconnectGraceMs": 0,
    **UNCAPPED,
}


def process_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


@dataclass
class Figures:
    name: str
    turns_per_s: float
    latencies: list[float]
    cpu_per_turn: dict[str, float]  # process -> CPU seconds per turn
    redis_commands: int = 0  # the commands Redis ran meanwhile (INFO commandstats)
    turns: int = 0  # turns played
    seats: tuple[int, int] = (0, 0)  # the nodes' tavern_seats mid-run: local, remote

    @property
    def total_cpu_per_turn(self) -> float:
        return sum(self.cpu_per_turn.values())


@contextlib.asynccontextmanager
async def arena_nodes(
    count: int,
    redis: RedisServer | RedisCluster | None,
    loop: str,
    settings: Mapping[str, object] | None = None,
    root: Path = ROOT,
) -> AsyncIterator[list[ServerProcess]]:
    """``count`` ``tavern serve`` processes of the checkout at ``root``, on ``redis`` if given,
    records in a scratch dir unless ``settings`` (added to every node's) name a database they
    share."""
    with tempfile.TemporaryDirectory(prefix="tavern-cluster-") as scratch:
        async with contextlib.AsyncExitStack() as stack:
            servers = []
            for index in range(count):
                config: dict[str, object] = {
                    "port": 0,
                    "httpPort": 0,
                    "database": str(Path(scratch) / f"node-{index}.db"),
                    **SETTINGS,
                    **(settings or {}),
                }
                if redis is not None:
                    config["redis"] = redis.url
                path = Path(scratch) / f"node-{index}.json"
                path.write_bytes(orjson.dumps(known_settings(root, config)))
                node = tavern_serve(path, "--loop", loop, node=redis is not None, root=root)
                servers.append(await stack.enter_async_context(node))
            yield servers


async def measure(
    name: str,
    servers: list[ServerProcess],
    redis: RedisServer | RedisCluster | None,
    across: bool,
    games: int,
    seconds: float,
    mix: str,
    think_s: float,
) -> Figures:
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    kinds = ["tavern", "thud"] if mix == "both" else [mix]
    pairs = []
    for index in range(games):
        first = servers[index % len(servers)]
        second = servers[(index + 1) % len(servers)] if across else first
        kind = kinds[index % len(kinds)]
        pairs.append(Pair(first.tcp_port, kind, deadline, latencies, think_s, second.tcp_port))
    processes = {f"node {index}": s.process.pid for index, s in enumerate(servers)}
    if isinstance(redis, RedisServer) and redis.process is not None:
        processes["redis-server"] = redis.process.pid
    elif isinstance(redis, RedisCluster):
        for index, server in enumerate(redis.servers):
            if server.process is not None:
                processes[f"redis {index}"] = server.process.pid
    stores = [] if redis is None else redis.servers if isinstance(redis, RedisCluster) else [redis]
    commands_before = [sum((await command_calls(store)).values()) for store in stores]
    before = {label: process_cpu_seconds(pid) for label, pid in processes.items()}
    started = time.perf_counter()
    seats = asyncio.create_task(seats_mid_run(servers, seconds / 2))
    await asyncio.gather(*(pair.run() for pair in pairs))
    elapsed = time.perf_counter() - started
    turns = max(sum(pair.turns for pair in pairs), 1)
    cpu = {
        label: (process_cpu_seconds(pid) - before[label]) / turns
        for label, pid in processes.items()
    }
    commands = [sum((await command_calls(store)).values()) for store in stores]
    ran = sum(commands) - sum(commands_before)
    return Figures(
        name, turns / elapsed, latencies, cpu, redis_commands=ran, turns=turns, seats=await seats
    )


async def seats_mid_run(servers: list[ServerProcess], after_s: float) -> tuple[int, int]:
    """The seats of every node's games, held there and through another node (each node's
    ``tavern_seats`` gauge), ``after_s`` into the run."""
    await asyncio.sleep(after_s)
    counts = {"local": 0, "remote": 0}
    async with aiohttp.ClientSession() as session:
        for server in servers:
            url = f"http://127.0.0.1:{server.http_port}/metrics"
            async with session.get(url) as response:
                text = await response.text()
            for where in counts:
                found = re.search(rf'^tavern_seats{{where="{where}"}} (\d+)', text, re.MULTILINE)
                counts[where] += int(found.group(1)) if found else 0
    return counts["local"], counts["remote"]


async def run(
    games: int,
    seconds: float,
    mix: str,
    think_s: float,
    loop: str,
    against: list[Path],
    cluster: bool,
) -> list[Figures]:
    figures = []
    async with arena_nodes(1, None, loop) as servers:
        await asyncio.sleep(1.0)
        figures.append(
            await measure("one node", servers, None, False, games, seconds, mix, think_s)
        )
    for name, across in (("two nodes, seats local", False), ("two nodes, seats across", True)):
        with redis_server() as redis:
            async with arena_nodes(2, redis, loop) as servers:
                await asyncio.sleep(1.0)
                figures.append(
                    await measure(name, servers, redis, across, games, seconds, mix, think_s)
                )
    if cluster:
        with redis_cluster() as three:
            async with arena_nodes(2, three, loop) as servers:
                await asyncio.sleep(1.0)
                name = "across, Redis Cluster"
                figures.append(
                    await measure(name, servers, three, True, games, seconds, mix, think_s)
                )
    for root in against:
        with redis_server() as redis:
            async with arena_nodes(2, redis, loop, root=root) as servers:
                await asyncio.sleep(1.0)
                name = f"across, {root.name}"
                figures.append(
                    await measure(name, servers, redis, True, games, seconds, mix, think_s)
                )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--think-ms", type=float, default=0.0, help="each bot's time per move")
    parser.add_argument("--mix", choices=("tavern", "thud", "both"), default="tavern")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    parser.add_argument("--rounds", type=int, default=1, help="measure everything N times")
    parser.add_argument("--against", action="append", default=[], type=Path)
    parser.add_argument(
        "--cluster", action="store_true", help="also seats across on a three-master Redis Cluster"
    )
    args = parser.parse_args()
    use_loop(args.loop)
    thinking = f", bots think {args.think_ms:g} ms" if args.think_ms else ""
    print(
        f"cluster: {args.games} {args.mix} games, {args.loop} loop, "
        f"{args.seconds:g} s per figure{thinking}",
        flush=True,
    )
    ratios: dict[str, list[float]] = {}
    added_p50: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        figures = asyncio.run(
            run(
                args.games,
                args.seconds,
                args.mix,
                args.think_ms / 1000,
                args.loop,
                [path.resolve() for path in args.against],
                args.cluster,
            )
        )
        report(figures)
        alone = figures[0]
        for figure in figures[1:]:
            ratios.setdefault(figure.name, []).append(
                figure.total_cpu_per_turn / alone.total_cpu_per_turn
            )
            added = percentile(figure.latencies, 0.5) - percentile(alone.latencies, 0.5)
            added_p50.setdefault(figure.name, []).append(added)
    if args.rounds > 1:
        for name, values in ratios.items():
            print(
                f"median over {args.rounds} rounds, {name}: CPU per turn "
                f"{statistics.median(values):.2f}x one node's, reply p50 "
                f"{statistics.median(added_p50[name]) * 1000:+.1f} ms"
            )


def report(figures: list[Figures]) -> None:
    alone = figures[0]
    for figure in figures:
        processes = ", ".join(
            f"{label} {cpu * 1e6:.0f}" for label, cpu in figure.cpu_per_turn.items()
        )
        cpu_ratio = figure.total_cpu_per_turn / alone.total_cpu_per_turn
        p50_added = percentile(figure.latencies, 0.5) - percentile(alone.latencies, 0.5)
        local, remote = figure.seats
        crossing = (
            f"; Redis {figure.redis_commands / figure.turns:.2f} commands a turn, seats "
            f"{remote / max(local + remote, 1):.0%} remote"
            if figure.redis_commands
            else ""
        )
        print(
            f"{figure.name:>24}: {figure.turns_per_s:>7,.0f} turns/s; reply "
            f"{describe_ms(figure.latencies)} (p50 {p50_added * 1000:+.1f} ms); CPU per turn "
            f"{figure.total_cpu_per_turn * 1e6:.0f} us ({processes}), {cpu_ratio:.2f}x one "
            f"node's{crossing}",
            flush=True,
        )


if __name__ == "__main__":
    main()
