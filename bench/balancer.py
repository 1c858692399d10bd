"""HAProxy in front of a bench's nodes, run from a checkout's shipped deploy/haproxy.cfg as an
operator runs it: only the addresses are given (the config's environment variables), every
timing and limit is the file's own, so that measuring a checkout measures its balancer too.

Bots and pages connect to HAProxy's two ports only; HAProxy connects to the nodes from
``BALANCER_ADDRESS``, which the nodes are told is a balancer (``balancers`` in config.json,
where the checkout knows the key: its PROXY headers then carry each client's own address).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.services import free_port

NODES = 3  # the shipped haproxy.cfg's servers
# Where HAProxy's connections to the nodes come from (the shipped config's
# TAVERN_BALANCER_SOURCE): not 127.0.0.1, from which the nodes' own requests and an operator's
# come too, and which therefore cannot be a balancer whose every connection has a header.
BALANCER_ADDRESS = "127.0.0.2"
START_S = 20.0
HAPROXY_CONFIG = Path("deploy") / "haproxy.cfg"  # in a checkout


@dataclass(frozen=True)
class Balancer:
    """A running HAProxy: its bots' (TCP) and pages' (HTTP) ports."""

    bots_port: int
    pages_port: int


async def listening(process: asyncio.subprocess.Process, port: int, log: Path) -> None:
    """Once HAProxy accepts connections on ``port``; RuntimeError, with the end of its log,
    if it exits first or takes longer than ``START_S`` (a config it cannot read, say)."""
    try:
        async with asyncio.timeout(START_S):
            while process.returncode is None:
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", port)
                except OSError:
                    await asyncio.sleep(0.05)
                    continue
                writer.close()
                return
    except TimeoutError:
        pass
    said = (await asyncio.to_thread(log.read_text, errors="replace"))[-2000:]
    raise RuntimeError(f"HAProxy did not listen on port {port}; its log ends:\n{said}")


@contextlib.asynccontextmanager
async def haproxy_in_front(
    root: Path,
    nodes: Sequence[tuple[int, int]],
    folder: Path,
    variables: Mapping[str, str] | None = None,
) -> AsyncIterator[Balancer]:
    """HAProxy with ``root``'s deploy/haproxy.cfg in front of ``nodes`` (each its TCP and HTTP
    port on 127.0.0.1), on two free ports; stopped at the end. ``variables``: more of the
    config's environment variables (its check timings, its limits)."""
    executable = shutil.which("haproxy", path="/usr/sbin:/usr/bin")
    if executable is None:
        raise RuntimeError("haproxy is not installed (make test installs it)")
    if len(nodes) != NODES:
        raise ValueError(f"the shipped haproxy.cfg names {NODES} nodes, not {len(nodes)}")
    bots_port, pages_port = free_port(), free_port()
    environment = {
        "PATH": "/usr/sbin:/usr/bin:/bin",
        "TAVERN_BOTS_BIND": f"127.0.0.1:{bots_port}",
        "TAVERN_PAGES_BIND": f"127.0.0.1:{pages_port}",
        "TAVERN_BALANCER_SOURCE": BALANCER_ADDRESS,
        **(variables or {}),
    }
    for number, (tcp_port, http_port) in enumerate(nodes, start=1):
        environment[f"TAVERN_NODE{number}_HOST"] = "127.0.0.1"
        environment[f"TAVERN_NODE{number}_PORT"] = str(tcp_port)
        environment[f"TAVERN_NODE{number}_HTTP_PORT"] = str(http_port)
    log = folder / "haproxy.log"
    with log.open("ab") as output:
        process = await asyncio.create_subprocess_exec(
            *(executable, "-db", "-f", str(root / HAPROXY_CONFIG)),
            env=environment,
            stdout=output,
            stderr=output,
        )
    try:
        await asyncio.gather(*(listening(process, port, log) for port in (bots_port, pages_port)))
        yield Balancer(bots_port, pages_port)
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()
