"""The archive's export over a large table (issue 34, item 3): ``GET /api/games`` as JSON lines,
every game of 100,000, and the server's memory while it streams them.

    python bench/archive.py [--games 100000] [--plies 10] [--page 10000]

A few real Thud games are played (``--plies`` plies each, bench/load.py's bots, records on in
SQLite) on a ``tavern serve`` of its own; their rows are then copied in the SQLite file until
it holds ``--games`` finished games (each copy its own id and start, one second apart), and the
server is started again on it. The whole archive is then read through the API, ``--page`` games
an answer, each next answer from the last line's cursor. Printed: the games and bytes read, the
games per second, the server's CPU per game, and its resident memory before, at its peak
(``VmHWM``) and after:
an export that held the table, or a page of records, would grow with it. Then the same archive
is written to a Parquet file by ``tavern records export --format parquet``: its games per
second, CPU per game and peak memory.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import ServerProcess, tavern_serve
from bench.load import measure
from tests.archive_copies import copied


def peak_rss_bytes(server: ServerProcess) -> int:
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


async def exported(port: int, page: int) -> tuple[int, int, float]:
    """Every game through the API, ``page`` an answer: the games and bytes read, and the
    seconds it took."""
    games = size = 0
    cursor: str | None = None
    started = time.perf_counter()
    timeout = aiohttp.ClientTimeout(total=None, sock_read=120)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        while True:
            query = {"format": "ndjson", "max": str(page)}
            if cursor is not None:
                query["cursor"] = cursor
            last = b""
            count = 0
            async with session.get(f"http://127.0.0.1:{port}/api/games", params=query) as answer:
                assert answer.status == 200, await answer.text()
                async for line in answer.content:
                    size += len(line)
                    count += 1
                    last = line
            games += count
            if count < page:
                return games, size, time.perf_counter() - started
            cursor = orjson.loads(last)["cursor"]


async def run(games: int, plies: int, page: int) -> None:
    with tempfile.TemporaryDirectory(prefix="tavern-archive-") as scratch:
        folder = Path(scratch)
        database = folder / "arena.db"
        config = {"port": 0, "httpPort": 0, "database": str(database), "reconnectGraceMs": 0,
                  "maxConnectionsPerAddress": 100_000, "thud": {"turnLimit": plies}}  # fmt: skip
        (folder / "config.json").write_bytes(orjson.dumps(config))
        async with tavern_serve(folder / "config.json") as server:
            await asyncio.sleep(1.0)
            await measure(server, 20, 3.0, "thud", 0.0)
            await asyncio.sleep(1.0)
        held = await asyncio.to_thread(copied, database, games)
        print(f"archive: {held:,} finished games of {plies} plies, {database.stat().st_size:,} "
              "bytes of SQLite", flush=True)  # fmt: skip
        async with tavern_serve(folder / "config.json") as server:
            await asyncio.sleep(1.0)
            before, cpu = server.rss_bytes(), server.cpu_seconds()
            read, size, seconds = await exported(server.http_port, page)
            cpu = server.cpu_seconds() - cpu
            peak, after = peak_rss_bytes(server), server.rss_bytes()
        print(
            f"exported {read:,} games ({size:,} bytes of JSON lines) in {seconds:.1f} s: "
            f"{read / seconds:,.0f} games/s, the server's CPU {1e6 * cpu / max(read, 1):.0f} us "
            f"a game; its memory {before / 2**20:.0f} MiB before, {peak / 2**20:.0f} MiB at its "
            f"peak, {after / 2**20:.0f} MiB after",
            flush=True,
        )
        await parquet_export(folder, database, read)


async def parquet_export(folder: Path, database: Path, games: int) -> None:
    """``tavern records export --format parquet`` of the whole archive: its time, its CPU and
    its peak memory (``/usr/bin/time``'s maximum resident set)."""
    out = folder / "archive.parquet"
    command = ["/usr/bin/time", "-f", "%e %U %S %M", sys.executable, "-m", "tavern_cli",
               "records", "export", "--format", "parquet", "--output", str(out),
               "--database", str(database)]  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    _, err = await process.communicate()
    assert process.returncode == 0, err
    wall, user, system, peak_kib = err.decode().split()[-4:]
    cpu = float(user) + float(system)
    print(
        f"parquet: {games:,} games in {float(wall):.1f} s ({out.stat().st_size:,} bytes): "
        f"{games / float(wall):,.0f} games/s, {1e6 * cpu / games:.0f} us of CPU a game, "
        f"the command's memory at its peak {int(peak_kib) / 1024:.0f} MiB",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--plies", type=int, default=10)
    parser.add_argument("--page", type=int, default=10_000)
    args = parser.parse_args()
    asyncio.run(run(args.games, args.plies, args.page))


if __name__ == "__main__":
    main()
