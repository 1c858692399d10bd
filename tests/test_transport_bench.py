"""bench/transport.py still runs: both transports between two nodes on a real redis-server, as
a user types it, each carrying every seat's turns; their commands counted by Redis itself."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_transport_bench_carries_turns_both_ways() -> None:
    ran = subprocess.run(
        [sys.executable, "bench/transport.py", "--seats", "4", "--seconds", "1", "--rounds", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    summary = ran.stdout.split("all rounds", 1)[1]
    figures = dict(
        re.findall(r"^ *(streams|sharded): +([\d,]+) round trips/s", summary, re.MULTILINE)
    )
    assert figures.keys() == {"streams", "sharded"}, ran.stdout
    assert all(int(value.replace(",", "")) > 100 for value in figures.values()), ran.stdout
    # Four seats' round trips: each crossing is a command (XADD with an XTRIM, or SPUBLISH).
    commands = re.findall(r"([\d.]+) Redis commands a round trip", summary)
    assert len(commands) == 2 and all(float(count) > 0 for count in commands), ran.stdout
