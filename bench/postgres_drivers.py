"""Which PostgreSQL driver for the records' writer: psycopg 3 (sync, in the writer thread) or
asyncpg (async), writing what the writer writes.

    python bench/postgres_drivers.py [--batches 200] [--games 10 100 1000] [--turns 20]

Starts a PostgreSQL cluster on loopback (``tests/services.py``), makes the records' schema, and
for each N writes ``--batches`` batches as the writer hands them over every 50 ms with N games in
play: one transaction holding one chunk of ``--turns`` real-sized Tavern turns per game. Each
driver writes the batch's chunks in one statement (its columns as four arrays through
``unnest``) and as one row each (``executemany``, which psycopg pipelines); psycopg also with
the statement the records use (``PostgresBackend.insert_chunks``: the turns in one ``bytea``,
each chunk's at an offset). Prints this process's CPU per chunk and the wall time per batch (the
database's own work is about the same for every way and is not counted).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from statistics import median
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # no types of its own
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere

from server.records.backends import PostgresBackend
from tests.services import postgres_server

TURN = (
    b'[0,{"actions":[{"botId":1,"type":"MOVE","direction":"NORTH"},'
    b'{"botId":2,"type":"PASS"}]},false]'
)
UNNEST = (
    "INSERT INTO turn_chunks (game_id, first_number, count, turns) "
    "SELECT * FROM unnest({}::text[], {}::bigint[], {}::bigint[], {}::text[])"
)
ROW = "INSERT INTO turn_chunks (game_id, first_number, count, turns) VALUES ({}, {}, {}, {})"
Batch = list[tuple[str, int, int, str]]


def batches(games: int, count: int, turns: int) -> list[Batch]:
    text = (b"[%s]" % b",".join([TURN] * turns)).decode()
    return [
        [(f"g{game}", 1 + number * turns, turns, text) for game in range(games)]
        for number in range(count)
    ]


def prepare(url: str, games: int) -> None:
    """The schema, and the games the chunks belong to (their foreign key)."""
    backend = PostgresBackend(url)
    connection = backend.connect()
    backend.migrate(connection)
    connection.executemany(
        "INSERT INTO games (id, game, seed, settings, status, started_at) "
        "VALUES (?, 'tavern', 1, '{}', 'playing', 0)",
        [(f"g{game}",) for game in range(games)],
    )
    connection.close()


def columns(batch: Batch) -> tuple[list[Any], ...]:
    return tuple([row[index] for row in batch] for index in range(4))


def psycopg_run(url: str, work: list[Batch], one_statement: bool) -> list[float]:
    walls = []
    with psycopg.connect(url, autocommit=True) as connection:
        for batch in work:
            began = time.perf_counter()
            with connection.transaction():
                if one_statement:
                    connection.execute(UNNEST.format("%s", "%s", "%s", "%s"), columns(batch))
                else:
                    connection.cursor().executemany(ROW.format("%s", "%s", "%s", "%s"), batch)
            walls.append(time.perf_counter() - began)
    return walls


async def asyncpg_run(url: str, work: list[Batch], one_statement: bool) -> list[float]:
    walls = []
    connection = await asyncpg.connect(url)
    try:
        for batch in work:
            began = time.perf_counter()
            async with connection.transaction():
                if one_statement:
                    await connection.execute(UNNEST.format("$1", "$2", "$3", "$4"), *columns(batch))
                else:
                    await connection.executemany(ROW.format("$1", "$2", "$3", "$4"), batch)
            walls.append(time.perf_counter() - began)
    finally:
        await connection.close()
    return walls


RUNS = (
    "psycopg 3, the records'",
    "psycopg 3, four arrays",
    "psycopg 3, executemany",
    "asyncpg, four arrays",
    "asyncpg, executemany",
)


def records_run(url: str, work: list[Batch]) -> list[float]:
    """The records' own statement, through their own connection."""
    backend = PostgresBackend(url)
    connection = backend.connect()
    walls = []
    for batch in work:
        rows = [(game, first, count, text.encode()) for game, first, count, text in batch]
        began = time.perf_counter()
        connection.execute("BEGIN")
        backend.insert_chunks(connection, rows)
        connection.execute("COMMIT")
        walls.append(time.perf_counter() - began)
    connection.close()
    return walls


def measure(run: str, url: str, work: list[Batch]) -> tuple[float, float]:
    """This process's CPU per chunk, and the median wall time per batch."""
    one_statement = "arrays" in run
    before = time.process_time()
    if run.endswith("records'"):
        walls = records_run(url, work)
    elif run.startswith("psycopg"):
        walls = psycopg_run(url, work, one_statement)
    else:
        walls = asyncio.run(asyncpg_run(url, work, one_statement))
    chunks = sum(len(batch) for batch in work)
    return (time.process_time() - before) / chunks, median(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--games", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--turns", type=int, default=20, help="turns per chunk")
    options = parser.parse_args()
    print("games | driver, statement         | client CPU a chunk | wall a batch")
    with postgres_server() as cluster:
        for games in options.games:
            work = batches(games, options.batches, options.turns)
            for number, run in enumerate(RUNS):
                url = cluster.create_database(f"drivers_{games}_{number}")
                prepare(url, games)
                cpu, wall = measure(run, url, work)
                print(f"{games:5d} | {run:25s} | {cpu * 1e6:9.1f} us | {wall * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
