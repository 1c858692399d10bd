"""``tavern match``, as a user types it: paired games, a progress line per game, the sequential
test stopping the match once it decides, the verdict, and the games in the records."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from server.records import Records
from tests.conftest import ROOT
from tests.test_play import BROKEN

WANDERER = "{python} -m bots.house_bot tavern wanderer --simulation {simulation} --port {port}"
CRASHING = f"{{python}} {BROKEN} crash tavern --simulation {{simulation}} --port {{port}} --side x"
PROGRESS = re.compile(
    r"games (\d+): A ([\d.]+) - ([\d.]+) B \(\+(\d+) =(\d+) -(\d+)\), Elo [^,]+, "
    r"LLR (-?[\d.]+) \(-2\.94, 2\.94\)"
)


def match(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tavern_cli", "match", "tavern", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_bot_that_always_wins_is_found_stronger_and_the_match_stops(tmp_path: Path) -> None:
    database = tmp_path / "ab.db"
    run = match(
        WANDERER,
        CRASHING,
        *("--games", "40", "--concurrency", "2", "--sprt", "0", "200", "--seed", "5"),
        *("--database", str(database)),
    )
    assert run.returncode == 0, run.stderr
    *progress, verdict = run.stdout.splitlines()
    lines = [PROGRESS.fullmatch(line) for line in progress]
    assert all(lines), progress
    counts = [int(line.group(1)) for line in lines if line]
    assert counts == list(range(1, len(counts) + 1))
    # H1 is accepted at 8 straight wins; a game already started when it was may still end.
    assert 8 <= len(counts) <= 9
    assert all(line.group(6) == "0" for line in lines if line)  # A never lost
    assert verdict == "H1 accepted [0, 200]: A is stronger than B by 200 Elo or more"
    records = Records(str(database))
    records.open_to_read()
    results = records.results()
    assert len(results) == len(counts)
    # Paired: each seed played twice, A on each side once.
    assert {result.bots for result in results} == {("A", "B"), ("B", "A")}
    assert all(result.bots[result.winner] == "A" for result in results if result.winner is not None)


def test_the_weaker_bot_as_a_gets_h0_and_a_bad_test_is_refused() -> None:
    run = match(CRASHING, WANDERER, "--games", "20", "--sprt", "0", "200", "--seed", "1")
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == (
        "H0 accepted [0, 200]: A is not stronger than B by 200 Elo"
    )
    assert len(run.stdout.splitlines()) == 6  # 5 straight losses decide it
    refused = match(WANDERER, WANDERER, "--sprt", "5", "0")
    assert (refused.returncode, refused.stderr) == (
        2,
        "tavern: --sprt ELO0 ELO1 needs ELO0 < ELO1\n",
    )
