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

import orjson
from aiohttp import web

from server.records import Archived, Records
from server.records.archive import EXPORT_PAGE, after_cursor, archived, moment
from visor.responses import json_error

NDJSON = "application/x-ndjson"
DEFAULT_EXPORT = 1000
MAX_EXPORT = 10_000


def wants_lines(request: web.Request) -> bool:
    return request.query.get("format") == "ndjson" or NDJSON in request.headers.get("Accept", "")


async def export_games(request: web.Request, records: Records) -> web.StreamResponse:
    query = request.query
    try:
        most = int(query.get("max", str(DEFAULT_EXPORT)))
    except ValueError:
        return json_error(400, "max must be an integer")
    if not 1 <= most <= MAX_EXPORT:
        return json_error(400, f"max must be from 1 to {MAX_EXPORT}")
    try:
        since = moment(query["since"]) if "since" in query else None
        until = moment(query["until"]) if "until" in query else None
    except ValueError:
        return json_error(400, "since and until: a date, an ISO time or epoch seconds")
    try:
        after = after_cursor(query["cursor"]) if "cursor" in query else None
    except ValueError:
        return json_error(400, "cursor: the cursor of an exported line")
    where = Archived(query.get("game"), query.get("bot"), since, until, after)
    response = web.StreamResponse(headers={"Content-Type": NDJSON})
    await response.prepare(request)
    games = archived(records, where, min(EXPORT_PAGE, most))
    for _ in range(most):  # one record read, then written, at a time
        record = await asyncio.to_thread(next, games, None)
        if record is None:
            break
        await response.write(orjson.dumps(record) + b"\n")
    await response.write_eof()
    return response
