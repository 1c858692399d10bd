"""bench/lobby.py still runs, as a user types it: a lobby message's cost over the other nodes'
simulations, and the cost of placing them all again."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_lobby_bench_prints_a_message_s_cost_and_placing_all_again() -> None:
    ran = subprocess.run(
        [sys.executable, "bench/lobby.py", "--simulations", "300", "--changes", "5", "20",
         "--messages", "3"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    lines = re.findall(r"300 simulations, +(\d+) changes a message: +[\d.]+ ms", ran.stdout)
    assert lines == ["5", "20"], ran.stdout
    assert re.search(r"placing all again [\d.]+ ms", ran.stdout), ran.stdout
