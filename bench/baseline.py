"""The physical limit: a bare asyncio server relaying newline-terminated JSON lines.

    python bench/baseline.py [--games N] [--seconds S] [--loop asyncio|uvloop]

Each "game" is two connections taking turns, as in the arena: a client sends a line, the
server parses it as JSON and answers the other client with a line, which answers in turn. No
rules, no records, no checks: what any asyncio server on this machine can do at most under the
same load. ``bench/load.py`` runs this in the same run and prints its own figure as a ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
import time
from typing import Any

import orjson

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))
from bench.common import describe_ms, use_loop


def serve_forever(port_queue: Any, loop: str) -> None:
    """The bare relay server (runs in its own process)."""
    use_loop(loop)
    partners: dict[asyncio.StreamWriter, asyncio.StreamWriter] = {}
    waiting: dict[int, asyncio.StreamWriter] = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        pair = orjson.loads(await reader.readline())["pair"]  # which game this end belongs to
        if pair in waiting:
            other = waiting.pop(pair)
            partners[writer], partners[other] = other, writer
        else:
            waiting[pair] = writer
        try:
            while line := await reader.readline():
                message = orjson.loads(line)
                partners[writer].write(
                    orjson.dumps({"type": "turn", "n": message["n"] + 1}) + b"\n"
                )
        except ConnectionError:
            pass  # the clients hang up when the measurement ends

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
        port_queue.put(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(main())


async def drive(port: int, games: int, seconds: float) -> tuple[int, list[float]]:
    """Lock-step pairs; returns the lines relayed and each line's relay latency."""
    latencies: list[float] = []
    count = 0
    deadline = time.perf_counter() + seconds + 0.5

    async def pair(number: int) -> None:
        nonlocal count
        ends = []
        for _ in range(2):
            end = await asyncio.open_connection("127.0.0.1", port)
            end[1].write(orjson.dumps({"pair": number}) + b"\n")
            ends.append(end)
        await asyncio.sleep(0.5)  # every pair is linked before the clock starts
        (first_reader, first_writer), (second_reader, second_writer) = ends
        sent = time.perf_counter()
        first_writer.write(orjson.dumps({"n": 0}) + b"\n")
        reader, writer = second_reader, second_writer
        while time.perf_counter() < deadline:
            line = await reader.readline()
            now = time.perf_counter()
            latencies.append(now - sent)
            count += 1
            sent = now
            writer.write(orjson.dumps({"n": orjson.loads(line)["n"]}) + b"\n")
            reader, writer = (
                (first_reader, first_writer)
                if reader is second_reader
                else (second_reader, second_writer)
            )
        first_writer.close()
        second_writer.close()

    await asyncio.gather(*(pair(number) for number in range(games)))
    return count, latencies


def run(games: int, seconds: float, loop: str) -> tuple[float, list[float]]:
    """Lines relayed per second and their latencies, server and clients in two processes."""
    ports: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve_forever, args=(ports, loop), daemon=True)
    server.start()
    try:
        port = ports.get(timeout=30)
        use_loop(loop)
        count, latencies = asyncio.run(drive(port, games, seconds))
    finally:
        server.terminate()
        server.join(10)
    return count / seconds, latencies


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    args = parser.parse_args()
    rate, latencies = run(args.games, args.seconds, args.loop)
    print(
        f"baseline ({args.loop}, {args.games} pairs): {rate:,.0f} lines/s; "
        f"relay {describe_ms(latencies)}"
    )


if __name__ == "__main__":
    main()
