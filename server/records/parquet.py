"""The archive as a Parquet file (issue 34, item 3): one row a finished game, its whole record
(docs/records.md) in columns that pandas, DuckDB and pyarrow read as they are.

What has one shape in every game is typed (the players, the result, each turn's number, seat and
timeout); what each game shapes its own way (its settings, a turn's action) is kept as JSON
text, which DuckDB reads with its JSON functions. The games are written a row group at a time
(``ROW_GROUP_GAMES``), read from the records a page at a time (``server.records.archive``): the
file may hold every game of the records while the writer holds a few hundred.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from server.games.base import JsonObject
from server.records.archive import archived
from server.records.queries import Archived, Queries

ROW_GROUP_GAMES: Final = 500
COMPRESSION: Final = "zstd"

PLAYER: Final = pa.struct(
    [
        ("seat", pa.string()),
        ("nick", pa.string()),
        ("names", pa.list_(pa.string())),
        ("kind", pa.string()),
        ("bot", pa.string()),
        ("replies", pa.int64()),
        ("replyMeanMs", pa.float64()),
        ("replyWorstMs", pa.float64()),
        ("errors", pa.int64()),
        ("lastError", pa.string()),
        ("stderr", pa.string()),
        ("exit", pa.string()),
    ]
)
RESULT: Final = pa.struct(
    [
        ("reason", pa.string()),
        ("winner", pa.string()),
        ("score", pa.map_(pa.string(), pa.float64())),
    ]
)
TURN: Final = pa.struct(
    [
        ("number", pa.int64()),
        ("seat", pa.string()),
        ("action", pa.string()),  # JSON text: each game's own shape
        ("timedOut", pa.bool_()),
    ]
)
SCHEMA: Final = pa.schema(
    [
        ("id", pa.string()),
        ("game", pa.string()),
        ("seed", pa.int64()),
        ("status", pa.string()),
        ("startedAt", pa.float64()),  # seconds since the epoch, as the records keep them
        ("finishedAt", pa.float64()),
        ("turnCount", pa.int64()),
        ("players", pa.list_(PLAYER)),
        ("result", RESULT),
        ("tournament", pa.string()),
        ("pairing", pa.string()),
        ("settings", pa.string()),  # JSON text: each game's own settings
        ("turns", pa.list_(TURN)),
    ]
)


def row_of(record: JsonObject) -> dict[str, Any]:
    """A record as its row: the same keys, settings and actions as JSON text."""
    result = record["result"]
    return {
        **{name: record[name] for name in SCHEMA.names if name not in ("result", "settings")},
        "result": None if result is None else {**result, "score": _score(result.get("score"))},
        "settings": orjson.dumps(record["settings"]).decode(),
        "turns": [
            {**turn, "action": orjson.dumps(turn["action"]).decode()} for turn in record["turns"]
        ],
    }


def record_of(row: dict[str, Any]) -> JsonObject:
    """A row read back as the record it was written from (``row_of``'s inverse)."""
    result = row["result"]
    return {
        **row,
        "result": None if result is None else {**result, "score": _score_back(result["score"])},
        "settings": orjson.loads(row["settings"]),
        "turns": [{**turn, "action": orjson.loads(turn["action"])} for turn in row["turns"]],
    }


def write_parquet(records: Queries, where: Archived, path: Path) -> int:
    """The games ``where`` says into a Parquet file at ``path``; how many."""
    count = 0
    batch: list[dict[str, Any]] = []
    with pq.ParquetWriter(path, SCHEMA, compression=COMPRESSION) as writer:
        for record in archived(records, where):
            batch.append(row_of(record))
            count += 1
            if len(batch) == ROW_GROUP_GAMES:
                writer.write_table(pa.Table.from_pylist(batch, schema=SCHEMA))
                batch = []
        if batch or not count:
            writer.write_table(pa.Table.from_pylist(batch, schema=SCHEMA))
    return count


def _score(score: object) -> list[tuple[str, float]] | None:
    """A result's score as a map's entries (the records keep it as an object)."""
    if not isinstance(score, dict):
        return None
    return [(str(seat), float(points)) for seat, points in score.items()]


def _score_back(entries: object) -> JsonObject | None:
    """A map's entries as read back (pyarrow gives pairs), as the records' object."""
    if entries is None:
        return None
    assert isinstance(entries, list)
    return {seat: int(points) if float(points).is_integer() else points for seat, points in entries}
