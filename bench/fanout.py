"""Spectator fan-out: W websocket watchers on one fast game.

    python bench/fanout.py [--watchers 500] [--turns 300] [--delay-ms 20] [--loop asyncio|uvloop]

Two bots play Dwarven Tavern as fast as the delay allows while W pages watch it over the
visor's websocket. For every turn it measures the time from the bot sending its move to the
LAST watcher receiving that turn, and prints its distribution, plus the game's own pace with
and without watchers (a spectator must never slow a game). The bots run in a process of their
own; the watchers share this one, so the lag includes this process reading W sockets.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import multiprocessing
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import arena_process, describe_ms, use_loop


async def play(
    port: int,
    turns: int,
    delay_s: float,
    sent: dict[int, float],
    started: asyncio.Event,
    simulation: asyncio.Future[str],
) -> float:
    """Two passing bots; returns turns per second. ``sent[n]`` is when move n was sent."""
    ends = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
    (r1, w1), (r2, w2) = ends
    w1.write(b'{"type":"create-simulation"}\n')
    simulation_id = orjson.loads(await r1.readline())["simulationId"]
    simulation.set_result(simulation_id)
    await started.wait()
    join = {"type": "join-simulation", "nick": "bench", "simulationId": simulation_id}
    teams = []
    for reader, writer in ends:
        writer.write(orjson.dumps(join) + b"\n")
        teams.append(orjson.loads(await reader.readline())["team"])
    moves = 0
    began = time.perf_counter()
    players = [(r1, w1, teams[0]), (r2, w2, teams[1])]
    while moves < turns:
        reader, writer, team = players[moves % 2]
        message = orjson.loads(await reader.readline())
        while message["type"] != "turn":
            message = orjson.loads(await reader.readline())
        if delay_s:
            await asyncio.sleep(delay_s)
        moves += 1
        sent[moves] = time.perf_counter()
        dwarf = message["state"][team][0]["id"]
        writer.write(
            orjson.dumps({"type": "player-turn", "actions": [{"botId": dwarf, "type": "PASS"}]})
            + b"\n"
        )
    elapsed = time.perf_counter() - began
    for writer in (w1, w2):
        writer.close()
    return moves / elapsed


TURN_NUMBER = re.compile(rb'\{"type":"turn","simulationId":"[0-9a-r]+","turn":(\d+)')


async def watch(
    port: int,
    simulation_id: str,
    arrivals: dict[int, float],
    ready: asyncio.Event,
    done: asyncio.Event,
) -> None:
    """One page, as lean as a client can be: a raw websocket whose frames are never decoded.

    500 aiohttp clients in one Python process cannot read 20,000 messages a second; this
    reads the stream in chunks and finds each turn's number with a regular expression.
    """
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    await reader.readuntil(b"\r\n\r\n")
    writer.write(masked_text_frame(orjson.dumps({"type": "watch", "simulationId": simulation_id})))
    ready.set()
    tail = b""
    while not done.is_set():
        try:
            chunk = await asyncio.wait_for(reader.read(1 << 16), 1.0)
        except TimeoutError:
            continue
        if not chunk:
            break
        now = time.perf_counter()
        data = tail + chunk
        for found in TURN_NUMBER.finditer(data):
            number = int(found.group(1))
            if now > arrivals.get(number, 0.0):
                arrivals[number] = now  # keep the last watcher's arrival
        tail = data[-120:]  # a message split between two reads is found next time
    writer.close()


def masked_text_frame(payload: bytes) -> bytes:
    """A client-to-server websocket text frame (clients must mask; payloads under 126 bytes)."""
    mask = os.urandom(4)
    masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
    return bytes([0x81, 0x80 | len(payload)]) + mask + masked


def play_in_process(port: int, turns: int, delay_s: float, loop: str, out: Any, go: Any) -> None:
    """The two bots, in a process of their own so the watchers cannot slow them."""
    use_loop(loop)

    async def main() -> None:
        simulation: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        start = asyncio.Event()
        sent: dict[int, float] = {}
        game = asyncio.create_task(play(port, turns, delay_s, sent, start, simulation))
        out.put(await simulation)
        await asyncio.to_thread(go.get)  # the watchers are ready
        start.set()
        pace = await game
        out.put((pace, sent))

    asyncio.run(main())


async def run(watchers: int, turns: int, delay_s: float, loop: str) -> None:
    async with arena_process(loop) as server:
        await asyncio.sleep(1.0)
        alone = await bots_alone(server.tcp_port, turns, delay_s, loop)
        channel: Any = multiprocessing.Queue()
        go: Any = multiprocessing.Queue()
        bots = multiprocessing.Process(
            target=play_in_process, args=(server.tcp_port, turns, delay_s, loop, channel, go)
        )
        bots.start()
        simulation_id = await asyncio.to_thread(channel.get, True, 30)
        arrivals: dict[int, float] = {}
        done = asyncio.Event()
        readies = [asyncio.Event() for _ in range(watchers)]
        tasks = [
            asyncio.create_task(watch(server.http_port, simulation_id, arrivals, ready, done))
            for ready in readies
        ]
        await asyncio.wait_for(asyncio.gather(*(ready.wait() for ready in readies)), 60)
        await asyncio.sleep(1.0)
        go.put("go")
        watched, sent = await asyncio.to_thread(channel.get, True, 600)
        await asyncio.sleep(1.0)
        done.set()
        await asyncio.gather(*tasks)
        bots.join(10)
    lags = [arrivals[n] - sent[n] for n in sent if n in arrivals]
    print(
        f"fan-out ({loop}): {watchers} watchers, {turns} turns, a move every {delay_s * 1000:g} ms"
    )
    print(f"  move sent -> last watcher has the turn: {describe_ms(lags)} ({len(lags)} turns seen)")
    print(
        f"  game pace: {alone:,.0f} turns/s unwatched, {watched:,.0f} turns/s watched by {watchers}"
    )


async def bots_alone(port: int, turns: int, delay_s: float, loop: str) -> float:
    """The same game with nobody watching, for comparison."""
    channel: Any = multiprocessing.Queue()
    go: Any = multiprocessing.Queue()
    bots = multiprocessing.Process(
        target=play_in_process, args=(port, turns, delay_s, loop, channel, go)
    )
    bots.start()
    await asyncio.to_thread(channel.get, True, 30)
    go.put("go")
    pace, _ = await asyncio.to_thread(channel.get, True, 600)
    bots.join(10)
    return float(pace)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--watchers", type=int, default=500)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    args = parser.parse_args()
    use_loop(args.loop)
    asyncio.run(run(args.watchers, args.turns, args.delay_ms / 1000, args.loop))


if __name__ == "__main__":
    main()
