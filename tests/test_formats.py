"""Tournament formats as pure functions (issue 34, item 1): a Swiss round by the Dutch system's
rule (top half of a score group against its bottom half, no repeats, byes, sides alternating) and
its tie-breaks, computed by hand on a small event; a knockout's bracket and tie-break games; a
gauntlet; the arena's points with its streak. Properties with Hypothesis: over random results,
no two bots meet twice while the rounds allow it, and every bot plays every round but for one
bye at most."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from server.tournament.formats import (
    Played,
    Round,
    arena_pairs,
    arena_points,
    bracket_order,
    gauntlet,
    knockout_first_round,
    knockout_winner,
    next_knockout_round,
    swiss_round,
    swiss_standings,
)

FOUR = ["A", "B", "C", "D"]  # in seed order


def test_a_four_player_swiss_by_hand() -> None:
    # Round 1: one score group, its top half against its bottom half.
    assert swiss_round(FOUR, []) == Round((("A", "C"), ("B", "D")))
    first = [Played("A", "C", 1.0), Played("B", "D", 0.0)]
    # Round 2: the winners meet, the losers meet; whoever sat first sits second now.
    assert swiss_round(FOUR, first) == Round((("D", "A"), ("C", "B")))
    games = [*first, Played("D", "A", 1.0), Played("C", "B", 0.5)]
    # Points: D 2, A 1, B 0.5, C 0.5. Buchholz (the opponents' points): A 0.5 + 2, B 2 + 0.5,
    # C 1 + 0.5, D 0.5 + 1. Sonneborn-Berger (beaten opponents' points, half a drawn one's):
    # A 0.5 (C), B 0.25 (half of C), C 0.25 (half of B), D 0.5 (B) + 1 (A).
    assert swiss_standings(FOUR, games) == [
        ("D", 2.0, 1.5, 1.5),
        ("A", 1.0, 2.5, 0.5),
        ("B", 0.5, 2.5, 0.25),
        ("C", 0.5, 1.5, 0.25),
    ]
    # Round 3: no repeats. A (1) meets the best it has not met; D (2) too.
    third = swiss_round(FOUR, games)
    met = {frozenset((game.first, game.second)) for game in games}
    assert all(frozenset(pair) not in met for pair in third.pairs)
    assert {frozenset(pair) for pair in third.pairs} == {frozenset("AB"), frozenset("CD")}


def test_an_odd_player_out_gets_the_bye_lowest_first_and_never_twice() -> None:
    five = [*FOUR, "E"]
    first = swiss_round(five, [])
    assert first.bye == "E" and len(first.pairs) == 2
    games = [Played(a, b, 1.0) for a, b in first.pairs]
    second = swiss_round(five, games, byes=["E"])
    assert second.bye is not None and second.bye != "E"
    # The bye is a win: E stands with the round's winners.
    assert {row[0]: row[1] for row in swiss_standings(five, games, ["E"])}["E"] == 1.0


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=2, max_value=12), st.data())
def test_swiss_rounds_never_repeat_a_pair_and_everyone_plays_but_one_bye(
    count: int, data: st.DataObject
) -> None:
    players = [f"p{index}" for index in range(count)]
    rounds = max(1, count // 2 if count % 2 == 0 else (count - 1) // 2)
    games: list[Played] = []
    byes: list[str] = []
    for _ in range(rounds):
        played = swiss_round(players, games, byes)
        seated = [player for pair in played.pairs for player in pair]
        if played.bye is not None:
            seated.append(played.bye)
            byes.append(played.bye)
        assert sorted(seated) == sorted(players)  # every one plays, or has the bye
        firsts = Counter(game.first for game in games)
        for first, second in played.pairs:  # who sat first less often sits first
            assert firsts[first] <= firsts[second]
            result = data.draw(st.sampled_from([1.0, 0.5, 0.0]))
            games.append(Played(first, second, result))
    pairs = Counter(frozenset((game.first, game.second)) for game in games)
    assert max(pairs.values()) == 1, pairs  # no two met twice
    assert max(Counter(byes).values(), default=0) <= 1  # one bye each at most


def test_a_knockout_is_seeded_with_byes_to_the_top_seeds() -> None:
    assert bracket_order(8) == [1, 8, 4, 5, 2, 7, 3, 6]
    six = ["s1", "s2", "s3", "s4", "s5", "s6"]
    assert knockout_first_round(six) == [("s1", None), ("s4", "s5"), ("s2", None), ("s3", "s6")]
    assert next_knockout_round(["s1", "s4", "s2", "s3"]) == [("s1", "s4"), ("s2", "s3")]


def test_a_drawn_knockout_game_is_played_again_sides_swapped_then_the_higher_seed_goes() -> None:
    assert knockout_winner("a", "b", [], tie_breaks=2) is None
    assert knockout_winner("a", "b", [Played("b", "a", 1.0)], tie_breaks=2) == "b"
    drawn = [Played("a", "b", 0.5)]
    assert knockout_winner("a", "b", drawn, tie_breaks=2) is None  # a tie-break game is due
    assert knockout_winner("a", "b", [*drawn, Played("b", "a", 0.0)], tie_breaks=2) == "a"
    all_drawn = [Played("a", "b", 0.5), Played("b", "a", 0.5), Played("a", "b", 0.5)]
    assert knockout_winner("a", "b", all_drawn, tie_breaks=2) == "a"


def test_a_gauntlet_plays_the_champion_against_each_of_the_field() -> None:
    assert gauntlet("champ", ["x", "y"], both_ways=False) == [("champ", "x"), ("champ", "y")]
    assert gauntlet("champ", ["x"], both_ways=True) == [("champ", "x"), ("x", "champ")]


def test_the_arena_scores_a_streak_double_and_pairs_by_points() -> None:
    # Win 2, win 2, then on fire: win 4, draw 2; the streak over: win 2.
    assert arena_points([1.0, 1.0, 1.0, 0.5, 1.0]) == 12
    assert arena_points([0.0, 0.5, 1.0]) == 3
    points = {"a": 10, "b": 0, "c": 9, "d": 1}
    assert arena_pairs(["a", "b", "c", "d"], points, {}) == [("a", "c"), ("b", "d")]
    # Not the opponent it just played while another waits.
    assert arena_pairs(["a", "c", "b"], points, {"a": "c", "c": "a"}) == [("a", "b")]
    assert arena_pairs(["a", "c"], points, {"a": "c"}) == [("a", "c")]
