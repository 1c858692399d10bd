"""The archive (issue 34, item 3): every finished game as data, oldest first, one whole record
(docs/records.md) a JSON line, read a page at a time however large the records: written to a
``jsonl.zst`` file by ``tavern records export``, streamed by ``GET /api/games`` as JSON lines
(``visor.game_export``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import BinaryIO

import orjson
import zstandard

from server.games.base import JsonObject
from server.records.queries import Archived, Listed, Queries
from server.replay import DamagedRecord

EXPORT_PAGE = 100  # games read at once
ZSTD_LEVEL = 10  # a file written once and read many times: smaller rather than faster


def moment(text: str) -> float:
    """A date (``YYYY-MM-DD``, UTC), an ISO 8601 time (UTC unless it says) or epoch seconds, as
    epoch seconds; ``ValueError`` if it is none of them."""
    try:
        return float(text)
    except ValueError:
        when = datetime.fromisoformat(text)
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def cursor_of(listed: Listed) -> str:
    return f"{listed.started_at!r}:{listed.id}"


def after_cursor(text: str) -> tuple[float, str]:
    """A line's ``cursor`` as ``Archived.after``; ``ValueError`` if it is not one."""
    started, _, game_id = text.rpartition(":")
    return float(started), game_id


def archived(records: Queries, where: Archived, page: int = EXPORT_PAGE) -> Iterator[JsonObject]:
    """Every finished game ``where`` says, oldest first, each its whole record with its
    ``cursor``; ``page`` read at a time. A record that does not read back is left out (the
    records say so in the log)."""
    while True:
        listed = records.finished_after(where, page)
        for game in listed:
            try:
                record = records.game(game.id)
            except DamagedRecord:
                continue
            if record is not None:
                record["cursor"] = cursor_of(game)
                yield record
        if len(listed) < page:
            return
        where = dataclasses.replace(where, after=(listed[-1].started_at, listed[-1].id))


def write_jsonl_zst(records: Queries, where: Archived, out: BinaryIO) -> int:
    """The games ``where`` says, as zstandard-compressed JSON lines into ``out``; how many."""
    count = 0
    with zstandard.ZstdCompressor(level=ZSTD_LEVEL).stream_writer(out, closefd=False) as writer:
        for record in archived(records, where):
            writer.write(orjson.dumps(record) + b"\n")
            count += 1
    return count
