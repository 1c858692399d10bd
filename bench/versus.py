"""This arena beside other servers in one run: the same bots, the same load, alternating rounds.

    python bench/versus.py [--against original|CHECKOUT ...] [--mix tavern|thud] [--games 100]
                           [--seconds 10] [--rounds 4] [--loop uvloop|asyncio]
                           [--original-source GIT] [--cache DIR] [--points-to-win 1000]

``--against original`` (the default) runs the original 2013 Node.js server of Dwarven Tavern
(PIWEEK/dwarven-tavern, its ``server/`` folder) as its README says, ``node app.js``; Tavern
only. ``--against CHECKOUT`` runs ``tavern serve`` from another checkout of this project (an
older commit in a ``git worktree``) with this interpreter. ``--against`` may be given more
than once: every server is measured in the same run.

Every server runs from the start; then rounds go round them (A B, B A, A B, ... and, with
three, A B C, B C A, C A B, ...), each round a fresh set of N games of ``bench/load.py``'s bots
playing real moves (Tavern: every dwarf of the team steps in a random direction; Thud: a random
legal move), one client process for all. Records are on in the arenas (an SQLite file in a
scratch directory); the original keeps none. Each round prints, for each server, its CPU
seconds over the turns played (read from ``/proc/PID/stat`` of the server's process: for the
original, the ``node`` process; for an arena, its records thread included), the turns per
second and the reply latency; the end prints every round together and the ratio of this
arena's CPU per turn to each other server's.

The original server comes from ``--original-source`` (a git URL or a local copy of the
repository; by default the public one, https://github.com/PIWEEK/dwarven-tavern), cloned once
into ``--cache`` (default ``tavern-bench-original`` in the system's temporary folder), where its
npm dependencies are installed once::

    git clone SOURCE CACHE/source
    cd CACHE/source/server && npm install --no-audit --no-fund

Each run writes the ports and ``pointsToWin`` (raised, so that games last rather than end
after three points) into that copy's ``config.json``. Its logging (the board printed at every
turn) goes to ``/dev/null``. Its socket.io 0.9 reads ``process.EventEmitter``, which today's
Node no longer has: the bench preloads one line that puts it back (``node --require``), and
changes nothing else. The arena plays under the same ``pointsToWin`` (its games still end at
its ``turnLimit`` of 1,000, and a new game starts: the original has no turn limit).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import ROOT, ServerProcess, arena_process, describe_ms, use_loop
from bench.load import UNCAPPED, Figures, measure

GITHUB = "https://github.com/PIWEEK/dwarven-tavern.git"
CACHE = Path(tempfile.gettempdir()) / "tavern-bench-original"
# socket.io 0.9.16 inherits from ``process.EventEmitter``, gone from Node since 2016.
NODE_COMPAT = 'process.EventEmitter = require("events");\n'
WARM_UP_S = 2.0  # a first, uncounted round for each server (Node's compiler, the caches)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def git_head(checkout: Path) -> str:
    found = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return found.stdout.strip() or "unknown"


def prepare_original(source: str, cache: Path) -> Path:
    """The original's ``server/`` folder with its npm dependencies, made once under ``cache``."""
    missing = [tool for tool in ("git", "node", "npm") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(
            f"bench/versus.py --against original needs {' and '.join(missing)} on the PATH "
            "(Node.js and npm run the original server; git fetches it)"
        )
    checkout = cache / "source"
    if not (checkout / "server" / "app.js").is_file():
        partial = cache / "source.partial"
        shutil.rmtree(partial, ignore_errors=True)
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "--quiet", source, str(partial)], check=True)
        partial.rename(checkout)
    server = checkout / "server"
    installed = server / ".bench-installed"  # npm install finished (not merely started)
    if not installed.is_file():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=server, check=True)
        installed.touch()
    (cache / "node-compat.js").write_text(NODE_COMPAT)
    return server


@contextlib.asynccontextmanager
async def original_process(
    server: Path, cache: Path, points_to_win: int
) -> AsyncIterator[ServerProcess]:
    """``node app.js`` in the original's ``server/`` folder, on free ports; killed at the end."""
    config_path = server / "config.json"
    config = orjson.loads(config_path.read_bytes())
    config.update(port=free_port(), httpPort=free_port(), pointsToWin=points_to_win)
    config_path.write_bytes(orjson.dumps(config, option=orjson.OPT_INDENT_2))
    log_path = cache / "original.log"  # its errors; what it prints at every turn is dropped
    with log_path.open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            *("node", "--require", str(cache / "node-compat.js"), "app.js"),
            cwd=server,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=log,
        )
    try:
        async with asyncio.timeout(30):
            while True:
                if process.returncode is not None:
                    raise RuntimeError(f"the original server exited: see {log_path}")
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", config["port"])
                except OSError:
                    await asyncio.sleep(0.1)
                    continue
                writer.close()
                break
        yield ServerProcess(process, config["port"], config["httpPort"])
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def check_alive(label: str, server: ServerProcess) -> None:
    if server.process.returncode is not None:
        raise SystemExit(f"{label}: the server exited during the round")


async def alternate(
    servers: dict[str, ServerProcess], games: int, seconds: float, mix: str, rounds: int
) -> dict[str, list[Figures]]:
    """``rounds`` rounds of each server, each round in another order; a warm-up round each."""
    for label, server in servers.items():
        await measure(server, games, WARM_UP_S, mix, 0.0)
        check_alive(label, server)
    figures: dict[str, list[Figures]] = {label: [] for label in servers}
    labels = list(servers)
    for number in range(rounds):
        first = number % len(labels)
        for label in labels[first:] + labels[:first]:
            result = await measure(servers[label], games, seconds, mix, 0.0)
            check_alive(label, servers[label])
            figures[label].append(result)
            print(f"round {number + 1} {label:>8}: {describe(result)}", flush=True)
    return figures


def describe(result: Figures) -> str:
    return (
        f"{result.turns_per_s:>7,.0f} turns/s, server CPU {result.cpu_per_turn * 1e6:5.1f} "
        f"us/turn ({result.turns:,} turns); reply {describe_ms(result.latencies)}"
    )


def summarise(label: str, rounds: Sequence[Figures]) -> str:
    per_turn = [result.cpu_per_turn * 1e6 for result in rounds]
    turns = sum(result.turns for result in rounds)
    cpu = sum(result.server_cpu for result in rounds)
    rate = sum(result.turns_per_s for result in rounds) / len(rounds)
    latencies = [latency for result in rounds for latency in result.latencies]
    return (
        f"{label:>8}: server CPU {cpu / turns * 1e6:.1f} us/turn (rounds {min(per_turn):.1f}"
        f"-{max(per_turn):.1f}), {rate:,.0f} turns/s, reply {describe_ms(latencies)}"
    )


@dataclass(frozen=True)
class Opponent:
    """The server the arena is measured beside: its label, what it is, and how to start it."""

    label: str
    described: str
    serve: Callable[[], contextlib.AbstractAsyncContextManager[ServerProcess]]


def opponent(against: str, args: argparse.Namespace, settings: dict[str, object]) -> Opponent:
    """The original server (prepared first, if need be), or another checkout's arena."""
    if against == "original":
        folder = prepare_original(args.original_source, args.cache)
        node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
        return Opponent(
            "original",
            f"the original server ({args.original_source} at {git_head(folder.parent)}"
            f", Node {node.stdout.strip()})",
            lambda: original_process(folder, args.cache, args.points_to_win),
        )
    root = Path(against).resolve()
    commit = git_head(root)
    return Opponent(
        commit,
        f"{root} at {commit}",
        lambda: arena_process(args.loop, settings, root),
    )


async def run(
    args: argparse.Namespace, others: list[Opponent], settings: dict[str, object]
) -> dict[str, list[Figures]]:
    async with contextlib.AsyncExitStack() as stack:
        servers = {other.label: await stack.enter_async_context(other.serve()) for other in others}
        servers["arena"] = await stack.enter_async_context(arena_process(args.loop, settings))
        await asyncio.sleep(1.0)
        return await alternate(servers, args.games, args.seconds, args.mix, args.rounds)


def report(figures: dict[str, list[Figures]]) -> None:
    print("all rounds:")
    for label, rounds in figures.items():
        print(summarise(label, rounds))
    mine = sum(r.server_cpu for r in figures["arena"]) / sum(r.turns for r in figures["arena"])
    for other, rounds in figures.items():
        if other == "arena":
            continue
        ratios = [
            ours.cpu_per_turn / theirs.cpu_per_turn
            for ours, theirs in zip(figures["arena"], rounds, strict=True)
        ]
        theirs = sum(r.server_cpu for r in rounds) / sum(r.turns for r in rounds)
        print(
            f"arena / {other}, CPU per turn: {mine / theirs:.2f} "
            f"(rounds {min(ratios):.2f}-{max(ratios):.2f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--against", action="append", help="original (the default), or a checkout's path"
    )
    parser.add_argument("--mix", choices=("tavern", "thud"), default="tavern")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="uvloop")
    parser.add_argument(
        "--original-source",
        default=GITHUB,
        help="the original's git repository: a URL (by default the public one) or a local copy",
    )
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--points-to-win", type=int, default=1000)
    args = parser.parse_args()
    against = args.against or ["original"]
    if "original" in against and args.mix != "tavern":
        parser.error("the original server plays Tavern only")
    settings: dict[str, object] = {**UNCAPPED, "pointsToWin": args.points_to_win}
    others = [opponent(name, args, settings) for name in against]
    if len({other.label for other in others} | {"arena"}) != len(others) + 1:
        parser.error("--against: each server once")
    print(
        f"versus: {args.mix}, {args.games} games, {args.rounds} rounds of {args.seconds:g} s "
        f"each; arena: this checkout ({git_head(ROOT)}, {args.loop}, records in SQLite); "
        + "; ".join(f"{other.label}: {other.described}" for other in others),
        flush=True,
    )
    use_loop(args.loop)
    started = time.perf_counter()
    figures = asyncio.run(run(args, others, settings))
    report(figures)
    print(f"({time.perf_counter() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
