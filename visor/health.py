"""``GET /healthz`` and ``GET /readyz``: what a load balancer and a supervisor ask a node.

``/healthz``: the node is alive. Its loop answers (a node whose loop is stuck answers nothing,
and the asker's timeout says so) and its records writer runs. ``/readyz``: the node takes new
games: it is alive, it is not draining (SIGUSR1, ``server.draining``), and its records can take
new games. A node whose records database or Redis is out of reach still plays games (their
records wait in its journal; without Redis, games whose seats are all its own), so it stays
ready and says what it lacks under ``degraded``; only a journal nearly full makes it unready
(``server.records.writer.Writer.full``). Each answers 200, or 503 with the reasons why not in
its JSON body: ``{"ok": false, "why": [...], "degraded": [...], "games": N, "draining": bool}``
(docs/operations.md).
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from server.arena import Arena
from server.match_views import Status
from server.records import Records


class Health:
    """The checks, read when asked (they cost a few attribute reads)."""

    def __init__(
        self, arena: Arena, records: Records, linked: Callable[[], bool] | None = None
    ) -> None:
        self.arena = arena
        self.records = records
        self.linked = linked  # the node's link to Redis is up (None: an arena of one node)

    def alive(self) -> list[str]:
        """Why the node is not alive (nothing: it is)."""
        return [] if self.records.writing else ["the records writer has stopped"]

    def ready(self) -> list[str]:
        """Why the node takes no new game (nothing: it takes them)."""
        why = self.alive()
        if self.records.full:
            why.append(
                "the records database is out of reach and the journal of the writes waiting "
                "for it is nearly full: no new game until it is back"
            )
        if self.arena.draining:
            why.append("draining: finishing its games before a restart")
        return why

    def degraded(self) -> list[str]:
        """What the node lacks while it still takes games."""
        lacks = []
        if self.records.away:
            lacks.append(
                f"the records database is out of reach ({self.records.backend.describe()}): "
                f"the records wait in the journal ({self.records.backlog.size} bytes of "
                f"{self.records.journal_bytes})"
            )
        if self.linked is not None and not self.linked():
            lacks.append(
                "not linked to the arena's Redis: it plays the games whose seats are all here"
            )
        return lacks

    def answer(self, why: list[str]) -> web.Response:
        playing = sum(match.status is Status.PLAYING for match in self.arena.matches.values())
        body = {
            "ok": not why,
            "why": why,
            "degraded": self.degraded(),
            "games": playing,
            "draining": self.arena.draining,
        }
        return web.json_response(body, status=503 if why else 200)

    async def healthz(self, request: web.Request) -> web.Response:
        return self.answer(self.alive())

    async def readyz(self, request: web.Request) -> web.Response:
        return self.answer(self.ready())

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/healthz", self.healthz)
        app.router.add_get("/readyz", self.readyz)
