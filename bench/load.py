"""The arena under load: N simultaneous games of fast bots against a server in another process.

    python bench/load.py [--games 10 100 1000] [--seconds 10] [--loop asyncio|uvloop]
                         [--mix tavern|thud|both] [--think-ms 0]
                         [--database sqlite|postgresql|postgresql://...]

For each N, prints the turns played per second, the server's CPU time per turn (process CPU
seconds, its records thread included, over the turns played, counted until the round's games
are closed and recorded: the figure this shared machine's noise moves least), the reply
latency (from a bot sending its move to the other bot receiving
the next turn: the server's work plus loopback), the server's memory, and the turns per second
as a ratio to the bare asyncio relay of ``bench/baseline.py`` measured in the same run under the
same load. Then the memory each idle simulation costs. The bots play real moves (Tavern: every
dwarf of the team steps in a random direction, so pushes, throws and points happen; Thud: a
random legal move), and each pair starts a new game when one ends, so N games are always in
play.

With ``--think-ms T`` each bot waits before answering, as a real bot thinks, a time drawn
between T/2 and 3T/2 ms (bots that all took exactly T would answer in lockstep): the server
then carries a load it can keep up with, and the reply latency is what it adds to each turn.
(With instant bots every game waits on the server, so the latency is the number of games over
the turns per second.)

With ``--database postgresql`` the server keeps its records in a PostgreSQL cluster that the
bench starts on loopback (``tests/services.py``; a fresh database for each figure) instead of
an SQLite file, and the cluster's CPU per turn (its server processes, those that ended
included) is printed beside the server's: together they are what the records cost there.
With a ``postgresql://`` URL the records go to that database (every figure to the same one),
and only the server's CPU is counted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import random
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import baseline
from bench.common import (
    ServerProcess,
    arena_process,
    cluster_cpu_seconds,
    describe_ms,
    percentile,
    use_loop,
)
from tests.services import PostgresServer, postgres_server

TURN = b'{"type":"turn"'
GAME_INFO = b'{"type":"game-info"'
ENDS = (b'{"type":"win-game"', b'{"type":"loss-game"', b'{"type":"draw-game"')
IDLE_SIMULATIONS = 5000
UNCAPPED = {"maxSimulationsPerConnection": 100_000, "maxWaitingSimulationsPerAddress": 100_000}


class Pair:
    """Two bots playing game after game until the deadline: the first creates each game; the
    second connects to ``second_port`` if given (another node of an arena on Redis).

    At the deadline the bot that receives the next turn leaves it unanswered and the pair hangs
    up: no move is in flight when its connections close (the original server, which
    ``bench/versus.py`` measures with these bots, crashes on a move for a game whose other
    player has just hung up).
    """

    def __init__(
        self,
        port: int,
        game: str,
        deadline: float,
        latencies: list[float],
        think_s: float,
        second_port: int | None = None,
    ) -> None:
        self.port, self.game, self.deadline, self.latencies = port, game, deadline, latencies
        self.ports = (port, port if second_port is None else second_port)
        self.think_s = think_s
        self.chance = random.Random(next(SEEDS))
        self.turns = 0
        self.sent_at = 0.0

    async def run(self) -> None:
        while time.perf_counter() < self.deadline:
            await self.play_one()

    async def play_one(self) -> None:
        ends = [
            await asyncio.open_connection("127.0.0.1", port, limit=1 << 22) for port in self.ports
        ]
        (r1, w1), (r2, w2) = ends
        w1.write(orjson.dumps({"type": "create-simulation", "game": self.game}) + b"\n")
        simulation_id = orjson.loads(await r1.readline())["simulationId"]
        for writer in (w1, w2):
            join = {
                "type": "join-simulation",
                "game": self.game,
                "nick": "bench",
                "simulationId": simulation_id,
                "names": NAMES,
            }
            writer.write(orjson.dumps(join) + b"\n")
        bots = [asyncio.create_task(self.bot(r1, w1)), asyncio.create_task(self.bot(r2, w2))]
        try:
            timeout_s = max(1.0, self.deadline - time.perf_counter() + 5)
            await asyncio.wait(bots, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in bots:
                task.cancel()
            await asyncio.gather(*bots, return_exceptions=True)
            for writer in (w1, w2):
                writer.close()

    async def bot(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer every turn with a real move, reading as little of it as possible.

        The bots share two cores with the server: parsing every Thud turn in full (hundreds of
        moves) would make this process, not the server, the bottleneck. Turns are recognised by
        their first bytes and a Thud move is picked among a regular expression's matches.
        """
        dwarves: list[int] = []
        while True:
            line = await reader.readline()
            now = time.perf_counter()
            if not line or now >= self.deadline:
                return
            if line.startswith(TURN):
                if self.sent_at:
                    self.latencies.append(now - self.sent_at)
                self.turns += 1
                if self.think_s:
                    await asyncio.sleep(self.think_s * self.chance.uniform(0.5, 1.5))
                if dwarves:
                    writer.write(tavern_moves(dwarves, self.chance))
                else:
                    writer.write(random_thud_move(line, self.chance))
                self.sent_at = time.perf_counter()
            elif line.startswith(GAME_INFO) and self.game == "tavern":
                team = orjson.loads(line)["team"]
                first = 1 if team == "team1" else 6  # botsPerPlayer 5: ids 1-5 and 6-10
                dwarves = list(range(first, first + 5))
            elif any(line.startswith(end) for end in ENDS):
                return


SEEDS = itertools.count(1)  # each pair's bots draw their own moves
NAMES = ["Ann", "Bob", "Cid", "Dag", "Eyr"]  # a Tavern team's dwarves (the original needs five)
MOVE = re.compile(rb'\{"from":\[(\d+),(\d+)\],"to":\[(\d+),(\d+)\]')
DIRECTIONS = (b"NORTH", b"EAST", b"SOUTH", b"WEST")


def random_thud_move(line: bytes, chance: random.Random) -> bytes:
    """One of the turn's legal moves, at random."""
    moves = MOVE.findall(line, line.index(b'"moves":'))
    assert moves, "a Thud turn always lists its legal moves"
    fx, fy, tx, ty = chance.choice(moves)
    return b'{"type":"player-turn","move":{"from":[%s,%s],"to":[%s,%s]}}\n' % (fx, fy, tx, ty)


def tavern_moves(dwarves: list[int], chance: random.Random) -> bytes:
    """Every dwarf of the team one step in a random direction."""
    actions = b",".join(
        b'{"botId":%d,"type":"MOVE","direction":"%s"}' % (dwarf, chance.choice(DIRECTIONS))
        for dwarf in dwarves
    )
    return b'{"type":"player-turn","actions":[%s]}\n' % actions


@dataclass
class Figures:
    turns_per_s: float
    latencies: list[float]
    cpu: float  # server CPU time per second of wall time
    cpu_per_turn: float  # server CPU seconds per turn played
    client_cpu: float  # this process's (the bots') CPU time per second of wall time
    rss: int  # server resident memory at the end, bytes
    turns: int  # turns played
    server_cpu: float  # the server's CPU seconds over them
    database_cpu_per_turn: float = 0.0  # PostgreSQL's CPU seconds per turn (0 for SQLite)


async def measure(
    server: ServerProcess,
    games: int,
    seconds: float,
    mix: str,
    think_s: float,
    cluster: PostgresServer | None = None,
) -> Figures:
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    kinds = ["tavern", "thud"] if mix == "both" else [mix]
    pairs = [
        Pair(server.tcp_port, kinds[i % len(kinds)], deadline, latencies, think_s)
        for i in range(games)
    ]
    postmaster = None if cluster is None or cluster.process is None else cluster.process.pid
    database_before = 0.0 if postmaster is None else cluster_cpu_seconds(postmaster)
    cpu_before, started = server.cpu_seconds(), time.perf_counter()
    client_before = time.process_time()
    await asyncio.gather(*(pair.run() for pair in pairs))
    elapsed = time.perf_counter() - started
    turns = sum(pair.turns for pair in pairs)
    client = (time.process_time() - client_before) / elapsed
    await asyncio.sleep(0.2)  # the last batch of turns committed, the games closed: counted too
    cpu = server.cpu_seconds() - cpu_before
    database = 0.0 if postmaster is None else cluster_cpu_seconds(postmaster) - database_before
    return Figures(
        turns / elapsed,
        latencies,
        cpu / elapsed,
        cpu / max(turns, 1),
        client,
        server.rss_bytes(),
        turns,
        cpu,
        database / max(turns, 1),
    )


async def idle_memory(server: ServerProcess, count: int) -> float:
    """Bytes of server memory per simulation created and left waiting."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.tcp_port)
    before = server.rss_bytes()
    for _ in range(count):
        writer.write(b'{"type":"create-simulation"}\n')
    for _ in range(count):
        await reader.readline()
    await asyncio.sleep(0.5)
    after = server.rss_bytes()
    writer.close()
    return (after - before) / count


async def run_arena(
    counts: list[int],
    seconds: float,
    loop: str,
    mix: str,
    think_s: float,
    cluster: PostgresServer | None = None,
    url: str | None = None,
) -> tuple[list[Figures], float]:
    """A fresh server (and database) for each figure, so one load does not tax the next."""
    figures = []
    for number, games in enumerate(counts):
        settings: dict[str, object] = dict(UNCAPPED)
        if cluster is not None:
            settings["database"] = cluster.create_database(f"load_{number}")
        elif url is not None:
            settings["database"] = url
        async with arena_process(loop, settings) as server:
            await asyncio.sleep(1.0)
            figures.append(await measure(server, games, seconds, mix, think_s, cluster))
    async with arena_process(loop, UNCAPPED) as server:
        await asyncio.sleep(1.0)
        idle = await idle_memory(server, IDLE_SIMULATIONS)
    return figures, idle


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="uvloop")
    parser.add_argument("--mix", choices=("tavern", "thud", "both"), default="both")
    parser.add_argument("--think-ms", type=float, default=0.0, help="each bot's time per move")
    parser.add_argument(
        "--database",
        default="sqlite",
        help="the records: sqlite (a file), postgresql (a cluster the bench starts) or a URL",
    )
    args = parser.parse_args()
    if args.database not in ("sqlite", "postgresql") and not args.database.startswith(
        "postgresql://"
    ):
        parser.error("--database: sqlite, postgresql or a postgresql:// URL")
    use_loop(args.loop)
    with contextlib.ExitStack() as stack:
        cluster = stack.enter_context(postgres_server()) if args.database == "postgresql" else None
        url = args.database if args.database.startswith("postgresql://") else None
        figures, idle = asyncio.run(
            run_arena(
                args.games, args.seconds, args.loop, args.mix, args.think_ms / 1000, cluster, url
            )
        )
    thinking = f", bots think {args.think_ms:g} ms" if args.think_ms else ""
    print(
        f"load: {args.mix} games, {args.loop} loop, {args.seconds:g} s per figure{thinking}, "
        f"records in {args.database}"
    )
    for games, result in zip(args.games, figures, strict=True):
        database = ""
        if args.database == "postgresql":
            database = f" (+ PostgreSQL {result.database_cpu_per_turn * 1e6:.0f} us/turn)"
        compared = ""
        if not args.think_ms:  # the relay's bots never think: compare instant bots only
            rate, relayed = baseline.run(games, args.seconds, args.loop)
            compared = (
                f" ({result.turns_per_s / rate:.0%} of the bare relay's {rate:,.0f} lines/s, "
                f"whose own p99 is {percentile(relayed, 0.99) * 1000:.1f} ms)"
            )
        print(
            f"{games:>6} games: {result.turns_per_s:>8,.0f} turns/s, server CPU "
            f"{result.cpu_per_turn * 1e6:.0f} us/turn{database}{compared}; reply "
            f"{describe_ms(result.latencies)}; server CPU {result.cpu:.0%} (the bots' "
            f"{result.client_cpu:.0%}), RSS {result.rss / 2**20:.0f} MiB"
        )
    print(
        f"idle simulations: {idle / 1024:.1f} KiB each "
        f"({IDLE_SIMULATIONS:,} created and left waiting)"
    )


if __name__ == "__main__":
    main()
