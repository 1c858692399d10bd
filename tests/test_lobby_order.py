"""The lobby's order kept by changes (visor.lobby_order, issue 32, item 2): after any sequence of
simulations placed, moved and removed, each lobby lists what a sort of them all would (and what
placing them all at once does), and the counts are those of the simulations placed."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from visor.lobby_order import STATUSES, LobbyOrder, OrderKey, finished_key, order_key

GAMES = ("tavern", "thud")
IDS = [f"sim-{index}" for index in range(12)]

placements = st.tuples(
    st.sampled_from(IDS),
    st.sampled_from(GAMES),
    st.sampled_from(STATUSES),
    st.booleans(),
    st.integers(0, 3),
    st.integers(0, 50),
)
operations = st.lists(st.one_of(placements, st.sampled_from(IDS)), max_size=60)


def key_of(status: str, seated: bool, spectators: int, created: int) -> OrderKey:
    if status == "finished":
        return finished_key(created)
    return order_key(status, seated, spectators, float(created))


@given(operations)
def test_the_order_kept_by_changes_is_the_order_sorted_whole(steps: list[object]) -> None:
    order = LobbyOrder()
    expected: dict[str, tuple[OrderKey, str, str]] = {}
    for step in steps:
        if isinstance(step, str):
            order.remove(step)
            expected.pop(step, None)
            continue
        assert isinstance(step, tuple)
        name, game, status, seated, spectators, created = step
        key = key_of(status, seated, spectators, created)
        order.put(name, game, status, key)
        expected[name] = (key, game, status)
    # The same simulations placed at once (after a node is lost): the same order.
    placed_at_once = LobbyOrder()
    placed_at_once.replace(
        (name, game, status, key) for name, (key, game, status) in expected.items()
    )
    ranked = sorted((key, name) for name, (key, _, _) in expected.items())
    counted = Counter((game, status) for _, game, status in expected.values())
    for kept in (order, placed_at_once):
        for count in (0, 3, len(IDS)):
            assert kept.first(None, count) == [name for _, name in ranked][:count]
            for game in GAMES:
                of_game = [name for _, name in ranked if expected[name][1] == game]
                assert kept.first(game, count) == of_game[:count]
        for game, by_status in kept.counts.items():
            for status, count in by_status.items():
                assert count == counted[(game, status)]
        assert len(kept) == len(expected)


def test_played_games_come_first_most_watched_then_newest_then_waiting_empty_finished() -> None:
    order = LobbyOrder()
    order.put("finished", "thud", "finished", finished_key(1))
    order.put("empty", "thud", "waiting", order_key("waiting", False, 0, 50.0))
    order.put("waiting", "thud", "waiting", order_key("waiting", True, 0, 10.0))
    order.put("old-game", "tavern", "playing", order_key("playing", True, 0, 1.0))
    order.put("new-game", "tavern", "playing", order_key("playing", True, 0, 2.0))
    order.put("watched", "tavern", "playing", order_key("playing", True, 3, 0.5))
    assert order.first(None, 10) == [
        "watched", "new-game", "old-game", "waiting", "empty", "finished"
    ]  # fmt: skip
    # A page starts watching the old game: it moves up past the newer one, and only it moves.
    order.put("old-game", "tavern", "playing", order_key("playing", True, 5, 1.0))
    assert order.first("tavern", 2) == ["old-game", "watched"]
    assert order.counts["tavern"] == {"playing": 3, "waiting": 0, "finished": 0}
