"""The records while their database is out of reach: no record is lost (the writes wait in a
journal, and are written once it is back, by the node or by the next one to start), games go
on and new ones start, reads answer 503 naming the outage, and a stop is bounded.

PostgreSQL here is a server of each test's own (``tests.services``), stopped, frozen and
started again under the arena, not the session's shared one.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from playwright.async_api import expect

from bench.common import ServerProcess, tavern_serve
from server.errors import BotError
from server.records import GameFilter, Records, backend_for, journal
from server.records.writer import STOP_S
from server.records.writes import Chunk, TurnChunks, Write, encode
from tests.browser import chromium_pages
from tests.conftest import RawClient
from tests.services import PostgresServer, postgres_server
from tests.test_cluster import (
    WAIT_S,
    crossing_games,
    ended_normally,
    eventually,
    join,
    play_out,
)
from tests.test_operations import health, node_config
from tests.test_records import connected, one_game, rows

OUTAGE_S = 3.0  # several of the writer's tries (every second) go by while the database is away


def turns_of(game_id: str, first: int, late: tuple[bool, ...]) -> TurnChunks:
    """A chunk of turns as the writer keeps them, seats alternating from dwarf."""
    chunk = Chunk(game_id, first)
    for number, timed_out in enumerate(late, start=first):
        chunk.turns.append(
            ((number - 1) % 2, b'{"n":%d}' % number, b"true" if timed_out else b"false")
        )
    return TurnChunks([chunk])


def left_behind(folder: Path, database: str, owner: str, *entries: bytes) -> Path:
    """The journal of a process that stopped with ``entries`` unwritten (its lock released)."""
    kept = journal.create(folder, backend_for(database).describe(), owner)
    for entry in entries:
        kept.append(entry)
    kept.close(delete=False)
    return kept.path


async def test_a_stopped_process_s_journal_is_written_at_the_next_start_whatever_its_tail(
    records_database: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Journals of stopped processes, written by the next process that opens the records:
    one cut short by a crash in the middle of its last append (the whole entries before it are
    written, the file deleted), one with a damaged entry in its middle (the entries around it
    are written, the file kept aside as .damaged), one that repeats entries written already
    (nothing is written twice: no second chunk, no late turn counted twice), and one of
    another database, left alone."""
    caplog.set_level(logging.WARNING)
    folder = tmp_path / "journal"
    first = encode([one_game("a"), one_game("b")])
    turns = encode([turns_of("a", 1, (False, True, False)), Write("seat-exit", "a", 0, "gone")])
    torn = left_behind(folder, records_database, "gone-1", first, turns)
    with torn.open("ab") as file:  # the next append, cut short
        file.write((journal.MAGIC + journal.FRAME.pack(500, 0) + b'[["game-st')[:30])
    middle = encode([Write("seat-exit", "b", 1, "never written")])
    last = encode([turns_of("b", 1, (True, False))])
    damaged = left_behind(folder, records_database, "gone-2", middle, last)
    with damaged.open("r+b") as file:  # one byte of the first entry's payload flipped
        file.seek(damaged.stat().st_size - len(last) - journal.HEAD - 5)
        byte = file.read(1)
        file.seek(-1, os.SEEK_CUR)
        file.write(bytes([byte[0] ^ 0xFF]))
    left_behind(folder, records_database, "gone-3", turns)
    other = journal.create(folder, "postgresql://elsewhere/other", "other-1")
    other.append(encode([one_game("z")]))
    other.close(delete=False)

    records = Records(records_database, journal=folder)
    await asyncio.to_thread(records.open)
    await asyncio.to_thread(records.close)

    a, b = records.game("a"), records.game("b")
    assert a is not None and b is not None and records.game("z") is None
    assert [(t["number"], t["timedOut"]) for t in a["turns"]] == [(1, False), (2, True), (3, False)]
    assert [(t["number"], t["timedOut"]) for t in b["turns"]] == [(1, True), (2, False)]
    with connected(records_database) as db:
        seats = rows(db, "SELECT game_id, seat, timed_out_turns, exit FROM seats ORDER BY 1, 2")
        chunks = rows(db, "SELECT game_id, first_number, count FROM turn_chunks ORDER BY 1, 2")
    assert seats == [("a", 0, 0, "gone"), ("a", 1, 1, None), ("b", 0, 1, None), ("b", 1, 0, None)]
    assert chunks == [("a", 1, 3), ("b", 1, 2)]
    assert sorted(path.name for path in folder.iterdir()) == ["gone-2.damaged", "other-1.journal"]
    said = caplog.text
    assert "gone-1.journal: 2 entries (a torn last entry of 22 bytes)" in said
    first_entry = len(journal.header(backend_for(records_database).describe(), "gone-2"))
    assert f"gone-2.journal: 1 entries ({len(middle) + journal.HEAD} damaged bytes at " in said
    assert f"damaged bytes at {first_entry})" in said
    assert "gone-2.journal kept as" in said and "holds the writes of another database" in said


@contextlib.contextmanager
def frozen(postgres: PostgresServer) -> Iterator[None]:
    """Every process of the cluster stopped (SIGSTOP), as a server that hangs: connections
    stay open, and nothing sent on them is answered, until the block ends."""
    assert postgres.process is not None
    root = postgres.process.pid
    pids = [root]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == root:
                pids.append(int(stat.parent.name))
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def unlocked(path: Path) -> bool:
    """Its process let go of the journal (a stopped process's, for the next to write)."""
    descriptor = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(descriptor)
    return True


async def test_a_stop_is_bounded_when_postgresql_hangs_and_keeps_what_it_could_not_write(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """PostgreSQL hangs (every process of it stopped) while the writer commits: the stop gives
    up on it after ``STOP_S`` and keeps what it had not written in the journal, saying which
    games; the next process writes it, once the database answers."""
    caplog.set_level(logging.WARNING)
    folder = tmp_path / "journal"
    with postgres_server() as postgres:
        url = postgres.create_database("hung")
        records = Records(url, journal=folder)
        await asyncio.to_thread(records.open)
        records.submit(one_game("a", records.owner))
        records.record_turn("a", 1, 0, b'{"n":1}', False)
        await records.flush()
        with frozen(postgres):
            records.record_turn("a", 2, 1, b'{"n":2}', True)
            records.seat_exit("a", 1, "stopped")
            started = time.monotonic()
            await asyncio.to_thread(records.close)
            took = time.monotonic() - started
        assert STOP_S <= took < STOP_S + 2
        (kept,) = folder.iterdir()
        assert "the database did not answer within 5 s of the stop" in caplog.text
        assert f"of 1 games (a) are kept in the journal {kept}" in caplog.text
        async with asyncio.timeout(WAIT_S):  # the thread lets go once its commit is answered
            while not await asyncio.to_thread(unlocked, kept):
                await asyncio.sleep(0.05)
        after = Records(url, journal=folder)
        await asyncio.to_thread(after.open)
        await asyncio.to_thread(after.close)
        game = after.game("a")
        assert game is not None and game["status"] == "unfinished"
        assert [(t["number"], t["timedOut"]) for t in game["turns"]] == [(1, False), (2, True)]
        assert game["players"][1]["exit"] == "stopped"
        assert list(folder.iterdir()) == []


async def test_a_locked_sqlite_file_keeps_the_records_in_the_journal_until_it_is_free(
    tmp_path: Path,
) -> None:
    """Another process holds the SQLite file's write lock past the busy timeout: the batch is
    kept in the journal beside the file (a flush returns), and written once the lock is free;
    the journal is then emptied, and deleted when the records close."""
    path = tmp_path / "arena.db"
    records = Records(path)
    await asyncio.to_thread(records.open)
    try:
        records.submit(one_game("a", records.owner))
        await records.flush()
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN EXCLUSIVE")
        records.record_turn("a", 1, 0, b'{"n":1}', False)
        await asyncio.wait_for(records.flush(), WAIT_S)  # kept, though not written
        assert records.behind
        (kept,) = (tmp_path / "arena.db.journal").iterdir()
        assert kept.stat().st_size > len(journal.header(str(path), records.owner))
        blocker.execute("ROLLBACK")
        blocker.close()

        async def written() -> bool:
            return not records.behind

        await eventually(written)
        game = records.game("a")
        assert game is not None and [t["number"] for t in game["turns"]] == [1]
        assert kept.stat().st_size == len(journal.header(str(path), records.owner))
    finally:
        await asyncio.to_thread(records.close)
    assert list((tmp_path / "arena.db.journal").iterdir()) == []


# --- a node through an outage --------------------------------------------------------------------
def node_on(folder: Path, database: str, **settings: Any) -> Path:
    folder.mkdir()
    return node_config(
        folder, database=database, recordsJournal=str(folder / "journal"), **settings
    )


async def get(session: aiohttp.ClientSession, node: ServerProcess, path: str) -> Any:
    async with session.get(f"http://127.0.0.1:{node.http_port}{path}") as response:
        return response.status, dict(response.headers), await response.json()


async def test_games_played_through_a_postgresql_outage_are_all_recorded(
    tmp_path: Path,
) -> None:
    """PostgreSQL stops while two nodes play. Node A's games finish during the outage, and new
    ones start and finish on it; it stays ready, and the records' API and pages say the
    records cannot be read now (503, said once in the log, no traceback). Node B is stopped
    during the outage: it stops within seconds and says what it keeps. Once PostgreSQL is
    back, A writes its journal, and B, started again, writes its own: every game is in the
    database with its turns, finished, but for B's game cut short by its stop (unfinished)."""
    with postgres_server() as postgres:
        url = postgres.create_database("outage")
        a_config, b_config = node_on(tmp_path / "a", url), node_on(tmp_path / "b", url)
        a_log, b_log = tmp_path / "a.log", tmp_path / "b.log"
        async with (
            tavern_serve(a_config, log=a_log) as a,
            tavern_serve(b_config, log=b_log) as b,
            aiohttp.ClientSession() as session,
        ):
            held, cut, free = asyncio.Event(), asyncio.Event(), asyncio.Event()
            free.set()
            a_games = await crossing_games(a, a, 3, held)
            b_games = await crossing_games(b, b, 1, held)
            b_cut = await crossing_games(b, b, 1, cut)
            await asyncio.to_thread(postgres.stop)
            outage_began = time.monotonic()
            held.set()
            await ended_normally(a_games + b_games)  # finished while it is away
            await ended_normally(await crossing_games(a, a, 2, free))  # new ones: not refused
            # The node learns of the outage when its writer next tries the database.
            async with asyncio.timeout(10):
                while not (body := (await health(session, a, "/readyz"))[1])["degraded"]:
                    assert body["why"] == [], body
                    await asyncio.sleep(0.1)
            status, body = await health(session, a, "/readyz")
            assert (status, body["why"]) == (200, []), body
            assert "the records database is out of reach" in body["degraded"][0], body
            for path in ("/api/games", "/api/games/nope", "/api/ladder", "/api/bots/X"):
                status, headers, answer = await get(session, a, path)
                assert (status, answer["error"]) == (503, "the records database is unavailable")
                assert headers["Retry-After"] == str(answer["retryAfterS"]) == "5"
            async with chromium_pages(f"http://127.0.0.1:{a.http_port}") as pages:
                pages.http_errors_expected = True
                for width in (1280, 390):
                    page = await pages.open("/ladder", width=width, connected=False)
                    await expect(page.locator("#error")).to_contain_text(
                        "the records database is unavailable. Try again in a few seconds."
                    )
                    page = await pages.open("/replay/nope", width=width, connected=False)
                    await expect(page.locator("#missing-title")).to_have_text(
                        "The records cannot be read now"
                    )
            stopping = time.monotonic()
            b.process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(b.process.wait(), WAIT_S) == 0
            assert time.monotonic() - stopping < STOP_S
            cut.set()
            async with asyncio.timeout(WAIT_S):  # its bots find their connections closed
                await asyncio.gather(*b_cut)
            await asyncio.sleep(max(0.0, OUTAGE_S - (time.monotonic() - outage_began)))
            await asyncio.to_thread(postgres.start)

            async def a_written() -> bool:
                status, _, answer = await get(session, a, "/api/games?perPage=200")
                statuses = [game["status"] for game in answer.get("games", [])]
                return status == 200 and statuses.count("finished") == 5

            await eventually(a_written)
            async with tavern_serve(b_config, log=b_log):
                pass  # it writes its journal as it opens the records
            a.process.send_signal(signal.SIGTERM)  # its journal, written and empty, goes too
            assert await asyncio.wait_for(a.process.wait(), WAIT_S) == 0
        a_said, b_said = a_log.read_text(), b_log.read_text()
        records = Records(url)
        listed = records.games(GameFilter(per_page=200))["games"]
        assert sorted(game["status"] for game in listed) == ["finished"] * 6 + ["unfinished"]
        for summary in listed:
            record = records.game(summary["id"])
            assert record is not None
            assert len(record["turns"]) == record["turnCount"] > 0
    assert "Traceback" not in a_said + b_said
    assert a_said.count("reads are answered 503 until it is back") == 1, a_said
    assert a_said.count("the records wait in the journal") == 1, a_said
    assert "answers again" in a_said
    assert "stopped while the database is out of reach: " in b_said
    assert "are kept in the journal" in b_said
    assert "wrote the journal a stopped process left" in b_said
    assert list((tmp_path / "a" / "journal").iterdir()) == []
    assert list((tmp_path / "b" / "journal").iterdir()) == []


async def create_or_refused(node: ServerProcess) -> dict[str, Any]:
    """A create-simulation's answer: ``ready``, or the error that refused it."""
    creator = await RawClient.connect(node.tcp_port)
    try:
        await creator.send({"type": "create-simulation", "game": "tavern"})
        return await creator.receive()
    finally:
        await creator.close()


async def test_a_journal_nearly_full_refuses_new_games_until_it_is_written(
    tmp_path: Path,
) -> None:
    """With PostgreSQL away, games fill a small journal (``recordsJournalBytes``): from three
    quarters of it on, a new game is refused (``Records full``) and /readyz fails, saying why;
    once the database is back and the journal written, new games start again, and every game
    played meanwhile is in the database."""
    free = asyncio.Event()
    free.set()
    with postgres_server() as postgres:
        url = postgres.create_database("full")
        config = node_on(tmp_path / "node", url, recordsJournalBytes=16384)
        async with tavern_serve(config) as node, aiohttp.ClientSession() as session:
            await asyncio.to_thread(postgres.stop)
            played = 0
            while (answer := await create_or_refused(node))["type"] == "ready":
                assert played < 20, "the journal never filled"
                seats = [await join(node, answer["simulationId"]) for _ in range(2)]
                await ended_normally(
                    [asyncio.create_task(play_out(bot, info["team"], free)) for bot, info in seats]
                )
                played += 1
            assert answer["message"] == BotError.RECORDS_FULL
            assert "nearly fill its journal" in answer["reason"]
            status, body = await health(session, node, "/readyz")
            assert status == 503 and "nearly full" in body["why"][0], body
            await asyncio.to_thread(postgres.start)

            async def open_again() -> bool:
                return bool((await create_or_refused(node))["type"] == "ready")

            await eventually(open_again)
            assert (await health(session, node, "/readyz"))[0] == 200
        records = Records(url)
        listed = records.games(GameFilter(per_page=200))["games"]
        finished = [game for game in listed if game["status"] == "finished"]
        assert len(finished) == played >= 2
