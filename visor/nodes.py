"""Requests passed to another node of the arena: what only the node that plays a game can
answer (a move of a Thud API game, a live game's turns so far) is asked of that node."""

from __future__ import annotations

import aiohttp

FORWARD_TIMEOUT_S = 10.0  # for the node playing a game to answer a request passed to it
FORWARDED = "X-Tavern-Forwarded"
"""Marks a request one node passed to another: it is answered there, never passed on again
(two nodes whose directories disagree for a moment must not pass it back and forth)."""


class NodeUnreachable(Exception):
    """The other node did not answer: down, unreachable, or too slow."""


class NodeClient:
    """One HTTP session toward the other nodes, opened at the first request."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None

    async def request(
        self, method: str, address: str, path: str, body: bytes | None = None
    ) -> tuple[int, bytes]:
        """The status and body of the other node's answer; ``body`` is JSON."""
        if self._session is None:
            timeout = aiohttp.ClientTimeout(total=FORWARD_TIMEOUT_S)
            self._session = aiohttp.ClientSession(timeout=timeout)
        headers = {FORWARDED: "1"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            async with self._session.request(
                method, f"http://{address}{path}", data=body, headers=headers
            ) as response:
                return response.status, await response.read()
        except (aiohttp.ClientError, TimeoutError) as error:
            raise NodeUnreachable(str(error) or type(error).__name__) from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
