"""bench/hosted.py still runs, as a user types it: the same games with isolated dwarfs and with
connected ones, each run's start times and the runner's CPU per move."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_hosted_bench_plays_isolated_and_connected_bots_side_by_side() -> None:
    ran = subprocess.run(
        [sys.executable, "bench/hosted.py", "--bots", "2", "--parallel", "2", "--turn-limit", "6"],
        cwd=ROOT, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    runs = re.findall(
        r"^ *(isolated|connected): a bot's start p50 (\d+) ms, .* CPU per move (\d+) us$",
        ran.stdout,
        re.MULTILINE,
    )
    assert [mode for mode, _, _ in runs] == ["isolated", "connected"], ran.stdout
    assert all(int(start) > 0 and int(cpu) > 0 for _, start, cpu in runs), ran.stdout
    assert re.search(r"isolated / connected, the runner's CPU per move: [\d.]+", ran.stdout)
