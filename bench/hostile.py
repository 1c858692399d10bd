"""Attacks on a real arena while honest games play: what each costs the server and the honest
players (issue 20, "Under attack"; issue 30's attacker, behind the balancer), measured the same
way for any checkout of the arena.

    python bench/hostile.py ATTACK [ATTACK ...] | issue20 | issue30 | all
        [--server ROOT] [--scale 1.0] [--seconds 30] [--recovery 60] [--before 5]
        [--pairs 6] [--think-ms 5] [--loop asyncio|uvloop] [--json FILE]
        [--payload string|brackets|strings] [--trigger join|fake-node] [--value json|types]
        [--nicks each|one] [--balancer]
    python bench/hostile.py --compare BEFORE.jsonl AFTER.jsonl

Each attack runs against fresh servers in child processes, started from the checkout at ROOT
(default: this one) with this interpreter (``cd ROOT; PYTHONPATH=ROOT python -m tavern_cli
serve``, or ``python -m server serve`` in a checkout from before issue 21, whose ``server`` was
the command), with the server's own default limits: only ports, records, Redis and the config keys
ROOT's server knows are set. So the same command measures the old code and the new.

Behind the balancer (issue 30's attacks, ``bench/balanced_attacks.py``, always; any attack with
``--balancer``): three nodes on a redis-server, their records in one PostgreSQL, behind HAProxy
running ROOT's shipped deploy/haproxy.cfg (``bench/balancer.py``: only its addresses given, its
timings and limits its own), the nodes told HAProxy's address is a balancer's (``balancers``,
where ROOT knows it). The honest pairs, the probes and the attackers then connect only to
HAProxy's ports, each from its own address, as before.

Throughout, ``--pairs`` honest pairs play game after game, each pair from its own loopback
address (127.0.0.10 and up; ``bench/honest.py``): Tavern bots moving every dwarf, or, for the
Thud attacks, Thud bots playing a legal move of each turn's ``moves``; each bot thinks
``--think-ms`` (drawn between half and one and a half of it). On an arena of nodes, each pair's
two bots connect to different nodes. The attackers come from 127.0.1.x (and 127.0.2.x), in
processes of their own (``bench/attackers.py``), each holding at most 9,000 connections; from
as many addresses as the issue says, else from enough to stay within any per-address cap
(100 connections each for the burst and the lobby pages, 1,000 for idle HTTP, 10 for the
house pages and the seated flood).

The timeline: ``--before`` seconds of honest games alone (after as long a warm-up, 2 s at most):
the baseline;
``--seconds`` of attack (opening its connections included); then the recovery, until the honest
games are back to normal (over the last 3 s: at least half the baseline's turns, no 0.5 s
without a turn, no set-up refused, the servers' CPU near the baseline's and every server
alive), at least 2 s and at most ``--recovery`` seconds. Printed for each attack: the attack's
own figures; the honest games finished, forfeited, lost and set-ups refused over the attack and
the recovery (lost: ``Player disconnected``, ``Arena link lost``, ``Arena node lost``, ``Server
shutting down``, a connection closed mid-game; refused: no ``ready``/``game-info`` within 10 s,
or an error instead); the longest an honest bot waited after its move for its next turn or its
end, and the longest time no honest game got a turn; honest turns per second and the reply
latency (a move sent to the next turn received) before and over the attack and recovery; each
server's RSS (sampled from /proc every 0.2 s) before, at its peak and at the end, and its CPU
seconds over the attack and over the recovery; servers that exited. Honest probes
(``bench/probes.py``: page loads, new bots' games, registered bots' rated seeks, ``/readyz``, the
records' API), where an attack has them, are counted by their answer and the phase of the
attack, with the slowest answer. At the end, each attack against issue 30's "Done when": honest
stall under 1 s, no honest set-up refused, no honest game lost.

``--scale`` multiplies every attack's size (connections, pages, simulations, rates): the
defaults are the issues' figures. ``issue20`` runs issue 20's attacks in turn (about 15
minutes), ``issue30`` issue 30's (about 30 minutes), ``all`` both.
``--json`` keeps every figure, and ``--compare`` prints two such files side by side: run the
same command with ``--server OLD`` and ``--server NEW``, then compare.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import uvloop
from redis.asyncio import Redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.attack import Attack, Figures
from bench.balanced_attacks import ISSUE_30
from bench.balancer import BALANCER_ADDRESS, Balancer, haproxy_in_front
from bench.balancer import NODES as BALANCED_NODES
from bench.common import (
    ROOT,
    ServerProcess,
    addresses_for,
    describe_ms,
    known_settings,
    percentile,
    sources,
    tavern_serve,
)
from bench.honest import HonestPlayers, Record
from bench.probes import readiness
from server.cluster import keys
from tests.services import PostgresServer, RedisServer, postgres_server, redis_server

ATTACKERS = Path(__file__).resolve().parent / "attackers.py"
PER_ATTACKER = 9_000  # connections one attacker process holds (its descriptors: 20,000 here)
OPEN_WITHIN_S = 60.0  # for an attacker to open all its connections before it holds them
SAMPLE_S = 0.2
WARM_UP_S = 2.0
NORMAL_WINDOW_S = 3.0
MIN_RECOVERY_S = 2.0
NORMAL_GAP_S = 0.5
WAITING_PER_ADDRESS = 100  # the default maxWaitingSimulationsPerAddress (and per connection)
API_GAMES_PER_ADDRESS = 20  # the default maxThudApiGamesPerAddress
API_PROBE_EVERY_S = 2.0
BAD_FRAME_EVERY_S = 5.0
SLOWEST = "slowest s"  # of a probe's answers in a phase (``Run.saw``)
NOT_GOOD = "not good"  # a probe's answers in a phase that a user should not get
DONE_STALL_S = 1.0  # issue 30's "Done when": no honest stall this long


@dataclass(frozen=True)
class Options:
    root: Path
    scale: float
    seconds: float
    recovery: float
    before: float
    pairs: int
    think_s: float
    loop: str | None
    payload: str
    trigger: str
    value: str
    nicks: str
    balancer: bool = False  # every attack behind HAProxy (three nodes, Redis, PostgreSQL)

    def scaled(self, count: float, least: int = 1) -> int:
        return max(least, round(count * self.scale))


# --- the servers under attack -------------------------------------------------------------------
@dataclass
class Target:
    """The arena under attack: its servers (nodes), and the Redis and PostgreSQL they use."""

    options: Options
    scratch: Path
    stack: contextlib.AsyncExitStack
    redis: RedisServer | None
    postgres: PostgresServer | None
    database: str | None  # a PostgreSQL URL the nodes share; else an SQLite file each
    settings: Mapping[str, object] = field(default_factory=dict)  # the attack's own
    behind: bool = False  # nodes behind HAProxy (``balancer``, once it runs)
    servers: dict[str, ServerProcess] = field(default_factory=dict)
    logs: dict[str, Path] = field(default_factory=dict)
    balancer: Balancer | None = None  # HAProxy in front of the first three nodes
    stopped: set[str] = field(default_factory=set)  # servers an attack stopped on purpose

    @property
    def first(self) -> ServerProcess:
        return next(iter(self.servers.values()))

    async def start(self, label: str, ports: tuple[int, int] = (0, 0)) -> ServerProcess | None:
        """A new server (node) on the arena's Redis, if any, on ``ports`` (TCP, HTTP; 0: any
        free one); None if it did not come up. Nodes behind the balancer take its PROXY
        headers, where the checkout knows ``balancers``."""
        settings: dict[str, object] = {
            "port": ports[0],
            "httpPort": ports[1],
            "database": self.database or str(self.scratch / f"{label}.db"),
            **self.settings,
        }
        if self.redis is not None:
            settings["redis"] = self.redis.url
        if self.behind:
            settings["balancers"] = [BALANCER_ADDRESS]
        path = self.scratch / f"{label}.json"
        path.write_bytes(orjson.dumps(known_settings(self.options.root, settings)))
        log = self.logs[label] = self.scratch / f"{label}.log"
        options = () if self.options.loop is None else ("--loop", self.options.loop)
        serving = tavern_serve(
            path, *options, log=log, node=self.redis is not None, root=self.options.root
        )
        try:
            server = await self.stack.enter_async_context(serving)
        except (RuntimeError, TimeoutError):
            return None
        self.servers[label] = server
        return server

    def log_lines(self) -> dict[str, int]:
        return {label: len(log.read_bytes().splitlines()) for label, log in self.logs.items()}

    def tracebacks(self, since: dict[str, int]) -> Counter[str]:
        """The exception of each traceback in the servers' logs since ``since`` (line counts),
        those inside exception groups included."""
        found: Counter[str] = Counter()
        for label, log in self.logs.items():
            lines = log.read_text(errors="replace").splitlines()[since.get(label, 0) :]
            for index, line in enumerate(lines):
                head, mark, _ = line.partition("Traceback (most recent call last)")
                if not mark or head.endswith("Exception Group "):
                    continue
                # The exception is the next line at the traceback's own indentation.
                ends = (
                    text[len(head) :]
                    for text in lines[index + 1 :]
                    if text.startswith(head) and text[len(head) : len(head) + 1] not in " \t"
                )
                found[f"{label}: {next(ends, line)[:160]}"] += 1
        return found


def behind_balancer(options: Options, attack: Attack) -> bool:
    return options.balancer or attack.balancer


@contextlib.asynccontextmanager
async def target(options: Options, attack: Attack) -> AsyncIterator[Target]:
    """Fresh servers for one attack: behind the balancer, three nodes on Redis with their
    records in PostgreSQL and HAProxy in front; else as the attack says."""
    behind = behind_balancer(options, attack)
    nodes = BALANCED_NODES if behind else attack.nodes
    with (
        contextlib.ExitStack() as services,
        tempfile.TemporaryDirectory(prefix="tavern-hostile-") as scratch,
    ):
        redis = services.enter_context(redis_server()) if attack.redis or behind else None
        postgres = services.enter_context(postgres_server()) if attack.postgres or behind else None
        database = None if postgres is None else postgres.create_database("hostile")
        async with contextlib.AsyncExitStack() as stack:
            arena = Target(
                options, Path(scratch), stack, redis, postgres, database, attack.settings, behind
            )
            for index in range(nodes):
                label = f"node {index}" if nodes > 1 else "server"
                if await arena.start(label) is None:
                    log = arena.logs[label].read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"{label} did not start; its log ends:\n{log}")
            if behind:
                ports = [(node.tcp_port, node.http_port) for node in arena.servers.values()]
                front = haproxy_in_front(options.root, ports, Path(scratch))
                arena.balancer = await stack.enter_async_context(front)
            yield arena


# --- what the servers use ----------------------------------------------------------------------
class Sampler:
    """Every server's RSS, CPU time and open file descriptors, every ``SAMPLE_S``, and when a
    server exited."""

    def __init__(self, arena: Target) -> None:
        self.arena = arena
        self.samples: dict[str, list[tuple[float, int, float]]] = {}
        self.descriptors: dict[str, list[tuple[float, int]]] = {}
        self.exits: dict[str, tuple[float, int | None]] = {}

    def sample(self) -> None:
        now = time.perf_counter()
        for label, server in self.arena.servers.items():
            if label in self.exits:
                continue
            try:
                rss, cpu = server.rss_bytes(), server.cpu_seconds()
                descriptors = len(os.listdir(f"/proc/{server.process.pid}/fd"))
            except (OSError, RuntimeError):  # it has ended (a zombie has no VmRSS)
                self.exits[label] = (now, server.process.returncode)
                continue
            self.samples.setdefault(label, []).append((now, rss, cpu))
            self.descriptors.setdefault(label, []).append((now, descriptors))

    async def run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(SAMPLE_S)

    def at(self, label: str, when: float) -> tuple[int, float] | None:
        """RSS and CPU time at the last sample no later than ``when``."""
        found = None
        for sampled, rss, cpu in self.samples.get(label, ()):
            if sampled > when:
                break
            found = (rss, cpu)
        return found

    def peak(self, label: str, start: float, end: float) -> int:
        return max(
            (rss for when, rss, _ in self.samples.get(label, ()) if start <= when <= end), default=0
        )

    def most_descriptors(self, label: str, start: float, end: float) -> int:
        found = self.descriptors.get(label, ())
        return max((count for when, count in found if start <= when <= end), default=0)

    def cpu(self, label: str, start: float, end: float) -> float:
        """CPU seconds over the window (from its first sample, if it started in the window)."""
        samples = self.samples.get(label)
        first, last = self.at(label, start), self.at(label, end)
        if first is None and samples and samples[0][0] <= end:
            first = samples[0][1:]
        return 0.0 if first is None or last is None else last[1] - first[1]

    def cpu_rate(self, start: float, end: float) -> float:
        """All servers' CPU seconds per second over the window."""
        return sum(self.cpu(label, start, end) for label in self.arena.servers) / (end - start)


# --- running an attack --------------------------------------------------------------------------
@dataclass
class Run:
    """One attack being run: its target, options, honest players and extra figures."""

    attack: Attack
    options: Options
    arena: Target
    honest: HonestPlayers
    sampler: Sampler
    phase: str = "before"  # of the attack, as honest probes count their answers (``saw``)
    seen: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # see ``saw``
    _background: list[asyncio.Task[None]] = field(default_factory=list)

    def saw(self, what: str, outcome: str, seconds: float, good: bool) -> None:
        """An honest probe's answer (``what`` asked, ``outcome`` came after ``seconds``;
        ``good``: what a user should get), counted by the phase of the attack it came in, with
        the slowest of the phase and the answers not good: ``seen[what][phase][outcome]``,
        ``seen[what][phase][SLOWEST]``, ``seen[what][phase][NOT_GOOD]``."""
        phase = self.seen.setdefault(what, {}).setdefault(self.phase, {NOT_GOOD: 0})
        phase[outcome] = phase.get(outcome, 0) + 1
        phase[SLOWEST] = round(max(phase.get(SLOWEST, 0.0), seconds), 2)
        phase[NOT_GOOD] += not good

    def background(self, work: Coroutine[Any, Any, None]) -> None:
        """Honest work beside the games (probes), until the end of the recovery."""
        self._background.append(asyncio.create_task(work))

    async def stop_background(self) -> None:
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._background.clear()

    @property
    def tcp_port(self) -> int:
        """Where bots connect: the balancer's port, else the first server's."""
        front = self.arena.balancer
        return self.arena.first.tcp_port if front is None else front.bots_port

    @property
    def http_port(self) -> int:
        """Where pages connect: the balancer's port, else the first server's."""
        front = self.arena.balancer
        return self.arena.first.http_port if front is None else front.pages_port

    async def attackers(self, kind: str, held: int, **spec: Any) -> Figures:
        """``bench/attackers.py KIND`` in as many processes as ``held`` connections need, each
        with its share of the addresses and, as many as its addresses make, of the connections
        (``spec[count_key]``), so that each address makes as many as the others."""
        processes = max(1, math.ceil(held / PER_ATTACKER))
        every: list[str] = spec.pop("sources")
        key = spec.pop("count_key", None)
        started = []
        given = 0
        for index in range(processes):
            share = dict(spec, seconds=self.options.seconds, open_within=OPEN_WITHIN_S)
            share["sources"] = every[index::processes] or every
            if key is not None:
                addresses = sum(len(every[i::processes]) for i in range(index + 1))
                upto = round(spec[key] * addresses / len(every))
                share[key], given = upto - given, upto
            started.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    str(ATTACKERS),
                    kind,
                    orjson.dumps(share).decode(),
                    stdout=asyncio.subprocess.PIPE,
                )
            )
        return merge(await asyncio.gather(*(finished(p, self.options.seconds) for p in started)))


async def finished(process: asyncio.subprocess.Process, seconds: float) -> Figures:
    """An attacker's figures, once it has ended (killed if it overruns its time by far)."""
    try:
        async with asyncio.timeout(OPEN_WITHIN_S + seconds + 120):
            output, _ = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        return {"attacker": "killed: it overran its time"}
    lines = output.decode(errors="replace").strip().splitlines()
    if process.returncode != 0 or not lines:
        return {"attacker": f"failed (exit {process.returncode})"}
    figures: Figures = orjson.loads(lines[-1])
    return figures


def merge(all_figures: list[Figures]) -> Figures:
    """Several attacker processes' figures as one: counts added up."""
    merged: Figures = {}
    for figures in all_figures:
        for key, value in figures.items():
            if key not in merged:
                merged[key] = value
            elif isinstance(value, int | float) and isinstance(merged[key], int | float):
                merged[key] = (
                    max(merged[key], value) if key.startswith("seconds") else merged[key] + value
                )
            elif value != merged[key]:
                merged[key] = f"{merged[key]}; {value}"
    return merged


async def run_attack(attack: Attack, options: Options) -> Figures:
    """Run one attack against fresh servers; print its report and return its figures."""
    began = time.perf_counter()
    async with target(options, attack) as arena:
        ports = [server.tcp_port for server in arena.servers.values()]
        if arena.balancer is not None:
            ports = [arena.balancer.bots_port]
        honest = HonestPlayers(attack.honest, ports, options.pairs, options.think_s)
        sampler = Sampler(arena)
        run = Run(attack, options, arena, honest, sampler)
        prepared = await attack.prepare(run) if attack.prepare is not None else {}
        sampling = asyncio.create_task(sampler.run())
        honest.start()
        try:
            await asyncio.sleep(min(WARM_UP_S, options.before))
            before = time.perf_counter()
            await asyncio.sleep(options.before)
            started = time.perf_counter()
            lines = arena.log_lines()
            run.phase = "attack"
            attack_figures = await attack.act(run)
            stopped = time.perf_counter()
            run.phase = "after"
            ended, normal = await recover(run, before, started, stopped)
            await run.stop_background()  # what the probes were still waiting for is counted
            sampler.sample()
            figures = report(
                run, prepared, attack_figures, (before, started, stopped, ended), normal
            )
            figures["server log"] = dict(arena.tracebacks(lines))
            for problem, count in figures["server log"].items():
                print(f"   log: {count} x {problem}")
        finally:
            await run.stop_background()
            await honest.stop()
            sampling.cancel()
    print(f"   ({time.perf_counter() - began:.0f} s in all)", flush=True)
    return figures


async def recover(run: Run, before: float, started: float, stopped: float) -> tuple[float, bool]:
    """Wait until the honest games are back to normal (see the module's docstring); returns
    when that was, and whether they were (or the cap came first)."""
    record, sampler = run.honest.record, run.sampler
    turn_rate = len(record.turns_between(before, started)) / (started - before)
    cpu_rate = sampler.cpu_rate(before, started)
    while True:
        await asyncio.sleep(0.5)
        now = time.perf_counter()
        if now - stopped >= run.options.recovery:
            return now, False
        if now - stopped < MIN_RECOVERY_S:
            continue
        window = now - NORMAL_WINDOW_S
        turns = record.turns_between(window, now)
        if (
            len(turns) >= 0.5 * turn_rate * NORMAL_WINDOW_S
            and record.longest_gap(window, now)[0] < NORMAL_GAP_S
            and not record.outcomes(window, now)["refused"]
            and not set(sampler.exits) - run.arena.stopped
            and sampler.cpu_rate(window, now) <= max(1.5 * cpu_rate, cpu_rate + 0.25)
        ):
            return now, True


# --- the report ----------------------------------------------------------------------------------
def mib(size: int | None) -> str:
    return "-" if size is None else f"{size / 2**20:,.0f}"


def describe(figures: Figures) -> str:
    return ", ".join(
        f"{key} {value:,}" if isinstance(value, int) else f"{key} {value}"
        for key, value in figures.items()
    )


def report(
    run: Run,
    prepared: Figures,
    attack_figures: Figures,
    times: tuple[float, float, float, float],
    normal: bool,
) -> Figures:
    before, started, stopped, ended = times
    attack, options, record, sampler = run.attack, run.options, run.honest.record, run.sampler
    outcomes = record.outcomes(started, ended)
    gap, gap_from = record.longest_gap(started, ended)
    honest_latency = record.latencies_between(started, ended)
    baseline_latency = record.latencies_between(before, started)
    figures: Figures = {
        "attack": attack.name,
        "server": str(options.root),
        "commit": commit(options.root),
        "behind the balancer": run.arena.balancer is not None,
        "set-up": prepared,
        "attack figures": attack_figures,
        "probes by phase": run.seen,
        "attack seconds": round(stopped - started, 1),
        "recovery seconds": round(ended - stopped, 1),
        "back to normal": normal,
        "games finished": outcomes["finished"],
        "games forfeited": outcomes["forfeited"],
        "games lost": outcomes["lost"],
        "set-ups refused": outcomes["refused"],
        "set-ups made": len([when for when in record.setups if started <= when <= ended]),
        "why": dict(record.reasons(started, ended).most_common(6)),
        "longest bot wait s": round(record.longest_wait(started, ended), 3),
        "longest time without a turn s": round(gap, 3),
        "it began, s into the attack": round(gap_from - started, 1),
        "turns/s before": round(len(record.turns_between(before, started)) / (started - before)),
        "turns/s during": round(len(record.turns_between(started, stopped)) / (stopped - started)),
        "turns/s after": round(
            len(record.turns_between(stopped, ended)) / max(ended - stopped, 1e-9)
        ),
        "reply p50 ms": round(percentile(honest_latency, 0.5) * 1000, 1),
        "reply p99 ms": round(percentile(honest_latency, 0.99) * 1000, 1),
        "baseline reply p50 ms": round(percentile(baseline_latency, 0.5) * 1000, 1),
        "baseline reply p99 ms": round(percentile(baseline_latency, 0.99) * 1000, 1),
        "other errors": dict(record.errors),
        "servers": {},
    }
    for label in run.arena.servers:
        first, last = sampler.at(label, started), sampler.at(label, ended)
        key = label if first is not None else f"{label}, started during the attack"
        exited = sampler.exits.get(label)
        figures["servers"][key] = {
            "rss before MiB": mib(None if first is None else first[0]),
            "rss peak MiB": mib(sampler.peak(label, started, ended)),
            "rss after MiB": mib(None if last is None or exited else last[0]),
            "cpu attack s": round(sampler.cpu(label, started, stopped), 1),
            "cpu recovery s": round(sampler.cpu(label, stopped, ended), 1),
            "cpu before s/s": round(sampler.cpu(label, before, started) / (started - before), 2),
            "descriptors peak": sampler.most_descriptors(label, started, ended),
            "exited": None if exited is None else f"{exited[0] - started:+.1f} s, code {exited[1]}",
        }
    print_report(figures, attack, options, record, started, ended)
    return figures


def print_report(
    figures: Figures, attack: Attack, options: Options, record: Record, started: float, ended: float
) -> None:
    count = len(figures["servers"])
    nodes = f"{count} nodes on Redis" if count > 1 else "one server"
    if attack.postgres or figures["behind the balancer"]:
        nodes += ", records in PostgreSQL"
    if figures["behind the balancer"]:
        nodes += ", behind HAProxy (its deploy/haproxy.cfg)"
    print(f"\n== {attack.name}: {attack.what}", flush=True)
    print(
        f"   {figures['server']} ({figures['commit']}), {nodes}; {options.pairs} honest "
        f"{attack.honest.capitalize()} pairs, bots think {options.think_s * 1000:g} ms"
    )
    if figures["set-up"]:
        print(f"   set-up: {describe(figures['set-up'])}")
    print(f"   attack ({figures['attack seconds']} s): {describe(figures['attack figures'])}")
    for line in probe_lines(figures["probes by phase"]):
        print(f"   probe {line}")
    recovery = (
        f"back to normal {figures['recovery seconds']} s after it stopped"
        if figures["back to normal"]
        else f"not back to normal {figures['recovery seconds']} s after it stopped"
    )
    print(f"   honest games over the attack and the recovery ({recovery}):")
    why = "; ".join(f"{count} {reason}" for reason, count in figures["why"].items())
    print(
        f"     {figures['games finished']} finished, {figures['games forfeited']} forfeited, "
        f"{figures['games lost']} lost, {figures['set-ups refused']} set-ups refused "
        f"({figures['set-ups made']} made){f': {why}' if why else ''}"
    )
    print(
        f"     longest wait for a turn {figures['longest bot wait s']:.2f} s; longest time no "
        f"honest game got a turn {figures['longest time without a turn s']:.2f} s (from "
        f"{figures['it began, s into the attack']:+.1f} s)"
    )
    replies = describe_ms(record.latencies_between(started, ended))
    print(
        f"     turns/s before {figures['turns/s before']:,}, during {figures['turns/s during']:,},"
        f" after {figures['turns/s after']:,}; reply {replies} (before: p50 "
        f"{figures['baseline reply p50 ms']} ms, p99 {figures['baseline reply p99 ms']} ms)"
    )
    if figures["other errors"]:
        print(f"     errors the honest bots were sent: {describe(figures['other errors'])}")
    for label, server in figures["servers"].items():
        exited = f"; EXITED {server['exited']} into the attack" if server["exited"] else ""
        print(
            f"   {label}: RSS {server['rss before MiB']} -> peak {server['rss peak MiB']} -> "
            f"{server['rss after MiB']} MiB; CPU {server['cpu attack s']} s during the attack, "
            f"{server['cpu recovery s']} s during the recovery (before: "
            f"{server['cpu before s/s']} s/s); {server['descriptors peak']:,} descriptors at most"
            f"{exited}"
        )


def probe_lines(seen: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """One line per kind of probe: by phase, its answers counted and the slowest."""
    lines = []
    for what, phases in seen.items():
        shown = []
        for phase, answers in phases.items():
            counted = ", ".join(
                f"{outcome} {count:g}"
                for outcome, count in answers.items()
                if outcome not in (SLOWEST, NOT_GOOD)
            )
            shown.append(f"{phase}: {counted} (slowest {answers[SLOWEST]:.2f} s)")
        lines.append(f"{what}: {'; '.join(shown)}")
    return lines


def commit(root: Path) -> str:
    found = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return found.stdout.strip() or "not a git checkout"


# --- the attacks ---------------------------------------------------------------------------------
async def burst(run: Run) -> Figures:
    count = run.options.scaled(2000)
    return await run.attackers(
        "burst",
        count,
        port=run.tcp_port,
        connections=count,
        count_key="connections",
        payload=run.options.payload,
        sources=addresses_for(count, 100),
    )


async def page_flood(run: Run) -> Figures:
    return await run.attackers("page-flood", 1, port=run.http_port, sources=["127.0.1.1"])


async def brace_flood(run: Run) -> Figures:
    return await run.attackers(
        "brace-flood",
        1,
        port=run.tcp_port,
        rate=run.options.scaled(300),
        bytes=4096,
        linger=1.0,
        probe=10_000,
        sources=["127.0.1.1"],
    )


async def waiting_simulations(run: Run) -> Figures:
    """The issue's 4,000 simulations left waiting, 100 from each of 40 addresses (the caps)."""
    count = run.options.scaled(4000)
    addresses = math.ceil(count / WAITING_PER_ADDRESS)
    spec = {
        "port": run.tcp_port,
        "per_source": math.ceil(count / addresses),
        "sources": sources("127.0.2", addresses),
    }
    return await run.attackers("waiting-simulations", addresses, **spec)


async def lobby_pages(run: Run) -> Figures:
    count = run.options.scaled(3000)
    return await run.attackers(
        "lobby-pages",
        count,
        port=run.http_port,
        pages=count,
        count_key="pages",
        sources=addresses_for(count, 100),
    )


async def random_join_scan(run: Run) -> Figures:
    return await run.attackers(
        "random-joins", 4, port=run.tcp_port, connections=4, batch=20, sources=["127.0.1.1"]
    )


async def idle_http(run: Run) -> Figures:
    count = run.options.scaled(20_100)
    return await run.attackers(
        "idle-http",
        count,
        port=run.http_port,
        connections=count,
        count_key="connections",
        sources=addresses_for(count, 1000),
    )


async def seated_flood(run: Run) -> Figures:
    count = run.options.scaled(120, least=2)
    return await run.attackers(
        "seated-flood",
        count,
        port=run.tcp_port,
        connections=count - count % 2,
        sources=addresses_for(count, 10),
    )


async def idle_tcp(run: Run) -> Figures:
    count = run.options.scaled(10_410)
    return await run.attackers(
        "idle-tcp",
        count,
        port=run.tcp_port,
        connections=count,
        count_key="connections",
        sources=sources("127.0.1", 3),
    )


async def thud_api_starts(run: Run) -> Figures:
    count = run.options.scaled(1020)
    addresses = math.ceil(count / API_GAMES_PER_ADDRESS)
    run.background(api_probe(run))
    return await run.attackers(
        "api-starts",
        addresses,
        port=run.http_port,
        per_source=math.ceil(count / addresses),
        sources=sources("127.0.1", addresses),
    )


async def api_probe(run: Run) -> None:
    """An honest Thud API client: a ``/start`` every ``API_PROBE_EVERY_S``, each from an
    address of its own (127.0.0.100 and up), which it never fills."""
    url = f"http://127.0.0.1:{run.http_port}/start"
    body = orjson.dumps({"game": "begin", "player_one": "honest", "player_two": "honest"})
    for index in range(10**6):
        source = f"127.0.0.{100 + index % 150}"
        connector = aiohttp.TCPConnector(local_addr=(source, 0))
        timeout = aiohttp.ClientTimeout(total=10)
        asked = time.perf_counter()
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            try:
                async with session.post(url, data=body) as response:
                    await response.read()
                    outcome = f"answered {response.status}"
            except (aiohttp.ClientError, OSError, TimeoutError) as error:
                outcome = f"failed: {type(error).__name__}"
        run.saw("/start", outcome, time.perf_counter() - asked, outcome == "answered 200")
        await asyncio.sleep(API_PROBE_EVERY_S)


async def house_pages(run: Run) -> Figures:
    count = run.options.scaled(300)
    return await run.attackers(
        "house-pages", count, port=run.http_port, pages=count, sources=addresses_for(count, 10)
    )


async def bad_redis_value(run: Run) -> Figures:
    """``SET tavern:sim:zzzzzzz "not json"`` (``--value json``), and a value of another type in
    a key of every kind the nodes keep, most written again every second (``--value types``,
    ``wrong_types``); then a
    node joins the arena (``--trigger join``) or a fake node appears (``fake-node``:
    ``tavern:node:zzzzzzzz``, also not JSON)."""
    arena = run.arena
    assert arena.redis is not None
    figures: Figures = {}
    run.background(readiness(run))
    async with Redis.from_url(arena.redis.url) as redis:
        await redis.set("tavern:sim:zzzzzzz", b"not json")
        if run.options.value == "types":
            keeping = asyncio.create_task(wrong_types(redis, arena, run.options.seconds, figures))
        if run.options.trigger == "join":
            joined = await arena.start(f"node {len(arena.servers)}")
            figures["a node joined"] = "it came up" if joined is not None else "it did not come up"
        else:
            await redis.set("tavern:node:zzzzzzzz", b"not json", px=int(run.options.seconds * 1000))
            await redis.sadd("tavern:nodes", "zzzzzzzz")
            figures["a fake node appeared"] = "tavern:node:zzzzzzzz"
        await asyncio.sleep(run.options.seconds)
        if run.options.value == "types":
            await keeping
        await redis.delete("tavern:sim:zzzzzzz", "tavern:node:zzzzzzzz")
    run.sampler.sample()
    alive = [label for label in arena.servers if label not in run.sampler.exits]
    figures["nodes running at its end"] = f"{len(alive)} of {len(arena.servers)}"
    return figures


async def wrong_types(redis: Redis, arena: Target, seconds: float, figures: Figures) -> None:
    """A value of another type than the nodes keep there in a key of every kind
    (``server.cluster.keys.TYPES``): each node's entry once (a node that keeps finding its
    entry deleted or overwritten is taken for dead, as a node whose entry expired: that is
    what an entry says), and every second for ``seconds`` each live simulation's, the shared
    sets, lists and pools, a bot's and an address's (the issue's list in ``tavern:nodes``, in
    ``tavern:held:NAME``, a string in ``tavern:seeks:{thud}``)."""
    names = {"paced": "127.0.0.1", "claim": "tavern"}
    names |= {"bot": "grimli", "held": "grimli", "last": "grimli", "alias": "zzzz"}
    shared = [keys.NODES, keys.FINISHED, keys.seeks_key("thud"), keys.paired_key("thud")]
    shared += [f"{keys.PREFIX}{kind}:{name}" for kind, name in names.items()]
    every = {keys.node_key(server.node_id or "") for server in arena.servers.values()}
    started, written, kinds = time.perf_counter(), 0, set()
    while (left := seconds - (time.perf_counter() - started)) > 0:
        games = [key async for key in redis.scan_iter(match=keys.sim_key("*"), count=1000)]
        every |= {*shared, *(key.decode() for key in games if key != b"tavern:sim:zzzzzzz")}
        async with redis.pipeline(transaction=False) as pipe:
            for key in every:
                pipe.delete(key)
                if keys.value_type(key) == "string":
                    pipe.rpush(key, "not a string")
                else:
                    pipe.set(key, f"not a {keys.value_type(key)}")
            await pipe.execute()
        written += len(every)
        kinds |= {keys.kind_of(key) for key in every}
        every = set()
        figures["kinds of keys given another type"] = len(kinds)
        figures["keys given another type"] = written
        await asyncio.sleep(min(1.0, left))


async def bad_inbox_frame(run: Run) -> Figures:
    """Every 5 s, a bad frame published on a node's inbox, the nodes in turn: nine bytes
    (``12345678X``: a sender id and a frame header cut short), or a batch whose sender id (its
    first 8 bytes) is not UTF-8."""
    arena = run.arena
    assert arena.redis is not None
    nodes = [server.node_id for server in arena.servers.values()]
    frames = (b"12345678X", b"\xff" * 8 + b"M" + bytes(8))
    published: Counter[str] = Counter()
    start = time.perf_counter()
    async with Redis.from_url(arena.redis.url) as redis:
        for index in range(max(1, math.ceil(run.options.seconds / BAD_FRAME_EVERY_S))):
            node, frame = nodes[index % len(nodes)], frames[index // len(nodes) % len(frames)]
            listeners = await redis.spublish(f"tavern:inbox:{node}", frame)
            published[f"{frame[:9]!r} published"] += 1
            published["heard by a node"] += listeners
            next_at = min(start + BAD_FRAME_EVERY_S * (index + 1), start + run.options.seconds)
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
    return dict(published)


async def postgres_restart(run: Run) -> Figures:
    """PostgreSQL stopped (a fast shutdown) and started again; honest probes ask every node for
    ``/api/games`` and the Thud API's ``POST /game`` every 0.25 s, before the restart and from
    the moment it is back (none while it is down: the first requests after it count)."""
    arena = run.arena
    assert arena.postgres is not None
    answers: list[tuple[float, str, str]] = []
    restarted = asyncio.Event()
    run.background(records_probe(run, answers, restarted))
    await asyncio.sleep(1.0)
    down = time.perf_counter()
    restarted.clear()
    await asyncio.sleep(0.5)  # the probes' requests under way are answered
    await asyncio.to_thread(arena.postgres.stop)
    await asyncio.to_thread(arena.postgres.start)
    up = time.perf_counter()
    restarted.set()
    await asyncio.sleep(max(0.0, run.options.seconds - (up - down) - 1.0))
    after = [(endpoint, status) for when, endpoint, status in answers if when >= up]
    figures: Figures = {"seconds without PostgreSQL": round(up - down, 1)}
    for endpoint in ("/api/games", "POST /game"):
        statuses = [status for name, status in after if name == endpoint]
        figures[f"{endpoint} first answers after"] = " ".join(statuses[: 2 * len(arena.servers)])
        figures[f"{endpoint} answers after, not 200"] = sum(1 for s in statuses if s != "200")
    return figures


async def records_probe(
    run: Run, answers: list[tuple[float, str, str]], going: asyncio.Event
) -> None:
    """Ask each node for the records while ``going`` is set."""
    connector = aiohttp.TCPConnector(local_addr=("127.0.0.9", 0))
    timeout = aiohttp.ClientTimeout(total=10)
    body = orjson.dumps({"game": "no-such-game-token-of-32-chars-x"})
    going.set()
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def ask(endpoint: str, method: str, url: str, data: bytes | None) -> None:
            await going.wait()
            asked = time.perf_counter()
            try:
                async with session.request(method, url, data=data) as response:
                    await response.read()
                    status = str(response.status)
            except (aiohttp.ClientError, OSError, TimeoutError) as error:
                status = type(error).__name__
            answers.append((time.perf_counter(), endpoint, status))
            run.saw(endpoint, status, time.perf_counter() - asked, status == "200")

        while True:
            asking = []
            for server in list(run.arena.servers.values()):
                base = f"http://127.0.0.1:{server.http_port}"
                asking.append(ask("/api/games", "GET", f"{base}/api/games?perPage=1", None))
                asking.append(ask("POST /game", "POST", f"{base}/game", body))
            await asyncio.gather(*asking)
            await asyncio.sleep(0.25)


ISSUE_20 = (
    Attack(
        "bad-redis-value",
        "one bad Redis value, then a node (re)joining (item 8)",
        bad_redis_value,
        nodes=2,
        redis=True,
    ),
    Attack(
        "bad-inbox-frame",
        "nine bytes on a node's inbox (item 9)",
        bad_inbox_frame,
        nodes=2,
        redis=True,
    ),
    Attack("brace-flood", "300 connections a second, each 4,096 '{' (item 10)", brace_flood),
    Attack(
        "lobby-pages",
        "3,000 lobby websockets that never read, 4,000 simulations waiting (item 11)",
        lobby_pages,
        prepare=waiting_simulations,
    ),
    Attack(
        "random-join-scan",
        "invalid random joins on 4 connections, 4,000 simulations waiting (item 12)",
        random_join_scan,
        prepare=waiting_simulations,
    ),
    Attack(
        "idle-http",
        "20,100 HTTP connections holding an unfinished request (item 13)",
        idle_http,
    ),
    Attack(
        "seated-flood",
        "120 connections seated in 60 Thud games, flooding (item 14)",
        seated_flood,
        honest="thud",
    ),
    Attack("idle-tcp", "10,410 idle TCP connections from 3 addresses (item 15)", idle_tcp),
    Attack(
        "thud-api-starts",
        "1,020 Thud API /starts from 51 addresses (item 15)",
        thud_api_starts,
        honest="thud",
    ),
    Attack(
        "house-pages",
        "300 pages playing Thud against the house (item 15)",
        house_pages,
        honest="thud",
    ),
    Attack(
        "postgres-restart",
        "PostgreSQL restarted under the arena's nodes (item 16)",
        postgres_restart,
        nodes=2,
        redis=True,
        postgres=True,
    ),
    Attack("burst", "2,000 connections, each one unterminated message of 65,000 bytes", burst),
    Attack(
        "page-flood",
        "one page sending bad requests as fast as it can, reading none",
        page_flood,
    ),
)
ATTACKS = {attack.name: attack for attack in (*ISSUE_20, *ISSUE_30)}
GROUPS = {
    "issue20": [attack.name for attack in ISSUE_20],
    "issue30": [attack.name for attack in ISSUE_30],
    "all": list(ATTACKS),
}


def raise_descriptor_limit() -> None:
    """As many file descriptors as the hard limit allows, for this process and its children
    (the servers among them: their own defaults then decide what happens)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def run_all(names: list[str], options: Options, json_path: Path | None) -> None:
    ran = []
    for name in names:
        figures = await run_attack(ATTACKS[name], options)
        ran.append(figures)
        if json_path is not None:
            with json_path.open("ab") as out:
                out.write(orjson.dumps(figures) + b"\n")
    print(f"\n{verdicts(ran)}")


def verdicts(ran: list[Figures]) -> str:
    """Each attack against issue 30's "Done when": the honest stall under 1 s (the longest wait
    for a turn and the longest time without any honest turn), no honest set-up refused, no
    honest game lost; and the honest probes' answers a user should not get, from the attack on
    (its phases before it are the probes' baseline); as a Markdown table."""
    rows = [
        "| attack | longest wait / no turn (s) | set-ups refused | games lost | "
        f"stall < {DONE_STALL_S:g} s, none refused, none lost | probe answers not good |",
        "|---|---|---|---|---|---|",
    ]
    for figures in ran:
        wait, gap = figures["longest bot wait s"], figures["longest time without a turn s"]
        refused, lost = figures["set-ups refused"], figures["games lost"]
        held = max(wait, gap) < DONE_STALL_S and not refused and not lost
        answers = [
            (phase[NOT_GOOD], sum(n for k, n in phase.items() if k not in (SLOWEST, NOT_GOOD)))
            for phases in figures["probes by phase"].values()
            for name, phase in phases.items()
            if not name.startswith("before")
        ]
        bad = (
            f"{sum(n for n, _ in answers):g} of {sum(n for _, n in answers):g}" if answers else "-"
        )
        rows.append(
            f"| {figures['attack']} | {wait:.2f} / {gap:.2f} | {refused} | {lost} | "
            f"{'yes' if held else 'NO'} | {bad} |"
        )
    return "\n".join(rows)


def servers_figure(figures: Figures, show: Callable[[Figures], str]) -> str:
    return "; ".join(f"{label}: {show(server)}" for label, server in figures["servers"].items())


SUMMARY: dict[str, Callable[[Figures], str]] = {
    "attack": lambda f: describe(f["attack figures"]),
    "honest probes": lambda f: (
        # "honest probes": a flat count, in the figures of a bench from before the phases
        "; ".join(
            filter(
                None,
                [describe(f.get("honest probes", {})), *probe_lines(f.get("probes by phase", {}))],
            )
        )
        or "-"
    ),
    "honest games finished / forfeited / lost / set-ups refused": lambda f: (
        f"{f['games finished']} / {f['games forfeited']} / {f['games lost']} / "
        f"{f['set-ups refused']}"
    ),
    "longest wait for a turn / time without any honest turn (s)": lambda f: (
        f"{f['longest bot wait s']:.2f} / {f['longest time without a turn s']:.2f}"
    ),
    "honest turns/s before / during / after": lambda f: (
        f"{f['turns/s before']:,} / {f['turns/s during']:,} / {f['turns/s after']:,}"
    ),
    "honest reply p50 / p99 (ms)": lambda f: f"{f['reply p50 ms']} / {f['reply p99 ms']}",
    "back to normal after the attack": lambda f: (
        f"{f['recovery seconds']} s" if f["back to normal"] else f"not in {f['recovery seconds']} s"
    ),
    "RSS before / peak / after (MiB)": lambda f: servers_figure(
        f, lambda s: f"{s['rss before MiB']} / {s['rss peak MiB']} / {s['rss after MiB']}"
    ),
    "CPU during the attack / the recovery (s)": lambda f: servers_figure(
        f, lambda s: f"{s['cpu attack s']} / {s['cpu recovery s']}"
    ),
    "servers that exited": lambda f: (
        servers_figure(
            {"servers": {k: v for k, v in f["servers"].items() if v["exited"]}},
            lambda s: f"{s['exited']} into the attack",
        )
        or "none"
    ),
    "tracebacks in the servers' logs": lambda f: str(sum(f["server log"].values())),
}


def compared(before: Path, after: Path) -> str:
    """Two ``--json`` files' figures side by side, attack by attack, as a Markdown table."""

    def load(path: Path) -> dict[str, Figures]:
        lines = path.read_bytes().splitlines()
        return {figures["attack"]: figures for figures in map(orjson.loads, lines)}

    old, new = load(before), load(after)
    rows = ["| attack | figure | before | after |", "|---|---|---|---|"]
    for name in ATTACKS:
        if name not in old and name not in new:
            continue
        for label, show in SUMMARY.items():
            cells = [show(side[name]) if name in side else "-" for side in (old, new)]
            cells = [cell.replace("|", "\\|") for cell in cells]
            rows.append(f"| {name} | {label} | {cells[0]} | {cells[1]} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="attacks:\n" + "\n".join(f"  {name}: {a.what}" for name, a in ATTACKS.items()),
    )
    parser.add_argument(
        "attacks",
        nargs="*",
        metavar="ATTACK",
        help=f"{', '.join(ATTACKS)}; or a group: {', '.join(GROUPS)}",
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        type=Path,
        metavar=("BEFORE", "AFTER"),
        help="print two --json files side by side (a Markdown table) and stop",
    )
    parser.add_argument("--server", type=Path, default=ROOT, help="the checkout to measure")
    parser.add_argument("--scale", type=float, default=1.0, help="of every attack's size")
    parser.add_argument("--seconds", type=float, default=30.0, help="each attack's length")
    parser.add_argument("--recovery", type=float, default=60.0, help="the recovery's cap, s")
    parser.add_argument("--before", type=float, default=5.0, help="the baseline's length, s")
    parser.add_argument("--pairs", type=int, default=6, help="honest pairs (at most 90)")
    parser.add_argument("--think-ms", type=float, default=5.0, help="each honest bot's think")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), help="the servers' event loop")
    parser.add_argument("--json", type=Path, help="also append each attack's figures here")
    parser.add_argument("--payload", choices=("string", "brackets", "strings"), default="brackets")
    parser.add_argument("--trigger", choices=("join", "fake-node"), default="join")
    parser.add_argument(
        "--balancer",
        action="store_true",
        help="every attack behind HAProxy, on three nodes (issue 30's attacks always are)",
    )
    parser.add_argument(
        "--value", choices=("json", "types"), default="json", help="bad-redis-value's values"
    )
    parser.add_argument("--nicks", choices=("each", "one"), default="each", help="seek-flood's")
    args = parser.parse_args(argv)
    if args.compare:
        print(compared(*args.compare))
        return
    unknown = sorted(set(args.attacks) - {*ATTACKS, *GROUPS})
    if not args.attacks or unknown:
        parser.error(f"name attacks among {', '.join(ATTACKS)}, or {', '.join(GROUPS)}")
    if not 1 <= args.pairs <= 90:
        parser.error("--pairs: from 1 to 90")
    named = (name for given in args.attacks for name in GROUPS.get(given, [given]))
    names = list(dict.fromkeys(named))  # in order, each once
    options = Options(
        root=args.server.resolve(),
        scale=args.scale,
        seconds=args.seconds,
        recovery=args.recovery,
        before=args.before,
        pairs=args.pairs,
        think_s=args.think_ms / 1000,
        loop=args.loop,
        payload=args.payload,
        trigger=args.trigger,
        balancer=args.balancer,
        value=args.value,
        nicks=args.nicks,
    )
    raise_descriptor_limit()
    print(f"hostile: {', '.join(names)} against {options.root}; {' '.join(sys.argv)}", flush=True)
    uvloop.run(run_all(names, options, args.json))


if __name__ == "__main__":
    main()
