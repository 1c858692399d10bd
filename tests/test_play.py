"""``tavern play``, as a user types it: two bot commands, one game, the board in the terminal,
the result in words and the game as JSON lines."""

from __future__ import annotations

import os
import pty
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import orjson

from server.records import GameFilter, Records
from tests.conftest import ROOT

TAVERN_DUMMY = "{python} -m bots.tavern_dummy --simulation {simulation} --port {port} --nick dummy"
WANDERER = "{python} -m bots.house_bot tavern wanderer --simulation {simulation} --port {port}"
HOUSE_THUD = (
    "{python} -m bots.house_bot thud %s --simulation {simulation} --side {side} --port {port} "
    "--seed {seed}"
)
BROKEN = str(ROOT / "tests" / "bots" / "broken.py")


def tavern(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """The command as a user types it, its output into a pipe."""
    return subprocess.run(
        [sys.executable, "-m", "tavern_cli", "play", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_a_tavern_game_between_two_example_bots(tmp_path: Path) -> None:
    output = tmp_path / "game.jsonl"
    run = tavern(
        "tavern", TAVERN_DUMMY, WANDERER, "--seed", "3", "--output", str(output), "--verbose"
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    # --verbose: what the dummy says of each move (its debug text) is printed with the turn.
    assert "\n  debug| orders: 1 NORTH, 2 " in out
    url = re.match(r"tavern: watch at http://127\.0\.0\.1:\d+/watch/([0-9a-r]{7})\n", out)
    assert url, out[:200]
    game_id = url.group(1)
    assert f"tavern {game_id}, seed 3: team1 (dummy) against team2 (house wanderer)\n" in out
    assert "\nstart\n             11111111112\n   012345678901234567890\n 0 ~~~~" in out
    # Into a pipe every turn is printed in turn, as plain text.
    assert "\x1b[" not in out
    turns = [int(number) for number in re.findall(r"^turn (\d+): ", out, re.MULTILINE)]
    assert turns == list(range(1, len(turns) + 1))
    assert "\n  Rhun Diamondfighter (1) NORTH 4,18 -> 4,17\n" in out
    assert "team1 (dummy) wins 3 to 0: Points to win reached\n" in out
    assert f"tavern: the game is in {output}" in out

    first, *played, last = read_lines(output)
    assert first["type"] == "game"
    assert (first["game"], first["id"], first["seed"]) == ("tavern", game_id, 3)
    assert [p["nick"] for p in first["players"]] == ["dummy", "house wanderer"]
    assert first["settings"]["pointsToWin"] == 3
    assert [turn["turn"] for turn in played] == turns
    assert {turn["type"] for turn in played} == {"turn"}
    assert played[0]["action"]["actions"][0] == {"botId": 1, "type": "MOVE", "direction": "NORTH"}
    assert played[0]["debug"].startswith("orders: 1 NORTH, 2 ")
    assert "debug" not in played[1]  # the house wanderer says nothing
    assert played[-1]["scores"] == {"team1": 3, "team2": 0}
    assert any(event["type"] == 3 for turn in played for event in turn["events"])  # points
    assert isinstance(last.pop("finishedAt"), float)
    assert last == {
        "type": "result",
        "turns": len(played),
        "result": {
            "reason": "Points to win reached",
            "score": {"team1": 3, "team2": 0},
            "winner": "team1",
        },
        "text": "team1 (dummy) wins 3 to 0: Points to win reached",
    }


def test_the_same_seed_plays_the_same_game(tmp_path: Path) -> None:
    games = []
    for name in ("one", "two"):
        output = tmp_path / f"{name}.jsonl"
        run = tavern("tavern", TAVERN_DUMMY, WANDERER, "--seed", "11", "--output", str(output))
        assert run.returncode == 0, run.stderr
        games.append([(t.get("action"), t.get("state")) for t in read_lines(output)[1:]])
    assert games[0] == games[1]


def test_a_thud_game_with_a_turn_limit(tmp_path: Path) -> None:
    output = tmp_path / "thud.jsonl"
    database = tmp_path / "kept.db"
    run = tavern(
        "thud",
        HOUSE_THUD % "dwarf",
        HOUSE_THUD % "troll",
        "--seed",
        "4",
        "--turns",
        "20",
        "--output",
        str(output),
        "--database",
        str(database),
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "dwarf (house dwarf) against troll (house troll)" in out
    assert re.search(r"\n  [dT] \d+,\d+ -> \d+,\d+", out)
    assert "\n 7 ......T*T......\n" in out  # the start, with its row numbers
    assert re.findall(r"^turn (\d+): ", out, re.MULTILINE) == [str(n) for n in range(1, 21)]
    first, *played, last = read_lines(output)
    assert first["settings"] == {
        "turnLimit": 20,
        "turnTimeoutMs": 10_000,
        "maxConsecutiveTimeouts": 3,
    }
    assert len(played) == 20
    assert last["result"]["reason"] == "Timeout"
    assert out.rstrip().splitlines()[-2] == last["text"]
    # The record was kept: the replay says the same.
    game_id = first["id"]
    replay = subprocess.run(
        [sys.executable, "-m", "tavern_cli", "replay", game_id, "--database", str(database)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout.rstrip().endswith(last["text"])
    assert re.findall(r"^turn (\d+): ", replay.stdout, re.MULTILINE) == [
        str(n) for n in range(1, 21)
    ]
    # One file format: the file replays exactly as the record does, and the record written as
    # a file has the same lines (but for the reply times and clocks, which records do not keep).
    from_file = replay_command(str(output))
    assert from_file.returncode == 0, from_file.stderr
    assert from_file.stdout == replay.stdout
    exported = tmp_path / "exported.jsonl"
    written = replay_command(game_id, "--database", str(database), "--output", str(exported))
    assert written.returncode == 0, written.stderr
    assert written.stdout == f"tavern: game {game_id} is in {exported}\n"
    kept = ("replyMs", "clock")
    assert [{k: v for k, v in line.items() if k not in kept} for line in read_lines(exported)] == [
        {k: v for k, v in line.items() if k not in kept} for line in read_lines(output)
    ]
    assert replay_command(str(exported)).stdout == replay.stdout


def replay_command(*args: str) -> subprocess.CompletedProcess[str]:
    """``tavern replay`` as a user types it."""
    return subprocess.run(
        [sys.executable, "-m", "tavern_cli", "replay", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_damaged_game_file_is_named_with_its_line(tmp_path: Path) -> None:
    game = tmp_path / "game.jsonl"
    header = {
        "type": "game",
        "game": "thud",
        "id": "abc1234",
        "seed": 1,
        "players": [
            {"seat": "dwarf", "nick": "a", "names": [], "kind": "bot"},
            {"seat": "troll", "nick": "b", "names": [], "kind": "bot"},
        ],
        "settings": {},
        "board": {},
    }
    turn = {"type": "turn", "turn": 1, "seat": "dwarf", "timedOut": False}
    bad_move = {**turn, "action": {"move": [[0, 0], [1, 1]], "declare": False}}
    cases = {
        b"": f"tavern: {game} holds no game: it is empty\n",
        b"{]\n": f"tavern: {game}, line 1 is not a line of a game file: ",
        orjson.dumps(turn): f"tavern: {game}, line 1: a game file begins with its game line\n",
        orjson.dumps(header) + b"\n" + orjson.dumps(turn): (
            f"tavern: {game}, line 2: the turn line lacks 'action'\n"
        ),
        orjson.dumps(header) + b"\n" + orjson.dumps(bad_move): (
            "tavern: game abc1234: turn 1 does not replay: "
        ),
    }
    for text, said in cases.items():
        game.write_bytes(text)
        run = replay_command(str(game))
        assert (run.returncode, run.stdout) == (1, ""), text
        assert run.stderr.startswith(said), (text, run.stderr)
    missing = replay_command(str(tmp_path / "nothing.jsonl"))
    assert (missing.returncode, missing.stderr) == (
        1,
        f"tavern: there is no file {tmp_path / 'nothing.jsonl'}\n",
    )


def test_a_bot_that_thinks_too_long_now_and_then_never_has_a_late_reply_played(
    tmp_path: Path,
) -> None:
    """Team1 answers turns 3, 11 and 19 after 500 ms, with 200 ms to answer: each times out (and
    the turn after it too, the bot still thinking), its late replies are refused, and every turn
    it plays is the move it computed for that very turn."""
    output, log, config = tmp_path / "game.jsonl", tmp_path / "late.jsonl", tmp_path / "fast.json"
    config.write_text('{"turnTimeoutMs": 200, "maxConsecutiveTimeouts": 10, "messageGapMs": 0}')
    late = (
        f"{{python}} {ROOT / 'tests' / 'bots' / 'late.py'} --simulation {{simulation}} "
        f"--port {{port}} --late 3,11,19 --late-ms 500 --log {log}"
    )
    run = tavern(
        "tavern", late, WANDERER, "--seed", "2", "--turns", "32", "--config", str(config),
        "--output", str(output),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    computed = {entry["turn"]: entry["actions"] for entry in read_lines(log) if "turn" in entry}
    played = [line for line in read_lines(output)[1:-1] if line["seat"] == "team1"]
    timed_out = {turn["turn"] for turn in played if turn["timedOut"]}
    assert {3, 11, 19} <= timed_out
    answered = [turn for turn in played if not turn["timedOut"]]
    assert len(answered) >= 6
    for turn in answered:
        assert turn["action"]["actions"] == computed[turn["turn"]], turn["turn"]
    # Every late reply was refused, naming the turn it answered: one that had timed out.
    stale = [e["reason"] for e in read_lines(log) if e.get("notice") == "Stale turn"]
    refused = [int(re.findall(r"answers turn (\d+);", reason)[0]) for reason in stale]
    assert {3, 11, 19} <= set(refused) <= timed_out
    assert read_lines(output)[-1]["result"]["reason"] == "Turn limit reached"


def test_a_bot_that_crashes_loses_and_its_stderr_is_shown(tmp_path: Path) -> None:
    crash = f"{{python}} {BROKEN} crash tavern --simulation {{simulation}} --port {{port}} --side x"
    run = tavern("tavern", TAVERN_DUMMY, crash, "--seed", "1")
    assert run.returncode == 0, run.stderr
    said = run.stdout.split("team1 (dummy) wins: team2 (broken crash) disconnected ")[1]
    assert said.startswith("(the score was 0 to 0)\nbot 2 (")
    # Its whole traceback, from its first line to the error.
    assert "\n  | Traceback (most recent call last):\n" in said
    assert said.endswith("\n  | RuntimeError: this bot crashes on purpose\n")


def test_a_crashing_client_s_error_is_shown_above_its_stack_frames() -> None:
    """Node.js writes an error's message above its stack frames: the message is shown."""
    thrower = (
        "node server/games/thud/web/thud-client.js --side {side} "
        "--file tests/js_clients/thrower.js --port {port} --simulation {simulation}"
    )
    run = tavern("thud", thrower, HOUSE_THUD % "troll", "--seed", "2")
    assert run.returncode == 0, run.stderr
    said = run.stdout.split("troll (house troll) wins: dwarf (thrower) disconnected ")[1]
    assert said.startswith("(the score was 32 to 31)\nbot 1 (node): exited with code 1\n")
    assert "\n  | thrower: ply 5: the client threw:\n" in said
    assert "\n  | Error: thrower gives up on its third turn\n  |     at " in said
    assert "thrower.js:" in said


def test_a_client_that_makes_no_move_is_named() -> None:
    def client(name: str) -> str:
        return (
            "node server/games/thud/web/thud-client.js --side {side} "
            f"--file tests/js_clients/{name}.js --port {{port}} --simulation {{simulation}}"
        )

    run = tavern("thud", client("killer"), client("idle"))
    assert run.returncode == 0, run.stderr
    assert run.stdout.endswith(
        "\na draw at 32 to 32: troll (idle) made no move, so the game was scored as it stood\n"
    )


def test_bad_commands_are_refused_before_any_game() -> None:
    unknown = tavern("tavern", TAVERN_DUMMY, "{python} bot.py --port {prot}")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("tavern: bot 2's command: unknown placeholder {prot} (")
    missing = tavern("tavern", TAVERN_DUMMY, "no-such-program-here --port {port}")
    assert missing.returncode == 2
    assert missing.stderr == "tavern: bot 2: the program no-such-program-here is not on the PATH\n"
    assert tavern("tavern", TAVERN_DUMMY, WANDERER, "--turns", "0").returncode == 2


def test_open_shows_the_game_in_the_browser_and_serves_its_replay(tmp_path: Path) -> None:
    opened = tmp_path / "opened"
    browser = tmp_path / "browser.py"
    browser.write_text(f"import sys\nopen({str(opened)!r}, 'w').write(sys.argv[1])\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "tavern_cli", "play", "tavern", TAVERN_DUMMY, WANDERER, "--open"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "BROWSER": f"{sys.executable} {browser} %s"},
    )
    try:
        assert process.stdout is not None
        replay_url = None
        for line in process.stdout:
            found = re.match(r"tavern: replay at (\S+); Ctrl-C to stop", line)
            if found:
                replay_url = found.group(1)
                break
        assert replay_url is not None
        watch_url = opened.read_text()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/watch/[0-9a-r]{7}", watch_url)
        with urllib.request.urlopen(replay_url, timeout=10) as page:
            assert page.status == 200
        game_id = replay_url.rsplit("/", 1)[1]
        api = replay_url.replace(f"/replay/{game_id}", f"/api/games/{game_id}")
        with urllib.request.urlopen(api, timeout=10) as answer:
            assert orjson.loads(answer.read())["result"]["reason"] == "Points to win reached"
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_on_a_terminal_the_board_is_redrawn_in_place() -> None:
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tavern_cli",
            "play",
            "tavern",
            TAVERN_DUMMY,
            WANDERER,
            "--seed",
            "3",
        ],
        cwd=ROOT,
        stdout=follower,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    shown = bytearray()
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end closed: the command ended
                break
            if not chunk:
                break
            shown += chunk
        assert process.wait(timeout=120) == 0
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
            process.wait()
    text = shown.decode()
    redraws = text.count("\x1b[H\x1b[J")
    assert redraws >= 2  # the start, then turns drawn over it
    # Each redraw is a whole board, the header on top; the last is the scoring turn.
    last = text.rsplit("\x1b[H\x1b[J", 1)[1]
    assert last.startswith("tavern ")
    assert "turn " in last and " 0 ~" in last
    assert "team1 (dummy) wins 3 to 0: Points to win reached" in last


def test_ctrl_c_stops_the_game_with_no_result(tmp_path: Path) -> None:
    output, database = tmp_path / "game.jsonl", tmp_path / "kept.db"
    slow = (
        f"{{python}} {ROOT / 'tests' / 'bots' / 'slow_house.py'} tavern pusher --delay-ms 200 "
        "--simulation {simulation} --side {side} --port {port} --seed {seed}"
    )
    command = [
        "play",
        "tavern",
        slow,
        WANDERER,
        "--output",
        str(output),
        "--database",
        str(database),
    ]
    process = subprocess.Popen(
        [sys.executable, "-m", "tavern_cli", *command],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("turn 2: "):
                break
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 130
        assert "tavern: stopped" in err
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    lines = read_lines(output)
    assert lines[0]["type"] == "game"
    assert {line["type"] for line in lines[1:]} == {"turn"}  # no result line
    records = Records(database)
    records.open_to_read()
    (game,) = records.games(GameFilter())["games"]
    assert (game["status"], game["result"]) == ("unfinished", None)


def test_a_game_played_on_from_a_turn_of_another(tmp_path: Path) -> None:
    source = tmp_path / "source.jsonl"
    thud = (HOUSE_THUD % "dwarf", HOUSE_THUD % "troll")
    first = tavern(
        "thud", *thud, *("--seed", "4", "--turns", "20", "--clock", "60000+250"),
        *("--output", str(source)),
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    game_line, *source_turns, _ = read_lines(source)
    output = tmp_path / "from.jsonl"
    database = tmp_path / "from.db"
    # Nothing but the file and the turn: the file says how its game was played (its turn limit
    # of 20, its clock), and the new game is played so (once, --turns 20 had to be given again).
    run = tavern(
        "thud",
        *thud,
        *("--from", str(source), "--turn", "12"),
        *("--output", str(output), "--database", str(database)),
    )
    assert run.returncode == 0, run.stderr
    new_game, *turns, result = read_lines(output)
    assert new_game["settings"]["from"] == {
        "game": game_line["id"],
        "turn": 12,
        "names": [[], []],
    }
    assert new_game["settings"]["turnLimit"] == 20
    assert new_game["settings"]["clock"] == {"initialMs": 60_000, "incrementMs": 250}
    assert new_game["state"] == game_line["state"]  # its file starts where the other did
    kept = ("turn", "seat", "action", "state", "events")
    assert [{k: t[k] for k in kept} for t in turns[:12]] == [
        {k: t[k] for k in kept} for t in source_turns[:12]
    ]
    assert [turn["turn"] for turn in turns] == list(range(1, 21))
    assert result["turns"] == 20
    # Its record and its file replay as one game, which says where it came from.
    by_id = replay_command(new_game["id"], "--database", str(database))
    assert by_id.returncode == 0, by_id.stderr
    assert by_id.stdout.splitlines()[1] == (
        f"played on from game {game_line['id']} after its turn 12 (turns 1 to 12 are that game's)"
    )
    assert replay_command(str(output)).stdout == by_id.stdout
    # Told otherwise, it plays otherwise: --turns, or a --config's turn limit.
    longer = tavern("thud", *thud, "--from", str(source), "--turn", "18", "--turns", "22")
    assert longer.returncode == 0, longer.stderr
    assert re.search(r"^turn 22: troll ", longer.stdout, re.MULTILINE)
    config = tmp_path / "config.json"
    config.write_text('{"thud": {"turnLimit": 14}}')
    shorter = tavern("thud", *thud, "--from", str(source), "--turn", "12", "--config", str(config))
    assert shorter.returncode == 0, shorter.stderr
    assert re.search(r"^turn 14: troll ", shorter.stdout, re.MULTILINE)
    assert not re.search(r"^turn 15: ", shorter.stdout, re.MULTILINE)
    # A position the game never reached, one where it is over, or a game of the other kind,
    # is refused at once.
    too_far = tavern("thud", *thud, "--from", str(source), "--turn", "21")
    assert (too_far.returncode, too_far.stderr) == (
        2,
        f"tavern: --turn: game {game_line['id']} has 20 turns; there is no turn 21\n",
    )
    over = tavern("thud", *thud, "--from", str(source), "--turn", "20")
    assert (over.returncode, over.stderr) == (
        2,
        f"tavern: --turn: game {game_line['id']} is over after its turn 20: nothing to play on "
        "from there\n",
    )
    wrong_game = tavern("tavern", WANDERER, WANDERER, "--from", str(source))
    assert (wrong_game.returncode, wrong_game.stderr) == (
        2,
        f"tavern: --from: game {game_line['id']} is a game of thud, not tavern\n",
    )


def test_a_game_played_on_another_board_than_the_config_s_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "source.jsonl"
    played = tavern("tavern", WANDERER, WANDERER, "--turns", "4", "--output", str(source))
    assert played.returncode == 0, played.stderr
    game_id = read_lines(source)[0]["id"]
    config = tmp_path / "config.json"
    config.write_text('{"tavern": {"width": 17}}')
    other_board = tavern(
        "tavern", WANDERER, WANDERER, "--from", str(source), "--turn", "2", "--config", str(config)
    )
    assert (other_board.returncode, other_board.stderr) == (
        2,
        f"tavern: --from: game {game_id} was played on another board than --config's: give a "
        "config with its settings, or none (its own are then used)\n",
    )
