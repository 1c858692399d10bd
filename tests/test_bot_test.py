"""``tavern replay --positions`` and ``tavern test``, as a user types them: positions taken from
a game, a bot's answer to each checked (legal, in time, as expected), a report and an exit
status a CI can use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from server.arena import Arena
from server.config import ArenaConfig
from server.games import GAMES
from server.house_seats import seat_house
from server.match_options import MatchOptions
from tests.conftest import ROOT
from tests.test_play import BROKEN, TAVERN_DUMMY, WANDERER, read_lines

CRASHING = f"{{python}} {BROKEN} crash tavern --simulation {{simulation}} --port {{port}} --side x"


def tavern(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tavern_cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_bot_is_tested_on_positions_taken_from_a_game(tmp_path: Path) -> None:
    game = tmp_path / "game.jsonl"
    played = tavern(
        *("play", "tavern", TAVERN_DUMMY, WANDERER, "--seed", "3", "--turns", "12"),
        *("--output", str(game)),
    )
    assert played.returncode == 0, played.stderr
    _, *turns, _ = read_lines(game)
    taken = tavern("replay", str(game), "--positions", "4-5")
    assert taken.returncode == 0, taken.stderr
    lines = [orjson.loads(line) for line in taken.stdout.splitlines()]
    assert [(line["game"], line["position"]["turn"]) for line in lines] == [
        ("tavern", 4),
        ("tavern", 5),
    ]
    beside = ("debug", "cpuMs", "timing")  # as recorded
    kept = {key: turns[4][key] for key in beside if key in turns[4]}
    assert lines[1]["position"]["turns"][4]["action"] == {**turns[4]["action"], **kept}
    # The move the dummy played at turn 5 is what it is expected to play again; turn 6's
    # expectation is one it does not meet.
    lines[0]["expect"] = {"actions": turns[4]["action"]["actions"]}
    lines[1]["expect"] = {"actions": [{"botId": 6, "type": "PASS"}]}
    positions = tmp_path / "positions.jsonl"
    positions.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))

    run = tavern("test", TAVERN_DUMMY, "--positions", str(positions))
    assert run.returncode == 1, run.stderr
    report = run.stdout.splitlines()
    assert report[0].startswith('ok   line 1: {"actions":[{"botId":1,')
    assert report[1].startswith('FAIL line 2: answered {"actions":[{"botId":6,')
    assert report[1].endswith('expected {"actions":[{"botId":6,"type":"PASS"}]}')
    # Under the FAIL, what the bot said of its answer (the dummy's debug text: its orders).
    assert report[2].startswith("  debug| orders: 6 ")
    assert report[3:] == ["1 of 2 positions passed"]

    del lines[1]["expect"]
    positions.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    passing = tavern("test", TAVERN_DUMMY, "--positions", str(positions))
    assert (passing.returncode, passing.stdout.splitlines()[-1]) == (0, "2 of 2 positions passed")

    crashing = tavern("test", CRASHING, "--positions", str(positions))
    assert crashing.returncode == 1
    # Each FAIL is followed by the end of what the bot wrote on stderr: its traceback.
    said = crashing.stdout.split("FAIL line 2: no answer in time\n")
    assert len(said) == 2, crashing.stdout
    for part, first in zip(said, ("FAIL line 1: no answer in time\n", ""), strict=True):
        assert part.startswith(first)
        stderr_lines = [line for line in part.splitlines() if line.startswith("  stderr| ")]
        assert stderr_lines[-1] == "  stderr| RuntimeError: this bot crashes on purpose"
        assert 0 < len(stderr_lines) <= 13  # bounded: 12 lines, and a note of the rest
    assert said[1].endswith("0 of 2 positions passed\n")


def test_a_house_player_takes_the_seat_it_is_asked_for_where_seats_go_by_join_order() -> None:
    """``tavern test`` seats the house player before the bot: in Tavern, whose seats go by join
    order, it took team1 even when the bot was to play team1, and the bot's verdict was the
    house player's answer (a crashing bot passed whenever the house answered first)."""
    match = Arena(ArenaConfig()).open("tavern", MatchOptions(seed=3))
    seat_house(match, GAMES["tavern"].house_players["pusher"], "team2", 0.0)
    assert match.seats[0] is None
    assert match.seats[1] is not None and match.seats[1].kind == "house"
