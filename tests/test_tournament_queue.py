"""Tournaments queued on Redis and played by ``tavern worker`` processes, with their records in
PostgreSQL: real commands in subprocesses, a real redis-server and PostgreSQL, kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis import Redis

from server.league import tables
from server.records import Records, backend_for
from server.tournament.schedule import schedule
from server.tournament.spec import TournamentError, spec_from_mapping
from server.tournament_queue import (
    DEAD,
    GROUP,
    STREAM,
    QueuedGame,
    QueuedSpec,
    queue_games,
    spec_key,
)
from tests.services import PostgresServer, RedisCluster, RedisServer
from tests.test_tournament_cli import COMMAND_TIMEOUT_S, ROOT, SLOW_CUP, TAVERN, scratch, slow

CLAIM_TIMEOUT_MS = 1000  # short, so that a killed worker's game is taken over quickly


class Processes:
    """``tavern`` processes; any still running when the test ends is killed."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[subprocess.Popen[str]] = []

    def start(self, *arguments: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [TAVERN, *arguments],
            cwd=ROOT,
            env={**os.environ, "TMPDIR": str(scratch(self.tmp_path))},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.started.append(process)
        return process


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    started = Processes(tmp_path)
    yield started
    for process in started.started:
        if process.poll() is None:
            process.kill()
            process.communicate()


def league(database: str) -> dict[str, list[tuple[Any, ...]]]:
    records = Records(database)
    records.open_to_read()
    return {
        table: [(s.bot, s.played, s.wins, s.losses, s.draws, s.score, s.crashes) for s in rows]
        for table, rows in tables(records.results("slow-cup")).items()
    }


def games(database: str) -> list[tuple[Any, ...]]:
    connection = backend_for(database).connect()
    try:
        rows = connection.execute("SELECT id, status, owner, pairing FROM games").fetchall()
    finally:
        connection.close()
    return [tuple(row) for row in rows]


def queued_cup(
    tmp_path: Path, processes: Processes, redis_url: str, database: str, *worker_options: str
) -> tuple[subprocess.Popen[str], list[subprocess.Popen[str]], subprocess.Popen[str]]:
    """``SLOW_CUP`` played on one machine (the reference), and queued on ``redis_url`` for the
    workers (one for each ``worker_options``, logging to wN.log) that record in ``database``."""
    path = tmp_path / "cup.json"
    path.write_text(json.dumps(SLOW_CUP))
    reference = processes.start(
        "tournament", str(path), "--database", str(tmp_path / "reference.db"), "--workers", "0"
    )
    workers = [
        processes.start(
            *("worker", "--redis", redis_url, "--database", database),
            *(*options.split(), "--log", str(tmp_path / f"w{n}.log")),
        )
        for n, options in enumerate(worker_options)
    ]
    queued = processes.start(
        *("tournament", str(path), "--database", database, "--redis", redis_url),
        *("--log", str(tmp_path / "cup.log")),
    )
    return reference, workers, queued


def test_three_workers_one_killed_mid_game_give_the_single_machine_league(
    tmp_path: Path, postgres: PostgresServer, redis: RedisServer, processes: Processes
) -> None:
    database = postgres.create_database("queued_cup")
    Records(database).open_to_read()  # the schema, for the test's own reads
    claim = f"--claim-timeout-ms {CLAIM_TIMEOUT_MS}"
    reference, workers, queued = queued_cup(
        tmp_path, processes, redis.url, database, claim, claim, claim
    )
    # Once a worker is playing a game, kill it.
    deadline = time.monotonic() + 60
    killed: list[str] = []
    while not killed:
        assert time.monotonic() < deadline, "no worker played a game"
        assert queued.poll() is None, queued.communicate()
        for victim in workers:
            killed = [
                game_id
                for game_id, status, owner, _ in games(database)
                if status == "playing" and f"-{victim.pid}-" in (owner or "")
            ]
            if killed:
                break
        time.sleep(0.02)
    victim.send_signal(signal.SIGKILL)
    victim.wait(10)

    out, errors = queued.communicate(timeout=COMMAND_TIMEOUT_S)
    assert queued.returncode == 0, errors
    assert "slow cup: 6 games" in out
    assert "6 games queued" in errors
    reference_out, reference_errors = reference.communicate(timeout=COMMAND_TIMEOUT_S)
    assert reference.returncode == 0, reference_errors
    assert out.split("\nratings")[0] == reference_out.split("\nratings")[0]
    assert league(database) == league(str(tmp_path / "reference.db"))
    # Every pairing finished once: the killed worker's game was played again by another
    # worker, and no game was played twice.
    rows = games(database)
    finished = [pairing for _, status, _, pairing in rows if status == "finished"]
    assert sorted(finished) == sorted(set(finished)) and len(finished) == 6
    killed_pairing = next(pairing for game_id, _, _, pairing in rows if game_id == killed[0])
    assert killed_pairing in finished
    # The killed worker's game is marked unfinished by the nodes that remain (their sweep).
    deadline = time.monotonic() + 15
    while next(status for game_id, status, _, _ in games(database) if game_id == killed[0]) != (
        "unfinished"
    ):
        assert time.monotonic() < deadline, "the killed worker's game was not marked unfinished"
        time.sleep(0.1)
    for worker in (worker for worker in workers if worker is not victim):
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=30)
        assert worker.returncode == 143


def beside_one_machine(
    tmp_path: Path, processes: Processes, cup: dict[str, Any], redis_url: str, database: str
) -> tuple[str, str, subprocess.Popen[str]]:
    """``cup`` played on one machine (the reference) and queued on ``redis_url`` for the two
    workers the command starts, which record in ``database``: the queued run's output (its
    league the reference's), its errors, and its process."""
    path = tmp_path / "cup.json"
    path.write_text(json.dumps(cup))
    reference = processes.start(
        "tournament", str(path), "--database", str(tmp_path / "reference.db"), "--workers", "0"
    )
    queued = processes.start(
        *("tournament", str(path), "--database", database, "--redis", redis_url),
        *("--workers", "2", "--log", str(tmp_path / "cup.log")),
    )
    out, errors = queued.communicate(timeout=COMMAND_TIMEOUT_S)
    assert queued.returncode == 0, errors
    reference_out, reference_errors = reference.communicate(timeout=COMMAND_TIMEOUT_S)
    assert reference.returncode == 0, reference_errors
    assert out.split("\nratings")[0] == reference_out.split("\nratings")[0]
    return out, errors, queued


def test_a_tournament_with_its_own_workers_on_an_sqlite_file(
    tmp_path: Path, arena_redis: RedisServer | RedisCluster, processes: Processes
) -> None:
    """``--workers 2``: the command starts its workers, which record in its SQLite file (they
    are on its machine), and stops them at the end; the league is the local run's. On one
    Redis and on a Redis Cluster alike."""
    database = str(tmp_path / "arena.db")
    _, errors, queued = beside_one_machine(tmp_path, processes, SLOW_CUP, arena_redis.url, database)
    assert "only workers on this machine can record games in it" in errors
    owners = {owner.rsplit("-", 2)[1] for _, _, owner, _ in games(database)}
    assert len(owners) == 2  # the games were played by two worker processes
    assert str(queued.pid) not in owners


def test_a_swiss_event_on_workers_pairs_each_round_from_the_last_as_one_machine_does(
    tmp_path: Path, redis: RedisServer, processes: Processes
) -> None:
    """A Swiss event of four bots over two rounds, queued for two workers: the command pairs
    round 2 once round 1's results are in, and the standings are the local run's."""
    # No delay: nothing here waits for a game under way.
    bots = [slow(name, player, delay_ms=0) for name, player in (
        ("p", "pusher"), ("w", "wanderer"), ("q", "pusher"), ("v", "wanderer"))]  # fmt: skip
    database = str(tmp_path / "arena.db")
    swiss = {**SLOW_CUP, "format": "swiss", "rounds": 2, "bots": bots}
    out, _, _ = beside_one_machine(tmp_path, processes, swiss, redis.url, database)
    assert "standings" in out.lower()
    pairings = sorted(pairing for _, status, _, pairing in games(database) if status == "finished")
    assert [pairing.split(":")[0] for pairing in pairings] == ["round 1"] * 2 + ["round 2"] * 2


def test_a_worker_needs_redis_and_a_claim_timeout_it_can_keep(tmp_path: Path) -> None:
    database = str(tmp_path / "arena.db")
    result = subprocess.run(
        [TAVERN, "worker", "--database", database],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )
    assert (result.returncode, result.stderr) == (
        2,
        "tavern: a worker needs redis (in the config, or --redis URL)\n",
    )
    result = subprocess.run(
        [
            *(TAVERN, "worker", "--database", database),
            *("--redis", "redis://127.0.0.1:1/0", "--claim-timeout-ms", "10"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )
    assert (result.returncode, result.stderr) == (
        2,
        "tavern worker: argument --claim-timeout-ms: must be between 300 and 86400000, got 10\n",
    )


def wait_for_line(path: Path, text: str, running: list[subprocess.Popen[str]]) -> None:
    """Until ``path`` (a command's log) holds ``text``; every command in ``running`` must run
    on meanwhile."""
    deadline = time.monotonic() + 30
    while not (path.exists() and text in path.read_text()):
        assert time.monotonic() < deadline, f"{path} never said {text!r}"
        for process in running:
            assert process.poll() is None, process.communicate()
        time.sleep(0.05)


def said_plainly(text: str) -> None:
    """A command's stderr or log: Redis going away and coming back said in one line each time,
    and never a traceback."""
    assert "Traceback" not in text, text
    assert text.count("waiting for Redis at") == text.count(" is back"), text


def check_league(
    tmp_path: Path, database: str, queued: subprocess.Popen[str], reference: subprocess.Popen[str]
) -> str:
    """The queued tournament ended as the reference run did, every pairing finished once; its
    stderr."""
    out, errors = queued.communicate(timeout=COMMAND_TIMEOUT_S)
    assert queued.returncode == 0, errors
    reference_out, reference_errors = reference.communicate(timeout=COMMAND_TIMEOUT_S)
    assert reference.returncode == 0, reference_errors
    assert out.split("\nratings")[0] == reference_out.split("\nratings")[0]
    assert league(database) == league(str(tmp_path / "reference.db"))
    finished = [pairing for _, status, _, pairing in games(database) if status == "finished"]
    assert sorted(finished) == sorted(set(finished)) and len(finished) == 6
    said_plainly(errors)
    return errors


def stop_workers(tmp_path: Path, workers: list[subprocess.Popen[str]]) -> None:
    for number, worker in enumerate(workers):
        worker.send_signal(signal.SIGTERM)
        _, errors = worker.communicate(timeout=30)
        assert worker.returncode == 143, errors
        said_plainly(errors)
        said_plainly((tmp_path / f"w{number}.log").read_text())


def test_workers_and_a_queued_tournament_wait_for_redis_down_at_their_start(
    tmp_path: Path, redis: RedisServer, processes: Processes
) -> None:
    database = str(tmp_path / "arena.db")
    redis.stop()
    reference, workers, queued = queued_cup(tmp_path, processes, redis.url, database, "", "")
    for log in ("w0.log", "w1.log", "cup.log"):
        wait_for_line(tmp_path / log, f"waiting for Redis at {redis.url}", [*workers, queued])
    redis.start()
    errors = check_league(tmp_path, database, queued, reference)
    assert errors.count(f"waiting for Redis at {redis.url}") == 1, errors
    stop_workers(tmp_path, workers)
    for log in ("w0.log", "w1.log", "cup.log"):
        assert (tmp_path / log).read_text().count(f"Redis at {redis.url} is back") == 1


def test_redis_restarted_mid_tournament_loses_no_game_and_plays_none_twice(
    tmp_path: Path, redis: RedisServer, processes: Processes
) -> None:
    """Redis restarts without its data while workers play: the games being played are played
    to their end and recorded, the games Redis lost are queued again, and the league is the
    single machine's, every pairing finished once."""
    database = str(tmp_path / "arena.db")
    Records(database).open_to_read()  # the schema, for the test's own reads
    reference, workers, queued = queued_cup(tmp_path, processes, redis.url, database, "", "")
    deadline = time.monotonic() + 60
    while not (playing := [row for row in games(database) if row[1] == "playing"]):
        assert time.monotonic() < deadline, "no worker played a game"
        assert queued.poll() is None, queued.communicate()
        time.sleep(0.02)
    redis.restart()
    errors = check_league(tmp_path, database, queued, reference)
    assert "Redis restarted: " in errors and " games queued again" in errors, errors
    # The game played through the restart was played to its end, by the worker playing it.
    assert [row[1] for row in games(database) if row[0] == playing[0][0]] == ["finished"]
    stop_workers(tmp_path, workers)


def test_a_redis_that_refuses_is_said_in_one_line(
    tmp_path: Path, redis: RedisServer, processes: Processes
) -> None:
    path = tmp_path / "cup.json"
    path.write_text(json.dumps(SLOW_CUP))
    database = str(tmp_path / "arena.db")
    url = f"redis://127.0.0.1:{redis.port}/99"  # a database this Redis does not have
    for command in (
        processes.start("worker", "--redis", url, "--database", database),
        processes.start("tournament", str(path), "--database", database, "--redis", url),
    ):
        _, errors = command.communicate(timeout=COMMAND_TIMEOUT_S)
        assert command.returncode == 2, errors
        assert f"tavern: Redis at {url} refused: DB index is out of range\n" in errors
        assert "Traceback" not in errors


async def test_a_tournament_is_kept_once_beside_entries_that_name_only_their_game(
    redis: RedisServer,
) -> None:
    """Each entry is the tournament's id and the game's number, key, bots and seed; the spec
    (the file as read and its folder) is one key beside the stream, which a worker reads the
    game back from: the same pairing as the queuing command's. Without it (Redis restarted
    without the key), the entry says so instead of playing a game of another spec; an entry
    naming a bot the spec does not enter is not played."""
    spec = spec_from_mapping(SLOW_CUP, ROOT)
    pairings = schedule(spec)
    client = aioredis.from_url(redis.url)
    try:
        assert await queue_games(client, spec, pairings) == len(pairings)
        entries: Any = await client.xrange(STREAM)
        named = {b"tournament", b"number", b"key", b"bots", b"seed"}
        assert [set(fields) for _, fields in entries] == [named] * len(pairings)
        queued = QueuedSpec.from_value(await client.get(spec_key(spec.id)), spec.id)
        assert queued == QueuedSpec(spec.raw, str(ROOT))
        for (_, fields), pairing in zip(entries, pairings, strict=True):
            played, game = QueuedGame.from_fields(fields).pairing(queued)
            assert (played.id, played.raw, game) == (spec.id, spec.raw, pairing)
        stranger = {**entries[0][1], b"bots": b'["p", "nobody"]'}
        with pytest.raises(TournamentError, match="names no entrant"):
            QueuedGame.from_fields(stranger).pairing(queued)
        await client.delete(spec_key(spec.id))
        with pytest.raises(TournamentError, match=f"tournament {spec.id} is not in the queue"):
            QueuedSpec.from_value(await client.get(spec_key(spec.id)), spec.id)
    finally:
        await client.aclose()


def test_a_game_that_stopped_three_workers_is_given_up_on_and_the_tournament_ends(
    tmp_path: Path, redis: RedisServer, processes: Processes
) -> None:
    """A game taken by three workers that each stopped before its end (here: consumers that
    take it and never come back) is not handed out a fourth time: the next worker puts it in
    the dead letters, the tournament's command counts it done, and prints it under the league
    as an arena fault; the five other games are played and ranked as usual."""
    path = tmp_path / "cup.json"
    path.write_text(json.dumps(SLOW_CUP))
    database = str(tmp_path / "arena.db")
    queued = processes.start(
        *("tournament", str(path), "--database", database, "--redis", redis.url),
        *("--log", str(tmp_path / "cup.log")),
    )
    client = Redis(port=redis.port)
    try:
        deadline = time.monotonic() + 60
        while client.xlen(STREAM) < 6:
            assert time.monotonic() < deadline and queued.poll() is None, "nothing queued"
            time.sleep(0.05)
        taken: Any = client.xreadgroup(GROUP, "gone-1", {STREAM: ">"}, count=1)
        entry_id, fields = taken[0][1][0]
        for consumer in ("gone-2", "gone-3"):
            client.xclaim(STREAM, GROUP, consumer, min_idle_time=0, message_ids=[entry_id])
        worker = processes.start(
            *("worker", "--redis", redis.url, "--database", database),
            *("--claim-timeout-ms", "300", "--log", str(tmp_path / "w.log")),
        )
        out, errors = queued.communicate(timeout=COMMAND_TIMEOUT_S)
        assert queued.returncode == 0, errors
        letters: Any = client.xrange(DEAD)
        (letter,) = [fields for _, fields in letters]
        assert (letter[b"number"], letter[b"key"]) == (fields[b"number"], fields[b"key"])
        reason = "stopped the 3 workers that took it: not played"
        assert letter[b"reason"] == reason.encode()
        assert client.xlen(STREAM) == 0 and client.xpending(STREAM, GROUP)["pending"] == 0
    finally:
        client.close()
    number, key = int(fields[b"number"]), fields[b"key"].decode()
    assert "slow cup: 5 games" in out
    assert out.endswith(f"arena faults, 1 games not played:\n  game {number} ({key}): {reason}\n")
    assert sum(played for rows in league(database).values() for _, played, *_ in rows) == 10
    assert worker.poll() is None  # it goes on, for the next tournament
    records = Records(database)  # and the league's pages show it, from the records
    records.open_to_read()
    (tournament,) = records.tournaments()
    fault = {"number": number, "pairing": key, "reason": reason, "fault": "arena"}
    assert records.tournament_faults(tournament["id"]) == [fault]
