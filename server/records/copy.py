"""``tavern records copy FROM TO``: every record of one database into another, either way
between an SQLite file and PostgreSQL (or between two of a kind).

Both are brought up to the current schema first; then each table is copied in pages, each page
in one transaction of the target, parents before children (foreign keys). A row the target
already has (same key) is left as it is, so a copy that was interrupted can be run again. The
``nodes`` table is not copied: it names the processes that wrote to the source, and games that
were still playing there are marked unfinished by the first node that opens the target.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from server.records.backends import Backend, Connection, backend_for

PAGE_ROWS = 2000
# Each table's columns, and the key it is paged by, in an order that respects foreign keys.
TABLES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("tournaments", ("id", "name", "game", "spec", "created_at", "finished_at"), "id"),
    (
        "games",
        (
            "id", "game", "seed", "settings", "status", "started_at", "finished_at", "reason",
            "winner", "score", "turn_count", "tournament_id", "pairing", "owner", "rated",
        ),
        "id",
    ),
    (
        "seats",
        (
            "game_id", "seat", "seat_name", "nick", "names", "kind", "reply_mean_ms",
            "reply_worst_ms", "replies", "errors", "bot", "stderr", "last_error", "exit",
            "timed_out_turns",
        ),
        "game_id, seat",
    ),
    ("turn_chunks", ("game_id", "first_number", "count", "turns"), "game_id, first_number"),
    (
        "tournament_faults",
        ("tournament_id", "pairing", "number", "reason", "recorded_at"),
        "tournament_id, pairing",
    ),
    (
        "thud_api_games",
        (
            "token_digest", "game_id", "player_one_digest", "player_two_digest", "player_one",
            "player_two", "created_at", "saved_at",
        ),
        "token_digest",
    ),
    (
        "bots",
        ("name", "folded", "key_hash", "created_at", "changed_at", "banned", "hosting_key_hash"),
        "name",
    ),
    (
        "bot_versions",
        (
            "bot", "number", "content_hash", "run", "archive", "archive_bytes", "unpacked_bytes",
            "files", "uploaded_at", "state", "sprt",
        ),
        "bot, number",
    ),
    ("ladder_seasons", ("name", "started_at"), "name"),
    (
        "ratings",
        (
            "game", "season", "bot", "mu", "sigma", "games", "wins", "losses", "draws",
            "last_game_id", "last_played_at",
        ),
        "game, season, bot",
    ),
    (
        "rating_history",
        (
            "game_id", "seat", "bot", "opponent", "game", "season", "result", "mu_before",
            "sigma_before", "mu", "sigma", "rated_at",
        ),
        "game_id, seat",
    ),
)  # fmt: skip


def copy_records(
    source: str | Path, target: str | Path, progress: Callable[[str, int], object] = print
) -> dict[str, int]:
    """Copy every table; returns how many rows of each the source had. ``progress`` is told
    each table's rows so far."""
    source_backend, target_backend = backend_for(source), backend_for(target)
    if source_backend.describe() == target_backend.describe():
        raise ValueError("the source and the target are the same database")
    reader = _opened(source_backend)
    try:
        writer = _opened(target_backend)
        try:
            return {
                table: _copy_table(reader, writer, table, columns, key, progress)
                for table, columns, key in TABLES
            }
        finally:
            writer.close()
    finally:
        reader.close()


def _opened(backend: Backend) -> Connection:
    connection = backend.connect()
    try:
        backend.migrate(connection)
    except BaseException:
        connection.close()
        raise
    return connection


def _copy_table(
    reader: Connection,
    writer: Connection,
    table: str,
    columns: tuple[str, ...],
    key: str,
    progress: Callable[[str, int], object],
) -> int:
    names = ", ".join(columns)
    select = f"SELECT {names} FROM {table} ORDER BY {key} LIMIT ? OFFSET ?"
    insert = (
        f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))}) "
        "ON CONFLICT DO NOTHING"
    )
    copied = 0
    while True:
        rows = [tuple(row) for row in reader.execute(select, (PAGE_ROWS, copied)).fetchall()]
        if not rows:
            return copied
        writer.execute("BEGIN")
        try:
            writer.executemany(insert, rows)
            writer.execute("COMMIT")
        except BaseException:
            writer.execute("ROLLBACK")
            raise
        copied += len(rows)
        progress(table, copied)
