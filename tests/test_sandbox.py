"""A tournament bot's limits hold for all its processes together (server/sandbox.py).

Each test plays one Thud game: the house dwarf against a bot (tests/bots/hog.py) that joins,
then forks processes that fill memory, burn CPU or leave their session, or floods its stderr.
They need the cgroups of this machine and CI (a cgroup v2 hierarchy, and a memory controller in
v2 or v1); where those are missing they fail, saying so.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from server.bot_stderr import STDERR_KEPT
from server.config import ArenaConfig
from server.records import GameFilter, Records
from server.sandbox import MOUNTS, OWN_CGROUPS, Hierarchies, Sandbox, find_hierarchies
from server.tournament.runner import TournamentRunner
from server.tournament.spec import spec_from_mapping
from tests.bots.hog import LAST_LINE

ROOT = Path(__file__).resolve().parent.parent
HOG = str(Path(__file__).parent / "bots" / "hog.py")
BROKEN = str(Path(__file__).parent / "bots" / "broken.py")
HOUSE_DWARF = {
    "name": "house dwarf",
    "side": "dwarf",
    "command": "{python} -m bots.house_bot thud dwarf --simulation {simulation} --side {side} "
    "--port {port} --seed {seed}",
}


def hog(kind: str, **options: int) -> dict[str, Any]:
    flags = [part for name, value in options.items() for part in (f"--{name}", str(value))]
    command = ["{python}", HOG, kind, "--simulation", "{simulation}", "--port", "{port}"]
    return {
        "name": f"hog {kind}",
        "side": "troll",
        "command": [*command, "--side", "{side}", *flags],
    }


def cup(name: str, bot: dict[str, Any], **limits: int) -> dict[str, Any]:
    # The hog never answers: with this turn timeout, only a limit ends its game early.
    return {
        "name": name,
        "game": "thud",
        "limits": {"turn_timeout_ms": 15_000, "startup_ms": 5000, **limits},
        "bots": [HOUSE_DWARF, bot],
    }


async def play(tmp_path: Path, raw: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Run the one-game tournament in this process; the game's record and the runner's output."""
    spec = spec_from_mapping(raw, ROOT)
    records = Records(tmp_path / "arena.db")
    await asyncio.to_thread(records.open)
    out = io.StringIO()
    try:
        async with asyncio.timeout(60):
            await TournamentRunner(spec, ArenaConfig(), records, out).run()
        page = await asyncio.to_thread(records.games, GameFilter(tournament=spec.id))
        [summary] = page["games"]
        record = await asyncio.to_thread(records.game, summary["id"])
    finally:
        await asyncio.to_thread(records.close)
    assert record is not None
    return record, out.getvalue()


def alive(pid: int) -> bool:
    """Is the process there and not a zombie (this container's init does not reap orphans)?"""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def pids_in(stderr: str, pattern: str) -> list[int]:
    return [int(pid) for pid in re.findall(pattern, stderr)]


def runner_folders(pid: int) -> list[Path]:
    """The cgroup folders of the runner with this pid that are still there."""
    hierarchies = find_hierarchies(MOUNTS.read_text(), OWN_CGROUPS.read_text())
    parents = [folder for folder in (hierarchies.v2, hierarchies.v1_memory) if folder is not None]
    return [folder for parent in parents for folder in parent.glob(f"tavern-{pid}-*")]


def test_this_machine_gives_every_bot_its_own_cgroups() -> None:
    sandbox = Sandbox.create()
    try:
        assert sandbox.warning is None
        assert sandbox.v2 is not None
        assert sandbox.memory_v2 or sandbox.v1_memory is not None
    finally:
        asyncio.run(sandbox.close())
    assert runner_folders(os.getpid()) == []


def test_the_hierarchies_of_a_hybrid_and_of_a_pure_v2_machine() -> None:
    hybrid = find_hierarchies(
        "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n"
        "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n"
        "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n",
        "4:memory:/jobs/42\n1:cpu:/\n0::/\n",
    )
    assert hybrid == Hierarchies(
        Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup/memory/jobs/42")
    )
    pure = find_hierarchies(
        "cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n", "0::/user.slice/session-1.scope\n"
    )
    assert pure == Hierarchies(Path("/sys/fs/cgroup/user.slice/session-1.scope"), None)


def test_without_cgroups_the_warning_says_what_is_missing() -> None:
    sandbox = Sandbox.create(Hierarchies(None, None))
    assert sandbox.warning is not None
    assert "no cgroup v2 hierarchy is mounted" in sandbox.warning
    assert "per process (RLIMIT_CPU, RLIMIT_AS)" in sandbox.warning
    assert "can outlive the bot" in sandbox.warning


async def test_a_bot_without_cgroups_is_still_limited_per_process_and_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    create = Sandbox.create
    monkeypatch.setattr(Sandbox, "create", lambda: create(Hierarchies(None, None)))
    crash = {
        "name": "crash",
        "side": "troll",
        "command": [
            *("{python}", BROKEN, "crash", "thud", "--simulation", "{simulation}"),
            *("--port", "{port}", "--side", "{side}"),
        ],
    }
    record, out = await play(tmp_path, cup("no cgroups", crash, turn_timeout_ms=2000))
    assert "tavern: no cgroup v2 hierarchy is mounted" in out
    assert record["result"]["reason"] == "Player disconnected"
    assert [player["exit"] for player in record["players"]] == [
        "stopped at the end of the game",
        "exited with code 1",
    ]


async def test_the_memory_limit_holds_for_all_the_processes_of_a_bot(tmp_path: Path) -> None:
    # Four children of 80 MB each: every one is under the limit, together they are not.
    bot = hog("memory", children=4, mb=80)
    started = time.monotonic()
    record, out = await play(tmp_path, cup("memory", bot, memory_mb=200))
    assert "tavern:" not in out  # no warning: this machine has what the limits need
    hog_seat = record["players"][1]
    assert hog_seat["exit"] == "killed: memory limit (200 MB)"
    assert record["result"]["reason"] == "Player disconnected"
    assert record["result"]["winner"] == "dwarf"
    held = pids_in(hog_seat["stderr"], r"child (\d+) holds 80 MB")
    assert 80 * len(held) <= 200, hog_seat["stderr"]
    assert time.monotonic() - started < 10  # not the 15 s turn timeout
    assert not [pid for pid in held if alive(pid)]
    assert runner_folders(os.getpid()) == []


async def test_the_cpu_limit_holds_for_all_the_processes_of_a_bot(tmp_path: Path) -> None:
    # Three children burn CPU: each would stay under a per-process limit of 2 s for 2 s.
    record, _ = await play(tmp_path, cup("cpu", hog("cpu", children=3), cpu_seconds=2))
    hog_seat = record["players"][1]
    assert hog_seat["exit"] == "killed: CPU limit (2 s)"
    assert record["result"]["reason"] == "Player disconnected"
    last: dict[str, float] = {}
    for pid, seconds in re.findall(r"child (\d+) cpu ([\d.]+)", hog_seat["stderr"]):
        last[pid] = float(seconds)
    assert len(last) == 3
    # The group is checked every POLL_S (0.05 s), on two cores.
    assert sum(last.values()) <= 2.5, last
    assert not [pid for pid in last if alive(int(pid))]


async def test_a_process_that_leaves_the_session_does_not_outlive_its_game(tmp_path: Path) -> None:
    record, _ = await play(tmp_path, cup("setsid", hog("setsid")))
    hog_seat = record["players"][1]
    [escaped] = pids_in(hog_seat["stderr"], r"escaped pid (\d+)")
    try:
        assert not alive(escaped)
        assert hog_seat["exit"] == "exited with code 1"
        assert "this bot crashes" in hog_seat["stderr"]
    finally:
        if alive(escaped):
            os.kill(escaped, signal.SIGKILL)


def test_a_flood_on_stderr_keeps_the_runner_small_and_the_tail(tmp_path: Path) -> None:
    """300 MB of stderr: the runner (``tavern tournament``) keeps only the tail, in memory."""
    path = tmp_path / "cup.json"
    path.write_text(json.dumps(cup("flood", hog("stderr", mb=300))))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    database = tmp_path / "arena.db"
    runner = subprocess.Popen(
        [sys.executable, "-m", "tavern_cli", "tournament", str(path), "--database", str(database)],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    peak_kb = 0
    deadline = time.monotonic() + 60
    try:
        while runner.poll() is None and time.monotonic() < deadline:
            status = Path(f"/proc/{runner.pid}/status").read_text(errors="replace")
            match = re.search(r"VmHWM:\s+(\d+) kB", status)
            if match:  # the peak resident size so far
                peak_kb = int(match.group(1))
            time.sleep(0.01)
        _, errors = runner.communicate(timeout=10)
    finally:
        runner.kill()
    assert runner.returncode == 0, errors
    assert peak_kb < 150 * 1024, f"the runner peaked at {peak_kb // 1024} MB"
    assert list(scratch.iterdir()) == []  # and nothing on disk
    records = Records(database)
    records.open_to_read()
    [summary] = records.games(GameFilter())["games"]
    hog_seat = summary["players"][1]
    assert hog_seat["exit"] == "exited with code 1"
    assert hog_seat["stderr"].endswith(LAST_LINE + "\n")
    assert len(hog_seat["stderr"]) == STDERR_KEPT
