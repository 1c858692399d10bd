"""bench/hostile.py still runs: a few of its attacks, tiny and short, as a user types them.

The figures come only from the bench itself; this checks that its machinery works end to end
(servers from a checkout, nodes on Redis, attacker processes, honest pairs from their own
addresses, the report), so that the bench cannot rot unnoticed; and that it still starts the
server of a checkout from before the ``tavern`` command moved out of ``server``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from bench.common import tavern_serve

ROOT = Path(__file__).resolve().parent.parent
# The last commit whose ``tavern`` command was ``python -m server`` (issue 21 moved it to
# ``tavern_cli``): what ``--server OLD`` measures runs as it ran then.
SERVER_AS_COMMAND = "bb263f599abb4c76c3182d1f3a0c7c6666811719"


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
    small = ("--scale", "0.01", "--seconds", "1.5", "--recovery", "2", "--before", "0.3")
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


@pytest.fixture
def old_checkout(tmp_path: Path) -> Path:
    """The server, visor and bots of ``SERVER_AS_COMMAND``, from this clone's history."""
    old = tmp_path / "old"
    old.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", SERVER_AS_COMMAND, "server", "visor", "bots"],
        capture_output=True,
        timeout=60,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, timeout=60, check=True)
    assert not (old / "tavern_cli").exists()
    return old


async def test_the_benches_serve_a_checkout_from_before_the_command_moved(
    old_checkout: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.json"
    config.write_bytes(orjson.dumps({"port": 0, "httpPort": 0, "database": str(tmp_path / "db")}))
    async with tavern_serve(config, root=old_checkout) as server:
        cmdline = Path(f"/proc/{server.process.pid}/cmdline")
        command = (await asyncio.to_thread(cmdline.read_bytes)).split(b"\0")
        assert command[1:4] == [b"-m", b"server", b"serve"]
        assert server.tcp_port > 0 and server.http_port > 0
