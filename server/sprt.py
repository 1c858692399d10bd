"""The statistics of an A/B test between two bots (``tavern match``): score, Elo difference with
its 95% error bar, and the sequential probability ratio test that stops the test once it can
decide, as cutechess-cli and fishtest define them. Pure: numbers in, numbers out.

Games are counted from A's side: a win is A's win. The Elo model is the logistic one: a player
``elo`` points stronger scores ``1 / (1 + 10 ** (-elo / 400))`` on average (a draw is half a
point).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

Z_95 = 1.959963984540054  # the standard normal's 97.5th percentile: a two-sided 95% interval
BISECTIONS = 200  # halvings of the secular equation's interval: far past a double's precision
REGULARIZE = 1e-3  # added to empty outcome counts before the LLR, as fishtest's LLRcalc does


def expected_score(elo: float) -> float:
    """The mean score of a player ``elo`` points stronger (logistic Elo)."""
    return 1 / (1 + 10 ** (-elo / 400))


def elo_of(score: float) -> float:
    """The Elo difference whose expected score is ``score`` (infinite at 0 and 1)."""
    if score <= 0:
        return -math.inf
    if score >= 1:
        return math.inf
    return -400 * math.log10(1 / score - 1) + 0.0  # + 0.0: an even score is +0, not -0


@dataclass(frozen=True, slots=True)
class Tally:
    """A's wins, draws and losses against B."""

    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def score(self) -> float:
        """A's mean score per game (0.5 before any game)."""
        if self.games == 0:
            return 0.5
        return (self.wins + self.draws / 2) / self.games

    def elo(self) -> tuple[float, float]:
        """The Elo difference A - B and the half-width of its 95% interval: the score's interval
        turned into Elo at both ends, halved, as cutechess-cli reports it, but the score's
        interval is Wilson's rather than the normal approximation's. The normal one, score ±
        1.96 standard errors, leaves 0..1 over a few lopsided games (1 win and 5 losses: its
        lower end is below 0, an infinite Elo) although both bots have scored; Wilson's ends are
        the scores ``s`` whose own spread reaches the one seen, ``(s - score)**2 = z**2 k s (1 -
        s) / games``, ``k`` the games' variance over a draw-less game's at that score (1 without
        draws, less with them), and stay strictly inside 0..1 whenever the score does. Over many
        games the two agree. Infinite while one bot has every point (all wins or all losses),
        and while every game is drawn (the games show no spread yet)."""
        score = self.score()
        variance = 0.0 if self.games == 0 else _variance(self.outcomes(), score)
        if not 0 < score < 1 or variance == 0:
            return (0.0 if self.games == 0 else elo_of(score)), math.inf
        spread = Z_95**2 * variance / (score * (1 - score)) / self.games  # z**2 k / games
        middle = 2 * score + spread
        root = math.sqrt(spread**2 + 4 * spread * score * (1 - score))
        low, high = (middle - root) / (2 + 2 * spread), (middle + root) / (2 + 2 * spread)
        return elo_of(score), (elo_of(high) - elo_of(low)) / 2

    def outcomes(self) -> tuple[tuple[float, float], ...]:
        """(A's score, count) for a loss, a draw and a win."""
        return ((0.0, self.losses), (0.5, self.draws), (1.0, self.wins))


def _variance(outcomes: tuple[tuple[float, float], ...], mean: float) -> float:
    total = sum(count for _, count in outcomes)
    return sum(count * (value - mean) ** 2 for value, count in outcomes) / total


def most_likely(outcomes: tuple[tuple[float, float], ...], mean: float) -> tuple[float, ...]:
    """The most likely distribution of the outcomes' values (given their counts) whose mean
    is ``mean``, a score strictly between the lowest and highest value: by Lagrange, each
    probability is ``f / (1 + x (value - mean))``, ``f`` the observed frequency and ``x`` the
    root of ``sum f (value - mean) / (1 + x (value - mean)) = 0`` (fishtest's secular
    equation), found here by bisection where every denominator stays positive."""
    total = sum(count for _, count in outcomes)
    frequencies = [count / total for _, count in outcomes]
    shifts = [value - mean for value, _ in outcomes]

    def slope(x: float) -> float:  # decreasing in x, from +inf to -inf over the interval
        return sum(f * v / (1 + x * v) for f, v in zip(frequencies, shifts, strict=True))

    low, high = -1 / max(shifts), -1 / min(shifts)
    for _ in range(BISECTIONS):
        middle = (low + high) / 2
        if slope(middle) > 0:
            low = middle
        else:
            high = middle
    x = (low + high) / 2
    return tuple(f / (1 + x * v) for f, v in zip(frequencies, shifts, strict=True))


class Verdict(enum.Enum):
    H1 = "H1"  # A is stronger by at least elo1
    H0 = "H0"  # A is not stronger by more than elo0
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True, slots=True)
class Sprt:
    """H0: A - B = ``elo0`` Elo against H1: A - B = ``elo1`` (logistic Elo), with a false
    positive rate ``alpha`` and a false negative rate ``beta``.

    The bounds are Wald's, as cutechess-cli and fishtest take them: lower
    ``ln(beta / (1 - alpha))``, upper ``ln((1 - beta) / alpha)`` (±2.944 for 0.05 and 0.05).
    """

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not self.elo0 < self.elo1:
            raise ValueError(f"ELO0 ({self.elo0:g}) must be below ELO1 ({self.elo1:g})")
        for name, rate in (("alpha", self.alpha), ("beta", self.beta)):
            if not 0 < rate < 0.5:
                raise ValueError(f"{name} must be between 0 and 0.5, got {rate:g}")

    def bounds(self) -> tuple[float, float]:
        return math.log(self.beta / (1 - self.alpha)), math.log((1 - self.beta) / self.alpha)

    def llr(self, tally: Tally) -> float:
        """The log-likelihood ratio of H1 against H0 for the trinomial (win/draw/loss) results:
        the exact generalized SPRT of fishtest's ``stat_util.LLR_logistic`` (``LLRcalc.LLR``).

        Under each hypothesis the results' distribution is the most likely one whose mean
        score is the hypothesis's (``s0``, ``s1``: the expected scores at ``elo0`` and
        ``elo1``); the LLR is the log of the two likelihoods' ratio. As in fishtest, an outcome
        not yet seen counts ``REGULARIZE`` games. The well-known approximation
        ``N (s1 - s0) (2 s - s0 - s1) / (2 var)`` agrees with it over many games, but over a
        handful it is far off (a single win alone gives +26 for 0 against 50 Elo, past the
        bound), so the exact form decides here. 0 before any game.
        """
        if tally.games == 0:
            return 0.0
        outcomes = tuple((value, max(count, REGULARIZE)) for value, count in tally.outcomes())
        under_h0 = most_likely(outcomes, expected_score(self.elo0))
        under_h1 = most_likely(outcomes, expected_score(self.elo1))
        return sum(
            count * math.log(p1 / p0)
            for (_, count), p0, p1 in zip(outcomes, under_h0, under_h1, strict=True)
        )

    def decision(self, tally: Tally) -> Verdict | None:
        """H1 or H0 once the LLR has crossed a bound, else ``None`` (play on)."""
        lower, upper = self.bounds()
        llr = self.llr(tally)
        if llr >= upper:
            return Verdict.H1
        if llr <= lower:
            return Verdict.H0
        return None

    def verdict_text(self, verdict: Verdict) -> str:
        if verdict is Verdict.H1:
            return f"H1 accepted: A is stronger by at least {self.elo1:g} Elo"
        if verdict is Verdict.H0:
            return f"H0 accepted: A is not stronger by more than {self.elo0:g} Elo"
        return "inconclusive: every game played, the LLR between its bounds"
