"""Rated matchmaking: who among the seekers plays whom, and the pool they wait in.

``pair_seekers`` is the policy, a pure function of the seekers and the time: seekers of one
game (and of the same rated-ness) meet when their ratings are within a window that widens the
longer each has waited, the longest-waiting first, never a bot against itself, and not the
opponent of a bot's last game unless both have waited ``REMATCH_AFTER_S``; the seat each gets
alternates (the one that did not have the first seat last time gets it). ``SeekPool`` holds a
node's seekers when the arena has no other nodes, and pairs them on each seek and every
``TICK_S`` while any wait; an arena on Redis keeps its pool there (``server.cluster``), with
the same policy.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from server.clock import Clock, Timer
from server.names import same_name

WINDOW_BASE = 3.0  # rating points (openskill's mu, 25 for a new bot) two fresh seekers may differ
WINDOW_GROWTH_PER_S = 1.0  # how much wider the window gets per second waited
WINDOW_MOST = 50.0  # wide enough for anyone, after some 47 s
REMATCH_AFTER_S = 10.0  # the last opponent is met again only after this long a wait
TICK_S = 0.25


@dataclass(frozen=True, slots=True)
class Seeker:
    """One seek, as the policy sees it."""

    id: str  # unique in the pool
    bot: str  # a registered name, or a guest's nick
    game: str
    rated: bool
    rating: float  # the bot's mu in this game's current season (a new bot's: 25)
    since: float  # clock time of the seek
    last_opponent: str | None = None
    had_first_seat: bool = False  # in its last game


def window(waited_s: float) -> float:
    return min(WINDOW_MOST, WINDOW_BASE + WINDOW_GROWTH_PER_S * max(0.0, waited_s))


def may_meet(a: Seeker, b: Seeker, now: float) -> bool:
    if a.game != b.game or a.rated != b.rated or same_name(a.bot, b.bot):
        return False
    waited_a, waited_b = now - a.since, now - b.since
    rematch = a.last_opponent == b.bot or b.last_opponent == a.bot
    if rematch and min(waited_a, waited_b) < REMATCH_AFTER_S:
        return False
    return abs(a.rating - b.rating) <= min(window(waited_a), window(waited_b))


def seated_in_order(a: Seeker, b: Seeker) -> tuple[Seeker, Seeker]:
    """The pair with the one to take the first seat first: sides alternate."""
    return (b, a) if a.had_first_seat and not b.had_first_seat else (a, b)


def pair_seekers(seekers: Iterable[Seeker], now: float) -> list[tuple[Seeker, Seeker]]:
    """The pairs to seat now, each in seat order; the longest-waiting seeker is served first,
    with the nearest rating it may meet (of equals, the longest-waiting).

    Each seeker looks outward from its own rating in its game's seekers sorted by rating, and
    stops at the first distance where it finds one it may meet: with thousands waiting at
    about the same rating (new bots), a pass is not every seeker against every other."""
    waiting = sorted(seekers, key=lambda seeker: (seeker.since, seeker.id))
    pools: dict[tuple[str, bool], list[Seeker]] = {}
    for seeker in waiting:
        pools.setdefault((seeker.game, seeker.rated), []).append(seeker)
    by_rating = {key: sorted(pool, key=lambda s: s.rating) for key, pool in pools.items()}
    ratings = {key: [seeker.rating for seeker in pool] for key, pool in by_rating.items()}
    taken: set[str] = set()
    pairs = []
    for seeker in waiting:
        if seeker.id in taken:
            continue
        key = (seeker.game, seeker.rated)
        match = _nearest(seeker, by_rating[key], ratings[key], taken, now)
        if match is not None:
            taken.update((seeker.id, match.id))
            pairs.append(seated_in_order(seeker, match))
    return pairs


def _nearest(
    seeker: Seeker, pool: list[Seeker], ratings: list[float], taken: set[str], now: float
) -> Seeker | None:
    """The seeker of ``pool`` (sorted by rating) nearest ``seeker``'s rating that it may
    meet, not ``taken``; of those at the same distance, the longest-waiting."""
    reach = window(now - seeker.since)  # no one farther may meet it
    left = bisect.bisect_left(ratings, seeker.rating) - 1
    right = left + 1
    best: Seeker | None = None
    best_distance = math.inf
    while True:
        left_distance = seeker.rating - ratings[left] if left >= 0 else math.inf
        right_distance = ratings[right] - seeker.rating if right < len(pool) else math.inf
        distance = min(left_distance, right_distance)
        if distance > min(reach, best_distance):
            return best
        if left_distance <= right_distance:
            other, left = pool[left], left - 1
        else:
            other, right = pool[right], right + 1
        if other.id in taken or other.id == seeker.id or not may_meet(seeker, other, now):
            continue
        if best is None or (other.since, other.id) < (best.since, best.id):
            best, best_distance = other, distance


class SeekPool:
    """A node's seekers, paired in memory: ``meet`` seats each pair (an arena callback)."""

    def __init__(self, clock: Clock, meet: Callable[[Seeker, Seeker], object]) -> None:
        self.clock = clock
        self.meet = meet
        self.seekers: dict[str, Seeker] = {}
        self._timer: Timer | None = None

    def add(self, seeker: Seeker) -> None:
        self.seekers[seeker.id] = seeker
        self._pair()

    def remove(self, seeker_id: str) -> None:
        self.seekers.pop(seeker_id, None)
        if not self.seekers and self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _tick(self) -> None:
        self._timer = None
        self._pair()

    def _pair(self) -> None:
        for first, second in pair_seekers(self.seekers.values(), self.clock.now()):
            del self.seekers[first.id], self.seekers[second.id]
            self.meet(first, second)
        if self.seekers and self._timer is None:
            self._timer = self.clock.call_later(TICK_S, self._tick)
