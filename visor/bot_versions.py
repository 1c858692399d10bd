"""Hosted bots' versions over HTTP (issue 33, item 1): their owners upload them, anyone lists
them.

``POST /api/bots/{name}/versions``, a ``multipart/form-data`` body: ``key`` (the bot's key,
checked as a join's is: paced per address, never stored, never echoed), ``run`` (the command
that starts the bot in its folder), ``archive`` (a zip of its files, at most
``MAX_ARCHIVE_BYTES``), ``activate`` (``1``: it becomes the bot's active version at once;
else only if the bot has none, and otherwise waits as a candidate) and ``games`` (those it
plays, comma-separated; none: every game). Answers 201 with the
version (``tavern bots upload`` and the ``/bots/NAME`` page send it).

``GET /api/bots/{name}/versions``: the bot's versions, newest first, without their files.
"""

from __future__ import annotations

import asyncio

from aiohttp import BodyPartReader, web

from server.arena import Arena
from server.bot_versions import MAX_ARCHIVE_BYTES, VersionRefused, games_named, version_of
from server.errors import Rejected
from server.records import Records
from server.records.backends import RecordsOutOfReach
from server.records.versions import store_version
from visor.responses import json_error, json_response

FIELD_CHARS = 1000  # the key, the run command, ``activate`` and ``games``, each at most
# Uploads read at once (each up to MAX_ARCHIVE_BYTES in memory); another is answered 503 at once.
UPLOADS_AT_ONCE = 4


def add_routes(app: web.Application, arena: Arena, records: Records) -> None:
    uploading = 0

    async def upload(request: web.Request) -> web.Response:
        nonlocal uploading
        if uploading >= UPLOADS_AT_ONCE:
            return json_error(503, "other uploads are being read: try again in a moment")
        uploading += 1
        try:
            return await _upload(request)
        finally:
            uploading -= 1

    async def _upload(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        try:
            fields, archive = await _form(request)
        except ValueError as error:
            return json_error(400, str(error))
        try:
            found = await arena.roster.identify(
                {"bot": name, "key": fields.get("key", "")}, request.remote or ""
            )
        except Rejected as rejected:
            return json_error(403, str(rejected))
        assert found is not None
        try:
            version = await asyncio.to_thread(version_of, archive, fields.get("run", ""))
            games = games_named(fields.get("games", ""))
        except VersionRefused as refused:
            return json_error(400, str(refused))
        activate = fields.get("activate", "") in ("1", "true", "on")
        try:
            stored = await asyncio.to_thread(
                store_version, records.backend, found, version, activate, games
            )
        except RecordsOutOfReach:
            return json_error(503, "the records are out of reach: try again shortly")
        if stored is None:
            return json_error(404, f"no bot named {name}")
        return json_response(
            {
                "bot": stored.bot,
                "number": stored.number,
                "hash": version.content_hash,
                "state": stored.state,
                "added": stored.added,
                "files": version.files,
                "archiveBytes": len(version.archive),
                "unpackedBytes": version.unpacked_bytes,
            },
            201 if stored.added else 200,
        )

    async def listed(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        return json_response(
            {"bot": name, "versions": await asyncio.to_thread(records.bot_versions, name)}
        )

    app.router.add_post("/api/bots/{name}/versions", upload)
    app.router.add_get("/api/bots/{name}/versions", listed)


async def _form(request: web.Request) -> tuple[dict[str, str], bytes]:
    """The upload's text fields and its archive, each within its bound; ``ValueError`` says
    what is wrong with the form."""
    if not request.content_type.startswith("multipart/"):
        raise ValueError("send a multipart/form-data body: key, run, archive")
    reader = await request.multipart()
    fields: dict[str, str] = {}
    archive: bytes | None = None
    while (part := await reader.next()) is not None:
        if not isinstance(part, BodyPartReader):
            raise ValueError("a nested multipart body")
        if part.name == "archive":
            archive = await _bounded(part, MAX_ARCHIVE_BYTES, "the archive")
        elif part.name in ("key", "run", "activate", "games"):
            raw = await _bounded(part, FIELD_CHARS, part.name)
            fields[part.name] = raw.decode(errors="replace")
        else:
            raise ValueError(
                f"an unknown field {str(part.name)[:40]!r} (key, run, activate, games, archive)"
            )
    if archive is None:
        raise ValueError("no archive: send the bot's files as a zip in the field 'archive'")
    return fields, archive


async def _bounded(part: BodyPartReader, limit: int, what: str) -> bytes:
    data = bytearray()
    while chunk := await part.read_chunk(65_536):
        data += chunk
        if len(data) > limit:
            raise ValueError(f"{what} is over {limit} bytes")
    return bytes(data)
