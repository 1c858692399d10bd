"""``tavern validate`` and ``tavern tournament`` as a user runs them: real commands in
subprocesses, real bot processes, signals sent as Ctrl-C and ``kill`` send them."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from server.league import tables
from server.records import Records
from tests.test_sandbox import alive, runner_folders

ROOT = Path(__file__).resolve().parent.parent
TAVERN = str(Path(sys.executable).parent / "tavern")  # the command the package installs
BROKEN = str(Path(__file__).parent / "bots" / "broken.py")
SLOW_HOUSE = str(Path(__file__).parent / "bots" / "slow_house.py")
COMMAND_TIMEOUT_S = 120


def tavern(*arguments: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TAVERN, *arguments],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(scratch(tmp_path))},
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )


def scratch(tmp_path: Path) -> Path:
    """The commands' temporary folder: empty again once they have finished."""
    folder = tmp_path / "tmp"
    folder.mkdir(exist_ok=True)
    return folder


# --- tavern validate ---------------------------------------------------------------------------
def house_command(game: str, player: str) -> list[str]:
    return [
        *(sys.executable, "-m", "bots.house_bot", game, player),
        *("--simulation", "{simulation}", "--side", "{side}", "--port", "{port}"),
    ]


@pytest.mark.parametrize(
    ("game", "side", "player", "opponents"),
    [
        ("thud", "dwarf", "dwarf", ["house random", "house troll"]),
        ("tavern", "team1", "pusher", ["house pusher", "house wanderer"]),
    ],
)
def test_validate_passes_a_legal_bot(
    game: str, side: str, player: str, opponents: list[str], tmp_path: Path
) -> None:
    arguments = ["validate", "--game", game, "--side", side, "--", *house_command(game, player)]
    result = tavern(*arguments, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [re.sub(r"^ok   \w+ against (.+?):.*", r"\1", line) for line in lines[:-1]] == opponents
    assert lines[-1] == "valid: every game finished with legal moves in time"
    assert result.stderr == ""  # no log lines
    assert list(scratch(tmp_path).iterdir()) == []


def test_validate_fails_a_crashing_bot_and_names_a_missing_program(tmp_path: Path) -> None:
    crash = [
        *(sys.executable, BROKEN, "crash", "thud"),
        *("--simulation", "{simulation}", "--port", "{port}", "--side", "{side}"),
    ]
    result = tavern(
        "validate", "--game", "thud", "--side", "troll", "--", *crash, tmp_path=tmp_path
    )
    assert result.returncode == 1, result.stderr
    verdicts = re.findall(
        r"^FAIL \w+ against (house \w+): dwarf \(\1\) wins: troll \(broken crash\) "
        r"disconnected \(the score was 32 to 32\); lost by forfeit; its process: exited with "
        r"code 1\n((?:  \|.*\n)+)",
        result.stdout,
        re.MULTILINE,
    )
    assert [opponent for opponent, _ in verdicts] == ["house dwarf", "house random"]
    for _, said in verdicts:  # what the bot wrote, whole, under each verdict
        assert said.startswith("  | Traceback (most recent call last):\n")
        assert said.endswith("  | RuntimeError: this bot crashes on purpose\n")
    assert result.stdout.endswith("\nnot valid\n")
    assert "{'" not in result.stdout  # scores in words, not a Python dict
    typo = tavern(
        "validate",
        "--game",
        "thud",
        "--side",
        "troll",
        "--",
        "pyhton3",
        "bot.py",
        tmp_path=tmp_path,
    )
    assert typo.returncode == 2
    assert typo.stderr == "tavern: bot 'candidate': the program pyhton3 is not on the PATH\n"
    assert typo.stdout == ""


# --- tavern tournament: stopped by signals, resumed ----------------------------------------------
def slow(name: str, player: str, delay_ms: int = 8) -> dict[str, Any]:
    return {
        "name": name,
        "command": [
            *("{python}", SLOW_HOUSE, "tavern", player, "--delay-ms", str(delay_ms)),
            *("--simulation", "{simulation}", "--side", "{side}", "--port", "{port}"),
            *("--seed", "{seed}"),
        ],
    }


# Six Dwarven Tavern games of 1 to 2 s each, two at a time; house players play the same moves
# whenever they are given the same seeds, so every run of this file has the same league table.
SLOW_CUP: dict[str, Any] = {
    "name": "slow cup",
    "game": "tavern",
    "seed": 9,
    "parallel": 2,
    "limits": {"turn_timeout_ms": 5000},
    "bots": [slow("p", "pusher"), slow("w", "wanderer"), slow("q", "pusher")],
}


def read(database: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows from the records file that a running tournament is writing (WAL: never blocks)."""
    if not database.exists():
        return []
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        try:
            return connection.execute(sql).fetchall()
        except sqlite3.OperationalError:  # the schema is not there yet
            return []


class Runners:
    """``tavern tournament`` processes; any still running when the test ends is killed."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[subprocess.Popen[str]] = []

    def start(self, path: Path, database: Path) -> subprocess.Popen[str]:
        runner = subprocess.Popen(
            [TAVERN, "tournament", str(path), "--database", str(database)],
            cwd=ROOT,
            env={**os.environ, "TMPDIR": str(scratch(self.tmp_path))},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.started.append(runner)
        return runner


@pytest.fixture
def runners(tmp_path: Path) -> Iterator[Runners]:
    started = Runners(tmp_path)
    yield started
    for runner in started.started:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()


def interrupt(
    runner: subprocess.Popen[str], database: Path, finished_before: int, signal_number: int
) -> set[str]:
    """Once a game more has finished and two are being played, send the signal; returns the
    ids of the games being played just before it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        rows = read(database, "SELECT id, status FROM games")
        playing = {game_id for game_id, status in rows if status == "playing"}
        finished = sum(status == "finished" for _, status in rows)
        if len(playing) == 2 and finished > finished_before:
            runner.send_signal(signal_number)
            return playing
        assert runner.poll() is None, runner.communicate()
        time.sleep(0.02)
    raise AssertionError("no game was being played")


def check_stopped(
    runner: subprocess.Popen[str],
    database: Path,
    playing: set[str],
    code: int,
    tmp_path: Path,
) -> set[str]:
    """The runner stopped as it should have; returns the games it left unfinished."""
    out, errors = runner.communicate(timeout=30)
    assert runner.returncode == code, errors
    assert "tavern: tournament stopped; the games in progress are kept unfinished" in errors
    assert out == ""
    rows = read(database, "SELECT id, status, reason, owner FROM games")
    assert not [row for row in rows if row[2] == "Player disconnected"], rows
    assert {row[1] for row in rows} <= {"finished", "unfinished"}
    owner = re.compile(rf"[^-]+-{runner.pid}-[0-9a-f]+")  # the games this runner played
    unfinished = {row[0] for row in rows if row[1] == "unfinished" and owner.fullmatch(row[3])}
    finished = {row[0] for row in rows if row[1] == "finished"}
    assert unfinished & playing
    assert playing <= unfinished | finished  # the others finished, by the rules, in time
    # Their bots were killed, after their games were stopped; nothing is left behind.
    seats = read(database, "SELECT game_id, exit, stderr FROM seats")
    for game_id, exit, stderr in seats:
        if game_id in unfinished:
            assert exit == "stopped when the tournament was interrupted"
            [pid] = re.findall(r"slow house pid (\d+)", stderr)
            assert not alive(int(pid))
    assert list(scratch(tmp_path).iterdir()) == []
    assert runner_folders(runner.pid) == []
    return unfinished


def league(database: Path) -> dict[str, list[tuple[Any, ...]]]:
    records = Records(database)
    records.open_to_read()
    results = records.results("slow-cup")
    return {
        table: [(s.bot, s.played, s.wins, s.losses, s.draws, s.score, s.crashes) for s in rows]
        for table, rows in tables(results).items()
    }


def test_a_tournament_stopped_by_signals_resumes_to_the_same_league(
    tmp_path: Path, runners: Runners
) -> None:
    path = tmp_path / "cup.json"
    path.write_text(json.dumps(SLOW_CUP))
    database = tmp_path / "arena.db"
    # The same file, played without a stop, alongside: it must end with the same league.
    reference = runners.start(path, tmp_path / "reference.db")
    first = runners.start(path, database)
    playing = interrupt(first, database, 0, signal.SIGINT)
    check_stopped(first, database, playing, 130, tmp_path)
    done = len(read(database, "SELECT id FROM games WHERE status = 'finished'"))
    assert 1 <= done < 6

    second = runners.start(path, database)
    playing = interrupt(second, database, done, signal.SIGTERM)
    check_stopped(second, database, playing, 143, tmp_path)

    last = runners.start(path, database)
    out, errors = last.communicate(timeout=COMMAND_TIMEOUT_S)
    assert last.returncode == 0, errors
    assert "resuming" in errors
    assert "slow cup: 6 games" in out
    finished = read(database, "SELECT pairing FROM games WHERE status = 'finished'")
    assert len(finished) == len({pairing for (pairing,) in finished}) == 6
    # The arena's log is beside the records, not between the progress lines.
    assert f"the arena's log is {tmp_path / 'slow-cup.log'}" in errors
    assert "bots connect to" in (tmp_path / "slow-cup.log").read_text()
    for line in errors.splitlines():
        assert line.startswith(("[", "tavern: ")), line

    reference_out, errors = reference.communicate(timeout=COMMAND_TIMEOUT_S)
    assert reference.returncode == 0, errors
    assert league(database) == league(tmp_path / "reference.db")
    assert out.split("\nratings")[0] == reference_out.split("\nratings")[0]


# --- tavern tournament: killed (kill -9), resumed; resumed from an edited file --------------------
def lingering(bot: dict[str, Any]) -> dict[str, Any]:
    """The bot, starting a process that outlives it (that only its cgroup ends)."""
    return {**bot, "command": [*bot["command"], "--linger"]}


LINGERING_CUP: dict[str, Any] = {**SLOW_CUP, "bots": [lingering(bot) for bot in SLOW_CUP["bots"]]}


def group_pids(runner_pid: int) -> set[int]:
    """The processes in the cgroups of the runner with this pid: its bots, and what they
    started."""
    return {
        int(pid)
        for folder in runner_folders(runner_pid)
        for procs in folder.rglob("cgroup.procs")
        for pid in procs.read_text().split()
    }


def test_a_killed_tournament_resumes_with_every_game_played_once_and_refuses_an_edited_file(
    tmp_path: Path, runners: Runners
) -> None:
    """``kill -9`` leaves the games being played `playing` in the records, and the processes
    its bots started in their cgroups, running. Resumed from an edited file, the command
    refuses, says what changed, and plays nothing; resumed from the same file (but for
    `parallel`, which decides no game), it kills what the killed run left running and removes
    its cgroups, marks its games unfinished, plays each game not finished once, with its seed,
    and ends with the league of a run never stopped."""
    path = tmp_path / "cup.json"
    path.write_text(json.dumps(LINGERING_CUP))
    database = tmp_path / "arena.db"
    reference = runners.start(path, tmp_path / "reference.db")
    killed = runners.start(path, database)
    playing = interrupt(killed, database, 0, signal.SIGKILL)
    killed.communicate(timeout=30)
    assert killed.returncode == -signal.SIGKILL
    rows = dict(read(database, "SELECT id, status FROM games"))
    assert {rows[game_id] for game_id in playing} == {"playing"}  # as the kill left them
    left_running = group_pids(killed.pid)
    assert left_running  # the lingering processes at least (the bots end with their link)
    finished_before = read(database, "SELECT id FROM games WHERE status = 'finished'")
    games_before = read(database, "SELECT id FROM games")

    edited = {
        **LINGERING_CUP,
        "seed": 10,
        "parallel": 1,
        "limits": {"turn_timeout_ms": 4000},
        "bots": [
            LINGERING_CUP["bots"][1],  # w listed before p now: the pairings' seeds move
            LINGERING_CUP["bots"][0],
            {**slow("q", "pusher"), "command": [*slow("q", "pusher")["command"], "--quick"]},
            slow("x", "wanderer"),
        ],
    }
    edited_path = tmp_path / "edited.json"
    edited_path.write_text(json.dumps(edited))
    refused = runners.start(edited_path, database)
    out, errors = refused.communicate(timeout=COMMAND_TIMEOUT_S)
    assert refused.returncode == 2, errors
    assert out == ""
    [said] = [line for line in errors.splitlines() if "begun from another file" in line]
    assert said.startswith(
        "tavern: the tournament 'slow cup' (id slow-cup) was begun from another file: "
    ), said
    for change in (
        "seed: 9 -> 10",
        "limits.turn_timeout_ms: 5000 -> 4000",
        "bots added: x",
        "bots reordered: p, w, q -> w, p, q",
        "bot q: command ",
    ):
        assert change in said, said
    assert "bots removed" not in said and "parallel" not in said
    # Nothing played (the killed run's games are marked unfinished: its records were opened).
    assert read(database, "SELECT id FROM games") == games_before
    assert read(database, "SELECT id FROM games WHERE status = 'finished'") == finished_before

    path.write_text(json.dumps({**LINGERING_CUP, "parallel": 3}))  # how many at once only
    resumed = runners.start(path, database)
    out, errors = resumed.communicate(timeout=COMMAND_TIMEOUT_S)
    assert resumed.returncode == 0, errors
    assert "resuming" in errors
    assert "slow cup: 6 games" in out
    rows = dict(read(database, "SELECT id, status FROM games"))
    assert {rows[game_id] for game_id in playing} <= {"unfinished", "finished"}
    assert "playing" not in rows.values()
    finished = read(database, "SELECT pairing FROM games WHERE status = 'finished'")
    assert len(finished) == len({pairing for (pairing,) in finished}) == 6
    reference_out, errors = reference.communicate(timeout=COMMAND_TIMEOUT_S)
    assert reference.returncode == 0, errors
    assert league(database) == league(tmp_path / "reference.db")
    assert out.split("\nratings")[0] == reference_out.split("\nratings")[0]
    assert [pid for pid in left_running if alive(pid)] == []
    assert runner_folders(killed.pid) == []
    assert runner_folders(resumed.pid) == runner_folders(reference.pid) == []
