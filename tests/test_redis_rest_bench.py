"""bench/redis_rest.py still runs: two nodes on a real redis-server, at rest, then with games
waiting, as a user types it; its counts come from Redis itself, so they are checked as such:
games that wait cost Redis nothing at rest (issue 32: what a node writes grows with what
changes, not with what it holds)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_rest_bench_counts_what_idle_nodes_ask_of_redis() -> None:
    ran = subprocess.run(
        [sys.executable, "bench/redis_rest.py", "--nodes", "2", "--light", "1",
         "--games", "0", "6", "--seconds", "3", "--warmup", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    figures = re.findall(
        r"^3 nodes \(1 light\), (\d+) waiting games: ([\d,]+) Redis commands/s",
        ran.stdout,
        re.MULTILINE,
    )
    assert [games for games, _ in figures] == ["0", "6"], ran.stdout
    idle, waiting = (int(total.replace(",", "")) for _, total in figures)
    # Each node's heartbeat asks six commands a second, the light one's too (two nodes alone
    # would ask twelve); six games waiting add nothing (but a heartbeat more or less).
    assert idle >= 15 and waiting <= idle + 6, ran.stdout
    assert "set " in ran.stdout.splitlines()[-1], ran.stdout
