"""PostgreSQL stopped under an arena while games play, measured: three ``tavern serve`` nodes on
one PostgreSQL and one redis-server behind deploy/haproxy.cfg (bench/rolling.py's arena), bots
that connect only to HAProxy, new games starting all along. PostgreSQL is stopped for
``--outage-s`` (the issue's 90 s by default); in the middle of it one node is stopped (SIGTERM),
and it is started again once the database is back.

Prints the games played and how many ended otherwise than normally (those the stopped node was
playing are cut short: `Server shutting down`), the set-ups refused, the longest pause a seat
saw, how long the node's stop took and what it said it kept, the most any node's journal held,
how long after the outage every journal was written, and whether every game is in the
database once: each game that ended normally as finished, each game cut short as unfinished.

    .venv/bin/python -m bench.records_outage [--outage-s 90] [--think-ms 20] [--turns 60]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import re
import tempfile
import time
from pathlib import Path

import aiohttp

from bench.rolling import Figures, Node, balanced_arena, every_node_ready, one_game
from server.records.backends import backend_for
from tests.services import postgres_server

START_EVERY_S = 0.2  # a new game through HAProxy
JOURNAL = re.compile(r"wait in the journal \((\d+) bytes")
SHUTTING_DOWN = b'{"type":"error","message":"Server shutting down"'


async def journal_bytes(session: aiohttp.ClientSession, node: Node) -> int | None:
    """What the node's /readyz says its journal holds (None: nothing is lacking)."""
    with contextlib.suppress(aiohttp.ClientError):
        url = f"http://127.0.0.1:{node.http_port}/readyz"
        async with session.get(url) as response:
            body = await response.json()
        for lack in body["degraded"]:
            if found := JOURNAL.search(lack):
                return int(found.group(1))
    return None


async def run(outage_s: float, think_s: float, turns: int) -> None:
    with tempfile.TemporaryDirectory(prefix="tavern-outage-") as scratch, postgres_server() as pg:
        url = pg.create_database("outage")
        folder = Path(scratch)
        settings = {"database": url, "recordsJournal": str(folder / "journal")}
        async with (
            balanced_arena(folder, turns, settings) as balanced,
            aiohttp.ClientSession() as session,
        ):
            figures = Figures()
            playing: list[asyncio.Task[None]] = []
            starting = True
            peak = 0

            async def keep_starting() -> None:
                seed = 0
                while starting:
                    game = one_game(balanced.bots_port, seed, think_s, figures)
                    playing.append(asyncio.create_task(game))
                    seed += 1
                    await asyncio.sleep(START_EVERY_S)

            async def watch_journals() -> None:
                nonlocal peak
                while True:
                    for node in balanced.nodes:
                        if node.process is not None:
                            peak = max(peak, await journal_bytes(session, node) or 0)
                    await asyncio.sleep(0.5)

            starter = asyncio.create_task(keep_starting())
            watcher = asyncio.create_task(watch_journals())
            await asyncio.sleep(2)
            await asyncio.to_thread(pg.stop)
            await asyncio.sleep(outage_s / 2)
            refused_before_stop, pause_before_stop = figures.refused, figures.longest_pause_s
            stopped = balanced.nodes[-1]
            before = time.perf_counter()
            await stopped.stop()
            stop_s = time.perf_counter() - before
            await asyncio.sleep(outage_s / 2)
            await asyncio.to_thread(pg.start)
            back = time.perf_counter()
            await stopped.start()
            await every_node_ready([stopped])
            await asyncio.sleep(2)
            starting = False
            await starter
            await asyncio.gather(*playing)
            while any([await journal_bytes(session, node) for node in balanced.nodes]):  # noqa: ASYNC110
                await asyncio.sleep(0.2)  # other processes' state
            written_s = time.perf_counter() - back
            watcher.cancel()
        said = (folder / f"node-{stopped.index}.log").read_text().splitlines()
        kept = [line for line in said if "stopped while the database is out of reach" in line]
        connection = backend_for(url).connect()
        try:
            rows = connection.execute("SELECT id, status FROM games").fetchall()
        finally:
            connection.close()
    statuses = {row[0]: row[1] for row in rows}
    cut = set(figures.abnormal())
    normal = set(figures.games) - cut
    told = sum(any(end.startswith(SHUTTING_DOWN) for end in figures.games[g]) for g in cut)
    print(f"PostgreSQL stopped for {outage_s:g} s under 3 nodes behind HAProxy")
    print(
        f"games: {len(figures.games)}; ended otherwise than normally: {len(cut)} (a seat told "
        f"`Server shutting down` by the node stopped: {told})"
    )
    print(
        f"set-ups refused: {refused_before_stop} before the node's stop, {figures.refused} in "
        f"all; longest pause a seat saw: {pause_before_stop * 1000:.0f} ms before the node's "
        f"stop, {figures.longest_pause_s * 1000:.0f} ms in all (a seat on the stopped node is "
        "held for reconnectGraceMs, 5 s)"
    )
    print(f"the node's SIGTERM took {stop_s:.1f} s; it said: {kept[-1] if kept else 'nothing'}")
    print(
        f"the most a journal held: {peak} bytes; every journal written {written_s:.1f} s "
        "after the database was back"
    )
    print(
        f"in the database: {len(rows)} rows, {len(statuses)} games; ended normally and "
        f"finished there: {sum(statuses.get(g) == 'finished' for g in normal)} of {len(normal)}; "
        f"cut: {dict(collections.Counter(statuses.get(g, 'missing') for g in cut))}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--outage-s", type=float, default=90.0, help="PostgreSQL stopped this long")
    parser.add_argument("--think-ms", type=float, default=20.0, help="each bot's time per move")
    parser.add_argument("--turns", type=int, default=60, help="each game's turn limit")
    args = parser.parse_args()
    asyncio.run(run(args.outage_s, args.think_ms / 1000, args.turns))


if __name__ == "__main__":
    main()
