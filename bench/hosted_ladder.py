"""Hosted bots on the ladder at scale (issue 33, item 8): 100 bots played by two workers,
beside the same bots connected over TCP, in one run.

    python bench/hosted_ladder.py [--bots 100] [--workers 2] [--seconds 30] [--turn-limit 40]
                                  [--rounds 1]

Each run has an arena of its own (``tavern serve`` on a fresh SQLite file, Thud games of
``--turn-limit`` plies) and the same ``--bots`` registered bots, all rated, all seeking:

* **hosted**: each bot's active version is tests/bots/jailed.py's honest bot (the first legal
  move of every turn), played by ``--workers`` processes of ``tavern worker --hosted thud``
  (this file's ``--timed-worker``: the worker as the command runs it, its moves' stamps timed),
  every game a hosted bot against a hosted bot: each bot runs isolated (bubblewrap, cgroups) for
  each game;
* **connected**: the same bots as bench/ladder_bot.py, the same program connecting over TCP by
  itself (one long-lived process each, as an author runs it), no worker at all.

Measured over ``--seconds`` once every bot has started: the moves played per second (from the
records), the arena node's CPU per move, and for the hosted run the workers' own CPU per move
(their processes only: what relaying, stamping and starting bots cost beyond the bots' own CPU,
which is their processes', in their cgroups) and a bot's start, from its worker launching it to
its first move (for the bots on move first: bubblewrap's namespaces and mounts, the launcher,
the interpreter, reading the game and the first turn). For the connected run, a bot's start is
from its launch to its first seek sent (the interpreter and a connection: no game to read).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import CLOCK_TICKS, ROOT, ServerProcess, percentile, tavern_serve
from server import hosted_worker
from server.bot_versions import version_of, zipped_folder
from server.config import ArenaConfig
from server.identity import RegisteredBot, hash_key, new_key
from server.records import Records, opened
from server.records.backends import backend_for, transacted
from server.records.identities import add_bot
from server.records.versions import store_version

JAILED = ROOT / "tests" / "bots" / "jailed.py"
LADDER_BOT = ROOT / "bench" / "ladder_bot.py"
STARTED_WITHIN_S = 0.05  # a bot whose first turn came this soon after its launch moves first
WARM_S = 5.0  # before the window: every bot started, the first games under way


def cpu_of(pid: int) -> float:
    """A process's own CPU seconds (user and system), its children's not counted."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def moves_recorded(database: Path) -> int:
    """Turns in the records so far (every recorded move of every game)."""
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        return int(db.execute("SELECT coalesce(sum(count), 0) FROM turn_chunks").fetchone()[0])


# --- the timed worker (``--timed-worker``), in a process of its own --------------------------
class TimedStamp(hosted_worker.MoveStamp):
    """The worker's stamps, timing each bot's start (its launch to its first move, for a bot
    on move at once) and counting the moves relayed."""

    starts: ClassVar[list[float]] = []
    moves: ClassVar[int] = 0

    def __init__(self, *arguments: object) -> None:
        super().__init__(*arguments)  # type: ignore[arg-type]
        self.launched = time.perf_counter()  # the stamp is made as its bot is launched
        self.first_turn: float | None = None
        self.moved = False

    def sent(self, line: bytes) -> None:
        if self.first_turn is None and line.startswith(hosted_worker.TURN_LINE):
            self.first_turn = time.perf_counter()
        super().sent(line)

    def stamped(self, line: bytes) -> bytes:
        stamped = super().stamped(line)
        if b'"player-turn"' in stamped:
            TimedStamp.moves += 1
            first_turn = self.first_turn
            on_move = first_turn is not None and first_turn - self.launched < STARTED_WITHIN_S
            if not self.moved and on_move:
                TimedStamp.starts.append(time.perf_counter() - self.launched)
            self.moved = True
        return stamped


async def timed_worker(database: str, port: int, out: Path) -> None:
    """``tavern worker --hosted thud`` as the command runs it, writing its figures to ``out``
    every second."""
    hosted_worker.MoveStamp = TimedStamp  # type: ignore[misc, assignment]

    async def report() -> None:
        while True:
            await asyncio.sleep(1.0)
            figures = {"moves": TimedStamp.moves, "starts": TimedStamp.starts}
            out.with_suffix(".tmp").write_bytes(orjson.dumps(figures))
            out.with_suffix(".tmp").replace(out)

    async with opened(ArenaConfig(database=database)) as records:
        worker = hosted_worker.HostedWorker(records, "thud", ("127.0.0.1", port))
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(report())
            await worker.run()


# --- the bench -------------------------------------------------------------------------------
@dataclass
class Figures:
    moves_per_s: float
    node_cpu_per_move: float
    workers_cpu_per_move: float | None
    starts: list[float]


def schema(database: Path) -> None:
    """The records' tables, before the bots are added."""
    records = Records(database)
    records.open()
    records.close()


def registered(database: Path, bots: int, folder: Path) -> dict[str, str]:
    """``bots`` bots in the records, each with the honest bot as its active version; their
    keys by name."""
    keys = {f"Bench{index:03d}": new_key() for index in range(bots)}
    backend = backend_for(database)
    source = folder / "honest"
    source.mkdir()
    shutil.copy(JAILED, source / "jailed.py")
    version = version_of(zipped_folder(source), "python3 jailed.py honest")
    with transacted(backend) as db:
        for name, key in keys.items():
            assert add_bot(db, RegisteredBot(name, hash_key(key)))
    for name in keys:
        assert store_version(backend, name, version, activate=True)
    return keys


@contextlib.asynccontextmanager
async def arena(folder: Path, turn_limit: int) -> AsyncIterator[ServerProcess]:
    config = {"port": 0, "httpPort": 0, "database": str(folder / "arena.db"),
              "reconnectGraceMs": 0, "maxConnectionsPerAddress": 100_000,
              "maxConnections": 100_000, "maxSeeksPerAddress": 100_000,
              "seeksPerAddressPerMinute": 1_000_000, "thud": {"turnLimit": turn_limit}}  # fmt: skip
    (folder / "config.json").write_bytes(orjson.dumps(config))
    async with tavern_serve(folder / "config.json") as server:
        yield server


async def window(
    server: ServerProcess, database: Path, seconds: float, workers: list[int]
) -> tuple[int, float, float, float]:
    """Moves, the node's CPU and the workers' CPU over ``seconds`` of play, and its length."""
    await asyncio.sleep(WARM_S)
    moves, node = moves_recorded(database), server.cpu_seconds()
    relays, wall = sum(map(cpu_of, workers)), time.perf_counter()
    await asyncio.sleep(seconds)
    await asyncio.sleep(0.5)  # the last moves' batch recorded
    moves = moves_recorded(database) - moves
    node = server.cpu_seconds() - node
    relays = sum(map(cpu_of, workers)) - relays
    return moves, node, relays, time.perf_counter() - wall - 0.5


async def hosted_run(bots: int, workers: int, seconds: float, turn_limit: int) -> Figures:
    with tempfile.TemporaryDirectory(prefix="tavern-hosted-ladder-") as scratch:
        folder = Path(scratch)
        database = folder / "arena.db"
        schema(database)
        registered(database, bots, folder)
        env = {**os.environ, "XDG_CACHE_HOME": str(folder / "cache")}
        async with arena(folder, turn_limit) as server:
            processes = []
            for n in range(workers):
                arguments = [__file__, "--timed-worker", str(database), str(server.tcp_port)]
                arguments.append(str(folder / f"worker-{n}.json"))
                processes.append(
                    await asyncio.create_subprocess_exec(
                        sys.executable,
                        *arguments,
                        cwd=ROOT,
                        env=env,
                        stderr=asyncio.subprocess.DEVNULL,
                    )
                )
            try:
                pids = [process.pid for process in processes]
                moves, node, relays, wall = await window(server, database, seconds, pids)
            finally:
                for process in processes:
                    process.terminate()
                for process in processes:
                    await process.wait()
            starts: list[float] = []
            for n in range(workers):
                found = folder / f"worker-{n}.json"
                if found.exists():
                    starts += orjson.loads(found.read_bytes())["starts"]
    per_move = max(moves, 1)
    return Figures(moves / wall, node / per_move, relays / per_move, starts)


async def connected_run(bots: int, seconds: float, turn_limit: int) -> Figures:
    with tempfile.TemporaryDirectory(prefix="tavern-connected-ladder-") as scratch:
        folder = Path(scratch)
        database = folder / "arena.db"
        schema(database)
        keys = registered(database, bots, folder)
        async with arena(folder, turn_limit) as server:
            launched, processes = [], []
            for name, key in keys.items():
                launched.append(time.time())
                arguments = [str(LADDER_BOT), str(server.tcp_port), name, key]
                processes.append(
                    await asyncio.create_subprocess_exec(
                        sys.executable, *arguments, stderr=asyncio.subprocess.PIPE
                    )
                )
            try:
                starts = []
                for at, process in zip(launched, processes, strict=True):
                    assert process.stderr is not None
                    said = await asyncio.wait_for(process.stderr.readline(), 60)
                    starts.append(float(said.split()[1]) - at)
                moves, node, _, wall = await window(server, database, seconds, [])
            finally:
                for process in processes:
                    process.kill()
                for process in processes:
                    await process.wait()
    return Figures(moves / wall, node / max(moves, 1), None, starts)


def described(name: str, figures: Figures) -> str:
    starts = figures.starts or [float("nan")]
    line = (
        f"{name:>9}: {figures.moves_per_s:,.0f} moves/s; the node's CPU per move "
        f"{figures.node_cpu_per_move * 1e6:.0f} us"
    )
    if figures.workers_cpu_per_move is not None:
        line += f"; the workers' own CPU per move {figures.workers_cpu_per_move * 1e6:.0f} us"
    return line + (
        f"; a bot's start p50 {percentile(starts, 0.5) * 1000:.0f} ms, "
        f"p99 {percentile(starts, 0.99) * 1000:.0f} ms ({len(figures.starts)} starts)"
    )


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--timed-worker":
        asyncio.run(timed_worker(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])))
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bots", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--turn-limit", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    print(
        f"hosted ladder: {args.bots} bots, {args.workers} workers, windows of {args.seconds:g} s, "
        f"Thud games of {args.turn_limit} plies",
        flush=True,
    )
    for _ in range(args.rounds):
        hosted = asyncio.run(hosted_run(args.bots, args.workers, args.seconds, args.turn_limit))
        print(described("hosted", hosted), flush=True)
        connected = asyncio.run(connected_run(args.bots, args.seconds, args.turn_limit))
        print(described("connected", connected), flush=True)
        ratio = hosted.node_cpu_per_move / connected.node_cpu_per_move
        print(f"hosted / connected, the node's CPU per move: {ratio:.2f}", flush=True)


if __name__ == "__main__":
    main()
