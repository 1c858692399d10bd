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

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from server.clock import Clock, Timer

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
    if a.game != b.game or a.rated != b.rated or a.bot.casefold() == b.bot.casefold():
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
    with the nearest rating it may meet."""
    waiting = sorted(seekers, key=lambda seeker: (seeker.since, seeker.id))
    taken: set[str] = set()
    pairs = []
    for index, seeker in enumerate(waiting):
        if seeker.id in taken:
            continue
        candidates = [
            other
            for other in waiting[index + 1 :]
            if other.id not in taken and may_meet(seeker, other, now)
        ]
        if not candidates:
            continue
        match = min(candidates, key=lambda other: (abs(other.rating - seeker.rating), other.since))
        taken.update((seeker.id, match.id))
        pairs.append(seated_in_order(seeker, match))
    return pairs


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
