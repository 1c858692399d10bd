"""The ladder under load: registered bots seeking rated Thud games through three nodes on one
redis-server, and what a rating update costs.

    python bench/ladder.py [--bots 2000] [--nodes 3] [--updates 2000]

Each bot connects to a node (round robin) and seeks a rated Thud game; once its game starts, the
dwarfs' bot closes its connection (its game ends by forfeit, and is rated) and the trolls' bot
closes once told it won. Printed: the pairing delay from
each seek to its ``game-info`` (p50, p99), the whole wave's time, each process's CPU; then, in
this process on an SQLite file, the CPU of one rating update (both bots' ratings and history
rows, in one transaction per batch as the records' writer does) over ``--updates`` games.
The bots are registered in the records (one SQLite file per node, copied) with one shared key,
hashed once: registering thousands of keys would measure scrypt, not the ladder.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import ServerProcess, describe_ms, tavern_serve
from server.identity import RegisteredBot, hash_key, new_key
from server.records import Records
from server.records.identities import add_bot
from server.records.ladder import rate
from tests.services import RedisServer, redis_server

SETTINGS = {"maxConnectionsPerAddress": 100_000, "maxConnections": 100_000, "reconnectGraceMs": 0}


def registered(database: Path, bots: int, key: str) -> None:
    records = Records(database)
    records.open_to_read()
    db = records.backend.connect()
    key_hash = hash_key(key)
    db.execute("BEGIN")
    for number in range(bots):
        add_bot(db, RegisteredBot(f"bot{number}", key_hash))
    db.execute("COMMIT")
    db.close()


@contextlib.asynccontextmanager
async def ladder_nodes(
    count: int, redis: RedisServer, scratch: Path, records: Path
) -> AsyncIterator[list[ServerProcess]]:
    async with contextlib.AsyncExitStack() as stack:
        nodes = []
        for index in range(count):
            database = scratch / f"node-{index}.db"
            shutil.copy(records, database)
            config = {
                "port": 0,
                "httpPort": 0,
                "database": str(database),
                "redis": redis.url,
                **SETTINGS,
            }
            path = scratch / f"node-{index}.json"
            path.write_bytes(orjson.dumps(config))
            nodes.append(await stack.enter_async_context(tavern_serve(path, node=True)))
        yield nodes


async def seek_once(port: int, name: str, key: str, delays: list[float]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    seek = {"type": "seek", "game": "thud", "bot": name, "key": key, "rated": True}
    started = time.perf_counter()
    writer.write(orjson.dumps(seek) + b"\n")
    line = await reader.readline()
    delays.append(time.perf_counter() - started)
    message = orjson.loads(line)
    if message["type"] != "game-info":
        raise RuntimeError(f"{name}: {message}")
    # The game starts (the dwarfs' first turn) and the dwarfs leave: a forfeit, rated.
    wanted = b'"turn"' if message["side"] == "dwarf" else b'"win-game"'
    while wanted not in (line := await reader.readline()):
        if not line:
            raise RuntimeError(f"{name}: closed before its game ended")
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


async def pairing(bots: int, node_count: int) -> None:
    key = new_key()
    with tempfile.TemporaryDirectory(prefix="tavern-ladder-") as folder, redis_server() as redis:
        scratch = Path(folder)
        registered(scratch / "records.db", bots, key)
        async with ladder_nodes(node_count, redis, scratch, scratch / "records.db") as nodes:
            await asyncio.sleep(1.0)  # every node has read the registered bots
            cpu_before = [node.cpu_seconds() for node in nodes]
            delays: list[float] = []
            started = time.perf_counter()
            async with asyncio.timeout(300), asyncio.TaskGroup() as tasks:
                for number in range(bots):
                    port = nodes[number % node_count].tcp_port
                    tasks.create_task(seek_once(port, f"bot{number}", key, delays))
            wave_s = time.perf_counter() - started
            cpu = [
                node.cpu_seconds() - before for node, before in zip(nodes, cpu_before, strict=True)
            ]
    print(f"{bots} bots seeking rated Thud through {node_count} nodes on one redis-server:")
    print(f"  seek -> game-info: {describe_ms(delays)}; the whole wave {wave_s:.2f} s")
    print("  node CPU: " + ", ".join(f"{seconds:.2f} s" for seconds in cpu))


def rating_updates(updates: int) -> None:
    with tempfile.TemporaryDirectory(prefix="tavern-ratings-") as folder:
        records = Records(Path(folder) / "records.db")
        records.open_to_read()
        db = records.backend.connect()
        db.execute("BEGIN")
        for number in range(updates):
            db.execute(
                "INSERT INTO games (id, game, seed, settings, status, started_at) "
                "VALUES (?, 'thud', 1, '{}', 'finished', 0)",
                (f"g{number}",),
            )
        db.execute("COMMIT")
        started = time.process_time()
        db.execute("BEGIN")
        for number in range(updates):
            bots = (f"bot{number % 100}", f"bot{(number * 7 + 1) % 100}")
            if bots[0] != bots[1]:
                rate(db, f"g{number}", "thud", bots, (None, 0, 1)[number % 3])
        db.execute("COMMIT")
        spent = time.process_time() - started
        db.close()
    per_update_us = spent / updates * 1e6
    print(f"a rating update (SQLite, {updates} games among 100 bots): {per_update_us:.0f} us CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bots", type=int, default=2000)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--updates", type=int, default=2000)
    args = parser.parse_args()
    asyncio.run(pairing(args.bots, args.nodes))
    rating_updates(args.updates)


if __name__ == "__main__":
    main()
