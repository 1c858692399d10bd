"""Every game as data (issue 34, item 3): ``GET /api/games`` asked for JSON lines
(``Accept: application/x-ndjson``, or ``?format=ndjson``) streams finished games, oldest
first, one whole record a line (docs/records.md: players, settings, seed, every turn), as
lichess's game export does.

    GET /api/games?format=ndjson&bot=NAME&game=thud&since=2026-11-01&until=2026-12-01&max=500

``since`` and ``until`` are dates (``YYYY-MM-DD``, UTC), times (ISO 8601) or epoch seconds,
of a game's start; ``max`` bounds the games of one answer (1 to ``MAX_EXPORT``, by default
``DEFAULT_EXPORT``). Each line carries ``cursor``: asked again with ``cursor=`` the last line's,
the export goes on after it. The games are read ``EXPORT_PAGE`` at a time and each written
before the next is read, so an answer holds a page of ids and one record in memory, however
large the archive; a client that reads slowly slows the reading (the socket's buffer is the
only queue).
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime

import orjson
from aiohttp import web

from server.records import Archived, Records
from server.replay import DamagedRecord
from visor.responses import json_error

NDJSON = "application/x-ndjson"
EXPORT_PAGE = 100  # games read at once
DEFAULT_EXPORT = 1000
MAX_EXPORT = 10_000


def wants_lines(request: web.Request) -> bool:
    return request.query.get("format") == "ndjson" or NDJSON in request.headers.get("Accept", "")


def _moment(text: str, name: str) -> float:
    """A date, an ISO 8601 time (UTC unless it says) or epoch seconds, as epoch seconds."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name}: a date, an ISO time or epoch seconds") from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _cursor(text: str) -> tuple[float, str]:
    started, _, game_id = text.rpartition(":")
    try:
        return float(started), game_id
    except ValueError:
        raise web.HTTPBadRequest(text="cursor: the cursor of an exported line") from None


async def export_games(request: web.Request, records: Records) -> web.StreamResponse:
    query = request.query
    try:
        most = int(query.get("max", str(DEFAULT_EXPORT)))
        where = Archived(
            game=query.get("game"),
            bot=query.get("bot"),
            since=_moment(query["since"], "since") if "since" in query else None,
            until=_moment(query["until"], "until") if "until" in query else None,
            after=_cursor(query["cursor"]) if "cursor" in query else None,
        )
    except ValueError:
        return json_error(400, "max must be an integer")
    except web.HTTPBadRequest as bad:
        return json_error(400, bad.text or "bad request")
    if not 1 <= most <= MAX_EXPORT:
        return json_error(400, f"max must be from 1 to {MAX_EXPORT}")
    response = web.StreamResponse(headers={"Content-Type": NDJSON})
    await response.prepare(request)
    sent = 0
    while sent < most:
        page = await asyncio.to_thread(records.finished_after, where, min(EXPORT_PAGE, most - sent))
        for listed in page:
            try:
                record = await asyncio.to_thread(records.game, listed.id)
            except DamagedRecord:  # said in the log by the records; the export goes on
                record = None
            if record is not None:
                record["cursor"] = f"{listed.started_at!r}:{listed.id}"
                await response.write(orjson.dumps(record) + b"\n")
            sent += 1
        if len(page) < EXPORT_PAGE:
            break
        where = dataclasses.replace(where, after=(page[-1].started_at, page[-1].id))
    await response.write_eof()
    return response
