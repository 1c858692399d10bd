"""Which game /tv shows (visor/tv.py), in memory, and the registered bot a lobby row carries
from node to node (issue 22, item 5)."""

from __future__ import annotations

import pytest

from server.cluster import values
from server.games.base import JsonObject
from visor.tv import tv_choice

RATINGS = {("thud", "Grimli"): 30.0, ("thud", "Ugluk"): 28.0, ("thud", "Azog"): 45.0}


def rating(game: str, bot: str) -> float | None:
    return RATINGS.get((game, bot))


def seat(side: str, nick: str, *, registered: bool = True) -> JsonObject:
    player: JsonObject = {"seat": side, "nick": nick, "names": [], "kind": "bot"}
    if registered:
        player["bot"] = nick
    return player


def row(
    simulation_id: str,
    dwarf: JsonObject | None,
    troll: JsonObject | None,
    *,
    status: str = "playing",
    spectators: int = 0,
    turn: int = 10,
) -> JsonObject:
    return {
        "simulationId": simulation_id,
        "game": "thud",
        "status": status,
        "players": [dwarf, troll],
        "scores": {"dwarfs": 0, "trolls": 0},
        "turn": turn,
        "spectators": spectators,
    }


def chosen(rows: list[JsonObject]) -> str | None:
    choice = tv_choice(rows, rating)
    return None if choice is None else choice["simulationId"]


def test_the_pair_whose_weaker_bot_is_strongest_is_shown_with_both_ratings() -> None:
    even = row("even", seat("dwarf", "Grimli"), seat("troll", "Ugluk"))  # 30 and 28: min 28
    lopsided = row("lopsided", seat("dwarf", "Azog"), seat("troll", "Nobody", registered=False))
    mismatch = row("mismatch", seat("dwarf", "Azog"), seat("troll", "Ugluk"))  # 45 and 28
    assert chosen([even, lopsided]) == "even"  # a guest's game is not rated
    assert chosen([even, mismatch]) == "mismatch"  # min 28 both: the sum breaks the tie
    choice = tv_choice([mismatch, even], rating)
    assert choice == {
        "simulationId": "mismatch",
        "game": "thud",
        "bothRated": True,
        "players": [
            {"seat": "dwarf", "nick": "Azog", "bot": "Azog", "rating": 45.0},
            {"seat": "troll", "nick": "Ugluk", "bot": "Ugluk", "rating": 28.0},
        ],
    }
    strong = row("strong", seat("dwarf", "Grimli"), seat("troll", "Azog"))  # 30 and 45: min 30
    assert chosen([mismatch, strong, even]) == "strong"


def test_without_a_rated_pair_the_most_watched_then_the_latest_game_is_shown() -> None:
    guests = [seat("dwarf", "a", registered=False), seat("troll", "b", registered=False)]
    unrated = row("unrated", seat("dwarf", "Grimli"), seat("troll", "New"), spectators=1)
    watched = row("watched", *guests, spectators=3, turn=80)
    newer = row("newer", *guests, spectators=3, turn=4)
    assert chosen([unrated, watched]) == "watched"
    assert chosen([watched, newer, unrated]) == "newer"
    # Two registered bots, one not rated yet this season: not a pair of rated bots, which is
    # what the field says (once it was "rated", false for a game between registered bots).
    choice = tv_choice([unrated], rating)
    assert choice is not None and choice["bothRated"] is False and "rated" not in choice
    assert [player["bot"] for player in choice["players"]] == ["Grimli", "New"]
    assert [player["rating"] for player in choice["players"]] == [30.0, None]


def test_no_game_being_played_is_no_choice() -> None:
    waiting = row("waiting", seat("dwarf", "Azog"), None, status="waiting")
    over = row("over", seat("dwarf", "Azog"), seat("troll", "Grimli"), status="finished")
    assert chosen([waiting, over]) is None
    assert chosen([]) is None


def test_a_directory_entry_keeps_a_seat_s_registered_bot_and_checks_it() -> None:
    entry = {
        **row("5k2aa0q", seat("dwarf", "Grimli"), seat("troll", "guest", registered=False)),
        "node": "0123abcd",
        "free": [],
        "created": 1.0,
    }
    read = values.directory_entry(entry)
    assert read["players"][0]["bot"] == "Grimli" and "bot" not in read["players"][1]
    entry["players"][1] = {**seat("troll", "x"), "bot": 7}
    with pytest.raises(values.BadValue, match="its bot is not text"):
        values.directory_entry(entry)
