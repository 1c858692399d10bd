"""The statistics of an A/B match: the score, the Elo difference with its error bar, and the
sequential probability ratio test that stops the match once it can decide (``tavern match``).

The test is fishtest's generalised SPRT on trinomial results (losses, draws, wins as 0, 1/2 and 1
point) in the logistic Elo model, as cutechess-cli and fishtest define it: H0 "A is ``elo0``
stronger than B", H1 "A is ``elo1`` stronger"; the log-likelihood ratio of the two maximum-
likelihood result distributions whose expected scores are those of ``elo0`` and ``elo1``; H1 is
accepted once it reaches ``log((1 - beta) / alpha)``, H0 once it falls to
``log(beta / (1 - alpha))``. Pure arithmetic: no I/O, no clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

POINTS = (0.0, 0.5, 1.0)  # a loss, a draw, a win: A's points in one game
ZERO_COUNT = 1e-3  # an outcome never seen counts as this (fishtest's regularisation)
Z_95 = 1.959963984540054  # the standard normal quantile of 97.5 %: a 95 % interval
BISECTIONS = 200  # halvings of the Lagrange multiplier's interval: far past double precision


@dataclass(frozen=True, slots=True)
class Results:
    """A's results against B: losses, draws, wins."""

    losses: int = 0
    draws: int = 0
    wins: int = 0

    @property
    def games(self) -> int:
        return self.losses + self.draws + self.wins

    @property
    def points(self) -> float:
        return self.wins + self.draws / 2

    def add(self, points: float) -> Results:
        """With one more game, in which A scored ``points`` (0, 1/2 or 1)."""
        if points == 1:
            return Results(self.losses, self.draws, self.wins + 1)
        if points == 0.5:
            return Results(self.losses, self.draws + 1, self.wins)
        return Results(self.losses + 1, self.draws, self.wins)


def elo_to_score(elo: float) -> float:
    """The expected score of a player ``elo`` points stronger (logistic model)."""
    return 1 / (1 + 10 ** (-elo / 400))


def score_to_elo(score: float) -> float:
    return -400 * math.log10(1 / score - 1)


@dataclass(frozen=True, slots=True)
class EloEstimate:
    """The Elo difference and the half-width of its 95 % interval (``inf`` when unbounded)."""

    elo: float
    error: float


def elo_estimate(results: Results) -> EloEstimate | None:
    """The Elo difference the results show (``None`` before the first game)."""
    games = results.games
    if games == 0:
        return None
    score = results.points / games
    variance = (
        results.wins * (1 - score) ** 2
        + results.draws * (0.5 - score) ** 2
        + results.losses * score**2
    ) / games
    spread = Z_95 * math.sqrt(variance / games)
    low, high = score - spread, score + spread
    if not 0 < score < 1 or low <= 0 or high >= 1:
        elo = math.inf if score >= 1 else -math.inf if score <= 0 else score_to_elo(score)
        return EloEstimate(elo, math.inf)
    return EloEstimate(score_to_elo(score), (score_to_elo(high) - score_to_elo(low)) / 2)


def _frequencies(results: Results) -> list[float]:
    counts = [float(results.losses), float(results.draws), float(results.wins)]
    counts = [count if count > 0 else ZERO_COUNT for count in counts]
    total = sum(counts)
    return [count / total for count in counts]


def _closest_with_score(frequencies: list[float], score: float) -> list[float]:
    """The distribution over ``POINTS`` with expected ``score`` that makes the observed
    frequencies most likely: ``p_i / (1 + m (a_i - score))``, the multiplier ``m`` found by
    bisection where every denominator is positive."""
    shifts = [point - score for point in POINTS]
    low, high = -1 / max(shifts), -1 / min(shifts)

    def slope(multiplier: float) -> float:
        return sum(
            p * shift / (1 + multiplier * shift)
            for p, shift in zip(frequencies, shifts, strict=True)
        )

    for _ in range(BISECTIONS):
        middle = (low + high) / 2
        if slope(middle) > 0:
            low = middle
        else:
            high = middle
    multiplier = (low + high) / 2
    return [p / (1 + multiplier * shift) for p, shift in zip(frequencies, shifts, strict=True)]


def log_likelihood_ratio(results: Results, elo0: float, elo1: float) -> float:
    """The generalised log-likelihood ratio of H1 (``elo1``) against H0 (``elo0``)."""
    if results.games == 0:
        return 0.0
    frequencies = _frequencies(results)
    under_h0 = _closest_with_score(frequencies, elo_to_score(elo0))
    under_h1 = _closest_with_score(frequencies, elo_to_score(elo1))
    return results.games * sum(
        p * (math.log(p1) - math.log(p0))
        for p, p0, p1 in zip(frequencies, under_h0, under_h1, strict=True)
    )


@dataclass(frozen=True, slots=True)
class Sprt:
    """The test's hypotheses and error rates."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05

    @property
    def lower(self) -> float:
        """At or below it, H0 is accepted."""
        return math.log(self.beta / (1 - self.alpha))

    @property
    def upper(self) -> float:
        """At or above it, H1 is accepted."""
        return math.log((1 - self.beta) / self.alpha)

    def verdict(self, results: Results) -> str | None:
        """``"H1"``, ``"H0"``, or ``None`` while the test cannot decide."""
        ratio = log_likelihood_ratio(results, self.elo0, self.elo1)
        if ratio >= self.upper:
            return "H1"
        if ratio <= self.lower:
            return "H0"
        return None
