"""What the benchmarks share: a server in its own process, its CPU and memory, percentiles."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# Bind a client socket's address without its port: the port is picked at connect time, unique
# per destination, so thousands of connections from one address never run out of ports.
IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)


@dataclass
class ServerProcess:
    """``tavern serve`` running in a child process, on the ports it printed."""

    process: asyncio.subprocess.Process
    tcp_port: int
    http_port: int
    node_id: str | None = None  # on Redis: the node's id in its arena

    def cpu_seconds(self) -> float:
        """User plus system CPU time the server has used so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def rss_bytes(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")


def with_python_path(root: Path) -> dict[str, str]:
    """This environment with ``root`` first on the module path: its code, not this one's."""
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def tavern_module(root: Path) -> str:
    """The module that runs as the ``tavern`` command in the checkout at ``root``: ``tavern_cli``,
    or ``server`` in a checkout from before the command moved above the server and the visor
    (issue 21), which has no ``tavern_cli``."""
    return "tavern_cli" if (root / "tavern_cli" / "__main__.py").is_file() else "server"


@contextlib.asynccontextmanager
async def tavern_serve(
    config: Path, *options: str, log: Path | None = None, node: bool = False, root: Path = ROOT
) -> AsyncIterator[ServerProcess]:
    """``python -m tavern_cli serve --config CONFIG [OPTIONS]`` in a child process, on the ports it
    prints (and, with ``node``, for an arena on Redis, its node id); killed at the end if it is
    still running (the tests use it too). ``log``: where its log goes (default: nowhere).
    ``root``: the checkout whose code runs it (with this interpreter), so that a benchmark can
    measure another commit's server (``tavern_module``: an older one, as it ran)."""
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", tavern_module(root), "serve", "--config", str(config), *options),
        cwd=root,
        env=with_python_path(root),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL if log is None else log.open("ab"),
    )
    try:
        assert process.stdout is not None
        ports = []
        for _ in range(2):  # "bots connect to HOST:PORT", then "watch at http://HOST:PORT/"
            line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
            found = re.search(r":(\d+)/?$", line.strip())
            if not found:
                raise RuntimeError(f"unexpected server output: {line!r}")
            ports.append(int(found.group(1)))
        node_id = None
        if node:  # "arena redis://..., node ID"
            line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
            node_id = line.strip().rsplit(" ", 1)[-1]
        yield ServerProcess(process, ports[0], ports[1], node_id)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


@contextlib.asynccontextmanager
async def arena_process(
    loop: str, settings: Mapping[str, object] | None = None, root: Path = ROOT
) -> AsyncIterator[ServerProcess]:
    """``tavern serve`` on free loopback ports, with generous limits, records in a scratch dir,
    and ``settings``. ``root``: the checkout whose server runs (what settings it does not know
    are left out)."""
    with tempfile.TemporaryDirectory(prefix="tavern-bench-") as scratch:
        config = {
            "port": 0,
            "httpPort": 0,
            "database": str(Path(scratch) / "arena.db"),
            "maxConnectionsPerAddress": 100_000,
            "maxConnections": 100_000,
            "reconnectGraceMs": 0,
            **(settings or {}),
        }
        path = Path(scratch) / "config.json"
        path.write_bytes(orjson.dumps(known_settings(root, config)))
        async with tavern_serve(path, "--loop", loop, root=root) as server:
            yield server


@functools.cache
def config_keys(root: Path) -> frozenset[str] | None:
    """The ``config.json`` keys the server at ``root`` knows (it refuses any other), or None if
    it does not say."""
    keys = "import orjson, server.config as c; print(orjson.dumps(sorted(c.KNOWN_KEYS)).decode())"
    found = subprocess.run(
        [sys.executable, "-c", keys],
        cwd=root,
        env=with_python_path(root),
        capture_output=True,
        check=False,
        timeout=60,
    )
    if found.returncode != 0:
        return None
    return frozenset(orjson.loads(found.stdout))


def known_settings(root: Path, settings: Mapping[str, object]) -> dict[str, object]:
    """The settings the server at ``root`` knows: an older server runs without the newer ones."""
    known = config_keys(root)
    return {key: value for key, value in settings.items() if known is None or key in known}


async def connect_from(
    source: str, port: int, *, receive_buffer: int | None = None, timeout_s: float = 10.0
) -> socket.socket:
    """A TCP socket connected from the loopback address ``source`` to ``port`` on 127.0.0.1
    (``receive_buffer``: a small one makes a peer that reads slowly)."""
    sock = socket.socket()
    try:
        sock.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
        if receive_buffer is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.bind((source, 0))
        sock.setblocking(False)
        async with asyncio.timeout(timeout_s):
            await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    except BaseException:
        sock.close()
        raise
    return sock


def sources(prefix: str, count: int) -> list[str]:
    """``count`` loopback addresses: ``prefix``.1 and up (at most 250 of them)."""
    return [f"{prefix}.{index}" for index in range(1, min(count, 250) + 1)]


def addresses_for(count: int, per_address: int) -> list[str]:
    """Attackers' addresses for ``count`` connections, ``per_address`` from each: where the
    issue names no number of addresses, an attacker uses as many as it takes to stay within
    any per-address cap, so that only the arena's limits on the whole can stop it."""
    return sources("127.0.1", math.ceil(count / per_address))


def cluster_cpu_seconds(postmaster: int) -> float:
    """CPU time of a PostgreSQL cluster: its postmaster with the backends it has reaped
    (``cutime``/``cstime``), and the backends still running."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        pid, parent = int(stat.parent.name), int(fields[1])
        if pid == postmaster:
            total += sum(int(field) for field in fields[11:15])
        elif parent == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def percentile(values: Sequence[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def describe_ms(values: Sequence[float]) -> str:
    return (
        f"p50 {percentile(values, 0.5) * 1000:.1f} ms, "
        f"p99 {percentile(values, 0.99) * 1000:.1f} ms, "
        f"mean {statistics.fmean(values) * 1000:.1f} ms"
        if values
        else "no samples"
    )


def use_loop(name: str) -> None:
    """Make ``asyncio.run`` use uvloop when asked (the bench clients, like the server)."""
    if name == "uvloop":
        import uvloop  # noqa: PLC0415  # optional

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
