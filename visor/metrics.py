"""``GET /metrics``: the node in Prometheus's text format (prometheus-client).

Games playing, turns played, how long seats take to reply, bot connections, pages, and (on
Redis) the last heartbeat's round trip. The arena's figures come from its updates, as every
listener's do; the others are read when Prometheus asks.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from server.arena import Arena
from server.match import GameFinished, GameStarted, Removed, TurnPlayed, Update

# From a fast bot's reply on loopback to a person thinking.
REPLY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30)


class Metrics:
    """One node's figures, in a registry of its own (several arenas may share a process)."""

    def __init__(self, arena: Arena) -> None:
        self.registry = CollectorRegistry()
        self._playing: set[str] = set()
        self._last_turn: dict[str, float] = {}
        Gauge(
            "tavern_games_playing", "Games being played now", registry=self.registry
        ).set_function(lambda: len(self._playing))
        turns = Counter("tavern_turns", "Turns played", ["game"], registry=self.registry)
        self._turns = {game: turns.labels(game) for game in arena.games}
        replies = Histogram(
            "tavern_reply_seconds",
            "Time from one turn of a game to the next: the seat's reply and the server's work",
            ["game"],
            buckets=REPLY_BUCKETS,
            registry=self.registry,
        )
        self._replies = {game: replies.labels(game) for game in arena.games}
        arena.listeners.append(self.on_update)

    def measure(self, name: str, documentation: str, read: Callable[[], float]) -> None:
        """A gauge read when Prometheus asks (connections, pages, Redis's round trip)."""
        Gauge(name, documentation, registry=self.registry).set_function(read)

    def on_update(self, update: Update) -> None:
        if isinstance(update, TurnPlayed):
            result = update.result
            game = result.codec.name
            self._turns[game].inc()
            now = time.perf_counter()
            last = self._last_turn.get(result.match_id)
            if last is not None:
                self._replies[game].observe(now - last)
            self._last_turn[result.match_id] = now
        elif isinstance(update, GameStarted):
            self._playing.add(update.view.match_id)
            self._last_turn[update.view.match_id] = time.perf_counter()
        elif isinstance(update, GameFinished | Removed):
            match_id = update.view.match_id if isinstance(update, GameFinished) else update.match_id
            self._playing.discard(match_id)
            self._last_turn.pop(match_id, None)

    async def serve(self, request: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )
