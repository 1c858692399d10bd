"""bench/hostile.py still runs: a few of its attacks, tiny and short, as a user types them.

The figures come only from the bench itself; this checks that its machinery works end to end
(servers from a checkout, nodes on Redis, attacker processes, honest pairs from their own
addresses, the report), so that the bench cannot rot unnoticed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent


def run_bench(*arguments: str, json_path: Path) -> tuple[str, list[dict[str, object]]]:
    ran = subprocess.run(
        [sys.executable, "bench/hostile.py", *arguments, "--json", str(json_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    return ran.stdout, [orjson.loads(line) for line in json_path.read_bytes().splitlines()]


def test_the_hostile_bench_runs_its_attacks_beside_honest_games(tmp_path: Path) -> None:
    small = ("--scale", "0.01", "--seconds", "1.5", "--recovery", "4", "--before", "0.5")
    output, figures = run_bench(
        "brace-flood",
        "bad-inbox-frame",
        "lobby-pages",
        *small,
        "--pairs",
        "2",
        "--server",
        str(ROOT),
        json_path=tmp_path / "figures.jsonl",
    )
    brace, inbox, pages = figures
    assert [f["attack"] for f in figures] == ["brace-flood", "bad-inbox-frame", "lobby-pages"]
    for attack in figures:
        assert attack["server"] == str(ROOT)
        assert isinstance(attack["turns/s before"], int) and attack["turns/s before"] > 0
        servers = attack["servers"]
        assert isinstance(servers, dict) and servers
        for server in servers.values():
            assert float(server["rss peak MiB"].replace(",", "")) > 10
        assert f"== {attack['attack']}:" in output
    # Three connections a second for a second and a half, each answered brace by brace.
    brace_attack = brace["attack figures"]
    assert isinstance(brace_attack, dict)
    assert brace_attack["connections made"] >= 3
    assert brace_attack["replies per connection (mean)"] > 0
    # The nodes heard the bad frame (each node's inbox has one subscriber: the node).
    inbox_attack = inbox["attack figures"]
    assert isinstance(inbox_attack, dict) and inbox_attack["heard by a node"] >= 1
    assert len(inbox["servers"]) == 2  # type: ignore[arg-type]
    # Forty simulations left waiting, then thirty pages that never read.
    assert pages["set-up"] == {"created": 40}
    page_attack = pages["attack figures"]
    assert isinstance(page_attack, dict)
    assert page_attack["pages open"] == 30
    assert page_attack["lobby message bytes"] > 1000
