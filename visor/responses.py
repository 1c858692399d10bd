"""JSON answers of the visor's API, one way for every route."""

from __future__ import annotations

import orjson
from aiohttp import web


def json_response(body: object, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


def json_error(status: int, message: str) -> web.Response:
    return json_response({"error": message}, status)
