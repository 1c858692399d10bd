"""The ladder under load: connected registered bots seeking rated Thud games through three
``tavern serve`` nodes on one redis-server, against the same bots playing without the ladder.

    python bench/ladder.py [--bots 2000] [--seconds 40] [--think-ms 500] [--turn-limit 20]
                           [--clients 2] [--loop asyncio|uvloop] [--scrypt-n 256] [--light 0]

The set-up, started fresh for each of the two runs: a redis-server and three nodes on loopback
ephemeral ports (``bench/cluster.py``'s nodes, ``tests/services.py``'s Redis), their records in
one PostgreSQL database the bench starts (``tests/services.py``): the nodes of one ladder must
share their records, since every node rates the games it plays and reads every bot's rating.
The bots are registered in that database before the nodes start, by the code ``tavern bots
add`` runs (``server.records.identities.add_bot`` of a ``server.identity.hash_key``), each with
its own key, but with scrypt's cost lowered to ``--scrypt-n`` (the hash carries its parameters,
so the nodes verify with the same): at the arena's own N (16,384) a key costs some 55 ms to
hash and again to verify on each node a bot first seeks through, which for 2,000 bots is two
minutes of CPU before the first game; the bench prints that cost, measured, beside its figures.

Bot ``i`` connects to node ``i mod 3`` (a connection per game: it hangs up after the game's
result; the first is open before the run starts) from one of ``--clients``
client processes, and plays bench/load.py's Thud bot: a random legal move of each turn, after
thinking between T/2 and 3T/2 ms. Games end after ``--turn-limit`` plies (a Thud section
setting), so that each bot plays many games in a run. The two runs:

* ``without the ladder``: the bots in pairs (a seeded shuffle, so that about two pairs in three
  have their bots on different nodes, as the ladder's pairings do); the first of a pair creates
  each game on its node and both join it by id, as bench/cluster.py's pairs do, game after game;
* ``with the ladder``: every bot sends a rated ``seek`` and, when its game ends, seeks again.

With ``--light N``, N light nodes join the arena besides the three (``bench/redis_rest.py``'s:
an arena each, in the bench's process, running only the control plane: heartbeat, directory,
lobby), so that the pairings are measured in an arena of ``N + 3`` nodes; they seek nothing, and
their CPU is the bench's.

Printed for each run: the pairing delay p50/p99/max over every pairing (a bot sending its seek,
or the first of a pair its ``create-simulation``, to the bot receiving its ``game-info``), the
pairings and turns per second, a bot's turn round trip (its move sent to its next turn: the
opponent's thinking and two passes through the arena), and the CPU per turn of every process
(each node, redis-server, PostgreSQL with the backends that ended): those CPU seconds over the
turns the bots received. The ratio of the two runs' totals is what the ladder costs a turn.

The CPU a rating update costs, measured two ways after the ladder run:

* directly: up to 200 of the run's rated games are rated again, each by the records' own
  ``server.records.ladder.rate`` (the function the nodes' records writer calls in the
  transaction that records a game's end) on a connection to the same database, inside one
  transaction that is rolled back (their history rows deleted first, so that ``rate`` does
  not find them rated and skip them). Printed: this process's CPU per call (what a node's
  records thread spends: openskill's update and the statements), the wall time per call, and
  PostgreSQL's CPU per call; and openskill's update alone;
* as a whole: PostgreSQL's CPU per game finished in each run (rated games against unrated ones,
  the same bots, the same load), which includes the records of the game itself.

2,000 bots, three nodes, Redis, PostgreSQL and the clients share this machine's two cores: the
runs are CPU-bound there, and the figures are honest only as a comparison of the two runs in
the same set-up. The bench prints the load average before each run and the client processes'
CPU, so that a saturated machine shows.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.synchronize import Barrier
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import server.identity
from bench.cluster import arena_nodes, process_cpu_seconds
from bench.common import (
    addresses_for,
    cluster_cpu_seconds,
    connect_from,
    percentile,
    use_loop,
)
from bench.load import ENDS, GAME_INFO, TURN, random_thud_move
from bench.redis_rest import light_nodes
from server.identity import RegisteredBot, hash_key, new_key
from server.league import NEW_RATING, Rating, rate_game
from server.records import Records
from server.records.identities import add_bot
from server.records.ladder import rate
from tests.services import PostgresServer, postgres_server, redis_server

NODES = 3
BOTS_PER_ADDRESS = 8
ERROR = b'{"type":"error"'
RATED_SAMPLE = 200  # rated games rated again to time ``rate``
SEEK_RETRY_S = 0.5  # a refused seek (say, a key not yet in a node's roster) is sent again after


@dataclass(frozen=True)
class Bot:
    name: str
    key: str
    port: int  # its node's TCP port
    source: str  # the loopback address it connects from


@dataclass
class ClientFigures:
    """What one client process's bots saw."""

    delays: list[float] = field(default_factory=list)  # seek (or create) to game-info
    round_trips: list[float] = field(default_factory=list)  # own move to own next turn
    turns: int = 0  # turn messages received
    errors: Counter[str] = field(default_factory=Counter)
    cpu_s: float = 0.0  # the client process's CPU over the run

    def merge(self, other: ClientFigures) -> None:
        self.delays += other.delays
        self.round_trips += other.round_trips
        self.turns += other.turns
        self.errors.update(other.errors)
        self.cpu_s += other.cpu_s


class Player:
    """One bot: a connection per game (it hangs up after the game's result), playing Thud
    turns until its game ends or the run's deadline."""

    def __init__(
        self, bot: Bot, figures: ClientFigures, think_s: float, chance: random.Random
    ) -> None:
        self.bot, self.figures, self.think_s, self.chance = bot, figures, think_s, chance
        self.deadline = 0.0
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def connect(self) -> None:
        """A connection for the next game, unless one is open already."""
        if self.writer is None:
            sock = await connect_from(self.bot.source, self.bot.port)
            self.reader, self.writer = await asyncio.open_connection(sock=sock, limit=1 << 22)

    def hang_up(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    def send(self, message: dict[str, object]) -> None:
        assert self.writer is not None
        self.writer.write(orjson.dumps(message) + b"\n")

    async def line(self) -> bytes:
        """The next line, or b"" at the deadline or when the connection is gone."""
        assert self.reader is not None
        try:
            async with asyncio.timeout(max(0.0, self.deadline - time.monotonic())):
                return await self.reader.readline()
        except TimeoutError:
            return b""
        except ConnectionError:
            self.figures.errors["connection lost"] += 1  # printed: nothing should reset
            return b""

    def complain(self, line: bytes) -> None:
        """Count an error line, unless the run is over: then opponents hang up."""
        if time.monotonic() < self.deadline:
            self.figures.errors[str(orjson.loads(line).get("message"))] += 1

    async def seated(self, asked_at: float) -> bool:
        """Wait for the game-info of the seat asked for at ``asked_at``; False if refused or
        at the deadline."""
        while line := await self.line():
            if line.startswith(GAME_INFO):
                self.figures.delays.append(time.monotonic() - asked_at)
                return True
            if line.startswith(ERROR):
                self.complain(line)
                return False
        return False

    async def play(self) -> bool:
        """The game this bot sits in, to its end (True) or to the deadline (False); the
        connection is closed after it."""
        assert self.writer is not None
        sent_at = 0.0
        try:
            while line := await self.line():
                if line.startswith(TURN):
                    now = time.monotonic()
                    if now >= self.deadline:
                        return False
                    if sent_at:
                        self.figures.round_trips.append(now - sent_at)
                    self.figures.turns += 1
                    await asyncio.sleep(self.think_s * self.chance.uniform(0.5, 1.5))
                    self.writer.write(random_thud_move(line, self.chance))
                    sent_at = time.monotonic()
                elif any(line.startswith(end) for end in ENDS):
                    return True
                elif line.startswith(ERROR):
                    self.complain(line)
            return False
        finally:
            self.hang_up()

    async def seek_and_play(self) -> None:
        """The ladder: seek a rated game, play it, connect and seek again."""
        while time.monotonic() < self.deadline:
            await self.connect()
            self.send(
                {
                    "type": "seek",
                    "game": "thud",
                    "bot": self.bot.name,
                    "key": self.bot.key,
                    "rated": True,
                }
            )
            if not await self.seated(time.monotonic()):
                self.hang_up()
                await asyncio.sleep(min(SEEK_RETRY_S, max(0.0, self.deadline - time.monotonic())))
                continue
            if not await self.play():
                return

    def join(self, simulation_id: str) -> None:
        self.send(
            {
                "type": "join-simulation",
                "game": "thud",
                "simulationId": simulation_id,
                "bot": self.bot.name,
                "key": self.bot.key,
            }
        )


async def play_pair(first: Player, second: Player) -> None:
    """No ladder: the first bot creates each game on its node, both join it by id."""
    while time.monotonic() < first.deadline:
        await asyncio.gather(first.connect(), second.connect())
        asked_at = time.monotonic()
        first.send({"type": "create-simulation", "game": "thud"})
        ready = await first.line()
        if not ready:
            break
        simulation_id = orjson.loads(ready)["simulationId"]
        first.join(simulation_id)
        second.join(simulation_id)
        seated = await asyncio.gather(first.seated(asked_at), second.seated(asked_at))
        if not all(seated):
            break
        ended = await asyncio.gather(first.play(), second.play())
        if not all(ended):
            break
    first.hang_up()
    second.hang_up()


async def client(
    mode: str, bots: Sequence[Bot], seconds: float, think_s: float, seed: int, start: Barrier
) -> ClientFigures:
    """One client process's bots: connected, then all started together (``start``)."""
    figures = ClientFigures()
    chance = random.Random(seed)
    players = [Player(bot, figures, think_s, random.Random(chance.random())) for bot in bots]
    for player in players:
        await player.connect()
    await asyncio.to_thread(start.wait)
    cpu_before = time.process_time()
    deadline = time.monotonic() + seconds
    for player in players:
        player.deadline = deadline
    if mode == "ladder":
        runs = [player.seek_and_play() for player in players]
    else:
        runs = [play_pair(players[i], players[i + 1]) for i in range(0, len(players) - 1, 2)]
    await asyncio.gather(*runs)
    for player in players:
        player.hang_up()
    figures.cpu_s = time.process_time() - cpu_before
    return figures


def client_process(
    mode: str,
    bots: list[Bot],
    seconds: float,
    think_s: float,
    seed: int,
    loop: str,
    start: Barrier,
    results: multiprocessing.Queue[ClientFigures],
) -> None:
    use_loop(loop)
    results.put(asyncio.run(client(mode, bots, seconds, think_s, seed, start)))


@dataclass
class Run:
    name: str
    figures: ClientFigures
    seconds: float
    cpu: dict[str, float]  # process -> CPU seconds over the run
    load_average: float
    pairs_across: float | None = None  # the share of pairs whose bots are on two nodes


def register(url: str, count: int) -> list[tuple[str, str]]:
    """``count`` bots in the records, as ``tavern bots add`` keeps them: names and keys."""
    records = Records(url)
    records.open_to_read()
    db = records.backend.connect()
    registered = []
    try:
        db.execute("BEGIN")
        for index in range(count):
            name, key = f"bench{index:04d}", new_key()
            assert add_bot(db, RegisteredBot(name, hash_key(key)))
            registered.append((name, key))
        db.execute("COMMIT")
    finally:
        db.close()
    return registered


async def measure(
    mode: str,
    url: str,
    cluster: PostgresServer,
    count: int,
    seconds: float,
    think_s: float,
    turn_limit: int,
    clients: int,
    loop: str,
    light: int = 0,
) -> Run:
    registered = register(url, count)
    settings = {"database": url, "thud": {"turnLimit": turn_limit}}
    with redis_server() as redis:
        async with arena_nodes(NODES, redis, loop, settings) as nodes, light_nodes(redis, light):
            await asyncio.sleep(1.0)  # the nodes settle (their rosters are read as they start)
            # A few bots an address, as from machines of their own: each address's checks of
            # keys not verified yet wait their turn on a node (server.identity, at most 16).
            sources = addresses_for(count, BOTS_PER_ADDRESS)
            bots = [
                Bot(name, key, nodes[index % NODES].tcp_port, sources[index % len(sources)])
                for index, (name, key) in enumerate(registered)
            ]
            pairs_across = None
            if mode == "ladder":
                shares = [bots[index::clients] for index in range(clients)]
            else:
                order = list(range(count - count % 2))
                random.Random(1).shuffle(order)
                pairs = [(order[i], order[i + 1]) for i in range(0, len(order), 2)]
                pairs_across = statistics.fmean(a % NODES != b % NODES for a, b in pairs)
                shares = [
                    [bots[index] for pair in pairs[number::clients] for index in pair]
                    for number in range(clients)
                ]
            context = multiprocessing.get_context("spawn")
            start = context.Barrier(clients + 1)
            results: multiprocessing.Queue[ClientFigures] = context.Queue()
            processes = [
                context.Process(
                    target=client_process,
                    args=(mode, share, seconds, think_s, number, loop, start, results),
                )
                for number, share in enumerate(shares)
            ]
            for process in processes:
                process.start()
            pids = {f"node {index}": node.process.pid for index, node in enumerate(nodes)}
            assert redis.process is not None and cluster.process is not None
            pids["redis-server"] = redis.process.pid
            load_average = os.getloadavg()[0]
            await asyncio.to_thread(start.wait)
            before = {label: process_cpu_seconds(pid) for label, pid in pids.items()}
            postgres_before = cluster_cpu_seconds(cluster.process.pid)
            started = time.monotonic()
            figures = ClientFigures()
            for _ in processes:
                # a client that failed never answers: its traceback is on stderr
                figures.merge(await asyncio.to_thread(results.get, True, seconds + 60))
            elapsed = time.monotonic() - started
            await asyncio.sleep(0.5)  # the last games closed and recorded: counted too
            cpu = {label: process_cpu_seconds(pid) - before[label] for label, pid in pids.items()}
            cpu["PostgreSQL"] = cluster_cpu_seconds(cluster.process.pid) - postgres_before
            for process in processes:
                process.join()
    name = "with the ladder" if mode == "ladder" else "without the ladder"
    return Run(name, figures, elapsed, cpu, load_average, pairs_across)


@dataclass
class RatingCost:
    games: int
    cpu_s: float  # this process's CPU per ``rate`` call
    wall_s: float  # per call
    database_s: float  # PostgreSQL's CPU per call
    openskill_s: float  # openskill's update alone


def rating_cost(url: str, cluster: PostgresServer) -> RatingCost:
    """The run's rated games rated again by ``rate``, in a transaction rolled back."""
    assert cluster.process is not None
    db = Records(url).backend.connect()
    try:
        rows = db.execute(
            "SELECT h.game_id, h.bot, h.opponent, h.result FROM rating_history h "
            "WHERE h.seat = 0 ORDER BY h.rated_at LIMIT ?",
            (RATED_SAMPLE,),
        ).fetchall()
        db.execute("BEGIN")
        for row in rows:
            db.execute("DELETE FROM rating_history WHERE game_id = ?", (row[0],))
        database_before = cluster_cpu_seconds(cluster.process.pid)
        cpu_before, wall_before = time.thread_time(), time.perf_counter()
        for game_id, bot, opponent, result in rows:
            winner = None if result == "draw" else 0 if result == "win" else 1
            assert rate(db, game_id, "thud", (bot, opponent), winner)
        cpu, wall = time.thread_time() - cpu_before, time.perf_counter() - wall_before
        database = cluster_cpu_seconds(cluster.process.pid) - database_before
        db.execute("ROLLBACK")
    finally:
        db.close()
    players = (Rating("a", *NEW_RATING), Rating("b", *NEW_RATING))
    updates = 1000
    openskill_before = time.thread_time()
    for number in range(updates):
        players = rate_game(players, number % 2)
    openskill = (time.thread_time() - openskill_before) / updates
    games = max(len(rows), 1)
    return RatingCost(len(rows), cpu / games, wall / games, database / games, openskill)


def real_key_cost() -> float:
    """CPU seconds to verify one key hashed at the arena's own scrypt cost."""
    key = new_key()
    stored = hash_key(key)
    before = time.process_time()
    assert server.identity.key_matches(key, stored)
    return time.process_time() - before


def report(run: Run, baseline: Run | None) -> None:
    figures = run.figures
    total = sum(run.cpu.values())
    turns = max(figures.turns, 1)
    processes = ", ".join(f"{label} {cpu / turns * 1e6:.0f}" for label, cpu in run.cpu.items())
    delays = figures.delays
    games = len(delays) // 2  # each game seats two bots
    print(
        f"{run.name} (load average {run.load_average:.1f} at the start):\n"
        f"  pairing delay p50 {percentile(delays, 0.5) * 1000:.1f} ms, "
        f"p99 {percentile(delays, 0.99) * 1000:.1f} ms, "
        f"max {max(delays, default=float('nan')) * 1000:.1f} ms over {len(delays):,} seats; "
        f"{games / run.seconds:,.1f} pairings/s ({games:,} games)\n"
        f"  {figures.turns / run.seconds:,.0f} turns/s; turn round trip "
        f"p50 {percentile(figures.round_trips, 0.5) * 1000:.0f} ms, "
        f"p99 {percentile(figures.round_trips, 0.99) * 1000:.0f} ms; clients' CPU "
        f"{figures.cpu_s / run.seconds:.0%} of a core",
        flush=True,
    )
    compared = ""
    if baseline is not None:
        ratio = (total / turns) / (sum(baseline.cpu.values()) / max(baseline.figures.turns, 1))
        compared = f", {ratio:.2f}x without the ladder"
    print(f"  server CPU per turn {total / turns * 1e6:.0f} us ({processes}){compared}")
    print(f"  PostgreSQL CPU per game {run.cpu['PostgreSQL'] / max(games, 1) * 1e3:.2f} ms")
    if run.pairs_across is not None:
        print(f"  pairs with their bots on two nodes: {run.pairs_across:.0%}")
    if figures.errors:
        print(f"  errors: {dict(figures.errors)}")


async def run_both(cluster: PostgresServer, args: argparse.Namespace) -> RatingCost:
    """Without the ladder, then with it (each on its own database), then a rating's cost."""
    baseline: Run | None = None
    url = ""
    for mode in ("join", "ladder"):
        url = cluster.create_database(f"ladder_bench_{mode}")
        run = await measure(
            mode,
            url,
            cluster,
            args.bots,
            args.seconds,
            args.think_ms / 1000,
            args.turn_limit,
            args.clients,
            args.loop,
            args.light,
        )
        report(run, baseline)
        baseline = baseline or run
    return rating_cost(url, cluster)  # the ladder run's database


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bots", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=40.0, help="each run's length")
    parser.add_argument("--think-ms", type=float, default=500.0, help="each bot's time per move")
    parser.add_argument("--turn-limit", type=int, default=20, help="plies in a Thud game")
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="uvloop")
    parser.add_argument("--scrypt-n", type=int, default=256, help="the bots' keys' scrypt N")
    parser.add_argument(
        "--light",
        type=int,
        default=0,
        help="light nodes more in the arena, in this process (bench/redis_rest.py's): the "
        "pairings measured among fifty nodes",
    )
    args = parser.parse_args()
    real_key_s = real_key_cost()
    server.identity.SCRYPT_N = args.scrypt_n
    print(
        f"ladder: {args.bots:,} bots on {NODES} nodes, {args.clients} client processes, "
        f"{args.seconds:g} s per run, bots think {args.think_ms:g} ms, Thud games of "
        f"{args.turn_limit} plies, {args.loop} loop, records in PostgreSQL; keys hashed with "
        f"scrypt N={args.scrypt_n} (at the arena's N={1 << 14} a key costs "
        f"{real_key_s * 1000:.0f} ms of CPU to verify, {args.bots * real_key_s:.0f} s for "
        f"{args.bots:,} bots)",
        flush=True,
    )
    with contextlib.ExitStack() as stack:
        cluster = stack.enter_context(postgres_server())
        cost = asyncio.run(run_both(cluster, args))
    print(
        f"a rating update ({cost.games} rated games rated again by the records' rate()): "
        f"{cost.cpu_s * 1e6:.0f} us of the caller's CPU, {cost.database_s * 1e6:.0f} us of "
        f"PostgreSQL's, {cost.wall_s * 1000:.2f} ms wall each; openskill's update alone "
        f"{cost.openskill_s * 1e6:.0f} us"
    )


if __name__ == "__main__":
    main()
