"""Hostile load while honest games play: what it costs the server and the honest players.

    python bench/hostile.py [--games 20] [--attackers 2000] [--loop asyncio|uvloop]

Two cases, each against a fresh server in another process:

* **burst**: honest Tavern games (bots moving every dwarf in a random direction) play; then
  ``--attackers`` connections each send one unterminated message of 65,000 bytes (just under
  ``maxMessageBytes``) and wait. Printed: the server CPU the burst cost, its memory, and the
  honest games' reply latency and longest wait for a turn while it lasted. Three payloads: a
  long string (``{"type":"x","pad":"aaa...``), and two that never close but hold a ``}``
  every few bytes, in brackets (``{"p":[{},{},{},...``) or in strings (``{"p":["}","}",...``),
  the costliest framings for the reader.
* **page flood**: one page websocket sends bad requests as fast as it can and reads none of the
  answers. Printed: how many it sent before the server cut it off, and the server's memory.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import os
import random
import socket
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import ServerProcess, arena_process, describe_ms, use_loop

MESSAGE_BYTES = 65_000
DIRECTIONS = ("NORTH", "EAST", "SOUTH", "WEST")


class HonestGames:
    """Pairs of Tavern bots that move every dwarf at random, game after game, timing replies."""

    def __init__(self, port: int, games: int) -> None:
        self.port, self.games = port, games
        self.latencies: list[tuple[float, float]] = []  # (when, how long)
        self.stop = asyncio.Event()
        self.rng = random.Random(1)

    async def run(self) -> None:
        await asyncio.gather(*(self.pair() for _ in range(self.games)))

    async def pair(self) -> None:
        while not self.stop.is_set():
            ends = [await asyncio.open_connection("127.0.0.1", self.port) for _ in range(2)]
            ends[0][1].write(b'{"type":"create-simulation"}\n')
            simulation_id = orjson.loads(await ends[0][0].readline())["simulationId"]
            for _, writer in ends:
                join = {"type": "join-simulation", "nick": "honest", "simulationId": simulation_id}
                writer.write(orjson.dumps(join) + b"\n")
            await asyncio.gather(*(self.bot(reader, writer) for reader, writer in ends))
            for _, writer in ends:
                writer.close()

    async def bot(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        team, sent = "", 0.0
        while True:
            line = await reader.readline()
            if not line:
                return
            message = orjson.loads(line)
            kind = message["type"]
            if kind == "game-info":
                team = message["team"]
            elif kind == "turn":
                now = time.perf_counter()
                if sent:
                    self.latencies.append((now, now - sent))
                if self.stop.is_set():
                    return
                actions = [
                    {"botId": d["id"], "type": "MOVE", "direction": self.rng.choice(DIRECTIONS)}
                    for d in message["state"][team]
                ]
                writer.write(orjson.dumps({"type": "player-turn", "actions": actions}) + b"\n")
                sent = time.perf_counter()
            elif kind in ("win-game", "loss-game", "draw-game"):
                return


def payload(kind: str) -> bytes:
    if kind == "string":
        head = b'{"type":"x","pad":"'
        return head + b"a" * (MESSAGE_BYTES - len(head))
    head = b'{"p":['
    if kind == "brackets":
        return head + b"{}," * ((MESSAGE_BYTES - len(head)) // 3)
    return head + b'"}",' * ((MESSAGE_BYTES - len(head)) // 4)


async def burst(server: ServerProcess, games: int, attackers: int, kind: str) -> None:
    honest = HonestGames(server.tcp_port, games)
    playing = asyncio.create_task(honest.run())
    await asyncio.sleep(2.0)
    # What an honest turn costs, to tell the burst's cost apart from the honest games' own.
    cpu_start, turns_start = server.cpu_seconds(), len(honest.latencies)
    await asyncio.sleep(3.0)
    per_turn = (server.cpu_seconds() - cpu_start) / (len(honest.latencies) - turns_start)
    rss_before, cpu_before = server.rss_bytes(), server.cpu_seconds()
    started = time.perf_counter()
    data = payload(kind)
    connections = []
    for _ in range(attackers):
        _, writer = await asyncio.open_connection("127.0.0.1", server.tcp_port)
        connections.append(writer)
        for offset in range(0, len(data), 1460):  # as the network delivers it: in segments
            writer.write(data[offset : offset + 1460])
        await writer.drain()
    sent = time.perf_counter()
    # Until the honest games are back to normal (turns coming, none held up for 0.5 s in the
    # last 2 s), at least 3 s and at most 90 s.
    while time.perf_counter() - sent < 90:
        await asyncio.sleep(0.5)
        now = time.perf_counter()
        recent = sorted(when for when, _ in honest.latencies if when >= now - 2.0)
        pauses = [b - a for a, b in itertools.pairwise([now - 2.0, *recent, now])]
        if now - sent >= 3.0 and recent and max(pauses) < 0.5:
            break
    finished = time.perf_counter()
    during = [latency for when, latency in honest.latencies if started <= when <= finished]
    cpu = server.cpu_seconds() - cpu_before - per_turn * len(during)
    rss = server.rss_bytes()
    turns = sorted(when for when, _ in honest.latencies if started <= when <= finished)
    longest = max((b - a for a, b in itertools.pairwise([started, *turns])), default=0.0)
    honest.stop.set()
    for writer in connections:
        writer.close()
    try:
        await asyncio.wait_for(playing, 30)
    except TimeoutError:
        print("  (the honest games did not finish within 30 s of the end)")
    print(
        f"burst ({kind} payload): {attackers:,} x {MESSAGE_BYTES:,} bytes sent in "
        f"{sent - started:.1f} s; the burst cost the server {cpu:.2f} s of CPU beyond the "
        f"honest games' own; RSS {rss_before / 2**20:.0f} -> {rss / 2**20:.0f} MiB; honest "
        f"replies over the {finished - started:.1f} s until they were back to normal: "
        f"{describe_ms(during)}; longest time in which no honest game got a turn "
        f"{longest * 1000:.0f} ms"
    )


def websocket_frame(text: bytes) -> bytes:
    mask = os.urandom(4)
    return (
        bytes([0x81, 0x80 | len(text)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(text))
    )


async def page_flood(server: ServerProcess, seconds: float) -> None:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", server.http_port))
    reader, writer = await asyncio.open_connection(sock=sock)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    await reader.readuntil(b"\r\n\r\n")
    rss_before, cpu_before = server.rss_bytes(), server.cpu_seconds()
    batch = websocket_frame(b'{"type": "no such request"}') * 1000
    sent, cut_off = 0, False
    deadline = time.perf_counter() + seconds
    try:
        while time.perf_counter() < deadline:
            writer.write(batch)
            await asyncio.wait_for(writer.drain(), max(0.1, deadline - time.perf_counter()))
            sent += 1000
    except (ConnectionError, OSError):
        cut_off = True
    except TimeoutError:
        pass
    rss = server.rss_bytes()
    writer.transport.abort()
    await asyncio.sleep(1.0)
    print(
        f"page flood: {sent:,} bad requests sent, "
        f"{'cut off by the server' if cut_off else 'never cut off'}; server RSS "
        f"{rss_before / 2**20:.0f} -> {rss / 2**20:.0f} MiB (after the close "
        f"{server.rss_bytes() / 2**20:.0f} MiB), CPU {server.cpu_seconds() - cpu_before:.2f} s"
    )


async def run(games: int, attackers: int, loop: str, flood_s: float) -> None:
    for kind in ("string", "brackets", "strings"):
        async with arena_process(loop) as server:
            await burst(server, games, attackers, kind)
    async with arena_process(loop) as server:
        await page_flood(server, flood_s)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--attackers", type=int, default=2000)
    parser.add_argument("--flood-seconds", type=float, default=20.0)
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    args = parser.parse_args()
    use_loop(args.loop)
    asyncio.run(run(args.games, args.attackers, args.loop, args.flood_seconds))


if __name__ == "__main__":
    main()
