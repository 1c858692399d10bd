"""What this node answers when another node asks (``server.cluster.OtherNodes.ask``): a live
game's turns, or a Thud API call about a game it plays, answered as its HTTP routes would
answer them, never passed on to a third node."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import orjson
from aiohttp import web
from yarl import URL

from server.cluster import Answerer
from visor.thud_api.routes import PASSED_ON, Endpoint, answered

Turns = Callable[[str, Mapping[str, str]], Awaitable[web.Response]]
"""A game's turns, by its id and the request's query (``from``, ``to``)."""

UNKNOWN = b'{"error": "no such request between nodes"}'


def answerer(turns: Turns, thud_api: Mapping[str, Endpoint]) -> Answerer:
    """Answer ``/api/games/{id}/turns`` through ``turns`` and the Thud API's calls about a
    game (``PASSED_ON``) through its endpoints; any other request 404."""

    async def answer(path: str, body: bytes) -> tuple[int, bytes]:
        url = URL(path)
        parts = url.path.split("/")
        if len(parts) == 5 and parts[1:3] == ["api", "games"] and parts[4] == "turns":
            response = await turns(parts[3], url.query)
            return response.status, bytes(response.body or b"")  # type: ignore[arg-type]
        work = thud_api.get(url.path) if url.path in PASSED_ON else None
        if work is None:
            return 404, UNKNOWN
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError:
            return 400, b'{"error": "the body is not valid JSON"}'
        if not isinstance(request, dict):
            return 400, b'{"error": "the body must be a JSON object"}'
        result, status = await answered(work, request, "")
        return status, orjson.dumps(result)

    return answer
