"""``tavern match`` as a user runs it: an A/B test between the Tavern example bot (the house
pusher's strategy) and the house wanderer, which it beats every game, in real subprocesses;
its verdict, its progress lines, and its games in the records as a tournament's; with
``--workers``, its games played by real ``tavern worker`` processes through a real redis-server."""

from __future__ import annotations

import os
import pty
import re
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis as redis_client

from server.records import Records
from server.tournament_queue import STREAM
from tests.conftest import ROOT
from tests.services import RedisServer
from tests.test_tournament_cli import SLOW_HOUSE, TAVERN, tavern
from tests.test_tournament_queue import Processes
from tests.test_turn_stderr import CHATTY_COMMAND, check_chatty_turns

PUSHER = "{python} -m bots.tavern_dummy --simulation {simulation} --port {port} --nick pusher"
WANDERER = "{python} -m bots.house_bot tavern wanderer --simulation {simulation} --port {port}"
MAX_SHOWN = 1_000_000  # bytes read from the terminal at most


def match(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    database = str(tmp_path / "m.db")
    return tavern("match", "tavern", *arguments, "--database", database, tmp_path=tmp_path)


def match_id(run: subprocess.CompletedProcess[str]) -> str:
    found = re.search(r"^match (match-\d{8}-\d{6}-\d+): \d+ games$", run.stdout, re.MULTILINE)
    assert found, run.stdout
    return found.group(1)


def recorded(database: Path, tournament: str) -> list[tuple[int, str, str, str | None, str]]:
    """(seed, team1's bot, team2's bot, winner, status) of the match's games, as started."""
    with sqlite3.connect(database) as db:
        return db.execute(
            "SELECT g.seed, a.nick, b.nick, g.winner, g.status FROM games g "
            "JOIN seats a ON a.game_id = g.id AND a.seat = 0 "
            "JOIN seats b ON b.game_id = g.id AND b.seat = 1 "
            "WHERE g.tournament_id = ? ORDER BY g.started_at",
            (tournament,),
        ).fetchall()


def test_a_stronger_bot_is_found_stronger_and_the_match_stops_there(tmp_path: Path) -> None:
    run = match(
        tmp_path,
        *(PUSHER, WANDERER, "--games", "20", "--concurrency", "2"),
        *("--sprt", "0", "400", "--seed", "7"),
    )
    assert run.returncode == 0, run.stderr
    tournament = match_id(run)
    # Five wins in a row cross the upper bound (test_sprt.py): the match stops there, not at
    # twenty games; the other game being played may still end meanwhile, and then counts too.
    summary = re.search(
        rf"^match {tournament}: (5|6) games\n"
        r"A: won \1, drew 0, lost 0; score 1\.000\n"
        "Elo \\+inf ± inf\n"
        r"LLR \+(2\.99|3\.59) \(-2\.94, \+2\.94\), for elo0 0 against elo1 400, alpha 0\.05, "
        r"beta 0\.05\n"
        "verdict: H1 accepted: A is stronger by at least 400 Elo\n"
        r"(\(decided after 5 games; 1 more ended before the match stopped\)\n)?\Z",
        run.stdout,
        re.MULTILINE,
    )
    assert summary, run.stdout
    played = int(summary.group(1))
    assert summary.group(2) == {5: "2.99", 6: "3.59"}[played]
    assert (summary.group(3) is not None) == (played == 6)
    progress = [line for line in run.stderr.splitlines() if "/20 games" in line]
    assert progress[0] == (
        "1/20 games (1 playing), A +1 =0 -0, score 1.000, Elo +inf ± inf, LLR +0.60 (-2.94, +2.94)"
    )
    assert len(progress) >= 5  # into a pipe: a plain line per game, no redrawing
    assert "\r" not in run.stderr

    games = recorded(tmp_path / "m.db", tournament)
    finished = [game for game in games if game[4] == "finished"]
    assert len(finished) == played
    assert {game[4] for game in games} <= {"finished", "unfinished"}  # stopped at the decision
    # Each pair: one seed, the sides swapped; the pusher (A) won each game from either side.
    pairs: dict[int, list[tuple[str, str]]] = {}
    for seed, team1, team2, _, _ in games:
        pairs.setdefault(seed, []).append((team1, team2))
    assert sorted(pairs) == [7 * 100_003 + pair for pair in range(1, len(pairs) + 1)]
    for sides in pairs.values():  # two bots: distinct sides on one seed are swapped sides
        assert len(set(sides)) == len(sides) <= 2
    assert [len(pairs[7 * 100_003 + pair]) for pair in (1, 2)] == [2, 2]
    for _, team1, _, winner, _ in finished:
        assert winner == ("team1" if team1 == "pusher" else "team2")
    records = Records(str(tmp_path / "m.db"))
    records.open_to_read()
    try:
        results = records.results(tournament)
    finally:
        records.close()
    assert [result.bots[result.winner] for result in results if result.winner is not None] == [
        "A"
    ] * played


def test_a_weaker_bot_is_found_not_stronger(tmp_path: Path) -> None:
    run = match(tmp_path, WANDERER, PUSHER, "--games", "10", "--sprt", "0", "400", "--seed", "3")
    assert run.returncode == 0, run.stderr
    assert "\nA: won 0, drew 0, lost 2; score 0.000\n" in run.stdout
    assert run.stdout.endswith("verdict: H0 accepted: A is not stronger by more than 0 Elo\n")


def test_once_each_bot_has_won_a_game_the_elo_has_a_finite_error_bar(tmp_path: Path) -> None:
    """Two random Thud players, each better on one side over 30 plies: a pair of games is a win
    and a loss for A, whose Elo is then +0 with a finite bar (once ``± inf``: the normal
    approximation's interval leaves 0..1 over a few games)."""
    config = tmp_path / "config.json"
    config.write_text('{"thud": {"turnLimit": 30}}')
    player = "{python} -m bots.house_bot thud random --simulation {simulation} --side {side} "
    run = tavern(
        *("match", "thud", player + "--port {port} --seed 1", player + "--port {port} --seed 2"),
        *("--games", "2", "--seed", "5", "--config", str(config)),
        *("--database", str(tmp_path / "m.db")),
        tmp_path=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert "\nA: won 1, drew 0, lost 1; score 0.500\nElo +0.0 ± 392.5\n" in run.stdout
    assert run.stderr.splitlines()[-1] == (
        "2/2 games (0 playing), A +1 =0 -1, score 0.500, Elo +0.0 ± 392.5"
    )


def test_every_game_played_without_a_decision_is_inconclusive(tmp_path: Path) -> None:
    run = match(tmp_path, PUSHER, WANDERER, "--games", "3", "--sprt", "0", "400")
    assert run.returncode == 0, run.stderr
    assert "\nA: won 4, drew 0, lost 0; score 1.000\n" in run.stdout  # 3 rounded up to a pair
    assert run.stdout.endswith(
        "verdict: inconclusive: every game played, the LLR between its bounds\n"
    )
    games = recorded(tmp_path / "m.db", match_id(run))
    assert [game[4] for game in games] == ["finished"] * 4


def test_mistakes_are_said_before_any_game(tmp_path: Path) -> None:
    reversed_test = match(tmp_path, PUSHER, WANDERER, "--sprt", "5", "0")
    assert (reversed_test.returncode, reversed_test.stderr) == (
        2,
        "tavern: --sprt: ELO0 (5) must be below ELO1 (0)\n",
    )
    unknown = match(tmp_path, PUSHER, "{python} -m bots.nothing --port {prot}")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("tavern: B's command: unknown placeholder {prot}")
    assert not (tmp_path / "m.db").exists()


def test_on_a_terminal_the_progress_line_is_redrawn_in_place(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    database = str(tmp_path / "m.db")
    arguments = ("--games", "2", "--sprt", "0", "400", "--database", database)
    process = subprocess.Popen(
        [TAVERN, "match", "tavern", PUSHER, WANDERER, *arguments],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=follower,
        text=True,
    )
    os.close(follower)
    shown = bytearray()
    try:
        while len(shown) < MAX_SHOWN:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end closed: the command ended
                break
            if not chunk:
                break
            shown += chunk
        stdout, _ = process.communicate(timeout=120)
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0
    assert stdout.endswith("verdict: inconclusive: every game played, the LLR between its bounds\n")
    progress = shown.decode().split("the arena's log is ", 1)[1].split("\n", 1)[1]
    # One line, drawn over at each game's start and end, ended once the match is over.
    assert progress.startswith("\r0/2 games (0 playing), A +0 =0 -0, score 0.500, Elo +0.0 ± inf")
    assert "\r1/2 games (0 playing), A +1 =0 -0, score 1.000, Elo +inf ± inf, LLR +0.60" in progress
    assert progress.count("\x1b[K") >= 4
    assert progress.endswith(
        "A +2 =0 -0, score 1.000, Elo +inf ± inf, LLR +1.19 (-2.94, +2.94)\x1b[K\r\n"
    )
    assert progress.count("\n") == 1


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Processes]:
    started = Processes(tmp_path)
    yield started
    for process in started.started:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_on_workers_the_match_stops_queueing_once_decided(
    tmp_path: Path, redis: RedisServer, workers: Processes
) -> None:
    database = tmp_path / "m.db"
    names = []
    for number in (1, 2):
        worker = workers.start(
            *("worker", "--redis", redis.url, "--database", str(database)),
            *("--log", str(tmp_path / f"w{number}.log")),
        )
        assert worker.stdout is not None
        said = worker.stdout.readline()  # it has joined the queue's consumers
        found = re.fullmatch(r"tavern: worker (\S+) takes games from .*\n", said)
        assert found, said
        names.append(found.group(1))
    run = match(
        tmp_path,
        *(CHATTY_COMMAND, WANDERER, "--games", "20", "--concurrency", "10", "--workers"),
        *("--redis", redis.url, "--sprt", "0", "400", "--seed", "7"),
    )
    assert run.returncode == 0, run.stderr
    tournament = match_id(run)
    # As on one machine (chatty plays the pusher's moves): five wins decide. The games that
    # ended before the command read the results (it reads them twice a second) and those the
    # two workers were playing then end and count; the others queued (ten at a time) are dropped.
    summary = re.search(
        rf"^match {tournament}: (\d+) games\n"
        r"A: won \1, drew 0, lost 0; score 1\.000\n"
        r"(.*\n)*verdict: H1 accepted: A is stronger by at least 400 Elo\n"
        r"(\(decided after 5 games; (\d+) more ended before the match stopped\)\n)?\Z",
        run.stdout,
        re.MULTILINE,
    )
    assert summary, run.stdout
    played = int(summary.group(1))
    assert played == 5 + int(summary.group(4) or 0)
    dropped = re.search(r"^tavern: decided: (\d+) queued games no worker", run.stderr, re.M)
    assert dropped, run.stderr
    assert int(dropped.group(1)) >= 1 and played + int(dropped.group(1)) <= 20
    progress = [line for line in run.stderr.splitlines() if "/20 games" in line]
    # A line per game as its result is read, in the order they ended.
    assert [int(line.split("/")[0]) for line in progress] == list(range(1, played + 1))
    assert re.fullmatch(
        r"1/20 games \(\d playing\), A \+1 =0 -0, score 1\.000, Elo \+inf ± inf, "
        r"LLR \+0\.60 \(-2\.94, \+2\.94\)",
        progress[0],
    )

    # Every game it queued was played to its end by a worker, none after the decision was
    # queued, and none is left in the queue.
    games = recorded(database, tournament)
    assert [game[4] for game in games] == ["finished"] * played
    assert (
        sorted({game[0] for game in games})
        == [7 * 100_003 + p for p in range((played + 1) // 2 + 1)][1:]
    )
    with sqlite3.connect(database) as db:
        owners = {
            row[0]
            for row in db.execute("SELECT owner FROM games WHERE tournament_id = ?", (tournament,))
        }
    assert owners <= set(names), (owners, names)
    client = redis_client.Redis.from_url(redis.url)
    try:
        assert client.xlen(STREAM) == 0
    finally:
        client.close()
    # What A wrote on stderr is kept with its turns by the workers too.
    records = Records(str(database))
    records.open_to_read()
    try:
        result = records.results(tournament)[0]
        record = records.game(result.game_id)
    finally:
        records.close()
    assert record is not None
    check_chatty_turns(record["turns"], result.seat_names[result.bots.index("A")])
    for worker in workers.started:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=30)


def test_workers_need_redis(tmp_path: Path) -> None:
    run = match(tmp_path, PUSHER, WANDERER, "--workers")
    assert run.returncode == 2
    assert run.stderr == "tavern: --workers needs redis (in the config, or --redis URL)\n"


def test_a_match_stopped_takes_its_untaken_games_off_the_queue(
    tmp_path: Path, redis: RedisServer, workers: Processes
) -> None:
    client = redis_client.Redis.from_url(redis.url)
    try:
        matched = workers.start(  # no worker runs: none of its games is taken
            *("match", "tavern", PUSHER, WANDERER, "--games", "10", "--concurrency", "3"),
            *("--workers", "--redis", redis.url, "--database", str(tmp_path / "m.db")),
        )
        deadline = time.monotonic() + 60
        while client.xlen(STREAM) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.xlen(STREAM) == 3  # three at a time: the rest wait for room
        time.sleep(0.6)  # a round of the command's more: still three
        assert client.xlen(STREAM) == 3
        matched.send_signal(signal.SIGINT)
        _, errors = matched.communicate(timeout=60)
        assert matched.returncode == 130, errors
        assert errors.endswith(
            "\ntavern: match stopped; the workers finish the games they are playing\n"
        )
        assert client.xlen(STREAM) == 0
    finally:
        client.close()


def slow(player: str) -> str:
    """A house player that waits before each move: a game lasts a second or two."""
    return (
        f"{{python}} {SLOW_HOUSE} tavern {player} --delay-ms 8 --simulation {{simulation}} "
        "--side {side} --port {port} --seed {seed}"
    )


def test_on_workers_a_match_survives_a_redis_restart(
    tmp_path: Path, redis: RedisServer, workers: Processes
) -> None:
    """Redis restarts without its data while a worker plays one of the match's games: that
    game is played to its end, the one Redis lost is queued again, and every game is played
    once."""
    database = tmp_path / "m.db"
    worker = workers.start(
        *("worker", "--redis", redis.url, "--database", str(database)),
        *("--log", str(tmp_path / "w.log")),
    )
    assert worker.stdout is not None
    worker.stdout.readline()
    matched = workers.start(
        *("match", "tavern", slow("pusher"), slow("wanderer"), "--games", "4"),
        *("--concurrency", "3"),
        *("--workers", "--redis", redis.url, "--database", str(database)),
    )
    deadline = time.monotonic() + 60
    playing: list[tuple[str]] = []
    while not playing:
        assert time.monotonic() < deadline, "no worker played a game"
        assert matched.poll() is None, matched.communicate()
        time.sleep(0.02)
        if database.exists():
            with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
                playing = db.execute("SELECT id FROM games WHERE status = 'playing'").fetchall()
    redis.restart()
    out, errors = matched.communicate(timeout=120)
    assert matched.returncode == 0, errors
    # Lost: the games not taken yet (three are queued at a time, the one worker plays one),
    # and the one being played unless it ended first, which is not queued again (its record
    # says a worker plays it).
    assert re.search(r"^tavern: Redis restarted: [123] games not in its queue$", errors, re.M)
    assert re.search(r"^tavern: [12] games queued again$", errors, re.M), errors
    tournament = match_id(subprocess.CompletedProcess([], 0, out, errors))
    assert "\nA: won 4, drew 0, lost 0; score 1.000\n" in out
    games = recorded(database, tournament)
    assert [game[4] for game in games] == ["finished"] * 4
    with sqlite3.connect(database) as db:
        through = db.execute("SELECT status FROM games WHERE id = ?", playing[0]).fetchone()
    assert through == ("finished",)
    worker.send_signal(signal.SIGTERM)
    worker.communicate(timeout=30)
