"""A Thud bot far from the arena: behind a proxy of its own that holds every line a while each
way (this machine's kernel has no netem), it joins a waiting game as the dwarfs on the Python
SDK (which asks for pings and answers them at once), thinks a given time each turn, and prints
its own measure of each turn's thinking (from the turn's line read to its reply written), one
JSON list on stdout at the end.

    tests/bots/far_thud.py --port N --delay-ms 50 --thinking 0.02,0.06,0.04

A process of its own, as a bot far away is: the arena's event loop and this one's do not wait
on each other (tests/test_think_time.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson

from bots.sdk import ArenaClient


@asynccontextmanager
async def delaying_proxy(port: int, delay_s: float) -> AsyncIterator[int]:
    """A proxy to ``port`` that holds every line ``delay_s`` each way; the port it listens on."""

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        lines: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, line = await lines.get()
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                if not line:
                    writer.close()
                    return
                writer.write(line)

        delivering = asyncio.create_task(deliver())
        try:
            while line := await reader.readline():
                lines.put_nowait((time.monotonic() + delay_s, line))
            lines.put_nowait((time.monotonic() + delay_s, b""))
            await delivering
        finally:
            delivering.cancel()

    async def relay(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", port, limit=1 << 24)
        # Cancelled as the process ends, its game over: nothing more to relay, nothing to say.
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(pump(client_r, server_w), pump(server_r, client_w))

    proxy = await asyncio.start_server(relay, "127.0.0.1", 0, limit=1 << 24)
    async with proxy:
        yield proxy.sockets[0].getsockname()[1]


async def main(port: int, delay_s: float, thinking: list[float]) -> list[float]:
    measures: list[float] = []

    async def think(turn: dict[str, Any]) -> dict[str, Any]:
        read_at = time.perf_counter()
        await asyncio.sleep(thinking[len(measures) % len(thinking)])
        measures.append(time.perf_counter() - read_at)
        return {"type": "player-turn", "move": turn["state"]["moves"][0]}

    async with (
        delaying_proxy(port, delay_s) as proxy_port,
        await ArenaClient.connect("127.0.0.1", proxy_port) as client,
    ):
        await client.join(None, nick="far", game="thud", side="dwarf")
        await client.play(think)
    return measures


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay-ms", type=int, required=True)
    parser.add_argument("--thinking", required=True, help="seconds, comma-separated")
    args = parser.parse_args()
    thinking = [float(seconds) for seconds in args.thinking.split(",")]
    measures = asyncio.run(main(args.port, args.delay_ms / 1000, thinking))
    print(orjson.dumps(measures).decode())
