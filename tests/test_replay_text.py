"""``tavern replay``, as a user types it: readable moves, numbered squares, the result in words,
and part of a game with ``--turns``; how a game ended reads the same in every command."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bots.house import run_games
from server.commentary import result_text
from server.games import GAMES
from server.games.thud.pieces import DWARF, TROLL, Move
from server.games.thud.text import move_text
from server.records import GameFilter, Records
from server.replay import TurnRange
from tests.conftest import ROOT, serving_visor, test_config


def test_thud_moves_read_as_the_issue_writes_them() -> None:
    assert move_text(DWARF, Move((4, 13), (5, 12), "hurl", ((6, 11),))) == (
        "d 4,13 -> 5,12 hurl x 6,11"
    )
    assert move_text(DWARF, Move((5, 0), (5, 3), "walk")) == "d 5,0 -> 5,3"
    assert move_text(TROLL, Move((7, 6), (7, 4), "shove", ((6, 3), (8, 3)))) == (
        "T 7,6 -> 7,4 shove x 6,3 x 8,3"
    )


THUD = GAMES["thud"].codec_for({})
NICKS = ("a", "b")


@pytest.mark.parametrize(
    ("reason", "winner", "score", "last_seat", "text"),
    [
        ("No more dwarfs", "troll", (0, 32), 1, "troll (b) wins 32 to 0: No more dwarfs"),
        (
            "Players agreed to finish",
            None,
            (20, 20),
            0,
            "a draw at 20 to 20: Players agreed to finish",
        ),
        (
            "Player disconnected",
            "troll",
            (32, 32),
            1,
            "troll (b) wins: dwarf (a) disconnected (the score was 32 to 32)",
        ),
        (
            "Player disconnected",
            None,
            None,
            None,
            "a draw: both players disconnected",
        ),
        (
            "Turn timeout",
            "dwarf",
            (30, 24),
            0,
            "dwarf (a) wins: troll (b) did not answer in time (the score was 30 to 24)",
        ),
        (
            "Too many timeouts",
            "troll",
            (31, 32),
            1,
            "troll (b) wins: dwarf (a) timed out too many turns in a row (the score was 32 to 31)",
        ),
        (
            "Server error",
            None,
            (29, 28),
            0,
            "no winner: the arena failed during the game (the score was 29 to 28)",
        ),
        (
            "No move",
            None,
            (32, 32),
            1,
            "a draw at 32 to 32: troll (b) made no move, so the game was scored as it stood",
        ),
        (
            "No move",
            "dwarf",
            (30, 28),
            1,
            "dwarf (a) wins 30 to 28: troll (b) made no move, so the game was scored as it stood",
        ),
    ],
)
def test_every_way_a_game_ends_reads_naturally(
    reason: str,
    winner: str | None,
    score: tuple[int, int] | None,
    last_seat: int | None,
    text: str,
) -> None:
    result = {
        "reason": reason,
        "winner": winner,
        "score": None if score is None else dict(zip(("dwarfs", "trolls"), score, strict=True)),
    }
    assert result_text(THUD, NICKS, result, last_seat) == text


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [("3-5", 3, 5), ("7", 7, 7), ("10-", 10, None), ("-4", 0, 4), ("0-0", 0, 0)],
)
def test_turn_ranges(text: str, first: int, last: int | None) -> None:
    assert TurnRange.parse(text) == TurnRange(first, last)


@pytest.mark.parametrize("text", ["5-2", "x", "1-y", "-3-4"])
def test_bad_turn_ranges_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="turns"):
        TurnRange.parse(text)


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One whole game of each kind between house players, recorded."""
    path = tmp_path_factory.mktemp("replay") / "arena.db"

    async def play() -> None:
        async with serving_visor(test_config(), path) as served:
            await run_games("tavern", "pusher", "wanderer", "127.0.0.1", served.tcp_port, 1, 5)
            await run_games("thud", "dwarf", "troll", "127.0.0.1", served.tcp_port, 1, 5)
            await served.records.flush()

    asyncio.run(asyncio.wait_for(play(), 120))
    return path


def game_ids(database: Path) -> dict[str, str]:
    records = Records(database)
    records.open_to_read()
    return {game["game"]: game["id"] for game in records.games(GameFilter())["games"]}


def tavern(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user types it."""
    return subprocess.run(
        [sys.executable, "-m", "tavern_cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_tavern_replay_reads_in_words(database: Path) -> None:
    game_id = game_ids(database)["tavern"]
    run = tavern("replay", game_id, "--database", str(database))
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert out.startswith(
        f"tavern {game_id}, seed 5: team1 (house pusher) against team2 (house wanderer)\n"
    )
    assert "team1: a Gimli (1), b Durin (2), c Thorin (3), d Balin (4), e Dwalin (5)" in out
    # Direction names and squares, and the board with its coordinates.
    assert (
        "turn 1: team1 (house pusher)   [team1 0, team2 0]\n  Gimli (1) NORTH 4,18 -> 4,17\n" in out
    )
    assert "   012345678901234567890\n 0 ~~~~~~~~~~~~~~~~~~~~~\n" in out
    assert re.search(r"\n    barrel [12] pushed (NORTH|SOUTH|EAST|WEST) \d+,\d+ -> \d+,\d+\n", out)
    assert re.search(r"\n  point for team1: 1-0\n", out)
    assert out.rstrip().endswith("team1 (house pusher) wins 3 to 0: Points to win reached")


def test_turns_shows_part_of_a_game(database: Path) -> None:
    game_id = game_ids(database)["tavern"]
    run = tavern("replay", game_id, "--database", str(database), "--turns", "3-4")
    assert run.returncode == 0, run.stderr
    shown = re.findall(r"^turn (\d+):", run.stdout, re.MULTILINE)
    assert shown == ["3", "4"]
    assert "\nstart\n" not in run.stdout
    assert run.stdout.rstrip().endswith("wins 3 to 0: Points to win reached")
    bad = tavern("replay", game_id, "--database", str(database), "--turns", "4-3")
    assert bad.returncode == 2
    assert "need 0 <= A <= B" in bad.stderr


def test_turns_after_the_game_s_end_are_refused_with_its_length(database: Path) -> None:
    game_id = game_ids(database)["tavern"]
    whole = tavern("replay", game_id, "--database", str(database))
    played = len(re.findall(r"^turn \d+:", whole.stdout, re.MULTILINE))
    last = tavern("replay", game_id, "--database", str(database), "--turns", f"{played}-")
    assert last.returncode == 0, last.stderr
    assert re.findall(r"^turn (\d+):", last.stdout, re.MULTILINE) == [str(played)]
    after = tavern("replay", game_id, "--database", str(database), "--turns", f"{played + 1}-600")
    assert (after.returncode, after.stdout) == (2, "")
    assert after.stderr == (
        f"tavern: records {database} (--database)\n"
        f"tavern: --turns: game {game_id} has {played} turns; there is no turn {played + 1}\n"
    )


def test_a_thud_replay_names_moves_and_kills(database: Path) -> None:
    game_id = game_ids(database)["thud"]
    run = tavern("replay", game_id, "--database", str(database), "--turns", "-6")
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert out.startswith(
        f"thud {game_id}, seed 5: dwarf (house dwarf) against troll (house troll)"
    )
    assert "\nstart\n" in out
    assert re.findall(r"^turn (\d+):", out, re.MULTILINE) == ["1", "2", "3", "4", "5", "6"]
    assert re.search(r"\n  d \d+,\d+ -> \d+,\d+\n", out)  # a dwarf's walk
    assert "\n  T 5,10 -> 4,11 x 3,12 x 3,11\n" in out  # a troll's walk that kills two
    assert " 7 ......T*T......" in out  # the Thudstone, on row 7
    assert out.rstrip().endswith("troll (house troll) wins 32 to 0: No more dwarfs")
