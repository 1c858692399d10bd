"""The Thud house players against a uniformly random opponent, with fixed seeds."""

from __future__ import annotations

import random

import pytest

from bots import house
from server.games.thud.ends import ThudEnd
from server.games.thud.house import dwarf_player, play_game, random_player, troll_player
from server.games.thud.pieces import DWARF, TROLL, initial_state, score, state_from_position

GAMES = 100


def test_the_house_dwarf_beats_a_random_troll_in_at_least_90_percent() -> None:
    wins = 0
    for seed in range(GAMES):
        final = play_game(dwarf_player, random_player, seed)
        assert final.end_reason in tuple(ThudEnd)
        wins += score(final).winning == DWARF
    assert wins >= 0.9 * GAMES, wins


def test_the_house_troll_beats_a_random_dwarf_in_at_least_90_percent() -> None:
    wins = 0
    for seed in range(GAMES):
        final = play_game(random_player, troll_player, seed)
        wins += score(final).winning == TROLL
    assert wins >= 0.9 * GAMES, wins


def test_a_game_replays_from_its_seed() -> None:
    assert play_game(dwarf_player, troll_player, 7, 60) == play_game(
        dwarf_player, troll_player, 7, 60
    )


def test_house_players_accept_peace_only_when_not_behind() -> None:
    state = initial_state()
    rng = random.Random(1)
    assert dwarf_player(state, rng).declare is None  # nobody has declared
    declared = state_from_position(state.dwarfs, state.trolls, declared=(False, True))
    assert dwarf_player(declared, rng).declare is True  # 32 v 32: not behind
    behind = state_from_position(state.dwarfs[:20], state.trolls, declared=(False, True))
    assert dwarf_player(behind, rng).declare is False


def test_the_command_refuses_a_player_on_the_wrong_side(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        house.main(["thud", "troll", "dwarf"])
    assert "cannot play the dwarf seat" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        house.main(["thud", "dwarf", "nobody"])
    assert "house players are" in capsys.readouterr().err
