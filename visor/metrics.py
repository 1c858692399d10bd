"""``GET /metrics``: the node in Prometheus's text format (prometheus-client).

Games playing, turns played, how long seats take to reply, bot connections, pages, and (on
Redis) the last heartbeat's round trip and the values read there that the node could not use.
The arena's figures come from its updates, as every listener's do; the others are read when
Prometheus asks.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterator, Mapping

from aiohttp import web
from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

from server.arena import Arena
from server.match_events import GameFinished, GameStarted, Removed, TurnPlayed, Update

# From a fast bot's reply on loopback to a person thinking.
REPLY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30)
REPLY_HELP = "Time from one turn of a game to the next: the seat's reply and the server's work"


class GameTurns:
    """One game's turns and the time between them, as plain numbers: a turn costs a few
    additions, and the metrics are made of them only when Prometheus asks."""

    __slots__ = ("created", "replies", "seconds", "turns")

    def __init__(self) -> None:
        self.created = time.time()
        self.turns = 0
        self.replies = [0] * (len(REPLY_BUCKETS) + 1)  # by bucket, the last one past them all
        self.seconds = 0.0  # the replies' sum

    def replied(self, seconds: float) -> None:
        """One more time between two turns (a bucket holds the times up to its bound)."""
        self.replies[bisect.bisect_left(REPLY_BUCKETS, seconds)] += 1
        self.seconds += seconds


class CountsCollector:
    """A counter (or, with ``gauge``, a gauge) by one label, its values read when Prometheus
    asks."""

    def __init__(
        self,
        name: str,
        documentation: str,
        label: str,
        read: Callable[[], Mapping[str, int]],
        gauge: bool = False,
    ) -> None:
        self.name, self.documentation, self.label, self.read = name, documentation, label, read
        self.family = GaugeMetricFamily if gauge else CounterMetricFamily

    def collect(self) -> Iterator[Metric]:
        family = self.family(self.name, self.documentation, labels=[self.label])
        for value, count in sorted(self.read().items()):
            family.add_metric([value], count)
        yield family


class TurnCollector:
    """``tavern_turns`` and ``tavern_reply_seconds``, by game, from ``GameTurns``."""

    def __init__(self, games: dict[str, GameTurns]) -> None:
        self.games = games

    def collect(self) -> Iterator[Metric]:
        turns = CounterMetricFamily("tavern_turns", "Turns played", labels=["game"])
        replies = HistogramMetricFamily("tavern_reply_seconds", REPLY_HELP, labels=["game"])
        bounds = [*map(floatToGoString, REPLY_BUCKETS), "+Inf"]
        for game, figures in self.games.items():
            turns.add_metric([game], figures.turns, created=figures.created)
            cumulative, buckets = 0, []
            for bound, count in zip(bounds, figures.replies, strict=True):
                cumulative += count
                buckets.append((bound, float(cumulative)))
            replies.add_metric([game], buckets, figures.seconds)
        for game, figures in self.games.items():
            replies.add_sample("tavern_reply_seconds_created", {"game": game}, figures.created)
        yield turns
        yield replies


class Metrics:
    """One node's figures, in a registry of its own (several arenas may share a process)."""

    def __init__(self, arena: Arena) -> None:
        self.registry = CollectorRegistry()
        self._playing: set[str] = set()
        self._last_turn: dict[str, float] = {}
        Gauge(
            "tavern_games_playing", "Games being played now", registry=self.registry
        ).set_function(lambda: len(self._playing))
        self._games = {game: GameTurns() for game in arena.games}
        self.registry.register(TurnCollector(self._games))
        arena.listeners.append(self.on_update)

    def measure(self, name: str, documentation: str, read: Callable[[], float]) -> None:
        """A gauge read when Prometheus asks (connections, pages, Redis's round trip)."""
        Gauge(name, documentation, registry=self.registry).set_function(read)

    def count(
        self, name: str, documentation: str, label: str, read: Callable[[], Mapping[str, int]]
    ) -> None:
        """A counter by ``label``, read when Prometheus asks (what a node skipped in Redis)."""
        self.registry.register(CountsCollector(name, documentation, label, read))

    def measure_by(
        self, name: str, documentation: str, label: str, read: Callable[[], Mapping[str, int]]
    ) -> None:
        """A gauge by ``label``, read when Prometheus asks (the seats held here and elsewhere)."""
        self.registry.register(CountsCollector(name, documentation, label, read, gauge=True))

    def on_update(self, update: Update) -> None:
        if isinstance(update, TurnPlayed):
            result = update.result
            figures = self._games[result.codec.name]
            figures.turns += 1
            now = time.perf_counter()
            last = self._last_turn.get(result.match_id)
            if last is not None:
                figures.replied(now - last)
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
