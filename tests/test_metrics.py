"""The turn metrics, kept as plain numbers, read exactly as prometheus-client's own Counter and
Histogram would show the same turns."""

from __future__ import annotations

import random

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from visor.metrics import REPLY_BUCKETS, REPLY_HELP, GameTurns, TurnCollector


def samples(registry: CollectorRegistry) -> list[str]:
    """The exposition's lines, but the creation times (they differ by a few microseconds)."""
    return [
        line for line in generate_latest(registry).decode().splitlines() if "_created{" not in line
    ]


def test_turns_and_replies_read_as_prometheus_clients_own_metrics() -> None:
    chance = random.Random(21)
    times = {
        "tavern": [*REPLY_BUCKETS, 0.0, 45.0]  # on each bound, below all, past all
        + [chance.uniform(0, 0.02) for _ in range(500)],
        "thud": [chance.expovariate(20) for _ in range(300)],
    }
    theirs = CollectorRegistry()
    turns = Counter("tavern_turns", "Turns played", ["game"], registry=theirs)
    replies = Histogram(
        "tavern_reply_seconds", REPLY_HELP, ["game"], buckets=REPLY_BUCKETS, registry=theirs
    )
    ours = CollectorRegistry()
    games = {game: GameTurns() for game in times}
    ours.register(TurnCollector(games))
    for game, seconds in times.items():
        for value in seconds:
            turns.labels(game).inc()
            replies.labels(game).observe(value)
            games[game].turns += 1
            games[game].replied(value)
    assert samples(ours) == samples(theirs)
    for game, seconds in times.items():  # every turn is there
        assert f'tavern_reply_seconds_count{{game="{game}"}} {len(seconds)}.0' in samples(ours)
