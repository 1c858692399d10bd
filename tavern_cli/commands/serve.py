"""``tavern serve``: the arena, bots on TCP and the visor on HTTP, until SIGTERM or SIGINT (or
the end of a drain, SIGUSR1)."""

from __future__ import annotations

import argparse
import asyncio
import math
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from server.arena import Arena
from server.cluster import RedisRefused
from server.config import ArenaConfig, ListenError
from server.draining import Drain
from server.records import RecordsUnavailable, recording
from server.records.identities import roster_kept
from server.tcp import TcpServer
from tavern_cli.config_file import DEFAULT_HELP, RecordsNote
from tavern_cli.flags import Parser, Subcommands, setting_flag
from visor import app as visor
from visor.health import Health
from visor.metrics import Metrics

if TYPE_CHECKING:  # only an arena on Redis imports the client (see serve)
    from server.cluster.node import ClusterNode


def add(commands: Subcommands) -> Parser:
    serve = commands.add_parser("serve", help="run the arena: bots on TCP, the visor on HTTP")
    serve.add_argument(
        "--config",
        type=Path,
        help=f"settings file ({DEFAULT_HELP})",
    )
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=setting_flag("port"), help="TCP port for bots (default 9000)")
    serve.add_argument(
        "--http-port", type=setting_flag("http_port"), help="HTTP port for the visor (default 8080)"
    )
    serve.add_argument(
        "--redis",
        metavar="URL",
        help="join the arena shared by every node on this Redis (redis://HOST:PORT/DB; a Redis "
        "Cluster: any of its servers, or several comma-separated)",
    )
    serve.add_argument(
        "--loop",
        choices=("asyncio", "uvloop"),
        help="event loop (default: uvloop where it is installed, as it is with the arena on "
        "Linux and macOS; else asyncio's own)",
    )
    return serve


def run(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    run_loop = asyncio.run
    if args.loop != "asyncio":
        try:
            import uvloop  # noqa: PLC0415  # not on Windows: asyncio's own loop serves there
        except ImportError:
            if args.loop == "uvloop":
                print("tavern: --loop uvloop needs uvloop: pip install uvloop", file=sys.stderr)
                return 2
        else:
            run_loop = uvloop.run
    status = 0
    said()
    try:
        run_loop(serve(config))
    except* ListenError as refused:  # raised inside the arena's task group, so in a group
        print(f"tavern: {first_of(refused)}", file=sys.stderr)
        status = 2
    except* RecordsUnavailable as unavailable:
        print(f"tavern: {first_of(unavailable)}", file=sys.stderr)
        status = 1
    except* RedisRefused as redis_refused:
        print(f"tavern: {first_of(redis_refused)}", file=sys.stderr)
        status = 2
    return status


def first_of(group: BaseExceptionGroup[Exception]) -> BaseException:
    """The first error of a group, however deep (task groups nest)."""
    error: BaseException = group.exceptions[0]
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


async def serve(config: ArenaConfig) -> None:
    """Run until SIGTERM or SIGINT, then shut down gracefully: stop accepting, tell every bot
    and spectator, keep every game (those cut short as unfinished), and return. SIGUSR1 drains
    the node first (``server.draining``): it returns once its games are over, or after
    ``drainTimeoutMs``."""
    arena = Arena(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signal_number, stop.set)
    metrics = Metrics(arena)
    metrics.measure(
        "tavern_draining", "1 while the node drains before a restart", lambda: arena.draining
    )
    tcp_server = TcpServer(arena)
    metrics.measure(
        "tavern_connections", "Bot connections open", lambda: len(tcp_server.connections)
    )
    node = None
    if config.redis is not None:
        # Only an arena on Redis pays for importing the client.
        from server.cluster.node import ClusterNode  # noqa: PLC0415

        node = ClusterNode(arena, config)
        arena.elsewhere = node
    measure_node(metrics, arena, node)
    drain = Drain(arena, (lambda: len(node.asked.handles)) if node is not None else lambda: 0)
    loop.add_signal_handler(signal.SIGUSR1, drain.start)
    async with recording(arena.listeners, config) as records:
        arena.id_tag = records.id_tag
        arena.records_full = lambda: records.full
        health = Health(arena, records, (lambda: node.link.up) if node is not None else None)
        async with (
            roster_kept(records.roster_changes, records, arena.roster),
            arena.running(),
            tcp_server.serving() as tcp,
            visor.serving(
                arena, config.host, config.http_port, records, node, metrics, health
            ) as http_port,
        ):
            print(f"tavern: bots connect to {config.host}:{tcp.port}", flush=True)
            print(f"tavern: watch at http://{config.host}:{http_port}/", flush=True)
            if node is None:
                await until_stopped(stop, drain, config)
            else:
                addresses = {
                    "tcp": f"{config.host}:{tcp.port}",
                    "http": f"{config.host}:{http_port}",
                }
                async with node.running(addresses):
                    print(f"tavern: arena {node.arena_name()}, node {node.id}", flush=True)
                    await until_stopped(stop, drain, config)
            print("tavern: shutting down", flush=True)


def measure_node(metrics: Metrics, arena: Arena, node: ClusterNode | None) -> None:
    """The node's figures on /metrics: the seats of its games by where they are held, and on
    Redis, its link's."""

    def seats() -> dict[str, int]:
        held = sum(seat is not None for match in arena.matches.values() for seat in match.seats)
        remote = 0 if node is None else node.remote_seats()
        return {"local": held - remote, "remote": remote}

    metrics.measure_by(
        "tavern_seats",
        "The seats of this node's games, by where their bot or person is connected: here, or "
        "through another node (through Redis)",
        "where",
        seats,
    )
    if node is None:
        return
    metrics.measure(
        "tavern_redis_round_trip_seconds",
        "The last heartbeat's round trip to Redis (NaN while Redis is out of reach)",
        lambda: math.nan if node.round_trip_s is None else node.round_trip_s,
    )
    metrics.count(
        "tavern_redis_bad_values",
        "Values and frames read from Redis that the node could not use (skipped, or a key "
        "of another type deleted), by the kind of key",
        "key",
        lambda: node.complaints.counts,
    )
    metrics.count(
        "tavern_redis_errors",
        "Errors Redis answered to the node's commands (the frames it sent other nodes, its "
        "entries), by command: each one also logged, at most once a minute per command",
        "command",
        lambda: node.link.refusals.counts,
    )


async def until_stopped(stop: asyncio.Event, drain: Drain, config: ArenaConfig) -> None:
    """Until SIGTERM or SIGINT (``stop``), or the end of a drain: then says how it ended."""
    timeout_s, notice_s = config.drain_timeout_ms / 1000, config.drain_notice_ms / 1000
    async with asyncio.TaskGroup() as tasks:
        stopped = tasks.create_task(stop.wait())
        drained = tasks.create_task(drain.done(timeout_s, notice_s))
        await asyncio.wait((stopped, drained), return_when=asyncio.FIRST_COMPLETED)
        for task in (stopped, drained):
            task.cancel()
    if drained.done() and not drained.cancelled():
        left = drained.result()
        if left:
            print(f"tavern: drain timed out; {left} games or seats left", flush=True)
        else:
            print("tavern: drained: every game here is over", flush=True)
