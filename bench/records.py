"""What recording games costs: real Dwarven Tavern turns through a real ``Recorder`` into
SQLite or PostgreSQL.

    python bench/records.py [--games 10 100 1000] [--rate 10000] [--work-us 60]
                            [--turns 40000] [--repeat 5] [--database sqlite|postgresql]

For each N, N games are always in play (one that ends is followed by a new one, and the first
ones are under way when the measure starts), their turns fed round-robin on an event loop at
``--rate`` turns per second. The turns are real: seeded games of bots that step every dwarf in a
random direction, played with the Tavern rules before timing starts, and made into
``TurnResult``s as the match loop does. Each turn is followed by ``--work-us`` of busy Python, the
rest of a server's turn, and the loop waits for the next turn's time as a server waits for its
sockets: the records' writer thread must get the interpreter lock from a loop that is busy most of
the time, which is where a writer that needs it often loses most (a profile of an idle server
would miss that).

The same feed runs in pairs, through a ``Recorder`` into a new records file and through a
listener that does nothing; the records' CPU per turn is the process CPU time (all threads) of the
first run less that of the second, over the turns fed: the median over ``--repeat`` pairs (this
machine is shared: a pair sees the same neighbours, and the median leaves out a pair that did
not). Beside it, its two parts: the event loop's thread (the ``Recorder`` and the hand-overs) and
the writer thread.

With ``--database postgresql`` the records go to a PostgreSQL cluster the bench starts on
loopback (``tests/services.py``, a new database for each run), and the cluster's own CPU per
turn (``bench.common.cluster_cpu_seconds``) is printed too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere

from bench.common import cluster_cpu_seconds
from server.games.base import Outcome, Player
from server.games.tavern.game import TAVERN
from server.match_events import GameFinished, GameStarted, TurnPlayed, Update
from server.match_options import MatchLimits
from server.match_views import MatchView, SeatStats, SeatView, Status, TurnResult
from server.records import Recorder, Records
from tests.services import PostgresServer, postgres_server

CODEC = TAVERN.codec_for(TAVERN.default_settings())
LIMITS = MatchLimits(turn_timeout_s=10.0, max_consecutive_timeouts=3)
DIRECTIONS = ("NORTH", "SOUTH", "EAST", "WEST")
PLAYERS = (Player("one", ("A", "B", "C", "D", "E")), Player("two", ("F", "G", "H", "I", "J")))
STATS = (SeatStats(100, 1.5, 9.0, 0, None),) * 2
SCRIPTS = 8  # distinct games, replayed under new ids


@dataclass(frozen=True, slots=True)
class Turn:
    """One played turn, everything a ``TurnResult`` holds but its game's id."""

    seat: int
    action: dict[str, Any]
    events: tuple[Any, ...]
    state: Any
    outcome: Outcome | None


def script(seed: int) -> list[Turn]:
    """A whole game of random movers, played with the real rules."""
    rng, chance = random.Random(seed), random.Random(seed + 1)
    rules = CODEC.rules
    state = rules.initial_state(PLAYERS)
    turns = []
    while (outcome := rules.outcome(state)) is None:
        seat = rules.to_move(state)
        dwarves = [d["id"] for d in CODEC.state_to_wire(state)[CODEC.seat_names[seat]]]
        orders = [
            {"botId": dwarf, "type": "MOVE", "direction": chance.choice(DIRECTIONS)}
            for dwarf in dwarves
        ]
        action = rules.check(state, seat, CODEC.candidate({"actions": orders}))
        state, events = rules.apply(state, seat, action, rng)
        outcome = rules.outcome(state)
        turns.append(Turn(seat, CODEC.action_to_wire(action), tuple(events), state, outcome))
    return turns


def view(game_id: str, turns: list[Turn], played: int) -> MatchView:
    last = turns[played - 1] if played else None
    return MatchView(
        match_id=game_id,
        codec=CODEC,
        seed=7,
        status=Status.PLAYING if played < len(turns) else Status.FINISHED,
        players=tuple(
            SeatView(name, player.nick, player.names, "bot", None)
            for name, player in zip(CODEC.seat_names, PLAYERS, strict=True)
        ),
        turn=played,
        state=CODEC.rules.initial_state(PLAYERS) if last is None else last.state,
        outcome=None if last is None else last.outcome,
        tournament_id=None,
        pairing=None,
        limits=LIMITS,
    )


def spins_for(seconds: float) -> int:
    """How many rounds of ``busy`` take ``seconds`` of CPU on this machine."""
    rounds = 100_000
    began = time.process_time()
    busy(rounds)
    return round(rounds * seconds / (time.process_time() - began))


def busy(rounds: int) -> None:
    """Hold the interpreter, as the rest of a loaded server's turn does: a fixed amount of work,
    not of time, so that time spent waiting for the interpreter is not counted as work done."""
    for _ in range(rounds):
        pass


class Feed:
    """``games`` simultaneous games played into ``listener``; one that ends is followed by a new
    one. The first ones start at different points of their games, so that games end (and new
    ones start) at a steady pace, as on a server that has been running a while."""

    def __init__(self, listener: Callable[[Update], None], scripts: list[list[Turn]], games: int):
        self.listener = listener
        self.ids = (f"g{number:07d}" for number in itertools.count())
        self.scripts = itertools.cycle(scripts)
        offsets = random.Random(games)
        self.playing = [self.start(offsets.random()) for _ in range(games)]

    def start(self, under_way: float = 0.0) -> tuple[str, list[Turn], list[int]]:
        """A new game, or with ``under_way`` of its turns played already (not recorded)."""
        game_id, turns = next(self.ids), next(self.scripts)
        played = int(under_way * len(turns))
        self.listener(GameStarted(view(game_id, turns, played), time.time()))
        return game_id, turns, [played]

    async def play(self, load: Load) -> None:
        """``load.turns`` turns, round-robin over the games, each followed by its other work; the
        loop waits whenever it is ahead of ``load.rate``."""
        games = len(self.playing)
        began = time.perf_counter()
        for fed in range(load.turns):
            slot = fed % games
            game_id, turns, played = self.playing[slot]
            turn = turns[played[0]]
            played[0] += 1
            result = TurnResult(
                game_id,
                CODEC,
                played[0],
                turn.seat,
                turn.action,
                False,
                turn.events,
                turn.state,
                turn.outcome,
                played_at=time.monotonic(),
            )
            self.listener(TurnPlayed(result))
            if turn.outcome is not None:
                finished = view(game_id, turns, played[0])
                self.listener(GameFinished(finished, turn.outcome, STATS, 0.0))
                self.playing[slot] = self.start()
            busy(load.work)
            await asyncio.sleep(max(0.0, began + (fed + 1) / load.rate - time.perf_counter()))


@dataclass(frozen=True, slots=True)
class Load:
    turns: int
    rate: float  # turns per second
    work: int  # rounds of ``busy`` per turn


def thread_cpu_s(thread: threading.Thread) -> float:
    """CPU seconds a thread of this process has used (Linux)."""
    fields = Path(f"/proc/self/task/{thread.native_id}/schedstat").read_text().split()
    return int(fields[0]) / 1e9


@dataclass(frozen=True, slots=True)
class Run:
    """CPU seconds of one feed: the process's (all threads), the event loop's, the writer's."""

    process: float
    loop: float
    writer: float
    wall: float
    database: float = 0.0  # the PostgreSQL cluster's CPU seconds


RUNS = itertools.count()


def ignore(update: Update) -> None:
    """The listener of the runs without records."""


async def run(
    scripts: list[list[Turn]],
    games: int,
    load: Load,
    record: bool,
    cluster: PostgresServer | None = None,
) -> Run:
    """The feed into records of its own (``record``: a new file, or a new database of
    ``cluster``), or into nothing."""
    with tempfile.TemporaryDirectory() as folder:
        database: str | Path = Path(folder) / "arena.db"
        if cluster is not None and record:
            database = cluster.create_database(f"records_{next(RUNS)}")
        postmaster = None if cluster is None or cluster.process is None else cluster.process.pid
        records = Records(database)
        listener: Callable[[Update], None] = ignore
        if record:
            await asyncio.to_thread(records.open)
            listener = Recorder(records)
        feed = Feed(listener, scripts, games)
        if record:
            await records.flush()  # the games under way when the measure starts
        writer = next((t for t in threading.enumerate() if t.name == "records-writer"), None)
        loop = threading.main_thread()
        writer_before = 0.0 if writer is None else thread_cpu_s(writer)
        database_before = 0.0 if postmaster is None else cluster_cpu_seconds(postmaster)
        began, before, loop_before = time.perf_counter(), time.process_time(), thread_cpu_s(loop)
        await feed.play(load)
        if record:
            await records.flush()
        used = Run(
            process=time.process_time() - before,
            loop=thread_cpu_s(loop) - loop_before,
            writer=0.0 if writer is None else thread_cpu_s(writer) - writer_before,
            wall=time.perf_counter() - began,
            database=0.0
            if postmaster is None
            else cluster_cpu_seconds(postmaster) - database_before,
        )
        if record:
            await asyncio.to_thread(records.close)
    return used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--rate", type=float, default=10_000, help="turns per second")
    parser.add_argument("--work-us", type=float, default=60.0, help="other work per turn")
    parser.add_argument("--turns", type=int, default=40_000, help="turns per run")
    parser.add_argument("--repeat", type=int, default=5, help="pairs of runs; the median is kept")
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    options = parser.parse_args()
    with contextlib.ExitStack() as stack:
        cluster = None
        if options.database == "postgresql":
            cluster = stack.enter_context(postgres_server())
        measure(options, cluster)


def measure(options: argparse.Namespace, cluster: PostgresServer | None) -> None:
    scripts = [script(seed) for seed in range(SCRIPTS)]
    load = Load(options.turns, options.rate, spins_for(options.work_us / 1e6))
    us = 1e6 / load.turns
    print(
        f"{options.rate:g} turns/s wanted, {options.work_us:g} us of other work a turn, "
        f"{load.turns} turns a run, records in {options.database}"
    )
    print(
        "games | turns/s | records' CPU a turn | on the loop | writer thread | feed alone"
        " | PostgreSQL's CPU a turn"
    )
    for games in options.games:
        # A run with records, then one without, so that both of a pair see the same machine.
        pairs = [
            tuple(
                asyncio.run(run(scripts, games, load, record, cluster)) for record in (True, False)
            )
            for _ in range(options.repeat)
        ]
        print(
            f"{games:5d} | {median(load.turns / one.wall for one, _ in pairs):7.0f}"
            f" | {median(one.process - bare.process for one, bare in pairs) * us:8.1f} us"
            f" | {median(one.loop - bare.loop for one, bare in pairs) * us:6.1f} us"
            f" | {median(one.writer for one, _ in pairs) * us:6.1f} us"
            f" | {median(bare.process for _, bare in pairs) * us:6.1f} us"
            f" | {median(one.database for one, _ in pairs) * us:6.1f} us"
        )


if __name__ == "__main__":
    main()
