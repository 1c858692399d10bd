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
an export that held the table, or a page of records, would grow with it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import ServerProcess, tavern_serve
from bench.load import measure


def peak_rss_bytes(server: ServerProcess) -> int:
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def copied(database: Path, games: int) -> int:
    """Copy the finished games' rows until the file holds ``games`` of them; how many."""
    with contextlib.closing(sqlite3.connect(database)) as db, db:
        ids = [row[0] for row in db.execute("SELECT id FROM games WHERE status = 'finished'")]
        start = db.execute("SELECT max(started_at) FROM games").fetchone()[0]
        changed = {"id": "?", "started_at": "?", "finished_at": "? + 1", "pairing": "NULL"}
        tables = {
            table: [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
            for table in ("games", "seats", "turn_chunks")
        }

        def copy_sql(table: str, key: str) -> str:
            columns = tables[table]
            if table == "games":
                chosen = [changed.get(column, column) for column in columns]
            else:
                chosen = ["?" if column == "game_id" else column for column in columns]
            return (f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(chosen)} "
                    f"FROM {table} WHERE {key} = ?")  # fmt: skip

        copy_game = copy_sql("games", "id")
        copy_seats, copy_turns = copy_sql("seats", "game_id"), copy_sql("turn_chunks", "game_id")
        copy = 0
        while len(ids) + copy < games:
            source = ids[copy % len(ids)]
            new, at = f"{source}c{copy}", start + 1 + copy
            db.execute(copy_game, (new, at, at, source))
            db.execute(copy_seats, (new, source))
            db.execute(copy_turns, (new, source))
            copy += 1
        return int(db.execute("SELECT count(*) FROM games WHERE status = 'finished'").fetchone()[0])


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
