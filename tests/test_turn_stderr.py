"""What a bot process writes on stderr, turn by turn: a real bot (tests/bots/chatty.py) that
writes on each of its turns, played with ``tavern play`` and in a tournament as a user types
them; each of its turns keeps what it wrote while that turn was asked (what it wrote before
its first is only in the whole game's tail), ``--verbose`` prints it live and ``tavern replay``
shows it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from server.debug import MAX_STDERR_BYTES
from server.records import Records
from tests.bots.chatty import LOUD_BYTES
from tests.test_play import WANDERER, read_lines, replay_command
from tests.test_play import tavern as play
from tests.test_tournament_cli import tavern

CHATTY = str(Path(__file__).parent / "bots" / "chatty.py")
CHATTY_COMMAND = f"{{python}} {CHATTY} --simulation {{simulation}} --port {{port}} --loud-turn 3"
CUT = re.compile(r"(.*)… \[cut: (\d+) more bytes\]", re.DOTALL)


def check_chatty_turns(turns: list[dict[str, Any]], seat: str) -> None:
    """Each turn of ``seat`` (chatty's) keeps what chatty wrote for that turn, the other's
    nothing; turn 3 is cut after ``MAX_STDERR_BYTES``, with a marker saying how much was cut."""
    assert len(turns) >= 4
    for turn in turns:
        kept, number = turn["action"].get("stderr"), turn["number"]
        if turn["seat"] != seat:
            assert kept is None, turn
            continue
        lines = kept.split("\n")
        assert lines[0] == f"turn {number}: thinking", turn
        assert lines[1].startswith(f"turn {number}: orders "), turn
        if number != 3:
            assert len(lines) == 3 and lines[2] == "", turn
            continue
        cut = CUT.fullmatch(kept)
        assert cut is not None, kept[-80:]
        head = cut.group(1)
        assert len(head.encode()) == MAX_STDERR_BYTES
        written = len(lines[0]) + len(lines[1]) + 2 + LOUD_BYTES + 1
        assert int(cut.group(2)) == written - MAX_STDERR_BYTES
    assert "chatty starting" not in json.dumps(turns)  # before its first turn: in the tail only


def game_record(database: Path, game_id: str) -> dict[str, Any]:
    records = Records(str(database))
    records.open_to_read()
    try:
        record = records.game(game_id)
    finally:
        records.close()
    assert record is not None
    return record


def test_tavern_play_keeps_shows_and_replays_a_bots_stderr_turn_by_turn(tmp_path: Path) -> None:
    output, database = tmp_path / "game.jsonl", tmp_path / "play.db"
    run = play(
        *("tavern", CHATTY_COMMAND, WANDERER, "--seed", "3", "--verbose"),
        *("--output", str(output), "--database", str(database)),
    )
    assert run.returncode == 0, run.stderr
    # --verbose: live, under the turn it was written for, before the board.
    assert re.search(
        r"^turn 1: team1 \(chatty\) .*\n(  .*\n)*  stderr\| turn 1: thinking\n"
        r"  stderr\| turn 1: orders 1 NORTH, ",
        run.stdout,
        re.MULTILINE,
    ), run.stdout[:3000]
    assert "stderr| turn 2:" not in run.stdout
    assert "stderr| chatty starting" not in run.stdout
    game_id = re.search(r"/watch/([0-9a-r]{7})\n", run.stdout).group(1)  # type: ignore[union-attr]

    record = game_record(database, game_id)
    check_chatty_turns(record["turns"], "team1")
    assert "chatty starting" in record["players"][0]["stderr"]  # the whole game's tail, as ever
    played = read_lines(output)[1:-1]  # the game file: beside the action, as debug is
    assert [line.get("stderr") for line in played] == [
        turn["action"]["stderr"] if turn["seat"] == "team1" else None for turn in record["turns"]
    ]
    assert all("stderr" not in line["action"] for line in played)

    for game in (game_id, str(output)):
        shown = replay_command(game, "--database", str(database), "--turns", "1-2")
        assert shown.returncode == 0, shown.stderr
        assert "\n  stderr| turn 1: thinking\n  stderr| turn 1: orders 1 NORTH, " in shown.stdout
        assert "stderr| turn 2:" not in shown.stdout


def test_a_tournament_keeps_each_bots_stderr_with_its_turns(tmp_path: Path) -> None:
    cup = {
        "name": "chatty cup",
        "game": "tavern",
        "seed": 5,
        "bots": [
            {"name": "chatty", "command": CHATTY_COMMAND},
            {"name": "wanderer", "command": WANDERER},
        ],
    }
    path, database = tmp_path / "cup.json", tmp_path / "cup.db"
    path.write_text(json.dumps(cup))
    run = tavern("tournament", str(path), "--database", str(database), tmp_path=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "chatty cup: 2 games" in run.stdout
    records = Records(str(database))
    records.open_to_read()
    try:
        results = records.results("chatty-cup")
        games = [records.game(result.game_id) for result in results]
    finally:
        records.close()
    # Once on each side: its turns are the odd ones in one game, the even ones in the other.
    assert sorted(result.bots.index("chatty") for result in results) == [0, 1]
    for result, record in zip(results, games, strict=True):
        assert record is not None
        seat = result.seat_names[result.bots.index("chatty")]
        check_chatty_turns(record["turns"], seat)
