"""The two ways nodes could send each other frames through Redis, side by side in one run.

    python bench/transport.py [--seats 100] [--seconds 8] [--rounds 3] [--turn-bytes 3000]

Issue 32 asks for one transport between nodes on redis-py's public API, chosen between:

- ``streams``: a Stream per node's inbox; a sender adds each loop round's frames for a node as
  one entry (``XADD ... MINID ~`` ten seconds ago), the receiver reads with ``XREAD BLOCK``
  from the last id it read, so that a connection cut short loses nothing: it reads on from
  that id; then it trims what it read (``XTRIM ... MINID ~``).
- ``sharded``: sharded pub/sub (Redis 7): each loop round's frames for a node go as one
  ``SPUBLISH`` to its inbox channel, the receiver holds an ``SSUBSCRIBE`` and reads with
  ``PubSub.get_message``; delivery is at most once, so a cut connection loses what was in
  flight (the seats' own sequence numbers send it again, ``server.cluster.wire.SEQ``).

Both send as ``server.cluster.link`` does: each loop round's commands written at once on the
sender's connection, pipelined behind those still unanswered, the replies read as they come.

Two nodes, A and B, in this process, each with its own clients (a sender's connection and a
receiver's): ``--seats`` seats cross from A to B as a cross-node game's seat does, each turn a
``DATA`` frame of ``--turn-bytes`` (the turn message) from B to A and a ``MOVE`` frame of 100
bytes back. Rounds alternate the transports on one ``redis-server``. Printed per transport:
round trips per second, this process's CPU per round trip (both nodes' clients), Redis's CPU
per round trip (``INFO cpu``), Redis commands per round trip (``INFO commandstats``) and the
round trip's latency.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.connection import AbstractConnection

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import percentile
from bench.redis_rest import command_calls, redis_cpu
from server.cancelling import stop_if_cancelled
from server.cluster import wire
from tests.services import RedisServer, redis_server

KEPT_MS = 10_000  # an inbox's entries are kept this long at most if nobody reads them
READ_COUNT = 1_000  # entries read at most per XREAD
A, B = "aaaaaaaa", "bbbbbbbb"  # the two nodes' ids (a batch starts with its sender's)


def inbox(node: str) -> str:
    return f"tavern:bench-inbox:{node}"


class Node:
    """One end: frames queued this loop round go in one entry (or message) per node, written
    as the link writes (``server.cluster.link``): pipelined on a connection of the sender's,
    without waiting for the replies to the writes before, which a task reads as they come."""

    def __init__(self, name: str, url: str, received: Callable[[bytes], None]) -> None:
        self.name = name
        self.header = name.encode()
        self.url = url
        self.received = received
        self.outbox: dict[str, list[bytes]] = {}
        self.wake = asyncio.Event()

    def send(self, node: str, frame: bytes) -> None:
        self.outbox.setdefault(node, []).append(frame)
        self.wake.set()

    def commands(self) -> list[tuple[str | bytes | int, ...]]:
        """What this round's frames take: a command per node."""
        raise NotImplementedError

    async def read(self) -> None:
        """Hand every batch sent to this node to ``received``, for ever."""
        raise NotImplementedError

    async def run(self) -> None:
        pool = ConnectionPool.from_url(self.url, socket_timeout=None)
        try:
            sender: AbstractConnection = await pool.get_connection()  # type: ignore[no-untyped-call]
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._send(sender))
                tasks.create_task(self._replies(sender))
                tasks.create_task(self.read())
        finally:
            await pool.disconnect()

    async def _send(self, connection: AbstractConnection) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            commands = self.commands()
            await connection.send_packed_command(
                connection.pack_commands(commands), check_health=False
            )
            stop_if_cancelled()

    async def _replies(self, connection: AbstractConnection) -> None:
        while True:
            await connection.read_response(timeout=math.inf)
            stop_if_cancelled()

    def batches(self) -> list[tuple[str, bytes]]:
        batches, self.outbox = self.outbox, {}
        return [(inbox(node), self.header + b"".join(frames)) for node, frames in batches.items()]


class StreamNode(Node):
    def commands(self) -> list[tuple[str | bytes | int, ...]]:
        oldest = f"{int(time.time() * 1000) - KEPT_MS}-0"
        return [("XADD", key, "MINID", "~", oldest, "*", "f", data) for key, data in self.batches()]

    async def read(self) -> None:
        async with Redis.from_url(self.url, socket_timeout=None) as redis:
            key, last = inbox(self.name), b"$"
            while True:
                found = cast(
                    list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]],
                    await redis.xread({key: last}, count=READ_COUNT, block=0),
                )
                stop_if_cancelled()
                for _, entries in found:
                    for entry_id, fields in entries:
                        last = entry_id
                        self.received(fields[b"f"])
                # What is read goes: the inbox holds only what its node has not read yet.
                await redis.xtrim(key, minid=last, approximate=True)


class ShardedNode(Node):
    def commands(self) -> list[tuple[str | bytes | int, ...]]:
        return [("SPUBLISH", channel, data) for channel, data in self.batches()]

    async def read(self) -> None:
        async with Redis.from_url(self.url) as redis, redis.pubsub() as pubsub:
            await pubsub.ssubscribe(inbox(self.name))
            while True:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
                stop_if_cancelled()
                if message is not None:
                    self.received(message["data"])


NODES: dict[str, type[Node]] = {"streams": StreamNode, "sharded": ShardedNode}


@dataclass
class Figures:
    transport: str
    round_trips: int
    seconds: float
    cpu_s: float
    redis_cpu_s: float
    commands: int
    latencies: list[float] = field(default_factory=list)

    def describe(self) -> str:
        per = 1e6 / self.round_trips
        return (
            f"{self.transport:>8}: {self.round_trips / self.seconds:8,.0f} round trips/s, "
            f"CPU {self.cpu_s * per:5.1f} us here + {self.redis_cpu_s * per:5.1f} us in Redis "
            f"a round trip, {self.commands / self.round_trips:.2f} Redis commands a round trip; "
            f"latency p50 {percentile(self.latencies, 0.5) * 1000:.2f} ms, "
            f"p99 {percentile(self.latencies, 0.99) * 1000:.2f} ms"
        )


@contextlib.asynccontextmanager
async def two_nodes(
    kind: type[Node], url: str, seats: int, turn: bytes
) -> AsyncIterator[tuple[list[float], list[int]]]:
    """A and B running ``kind``: every seat's turns go round until the block ends; yields
    the latencies so far and the round trips so far (a one-item list)."""
    latencies: list[float] = []
    count = [0]
    sent_at = [0.0] * seats
    a: Node
    b: Node

    def at_a(data: bytes) -> None:  # turn messages: the bot answers at once
        for _, seat, _ in wire.read_batch(data).frames:
            a.send(B, wire.frame(wire.MOVE, seat, b'{"type":"player-turn"}' + b" " * 78))

    def at_b(data: bytes) -> None:  # moves: the match plays and asks the next turn
        now = time.perf_counter()
        for _, seat, _ in wire.read_batch(data).frames:
            latencies.append(now - sent_at[seat])
            count[0] += 1
            sent_at[seat] = now
            b.send(A, wire.frame(wire.DATA, seat, turn))

    a, b = kind(A, url, at_a), kind(B, url, at_b)
    running = [asyncio.create_task(node.run()) for node in (a, b)]
    try:
        await asyncio.sleep(0.5)  # both subscribed (or reading)
        now = time.perf_counter()
        for seat in range(seats):
            sent_at[seat] = now
            b.send(A, wire.frame(wire.DATA, seat, turn))
        yield latencies, count
    finally:
        for task in running:
            task.cancel()
        # redis-py may turn a cancelled read into its TimeoutError: either way, stopped.
        await asyncio.gather(*running, return_exceptions=True)


async def measure(
    transport: str, redis: RedisServer, seats: int, seconds: float, turn: bytes
) -> Figures:
    async with two_nodes(NODES[transport], redis.url, seats, turn) as (latencies, count):
        await asyncio.sleep(1.0)  # warm up
        calls, redis_before = await command_calls(redis), await redis_cpu(redis)
        trips, cpu = count[0], time.process_time()
        del latencies[:]
        await asyncio.sleep(seconds)
        cpu, trips = time.process_time() - cpu, count[0] - trips
        kept = list(latencies)
        redis_after, calls_after = await redis_cpu(redis), await command_calls(redis)
    commands = sum(calls_after.values()) - sum(calls.values())
    return Figures(transport, trips, seconds, cpu, redis_after - redis_before, commands, kept)


async def main(args: argparse.Namespace) -> None:
    turn = b"x" * args.turn_bytes
    rounds: dict[str, list[Figures]] = {name: [] for name in NODES}
    with redis_server() as redis:
        for number in range(args.rounds):
            order = list(NODES) if number % 2 == 0 else list(reversed(NODES))
            for name in order:
                figure = await measure(name, redis, args.seats, args.seconds, turn)
                rounds[name].append(figure)
                print(f"round {number + 1} {figure.describe()}", flush=True)
    print(f"all rounds ({args.seats} seats, turns of {args.turn_bytes:,} bytes):")
    for name, figures in rounds.items():
        trips = sum(f.round_trips for f in figures)
        whole = Figures(
            name,
            trips,
            sum(f.seconds for f in figures),
            sum(f.cpu_s for f in figures),
            sum(f.redis_cpu_s for f in figures),
            sum(f.commands for f in figures),
            [latency for f in figures for latency in f.latencies],
        )
        spread = [f.cpu_s * 1e6 / f.round_trips for f in figures]
        print(f"{whole.describe()} (CPU here by round {min(spread):.1f}-{max(spread):.1f} us)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seats", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--turn-bytes", type=int, default=3000)
    asyncio.run(main(parser.parse_args()))
