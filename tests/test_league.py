"""The league table's arithmetic, on a hand-worked example, and the ratings."""

from __future__ import annotations

from server.league import GameResult, format_tables, head_to_head, ratings, tables

THUD = ("dwarf", "troll")


def thud(dwarf: str, troll: str, winner: int | None, dwarfs: int, trolls: int) -> GameResult:
    return GameResult("thud", (dwarf, troll), THUD, winner, (dwarfs, trolls))


def test_the_challenge_rule_on_a_hand_worked_example() -> None:
    # D1 beats T1 30 to 20: D1 +10, T1 -10.
    # D1 loses to T2 12 to 28: D1 -16, T2 +16.
    # D2 draws with T1 32 to 32: nothing changes.
    # D2 beats T2 by forfeit at 32 to 32: a win worth 0.
    results = [
        thud("D1", "T1", 0, 30, 20),
        thud("D1", "T2", 1, 12, 28),
        thud("D2", "T1", None, 32, 32),
        thud("D2", "T2", 0, 32, 32),
    ]
    by_table = {
        table: [(s.bot, s.played, s.wins, s.losses, s.draws, s.score) for s in rows]
        for table, rows in tables(results).items()
    }
    assert by_table == {
        "dwarf": [("D2", 2, 1, 0, 1, 0), ("D1", 2, 1, 1, 0, -6)],
        "troll": [("T2", 2, 1, 1, 0, 16), ("T1", 2, 0, 1, 1, -10)],
    }


def test_tavern_keeps_one_table_for_both_teams() -> None:
    results = [
        GameResult("tavern", ("A", "B"), ("team1", "team2"), 0, (3, 1)),
        GameResult("tavern", ("B", "A"), ("team1", "team2"), 1, (0, 3)),
    ]
    (table,) = tables(results).values()
    assert [(s.bot, s.wins, s.losses, s.score) for s in table] == [("A", 2, 0, 5), ("B", 0, 2, -5)]


def test_head_to_head_counts_each_pair_whichever_seats_they_had() -> None:
    results = [
        GameResult("tavern", ("B", "A"), ("team1", "team2"), 0, (3, 1)),
        GameResult("tavern", ("A", "B"), ("team1", "team2"), 0, (3, 0)),
        GameResult("tavern", ("A", "B"), ("team1", "team2"), None, (2, 2)),
        GameResult("tavern", ("A", "C"), ("team1", "team2"), 1, (0, 3)),
        GameResult("tavern", ("C", "C"), ("team1", "team2"), 1, (0, 3)),
    ]
    assert [m.to_wire() for m in head_to_head(results)] == [
        {"bots": ["A", "B"], "games": 3, "wins": [1, 1], "draws": 1},
        {"bots": ["A", "C"], "games": 1, "wins": [0, 1], "draws": 0},
    ]


def test_ratings_rank_the_winner_first_with_less_uncertainty_after_more_games() -> None:
    results = [thud("D1", "T1", 0, 30, 20)] * 5 + [thud("D2", "T1", 1, 20, 30)]
    rated = {rating.bot: rating for rating in ratings(results)}
    assert rated["D1"].mu > rated["T1"].mu
    assert rated["D1"].sigma < rated["D2"].sigma  # D1 played more
    assert ratings(results)[0].bot == "D1"
    text = format_tables(results)
    assert "dwarf table" in text
    assert "troll table" in text
    assert "ratings" in text
