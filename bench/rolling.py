"""A rolling restart of an arena behind HAProxy, measured: three ``tavern serve`` nodes on one
redis-server behind deploy/haproxy.cfg as shipped (its addresses and check timings given in
its environment variables), bots that connect only to HAProxy's port, and every node drained
(SIGUSR1), waited for and started again, one after another, while games play and new ones
keep starting.

Prints the games played, how many ended otherwise than normally, the longest pause any seat
saw between two of its messages, the connections refused (or closed before their first answer),
the creates a draining node turned away (each tried again on a new connection, as a bot is
told to), and the time the restart took. tests/test_deploy.py runs the same restart and checks
each game.

    .venv/bin/python -m bench.rolling [--games 30] [--think-ms 20] [--turns 60]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import signal
import sqlite3
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench.balancer import BALANCER_ADDRESS, NODES, haproxy_in_front
from bench.common import ROOT, ServerProcess, tavern_serve
from tests.services import RedisCluster, RedisServer, free_port, redis_cluster, redis_server

CHECK_INTER_MS = 100  # HAProxy's health checks, every 100 ms, one failure or success decides
WAIT_S = 40.0  # for any one step: a node's drain, start, a bot's next message (a busy machine)
CREATE_TRIES = 50  # creates a bot tries (each on a new connection) before it gives up
ENDS = (b'{"type":"win-game"', b'{"type":"loss-game"', b'{"type":"draw-game"')
DWARVES = {"team1": [1, 2, 3, 4, 5], "team2": [6, 7, 8, 9, 10]}


def tavern_move(team: str, step: int) -> bytes:
    """Every dwarf of the team one step toward the middle, then back."""
    forward, back = ("NORTH", "SOUTH") if team == "team1" else ("SOUTH", "NORTH")
    direction = forward if step % 2 == 0 else back
    actions = [{"botId": dwarf, "type": "MOVE", "direction": direction} for dwarf in DWARVES[team]]
    return orjson.dumps({"type": "player-turn", "actions": actions}) + b"\n"


@dataclasses.dataclass
class Figures:
    """What the bots saw."""

    games: dict[str, list[bytes]] = dataclasses.field(default_factory=dict)  # id -> seats' ends
    longest_pause_s: float = 0.0
    refused: int = 0  # connections refused, or closed before their first answer
    turned_away: int = 0  # creates a draining node refused
    started_during_restart: int = 0

    def abnormal(self) -> dict[str, list[bytes]]:
        """The games a seat of which did not end with a result."""
        return {
            game: ends
            for game, ends in self.games.items()
            if len(ends) != 2 or not all(end.startswith(ENDS) for end in ends)
        }


@dataclasses.dataclass
class Node:
    """One node: its fixed ports (HAProxy's config names them) and its process, when running."""

    index: int
    folder: Path
    redis: RedisServer | RedisCluster
    turns: int
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)  # more of node-N.json
    tcp_port: int = dataclasses.field(default_factory=free_port)
    http_port: int = dataclasses.field(default_factory=free_port)
    process: ServerProcess | None = None
    _stack: contextlib.AsyncExitStack | None = None

    @property
    def database(self) -> Path:
        return self.folder / f"node-{self.index}.db"

    async def start(self) -> None:
        config = {
            "port": self.tcp_port,
            "httpPort": self.http_port,
            "database": str(self.database),
            "redis": self.redis.url,
            "nodeName": f"node{self.index + 1}",  # its server's name in deploy/haproxy.cfg
            "nodeHeartbeatMs": 150,
            "nodeTtlMs": 900,
            "reconnectGraceMs": 5000,
            "maxConnectionsPerAddress": 100_000,  # every bot here connects from 127.0.0.1
            "drainNoticeMs": 3 * CHECK_INTER_MS,
            "balancers": [BALANCER_ADDRESS],
            "tavern": {"turnLimit": self.turns},
            **self.settings,
        }
        path = self.folder / f"node-{self.index}.json"
        path.write_bytes(orjson.dumps(config))
        self._stack = contextlib.AsyncExitStack()
        log = self.folder / f"node-{self.index}.log"
        self.process = await self._stack.enter_async_context(tavern_serve(path, log=log, node=True))

    async def ready(self, session: aiohttp.ClientSession) -> bool:
        url = f"http://127.0.0.1:{self.http_port}/readyz"
        with contextlib.suppress(aiohttp.ClientError):
            async with session.get(url) as response:
                return response.status == 200
        return False

    async def drain(self) -> int:
        """SIGUSR1, then its exit status once it is gone."""
        assert self.process is not None and self._stack is not None
        self.process.process.send_signal(signal.SIGUSR1)
        async with asyncio.timeout(WAIT_S):
            status = await self.process.process.wait()
        await self._stack.aclose()
        self.process = self._stack = None
        return status

    async def kill(self) -> None:
        """kill -9, and wait until it is gone."""
        assert self.process is not None
        self.process.process.send_signal(signal.SIGKILL)
        await self.process.process.wait()

    async def stop(self) -> None:
        """SIGTERM, as an operator stops a node (its records are written to the last), then
        the process is gone (killed if it took longer than ``WAIT_S``)."""
        if self._stack is not None:
            if self.process is not None and self.process.process.returncode is None:
                self.process.process.send_signal(signal.SIGTERM)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.process.process.wait(), WAIT_S)
            await self._stack.aclose()
            self.process = self._stack = None


@dataclasses.dataclass
class Balanced:
    """The nodes, and HAProxy's ports in front of them."""

    nodes: list[Node]
    bots_port: int
    pages_port: int


@contextlib.asynccontextmanager
async def haproxy(
    nodes: list[Node], folder: Path, variables: dict[str, str] | None = None
) -> AsyncIterator[tuple[int, int]]:
    """HAProxy with the shipped config, in front of ``nodes``, checking them every
    ``CHECK_INTER_MS``: its bots' and pages' ports. ``variables``: more of the config's
    environment variables (its limits)."""
    checks = {
        "TAVERN_CHECK_INTER": f"{CHECK_INTER_MS}ms",
        "TAVERN_CHECK_FALL": "1",
        "TAVERN_CHECK_RISE": "1",
        "TAVERN_CHECK_TIMEOUT": "500ms",
        **(variables or {}),
    }
    ports = [(node.tcp_port, node.http_port) for node in sorted(nodes, key=lambda n: n.index)]
    async with haproxy_in_front(ROOT, ports, folder, checks) as balancer:
        yield balancer.bots_port, balancer.pages_port


@contextlib.asynccontextmanager
async def balanced_arena(
    folder: Path,
    turns: int,
    settings: dict[str, Any] | None = None,
    variables: dict[str, str] | None = None,
    cluster: bool = False,
) -> AsyncIterator[Balanced]:
    """Three nodes on a redis-server of their own (``cluster``: on a Redis Cluster of three
    masters; ``settings``: more of each node's node-N.json), behind HAProxy (``variables``:
    more of its environment); every node ready (and seen so by HAProxy) when the block
    starts."""
    with redis_cluster() if cluster else redis_server() as redis:
        nodes = [Node(index, folder, redis, turns, settings or {}) for index in range(NODES)]
        try:
            await asyncio.gather(*(node.start() for node in nodes))
            async with haproxy(nodes, folder, variables) as (bots_port, pages_port):
                await every_node_ready(nodes)
                yield Balanced(nodes, bots_port, pages_port)
        finally:
            for node in nodes:
                await node.stop()


async def every_node_ready(nodes: list[Node]) -> None:
    """Each node answers /readyz with 200, and HAProxy has it in service: its log says the
    node is UP in each backend as often as it said it was DOWN (a server starts UP)."""
    async with aiohttp.ClientSession() as session, asyncio.timeout(WAIT_S):
        for node in nodes:
            while not (await node.ready(session) and in_service(node)):  # noqa: ASYNC110
                await asyncio.sleep(CHECK_INTER_MS / 1000 / 4)  # another process's state


def in_service(node: Node) -> bool:
    """HAProxy's log says the node is in service in both backends."""
    log = (node.folder / "haproxy.log").read_text()
    name = f"node{node.index + 1}"
    return all(
        log.count(f"{backend}/{name} is UP") >= log.count(f"{backend}/{name} is DOWN")
        for backend in ("nodes_tcp", "nodes_http")
    )


class Bot:
    """One bot's connection through HAProxy."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, port: int) -> Bot:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
        return cls(reader, writer)

    async def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send, and the first answer (ConnectionError if the connection closes first)."""
        self.writer.write(orjson.dumps(message) + b"\n")
        line = await asyncio.wait_for(self.reader.readline(), WAIT_S)
        if not line:
            raise ConnectionError("closed before answering")
        answer: dict[str, Any] = orjson.loads(line)
        return answer

    def close(self) -> None:
        self.writer.close()


async def connected(
    port: int, figures: Figures, message: dict[str, Any], expected: str
) -> tuple[Bot, Any]:
    """A bot whose ``message`` was answered as ``expected``, and its answer: a refused
    connection, or one closed or refused before that answer, is counted and made again (as
    often as ``CREATE_TRIES``); a create a draining node turns away, too."""
    for _ in range(CREATE_TRIES):
        try:
            bot = await Bot.connect(port)
        except OSError:
            figures.refused += 1
            continue
        try:
            answer = await bot.ask(message)
        except (ConnectionError, OSError):
            figures.refused += 1
            bot.close()
            continue
        if answer["type"] != expected:
            if answer.get("message") == "Server draining":
                figures.turned_away += 1
                # As a bot would, a moment before asking again: the balancer takes the
                # draining node out within a check or two, on a busy machine too.
                await asyncio.sleep(CHECK_INTER_MS / 1000)
            else:
                figures.refused += 1
            bot.close()
            continue
        return bot, answer
    raise RuntimeError(f"no node answered {message} in {CREATE_TRIES} connections")


async def play_seat(bot: Bot, team: str, think_s: float, figures: Figures) -> bytes:
    """Answer every turn after ``think_s`` until the game ends: its last line. The pauses are
    counted from the game's first turn (before it, the seat waits for its opponent)."""
    step = 0
    last: float | None = None  # when the seat's last message came, from the first turn on
    try:
        while True:
            line = await asyncio.wait_for(bot.reader.readline(), WAIT_S)
            now = time.perf_counter()
            if last is not None:
                figures.longest_pause_s = max(figures.longest_pause_s, now - last)
            last = now
            if not line or not line.startswith(b'{"type":"turn"'):
                if line.startswith(b'{"type":"error","message":"Turn timeout"'):
                    continue
                return line
            await asyncio.sleep(think_s)
            bot.writer.write(tavern_move(team, step))
            step += 1
    except ConnectionError:
        return b""  # cut: the game did not end normally
    finally:
        bot.close()


async def one_game(port: int, seed: int, think_s: float, figures: Figures) -> None:
    """Create a game through HAProxy, join it with two bots through HAProxy (wherever each
    lands), and play it to its end."""
    creator, ready = await connected(
        port, figures, {"type": "create-simulation", "game": "tavern", "seed": seed}, "ready"
    )
    creator.close()
    simulation_id = ready["simulationId"]
    ends = figures.games[simulation_id] = []
    join = {"type": "join-simulation", "game": "tavern", "simulationId": simulation_id}
    seats = [
        await connected(port, figures, {**join, "nick": f"b{n}"}, "game-info") for n in range(2)
    ]
    games = [play_seat(bot, info["team"], think_s, figures) for bot, info in seats]
    ends.extend(await asyncio.gather(*games))


async def rolling_restart(
    balanced: Balanced, games: int, think_s: float
) -> tuple[Figures, float, list[int]]:
    """``games`` games playing, then every node drained and started again in turn while new
    games keep starting: the figures, the restart's seconds, each drained node's exit status."""
    figures = Figures()
    port = balanced.bots_port
    playing = [asyncio.create_task(one_game(port, seed, think_s, figures)) for seed in range(games)]
    await asyncio.sleep(think_s * 5)  # the games are under way
    restarting = asyncio.Event()
    started = time.perf_counter()

    async def keep_starting() -> None:
        seed = games
        while not restarting.is_set():
            playing.append(asyncio.create_task(one_game(port, seed, think_s, figures)))
            figures.started_during_restart += 1
            seed += 1
            await asyncio.sleep(think_s * 10)

    statuses = []
    starter = asyncio.create_task(keep_starting())
    try:
        for node in balanced.nodes:
            statuses.append(await node.drain())
            await node.start()
            await every_node_ready([node])
    finally:
        restarting.set()
        await starter
    seconds = time.perf_counter() - started
    await asyncio.gather(*playing)
    return figures, seconds, statuses


def recorded(nodes: list[Node]) -> list[tuple[str, str]]:
    """Every game in the nodes' records, with its status (a game twice is there twice)."""
    rows: list[tuple[str, str]] = []
    for node in nodes:
        with sqlite3.connect(node.database) as db:
            rows += db.execute("SELECT id, status FROM games").fetchall()
    return rows


async def run(games: int, think_s: float, turns: int) -> None:
    with tempfile.TemporaryDirectory(prefix="tavern-rolling-") as scratch:
        async with balanced_arena(Path(scratch), turns) as balanced:
            figures, seconds, statuses = await rolling_restart(balanced, games, think_s)
        records = recorded(balanced.nodes)
    finished = sum(status == "finished" for _, status in records)
    print(f"rolling restart of {NODES} nodes behind HAProxy: {seconds:.1f} s, exits {statuses}")
    print(
        f"games: {len(figures.games)} ({figures.started_during_restart} started during the "
        f"restart), ended otherwise than normally: {len(figures.abnormal())}; "
        f"in the records: {len(records)} rows, {finished} finished"
    )
    print(f"longest pause a seat saw between two messages: {figures.longest_pause_s * 1000:.0f} ms")
    print(
        f"connections refused: {figures.refused}; creates a draining node turned away "
        f"(tried again): {figures.turned_away}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=30, help="games playing as it starts")
    parser.add_argument("--think-ms", type=float, default=20.0, help="each bot's time per move")
    parser.add_argument("--turns", type=int, default=60, help="each game's turn limit")
    args = parser.parse_args()
    asyncio.run(run(args.games, args.think_ms / 1000, args.turns))


if __name__ == "__main__":
    main()
