"""Rated matchmaking: who among the seekers plays whom, and the pool they wait in.

``pair_seekers`` is the policy, a pure function of the seekers and the time: seekers of one
game (and of the same rated-ness) meet when their ratings are within a window that widens the
longer each has waited, the longest-waiting first, never a bot against itself, and not the
opponent of a bot's last game unless both have waited ``REMATCH_AFTER_S``; the seat each gets
alternates (the one that did not have the first seat last time gets it). A pass of it
(``Pairing``) is served in slices of bounded work, so that thousands of seekers never hold the
event loop. ``SeekPool`` holds a node's seekers when the arena has no other nodes, and pairs
them as seeks come and every ``TICK_S`` while any wait; an arena on Redis keeps its pool there
(``server.cluster``), with the same policy.
"""

from __future__ import annotations

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
MOST_LOOKS = 32  # seekers one seeker looks at in a pass, the nearest first
SLICE_SEEKERS = 256  # seekers a slice of a pass serves, at most
SLICE_PAIRS = 32  # pairs a slice makes, at most (each opens a match)


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
    """The pairs to seat now, each in seat order: a whole ``Pairing`` pass at once."""
    pairing = Pairing(seekers, now)
    pairs = []
    while not pairing.done:
        pairs += pairing.slice()
    return pairs


class Pairing:
    """One pass of the policy over the seekers waiting as it began, served in slices: the
    longest-waiting seeker first, with the nearest rating it may meet (of equals, the
    longest-waiting). ``slice`` serves the next ``SLICE_SEEKERS`` seekers, or fewer once it has
    made ``SLICE_PAIRS`` pairs, so that whoever runs a pass over thousands of seekers can let
    the event loop run between slices (a node's heartbeat among the rest).

    Each seeker looks outward from its own rating, one rating at a time, and at each rating at
    the seekers there from the longest-waiting on, skipping a run of seeks of its own bot at
    once; it looks at ``MOST_LOOKS`` seekers at most: one that may meet none of them (a crowd
    of its own rematches, say) waits for the next pass. A pass thus costs at most some
    ``MOST_LOOKS`` looks per seeker, however many wait at one rating under one name."""

    def __init__(self, seekers: Iterable[Seeker], now: float) -> None:
        self.now = now
        self._waiting = sorted(seekers, key=lambda seeker: (seeker.since, seeker.id))
        by_pool: dict[tuple[str, bool], list[Seeker]] = {}
        for seeker in self._waiting:
            by_pool.setdefault((seeker.game, seeker.rated), []).append(seeker)
        self._pools = {key: _Ratings(pool) for key, pool in by_pool.items()}
        self._taken: set[str] = set()
        self._next = 0  # in ``_waiting``: the next seeker to serve

    @property
    def done(self) -> bool:
        return self._next >= len(self._waiting)

    def slice(self) -> list[tuple[Seeker, Seeker]]:
        """The pairs of the next slice, each in seat order."""
        pairs: list[tuple[Seeker, Seeker]] = []
        served = 0
        while self._next < len(self._waiting) and served < SLICE_SEEKERS:
            seeker = self._waiting[self._next]
            self._next += 1
            if seeker.id in self._taken:
                continue
            served += 1
            pool = self._pools[(seeker.game, seeker.rated)]
            match = pool.nearest(seeker, self._taken, self.now)
            if match is not None:
                self._taken.update((seeker.id, match.id))
                pairs.append(seated_in_order(seeker, match))
                if len(pairs) >= SLICE_PAIRS:
                    break
        return pairs


class _Ratings:
    """One game's seekers of one rated-ness, by rating: at each rating, its seekers the
    longest-waiting first; a rating whose seekers are all taken is unlinked from its
    neighbours, so that no seeker walks past it again."""

    def __init__(self, waiting: list[Seeker]) -> None:  # sorted by (since, id)
        at: dict[float, list[Seeker]] = {}
        for seeker in waiting:
            at.setdefault(seeker.rating, []).append(seeker)
        self.ratings = sorted(at)
        self.index = {rating: index for index, rating in enumerate(self.ratings)}
        self.seekers = [at[rating] for rating in self.ratings]
        self.bots = [[seeker.bot.casefold() for seeker in group] for group in self.seekers]
        self.other_bot = [_other_bot(bots) for bots in self.bots]
        self.first = [0] * len(self.ratings)  # at each rating, none taken before this one
        self.lower = list(range(-1, len(self.ratings) - 1))  # the next rating down still linked
        self.higher = list(range(1, len(self.ratings) + 1))

    def nearest(self, seeker: Seeker, taken: set[str], now: float) -> Seeker | None:
        """The seeker nearest ``seeker``'s rating that it may meet, not ``taken``; of those at
        the same distance, the longest-waiting (of those it looked at)."""
        reach = window(now - seeker.since)  # no one farther may meet it
        rating, count = seeker.rating, len(self.ratings)
        lower, higher = self.lower[self.index[rating]], self.index[rating]
        looks = MOST_LOOKS
        best: Seeker | None = None
        best_order = (math.inf, math.inf, "")  # distance, since, id
        while looks > 0:
            lower_distance = rating - self.ratings[lower] if lower >= 0 else math.inf
            higher_distance = self.ratings[higher] - rating if higher < count else math.inf
            distance = min(lower_distance, higher_distance)
            if distance > min(reach, best_order[0]):
                break
            if lower_distance <= higher_distance:
                at, lower = lower, self.lower[lower]
            else:
                at, higher = higher, self.higher[higher]
            found, looks = self._first_met(at, seeker, taken, now, looks)
            if found is not None and (distance, found.since, found.id) < best_order:
                best, best_order = found, (distance, found.since, found.id)
        return best

    def _first_met(
        self, at: int, seeker: Seeker, taken: set[str], now: float, looks: int
    ) -> tuple[Seeker | None, int]:
        """The longest-waiting seeker at rating ``at`` that ``seeker`` may meet, not taken,
        within ``looks``; and the looks left."""
        group, bots, other_bot = self.seekers[at], self.bots[at], self.other_bot[at]
        first = self.first[at]
        while first < len(group) and group[first].id in taken:
            first += 1
        self.first[at] = first
        if first == len(group):
            self._unlink(at)
            return None, looks
        bot = seeker.bot.casefold()
        index = first
        while index < len(group) and looks > 0:
            looks -= 1
            other = group[index]
            if bots[index] == bot:  # itself, or another seek of its bot: the run of them
                index = other_bot[index]
            elif other.id not in taken and may_meet(seeker, other, now):
                return other, looks
            else:
                index += 1
        return None, looks

    def _unlink(self, at: int) -> None:
        lower, higher = self.lower[at], self.higher[at]
        if lower >= 0:
            self.higher[lower] = higher
        if higher < len(self.ratings):
            self.lower[higher] = lower


def _other_bot(bots: list[str]) -> list[int]:
    """For each seeker of a rating, where the next one of another bot is."""
    other = [len(bots)] * len(bots)
    for index in range(len(bots) - 2, -1, -1):
        other[index] = index + 1 if bots[index + 1] != bots[index] else other[index + 1]
    return other


class SeekPool:
    """A node's seekers, paired in memory: ``meet`` seats each pair (an arena callback). A pass
    begins as soon as a seek comes while none is due, and every ``TICK_S`` while any wait; it
    runs one slice per callback of the clock, so that the event loop runs between slices."""

    def __init__(self, clock: Clock, meet: Callable[[Seeker, Seeker], object]) -> None:
        self.clock = clock
        self.meet = meet
        self.seekers: dict[str, Seeker] = {}
        self._timer: Timer | None = None
        self._pass: Pairing | None = None  # under way

    def add(self, seeker: Seeker) -> None:
        self.seekers[seeker.id] = seeker
        if self._timer is None and self._pass is None:
            self._timer = self.clock.call_later(0, self._slice)

    def remove(self, seeker_id: str) -> None:
        self.seekers.pop(seeker_id, None)
        if not self.seekers:
            self._pass = None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def _slice(self) -> None:
        self._timer = None
        if self._pass is None:
            self._pass = Pairing(self.seekers.values(), self.clock.now())
        for first, second in self._pass.slice():
            if first.id in self.seekers and second.id in self.seekers:  # neither left since
                del self.seekers[first.id], self.seekers[second.id]
                self.meet(first, second)
        if not self._pass.done:
            self._timer = self.clock.call_later(0, self._slice)
            return
        self._pass = None
        if self.seekers:
            self._timer = self.clock.call_later(TICK_S, self._slice)
