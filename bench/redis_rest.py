"""What arena nodes ask of their Redis at rest: commands per second, per node, as the arena grows.

    python bench/redis_rest.py [--nodes 3 6 10] [--games 0 100 1000] [--seconds 10] [--warmup 3]
                               [--light 0 47]

For each number of nodes and of games: one ``redis-server`` on loopback and that many ``tavern
serve`` nodes on it (real processes, records in a scratch SQLite file each); ``--games``
simulations created and waiting for their second player, spread over the nodes (each with its
creator's connection and one bot seated, both kept open). Nothing else happens: no turn is
played, no bot seeks, no page watches. After ``--warmup`` seconds, Redis's own count of the
commands it ran (``INFO commandstats``) is read twice, ``--seconds`` apart.

With ``--light N``, N light nodes more, in this process: each an arena of its own with no game
and a real ``ClusterNode`` on it (the control plane a ``tavern serve`` node runs: heartbeat,
directory, lobby, seeks when seeking), to reach fifty nodes on a machine that holds only a few
real ones. They count among the nodes; their CPU is this process's.

Printed for each figure: Redis's commands per second in all and per node, the commands that
make most of them, Redis's CPU per second (``INFO cpu``) and the nodes' (``/proc``): the work
the control plane costs before a single turn is played, which issue 32 asks to grow with what
changes rather than with how many nodes and games there are.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import CLOCK_TICKS, ServerProcess, tavern_serve
from server.arena import Arena
from server.cluster.node import ClusterNode
from server.config import config_from_mapping
from tests.services import RedisServer, redis_server

START_S = 60.0  # how long one node, or one bot, may take to start


@dataclass
class Figure:
    nodes: int
    light: int
    games: int
    seconds: float
    commands: dict[str, int]  # each command's calls over ``seconds``
    redis_cpu_s: float
    nodes_cpu_s: float
    light_cpu_s: float

    def per_second(self) -> float:
        return sum(self.commands.values()) / self.seconds


async def redis_info(redis: RedisServer, section: str) -> dict[str, str]:
    """One section of ``INFO``, as redis-cli prints it (``key:value`` lines)."""
    process = await asyncio.create_subprocess_exec(
        "redis-cli", "-p", str(redis.port), "INFO", section, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    info = {}
    for line in out.decode().splitlines():
        key, found, value = line.partition(":")
        if found:
            info[key] = value.strip()
    return info


async def command_calls(redis: RedisServer) -> dict[str, int]:
    """How many times Redis ran each command since it started (``cmdstat_get: calls=3,...``)."""
    calls = {}
    for key, value in (await redis_info(redis, "commandstats")).items():
        fields = dict(field.split("=", 1) for field in value.split(","))
        calls[key.removeprefix("cmdstat_")] = int(fields["calls"])
    return calls


async def redis_cpu(redis: RedisServer) -> float:
    info = await redis_info(redis, "cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def process_cpu(pid: int) -> float:
    """A process's CPU seconds (user and system, its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


@contextlib.asynccontextmanager
async def arena_nodes(
    redis: RedisServer, count: int, scratch: Path
) -> AsyncIterator[list[ServerProcess]]:
    """``count`` nodes on ``redis``, started one after another (each prints its ports)."""
    async with contextlib.AsyncExitStack() as stack:
        nodes = []
        for number in range(count):
            folder = scratch / f"node{number}"
            folder.mkdir()
            config = {
                "port": 0,
                "httpPort": 0,
                "database": str(folder / "arena.db"),
                "redis": redis.url,
                "maxConnections": 100_000,
                "maxConnectionsPerAddress": 100_000,
                "maxWaitingSimulationsPerAddress": 100_000,
                "waitingSimulationExpiryMs": 3_600_000,
                "idleTimeoutMs": 3_600_000,
            }
            path = folder / "node.json"
            path.write_bytes(orjson.dumps(config))
            nodes.append(await stack.enter_async_context(tavern_serve(path, node=True)))
        yield nodes


@contextlib.asynccontextmanager
async def light_nodes(redis: RedisServer, count: int) -> AsyncIterator[None]:
    """``count`` light nodes in this process (see the module's docstring), each linked and in
    the arena when the block starts."""
    config = config_from_mapping({"redis": redis.url})
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(count):
            arena = Arena(config)
            node = ClusterNode(arena, config)
            arena.elsewhere = node
            await stack.enter_async_context(arena.running())
            await stack.enter_async_context(node.running({"http": "127.0.0.1:1"}))
        yield


class Line:
    """One bot's connection: JSON lines each way."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def to(cls, node: ServerProcess) -> Line:
        return cls(*await asyncio.open_connection("127.0.0.1", node.tcp_port))

    async def ask(self, message: dict[str, object], answer: str) -> dict[str, object]:
        """Send ``message`` and read lines until one of type ``answer``."""
        self.writer.write(orjson.dumps(message) + b"\n")
        async with asyncio.timeout(START_S):
            while True:
                line: dict[str, object] = orjson.loads(await self.reader.readline())
                if line.get("type") == answer:
                    return line
                if line.get("type") == "error":
                    raise RuntimeError(f"the node refused {message}: {line}")

    def close(self) -> None:
        self.writer.close()


async def waiting_games(nodes: list[ServerProcess], games: int) -> list[Line]:
    """``games`` simulations waiting for their second player, round the nodes."""
    lines = []
    for number in range(games):
        node = nodes[number % len(nodes)]
        creator, player = await Line.to(node), await Line.to(node)
        ready = await creator.ask({"type": "create-simulation"}, "ready")
        join = {"type": "join-simulation", "simulationId": ready["simulationId"], "nick": "b"}
        player.writer.write(orjson.dumps(join) + b"\n")
        lines += [creator, player]
    return lines


async def measure(
    nodes_count: int, light: int, games: int, seconds: float, warmup: float
) -> Figure:
    with tempfile.TemporaryDirectory(prefix="tavern-rest-") as scratch, redis_server() as redis:
        async with (
            arena_nodes(redis, nodes_count, Path(scratch)) as nodes,
            light_nodes(redis, light),
        ):
            lines = await waiting_games(nodes, games)
            try:
                await asyncio.sleep(warmup)
                before, redis_before = await command_calls(redis), await redis_cpu(redis)
                nodes_before = sum(process_cpu(node.process.pid) for node in nodes)
                light_before = time.process_time()
                started = time.monotonic()
                await asyncio.sleep(seconds)
                after, redis_after = await command_calls(redis), await redis_cpu(redis)
                nodes_after = sum(process_cpu(node.process.pid) for node in nodes)
                light_cpu = time.process_time() - light_before
                took = time.monotonic() - started
            finally:
                for line in lines:
                    line.close()
    commands = {name: after[name] - before.get(name, 0) for name in after}
    commands = {name: calls for name, calls in commands.items() if calls and name != "info"}
    return Figure(
        nodes_count,
        light,
        games,
        took,
        commands,
        redis_after - redis_before,
        nodes_after - nodes_before,
        light_cpu,
    )


def report(figure: Figure) -> Iterator[str]:
    per_second = figure.per_second()
    nodes = figure.nodes + figure.light
    light = f" ({figure.light} light)" if figure.light else ""
    light_cpu = f", the light ones' {figure.light_cpu_s / figure.seconds:.3f} s/s" * bool(light)
    yield (
        f"{nodes} nodes{light}, {figure.games} waiting games: "
        f"{per_second:,.0f} Redis commands/s ({per_second / nodes:,.1f} a node); "
        f"Redis CPU {figure.redis_cpu_s / figure.seconds:.3f} s/s, the nodes' "
        f"{figure.nodes_cpu_s / figure.seconds:.3f} s/s{light_cpu}"
    )
    ranked = sorted(figure.commands.items(), key=lambda item: -item[1])
    yield "   " + ", ".join(f"{name} {calls / figure.seconds:,.0f}/s" for name, calls in ranked[:8])


async def main(args: argparse.Namespace) -> None:
    for nodes, light in itertools.product(args.nodes, args.light):
        for games in args.games:
            figure = await measure(nodes, light, games, args.seconds, args.warmup)
            for line in report(figure):
                print(line, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[3, 6, 10])
    parser.add_argument("--games", type=int, nargs="+", default=[0, 100, 1000])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument(
        "--light", type=int, nargs="+", default=[0], help="light nodes more, in this process"
    )
    asyncio.run(main(parser.parse_args()))
