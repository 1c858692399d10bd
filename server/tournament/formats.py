"""Tournament formats as pure functions (issue 34, item 1): who meets whom in a Swiss round, a
knockout bracket, a gauntlet and a lichess-style arena, and how each is scored. No I/O, no
clock, no randomness: the same results always give the same pairings, so that a tournament
resumed from its records pairs again exactly as it did.

Players are names; a game is a ``Played`` (who sat first, who second, the first seat's score:
1, 0.5 or 0). Every function takes the players in seed order (the strongest first: by rating,
or as the tournament file lists them).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

SEARCH_STEPS = 100_000  # a Swiss round's search for pairs without repeats, at most
BYE_SCORE = 1.0  # a Swiss bye is a win (FIDE's pairing-allocated bye)
ARENA_WIN, ARENA_DRAW = 2, 1  # lichess's arena points; doubled on a streak
ARENA_STREAK = 2  # wins in a row after which the next results count double


@dataclass(frozen=True, slots=True)
class Played:
    """One finished game: ``first`` on the first seat, ``second`` on the other; ``score`` is
    the first's (1 a win, 0.5 a draw, 0 a loss)."""

    first: str
    second: str
    score: float


@dataclass(frozen=True, slots=True)
class Round:
    """A round's pairs, each (first seat, second seat), and who sits it out (a bye)."""

    pairs: tuple[tuple[str, str], ...]
    bye: str | None = None


# --- Swiss ---------------------------------------------------------------------------------------
def scores(
    players: Sequence[str], games: Iterable[Played], byes: Iterable[str] = ()
) -> dict[str, float]:
    """Each player's points: a win 1, a draw 0.5, a bye 1."""
    points = dict.fromkeys(players, 0.0)
    for game in games:
        points[game.first] += game.score
        points[game.second] += 1.0 - game.score
    for player in byes:
        points[player] += BYE_SCORE
    return points


def swiss_round(players: Sequence[str], games: Sequence[Played], byes: Sequence[str] = ()) -> Round:
    """The next Swiss round: players by score (then seed), each paired in its score group top
    half against bottom half (the Dutch system's rule), a player floating down when its group
    has no partner for it; never two who met before while a pairing without repeats exists
    (searched for, ``SEARCH_STEPS`` at most; past them repeats are allowed); an odd player out
    gets the bye, the lowest ranked who has not had one. Sides: who has sat first less often
    sits first (then who sat second last, then the higher ranked)."""
    seed = {player: index for index, player in enumerate(players)}
    points = scores(players, games, byes)
    ranked = sorted(players, key=lambda player: (-points[player], seed[player]))
    bye = None
    if len(ranked) % 2:
        had = set(byes)
        bye = next((p for p in reversed(ranked) if p not in had), ranked[-1])
        ranked.remove(bye)
    met = {frozenset((game.first, game.second)) for game in games}
    pairs = _matched(ranked, points, met) or _matched(ranked, points, set())
    assert pairs is not None  # without the rule against repeats, any order pairs
    return Round(tuple(_seated(a, b, games, seed) for a, b in pairs), bye)


def _preferences(ranked: list[str], points: dict[str, float]) -> dict[str, list[str]]:
    """For each player, the others in the order the Dutch system would rather pair it: first
    the mirror of its place in its score group (top half against bottom half), then the rest
    of its group, then the nearest groups below and above."""
    groups: dict[float, list[str]] = {}
    for player in ranked:
        groups.setdefault(points[player], []).append(player)
    preferred: dict[str, list[str]] = {}
    for player in ranked:
        group = groups[points[player]]
        place, half = group.index(player), len(group) // 2
        mirror = place + half if place < half else place - half
        in_group = sorted(
            (other for other in group if other != player),
            key=lambda other: (abs(group.index(other) - mirror), group.index(other)),
        )
        others = sorted(
            (other for other in ranked if points[other] != points[player]),
            key=lambda other: (abs(points[other] - points[player]), -points[other]),
        )
        preferred[player] = in_group + others
    return preferred


def _matched(
    ranked: list[str], points: dict[str, float], met: set[frozenset[str]]
) -> list[tuple[str, str]] | None:
    """Pairs for every player of ``ranked`` (an even number), none of ``met``: a depth-first
    search, the highest ranked unpaired player first, each taking its preferred partners in
    turn; None if there is none (or the search ran out of steps)."""
    preferred = _preferences(ranked, points)
    steps = 0

    def pair(left: list[str]) -> list[tuple[str, str]] | None:
        nonlocal steps
        if not left:
            return []
        player, rest = left[0], left[1:]
        for partner in preferred[player]:
            steps += 1
            if steps > SEARCH_STEPS:
                return None
            if partner in rest and frozenset((player, partner)) not in met:
                found = pair([other for other in rest if other != partner])
                if found is not None:
                    return [(player, partner), *found]
        return None

    return pair(ranked)


def _seated(a: str, b: str, games: Sequence[Played], seed: dict[str, int]) -> tuple[str, str]:
    """The pair in seat order: who has sat first less often first; then who sat second in
    its last game; then the higher ranked."""
    firsts = Counter(game.first for game in games)
    if firsts[a] != firsts[b]:
        return (a, b) if firsts[a] < firsts[b] else (b, a)
    last_second = {}
    for game in games:
        last_second[game.first], last_second[game.second] = False, True
    if last_second.get(a, False) != last_second.get(b, False):
        return (a, b) if last_second.get(a, False) else (b, a)
    return (a, b) if seed[a] < seed[b] else (b, a)


def buchholz(player: str, games: Iterable[Played], points: dict[str, float]) -> float:
    """The sum of the final scores of the player's opponents (a bye adds nothing)."""
    return sum(points[_opponent(game, player)] for game in games if player in _sides(game))


def sonneborn_berger(player: str, games: Iterable[Played], points: dict[str, float]) -> float:
    """The sum, over the player's games, of the opponent's final score times the player's
    result in that game (all of a beaten opponent's, half of a drawn one's)."""
    total = 0.0
    for game in games:
        if player in _sides(game):
            own = game.score if game.first == player else 1.0 - game.score
            total += own * points[_opponent(game, player)]
    return total


def swiss_standings(
    players: Sequence[str], games: Sequence[Played], byes: Sequence[str] = ()
) -> list[tuple[str, float, float, float]]:
    """(player, points, Buchholz, Sonneborn-Berger), the best first: by points, then each
    tie-break, then seed order."""
    points = scores(players, games, byes)
    seed = {player: index for index, player in enumerate(players)}
    rows = [
        (
            player,
            points[player],
            buchholz(player, games, points),
            sonneborn_berger(player, games, points),
        )
        for player in players
    ]
    return sorted(rows, key=lambda row: (-row[1], -row[2], -row[3], seed[row[0]]))


def _sides(game: Played) -> tuple[str, str]:
    return game.first, game.second


def _opponent(game: Played, player: str) -> str:
    return game.second if game.first == player else game.first


# --- knockout ------------------------------------------------------------------------------------
def bracket_order(size: int) -> list[int]:
    """The seeds (from 1) of a bracket of ``size`` (a power of two) in the order they meet:
    1 v size, and so on, the top two seeds meeting only in the final."""
    order = [1]
    while len(order) < size:
        total = 2 * len(order) + 1
        order = [seed for first in order for seed in (first, total - first)]
    return order


def knockout_first_round(players: Sequence[str]) -> list[tuple[str, str | None]]:
    """The first round of a knockout seeded by ``players``' order: the bracket is the next
    power of two, its empty places byes, which go to the top seeds (``None``: no opponent)."""
    size = 1 << max(0, math.ceil(math.log2(max(len(players), 1))))
    seeded: list[str | None] = [*players, *([None] * (size - len(players)))]
    order = bracket_order(size)
    matches = []
    for index in range(0, size, 2):
        first, second = seeded[order[index] - 1], seeded[order[index + 1] - 1]
        assert first is not None  # the higher seed of each pair is a player
        matches.append((first, second))
    return matches


def knockout_winner(a: str, b: str, games: Sequence[Played], tie_breaks: int) -> str | None:
    """Who goes through from the match of ``a`` (the higher seed) and ``b``: the winner of
    their first game; on a draw, of the tie-break games (the sides swapped each time) in turn;
    after ``tie_breaks`` drawn ones, the higher seed. None while undecided."""
    between = [game for game in games if {game.first, game.second} == {a, b}]
    for game in between[: 1 + tie_breaks]:
        if game.score != 0.5:
            return game.first if game.score == 1.0 else game.second
    return a if len(between) >= 1 + tie_breaks else None


def next_knockout_round(winners: Sequence[str]) -> list[tuple[str, str]]:
    """The next round: the winners in bracket order, paired as they stand."""
    return [(winners[index], winners[index + 1]) for index in range(0, len(winners) - 1, 2)]


# --- gauntlet and arena --------------------------------------------------------------------------
def gauntlet(champion: str, field: Sequence[str], both_ways: bool) -> list[tuple[str, str]]:
    """The champion against each of the field: the champion first, then (``both_ways``) the
    same pair the other way round."""
    pairs = []
    for other in field:
        pairs.append((champion, other))
        if both_ways:
            pairs.append((other, champion))
    return pairs


def arena_points(results: Sequence[float]) -> int:
    """A player's arena points from its results in order (1, 0.5, 0): a win 2, a draw 1; once
    it has won ``ARENA_STREAK`` in a row (on fire), its results count double until one is not a
    win (lichess's arena)."""
    points, streak = 0, 0
    for result in results:
        double = 2 if streak >= ARENA_STREAK else 1
        if result == 1.0:
            points += ARENA_WIN * double
            streak += 1
        else:
            points += ARENA_DRAW * double if result == 0.5 else 0
            streak = 0
    return points


def arena_pairs(
    waiting: Sequence[str], points: dict[str, int], last_opponent: dict[str, str]
) -> list[tuple[str, str]]:
    """Pair the players waiting (in the order they came): each with the waiting player nearest
    its points, not the one it just played while another waits; one left over waits on."""
    left = list(waiting)
    pairs = []
    while len(left) >= 2:
        player = left.pop(0)
        candidates = [other for other in left if last_opponent.get(player) != other] or left
        partner = min(
            candidates, key=lambda other: abs(points.get(other, 0) - points.get(player, 0))
        )
        left.remove(partner)
        pairs.append((player, partner))
    return pairs
