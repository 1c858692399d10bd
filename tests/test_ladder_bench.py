"""bench/ladder.py still runs: a few bots, a short run of each kind, as a user types it.

The figures come only from the bench itself; this checks that its machinery works end to end
(bots registered in PostgreSQL, three nodes on Redis, client processes, rated seeks paired and
played, games created and joined by id, the rating update timed), so that it cannot rot
unnoticed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_ladder_bench_pairs_seekers_and_plays_both_runs() -> None:
    ran = subprocess.run(
        [
            sys.executable,
            "bench/ladder.py",
            *("--bots", "8", "--seconds", "1.5", "--think-ms", "20", "--turn-limit", "6"),
            *("--clients", "1"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    output = ran.stdout
    assert "errors:" not in output, output
    seats = [int(n.replace(",", "")) for n in re.findall(r"over ([\d,]+) seats", output)]
    assert len(seats) == 2 and all(count >= 8 for count in seats), output  # each bot seated
    for run in ("without the ladder", "with the ladder"):
        assert f"\n{run} (load average" in output, output
    assert re.search(r"server CPU per turn \d+ us \(node 0 \d+, node 1 \d+, node 2 \d+, ", output)
    assert re.search(r"\d+\.\d\dx without the ladder", output), output
    rated = re.search(r"a rating update \((\d+) rated games rated again", output)
    assert rated is not None and int(rated.group(1)) > 0, output
