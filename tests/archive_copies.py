"""A large archive from a few real games (issue 34, item 3): their rows copied in an SQLite
records file, each copy its own id and start, so that an export of many thousands of games is
tested (tests/test_game_export.py) and measured (bench/archive.py) without playing them all."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path


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
