"""The A/B test's statistics (``server.sprt``), in memory, against values computed here from
the formulas by other means: the score and Elo by hand, the exact LLR by a search over the
distributions with the hypothesis's mean, and the well-known approximation of the LLR."""

from __future__ import annotations

import math
import re

import pytest

from server.sprt import REGULARIZE, Sprt, Tally, Verdict


def logistic(elo: float) -> float:
    return 1 / (1 + 10 ** (-elo / 400))


def best_log_likelihood(counts: tuple[float, float, float], mean: float) -> float:
    """max of sum(c log p) over (loss, draw, win) probabilities with ``win + draw / 2 = mean``,
    by a golden-section search on the draw probability (the log-likelihood is concave)."""
    losses, draws, wins = counts

    def log_likelihood(draw: float) -> float:
        win = mean - draw / 2
        loss = 1 - win - draw
        return losses * math.log(loss) + draws * math.log(draw) + wins * math.log(win)

    # win > 0 needs draw < 2 mean; loss > 0 needs draw < 2 (1 - mean).
    low, high = 1e-15, min(2 * mean, 2 * (1 - mean)) - 1e-15
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(200):
        left, right = high - ratio * (high - low), low + ratio * (high - low)
        if log_likelihood(left) < log_likelihood(right):
            low = left
        else:
            high = right
    return log_likelihood((low + high) / 2)


def searched_llr(tally: Tally, elo0: float, elo1: float) -> float:
    counts = tuple(max(count, REGULARIZE) for count in (tally.losses, tally.draws, tally.wins))
    assert len(counts) == 3
    return best_log_likelihood(counts, logistic(elo1)) - best_log_likelihood(counts, logistic(elo0))


def approximate_llr(tally: Tally, elo0: float, elo1: float) -> float:
    """N (s1 - s0) (2 s - s0 - s1) / (2 var): fishtest's LLR_alt2, on the regularized counts."""
    wins, draws, losses = (
        max(count, REGULARIZE) for count in (tally.wins, tally.draws, tally.losses)
    )
    n = wins + draws + losses
    s = (wins + draws / 2) / n
    var = (wins * (1 - s) ** 2 + draws * (0.5 - s) ** 2 + losses * s**2) / n
    s0, s1 = logistic(elo0), logistic(elo1)
    return n * (s1 - s0) * (2 * s - s0 - s1) / (2 * var)


def test_the_bounds_are_wald_s() -> None:
    assert Sprt(0, 5).bounds() == pytest.approx((-2.944439, 2.944439), abs=1e-6)
    lower, upper = Sprt(0, 5, alpha=0.01, beta=0.1).bounds()
    assert lower == pytest.approx(math.log(0.1 / 0.99))
    assert upper == pytest.approx(math.log(0.9 / 0.01))


def wilson_ends(tally: Tally) -> tuple[float, float]:
    """The scores ``s`` at which the games' spread, scaled to ``s`` as a win-or-loss game's is
    (``k s (1 - s)``), puts the seen score at 1.96 standard errors: found by bisection on each
    side of the score, not by the quadratic's formula."""
    n, score = tally.games, tally.score()
    variance = (
        tally.wins * (1 - score) ** 2 + tally.draws * (0.5 - score) ** 2 + tally.losses * score**2
    ) / n
    k = variance / (score * (1 - score))

    def gap(s: float) -> float:  # < 0 inside the interval, > 0 outside
        return (s - score) ** 2 - 1.959964**2 * k * s * (1 - s) / n

    ends = []
    for bound in (0.0, 1.0):
        outside, inside = bound, score
        for _ in range(200):
            middle = (outside + inside) / 2
            outside, inside = (middle, inside) if gap(middle) > 0 else (outside, middle)
        ends.append(inside)
    return ends[0], ends[1]


def elo_at(score: float) -> float:
    return -400 * math.log10(1 / score - 1)


def test_score_and_elo_with_its_error_bar() -> None:
    tally = Tally(wins=60, draws=20, losses=20)
    assert tally.games == 100
    assert tally.score() == pytest.approx(0.7)
    low, high = wilson_ends(tally)
    elo, error = tally.elo()
    assert elo == pytest.approx(400 * math.log10(0.7 / 0.3))  # +147.2
    assert error == pytest.approx((elo_at(high) - elo_at(low)) / 2, rel=1e-6)
    # Over many games it is the normal approximation's (cutechess-cli's): per game 60 scores of
    # 1, 20 of 0.5, 20 of 0 around 0.7, variance 0.16, so the mean's standard error is 0.04.
    spread = 1.959964 * 0.04
    normal = (elo_at(0.7 + spread) - elo_at(0.7 - spread)) / 2
    assert error == pytest.approx(normal, rel=0.03)  # 64.5 against 66.0
    assert Tally(5, 5, 5).elo()[0] == 0
    assert Tally(3, 0, 0).elo() == (math.inf, math.inf)  # all wins: no finite estimate
    assert Tally(0, 0, 3).elo()[0] == -math.inf
    assert Tally(0, 4, 0).elo() == (0, math.inf)  # every game drawn: no spread seen yet
    assert Tally().elo() == (0, math.inf)


@pytest.mark.parametrize(
    ("wins", "draws", "losses", "elo", "error"),
    [
        (1, 0, 5, -279.6, 324.0),  # the normal approximation's lower end is below 0 here
        (2, 0, 10, -279.6, 243.3),
        (1, 0, 1, 0.0, 392.5),
        (1, 1, 0, 190.8, 287.2),
        (5, 3, 4, 29.0, 164.4),
    ],
)
def test_once_both_bots_have_scored_the_error_bar_is_finite(
    wins: int, draws: int, losses: int, elo: float, error: float
) -> None:
    tally = Tally(wins, draws, losses)
    found, bar = tally.elo()
    assert (round(found, 1), round(bar, 1)) == (elo, error)
    low, high = wilson_ends(tally)
    assert 0 < low < tally.score() < high < 1
    assert bar == pytest.approx((elo_at(high) - elo_at(low)) / 2, rel=1e-6)


@pytest.mark.parametrize(
    ("tally", "elo0", "elo1"),
    [
        (Tally(1, 0, 0), 0, 50),
        (Tally(0, 0, 2), 0, 400),
        (Tally(7, 3, 4), 0, 50),
        (Tally(300, 100, 100), 0, 5),
        (Tally(120, 250, 110), -5, 10),
    ],
)
def test_the_llr_is_the_exact_gsprt(tally: Tally, elo0: float, elo1: float) -> None:
    assert Sprt(elo0, elo1).llr(tally) == pytest.approx(searched_llr(tally, elo0, elo1), abs=1e-6)


def test_over_many_games_the_llr_agrees_with_the_well_known_approximation() -> None:
    tally = Tally(wins=3100, draws=2000, losses=2900)
    exact, approximate = Sprt(0, 5).llr(tally), approximate_llr(tally, 0, 5)
    assert exact == pytest.approx(approximate, rel=0.02)
    assert 0 < exact < Sprt(0, 5).bounds()[1]


def test_a_strong_lead_accepts_h1() -> None:
    sprt = Sprt(0, 5)
    lead = Tally(wins=300, draws=100, losses=100)
    assert sprt.llr(lead) > 2.944
    assert sprt.decision(lead) is Verdict.H1
    assert sprt.verdict_text(Verdict.H1) == "H1 accepted: A is stronger by at least 5 Elo"


def test_equal_results_drift_toward_h0() -> None:
    sprt = Sprt(0, 5)
    llrs = [sprt.llr(Tally(n, n, n)) for n in (100, 1000, 3000, 10_000)]
    assert llrs == sorted(llrs, reverse=True)
    assert llrs[0] < 0
    assert [sprt.decision(Tally(n, n, n)) for n in (100, 10_000)] == [None, Verdict.H0]
    assert sprt.verdict_text(Verdict.H0) == "H0 accepted: A is not stronger by more than 0 Elo"


def test_a_handful_of_games_decides_nothing() -> None:
    # The approximation would already say +26 after a single win (its variance is nearly 0).
    assert approximate_llr(Tally(1, 0, 0), 0, 50) > 20
    sprt = Sprt(0, 50)
    assert sprt.llr(Tally(1, 0, 0)) == pytest.approx(math.log(logistic(50) / 0.5), abs=1e-3)
    assert sprt.decision(Tally(3, 0, 0)) is None
    assert sprt.llr(Tally()) == 0
    assert sprt.decision(Tally()) is None


def test_sure_hypotheses_decide_within_a_few_games() -> None:
    sprt = Sprt(0, 400)  # A wins 91% of its games under H1
    assert [sprt.decision(Tally(n, 0, 0)) for n in (4, 5)] == [None, Verdict.H1]
    assert [sprt.decision(Tally(0, 0, n)) for n in (1, 2)] == [None, Verdict.H0]


@pytest.mark.parametrize(
    ("elo0", "elo1", "alpha", "beta", "says"),
    [
        (5, 0, 0.05, 0.05, "ELO0 (5) must be below ELO1 (0)"),
        (0, 0, 0.05, 0.05, "ELO0 (0) must be below ELO1 (0)"),
        (0, 5, 0, 0.05, "alpha must be between 0 and 0.5, got 0"),
        (0, 5, 0.05, 0.7, "beta must be between 0 and 0.5, got 0.7"),
    ],
)
def test_impossible_tests_are_refused(
    elo0: float, elo1: float, alpha: float, beta: float, says: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(says)}$"):
        Sprt(elo0, elo1, alpha, beta)
