"""The A/B match's statistics (server/sprt.py), against values worked out by other means."""

from __future__ import annotations

import math

import pytest

from server.sprt import Results, Sprt, elo_estimate, elo_to_score, log_likelihood_ratio


def approximate_llr(results: Results, elo0: float, elo1: float) -> float:
    """Van den Bergh's closed form of the trinomial GSPRT (fishtest's LLR_alt2), close to the
    exact ratio for small Elo differences: N (s1 - s0) (2 s - s0 - s1) / (2 var)."""
    n = results.games
    score = results.points / n
    variance = (results.wins + results.draws / 4) / n - score**2
    s0, s1 = elo_to_score(elo0), elo_to_score(elo1)
    return n * (s1 - s0) * (2 * score - s0 - s1) / (2 * variance)


def test_the_log_likelihood_ratio_is_the_generalised_one_of_fishtest() -> None:
    # 4307 wins, 8620 draws, 4063 losses for [0, 3]: the closed form says 2.992.
    results = Results(losses=4063, draws=8620, wins=4307)
    assert approximate_llr(results, 0, 3) == pytest.approx(2.9922, abs=1e-4)
    assert log_likelihood_ratio(results, 0, 3) == pytest.approx(2.9913, abs=1e-4)
    for counts in ((40, 20, 60), (300, 500, 310), (10, 80, 12)):
        results = Results(*counts)
        exact = log_likelihood_ratio(results, -2, 4)
        assert exact == pytest.approx(approximate_llr(results, -2, 4), rel=0.05)
    # Even results favour neither of two hypotheses symmetric about 0.
    assert log_likelihood_ratio(Results(10, 5, 10), -5, 5) == pytest.approx(0, abs=1e-9)
    assert log_likelihood_ratio(Results(), 0, 5) == 0


def test_the_test_stops_where_its_bounds_say() -> None:
    test = Sprt(0, 200)
    assert (round(test.lower, 4), round(test.upper, 4)) == (-2.9444, 2.9444)  # alpha = beta = 5 %
    assert Sprt(0, 5, alpha=0.1, beta=0.2).upper == pytest.approx(math.log(0.8 / 0.1))
    # Straight wins against [0, 200]: undecided after 6, H1 after 8; straight losses: H0 after 5.
    assert test.verdict(Results(wins=6)) is None
    assert test.verdict(Results(wins=8)) == "H1"
    assert test.verdict(Results(losses=4)) is None
    assert test.verdict(Results(losses=5)) == "H0"


def test_the_elo_estimate_and_its_error_bar() -> None:
    estimate = elo_estimate(Results(losses=40, wins=60))
    assert estimate is not None
    assert estimate.elo == pytest.approx(-400 * math.log10(0.4 / 0.6))  # 70.4
    # The score's 95 % interval, 0.6 ± 1.96 * sqrt(0.24 / 100), in Elo: half its width.
    spread = 1.959964 * math.sqrt(0.24 / 100)
    low, high = (-400 * math.log10(1 / s - 1) for s in (0.6 - spread, 0.6 + spread))
    assert estimate.error == pytest.approx((high - low) / 2, rel=1e-5)
    assert elo_estimate(Results()) is None
    unbounded = elo_estimate(Results(wins=3))
    assert unbounded is not None and (unbounded.elo, unbounded.error) == (math.inf, math.inf)
    assert Results().add(1).add(0.5).add(0) == Results(losses=1, draws=1, wins=1)
