"""The node's roster read by what changed (issue 30, item 6): every node used to read the whole
`bots` table (and the season's ratings) every second, which at 200,000 bots cost each node a
third of a core. Now each change is numbered and a node reads only the rows above the last it
has: a change made by `tavern bots` / `tavern ladder` (add, rotate, revoke, ban, a new season)
or by a rated game counts on a running node within its refresh, and each refresh returns only
the rows that changed. On SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import pytest

from server.arena import Arena
from server.identity import RegisteredBot
from server.records import Records, recording
from server.records import identities as roster_records
from server.records.backends import transaction
from server.records.identities import RosterChanges, RosterRead, add_bot, roster_kept
from server.records.ladder import rate
from server.tcp import TcpServer
from tests.conftest import test_config
from tests.test_command_line import tavern
from tests.test_identity import added, asked

REFRESH_S = 0.05
CROWD = 300  # bots registered before the node starts: never read again


@contextlib.asynccontextmanager
async def node_reading(
    database: str, reads: list[RosterChanges]
) -> AsyncIterator[tuple[Arena, int]]:
    """A node on these records whose every roster read is kept in ``reads``."""
    arena = Arena(test_config())
    async with recording(arena.listeners, database) as records:

        def read(since: RosterRead) -> RosterChanges:
            changes = records.roster_changes(since)
            reads.append(changes)
            return changes

        async with (
            roster_kept(read, records, arena.roster),
            arena.running(),
            TcpServer(arena).serving() as tcp,
        ):
            assert tcp.port is not None
            yield arena, tcp.port


async def changed(reads: list[RosterChanges], first: int, check: Callable[[], bool]) -> list[str]:
    """Wait for ``check`` (a few refreshes at most); the bots the reads from ``first`` on
    returned."""
    async with asyncio.timeout(5):
        while not check():
            await asyncio.sleep(REFRESH_S / 2)
    await asyncio.sleep(REFRESH_S * 3)  # refreshes after it: they must return nothing
    return [bot.name for changes in reads[first:] for bot in changes.bots]


def registered(arena: Arena, name: str) -> RegisteredBot:
    bot = arena.roster.get(name)
    assert bot is not None
    return bot


async def command(*arguments: str) -> str:
    run = await asyncio.to_thread(tavern, *arguments)
    assert run.returncode == 0, run
    return run.stdout


async def test_a_running_node_sees_each_change_and_reads_only_what_changed(
    records_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(roster_records, "ROSTER_REFRESH_S", REFRESH_S)
    database = ["--database", records_database]
    key = added(records_database, "Grimli")
    added(records_database, "Ugluk")
    records = Records(records_database)
    records.open_to_read()
    db = records.backend.connect()
    try:
        with transaction(db):
            for number in range(CROWD):
                assert add_bot(db, RegisteredBot(f"crowd{number}", "scrypt$0"))
    finally:
        db.close()
    reads: list[RosterChanges] = []
    async with node_reading(records_database, reads) as (arena, port):
        roster = arena.roster
        assert len(reads[0].bots) == CROWD + 2  # the first read: every bot
        await asyncio.sleep(REFRESH_S * 3)
        assert all(not r.bots and not r.ratings and not r.new_season for r in reads[1:])
        join = {"type": "join-simulation", "game": "thud", "bot": "Grimli"}
        assert (await asked(port, {**join, "key": key}))["type"] == "game-info"

        hashed, first = registered(arena, "Grimli"), len(reads)
        rotated = (await command("bots", "rotate", "Grimli", *database)).splitlines()[1]
        assert await changed(reads, first, lambda: roster.get("Grimli") is not hashed) == ["Grimli"]
        assert (await asked(port, {**join, "key": key}))["message"] == "Invalid bot key"
        assert (await asked(port, {**join, "key": rotated}))["type"] == "game-info"

        first = len(reads)
        await command("bots", "revoke", "grimli", *database)
        assert await changed(reads, first, lambda: registered(arena, "Grimli").key_hash == "") == [
            "Grimli"
        ]
        assert (await asked(port, {**join, "key": rotated}))["message"] == "Invalid bot key"

        first = len(reads)
        await command("ladder", "ban", "Ugluk", *database)
        assert await changed(reads, first, lambda: registered(arena, "Ugluk").banned) == ["Ugluk"]

        first = len(reads)
        new = (await command("bots", "add", "Newcomer", *database)).splitlines()[1]
        added_now = await changed(reads, first, lambda: roster.get("Newcomer") is not None)
        assert added_now == ["Newcomer"]
        newcomer: dict[str, object] = {"type": "join-simulation", "game": "thud", "bot": "Newcomer"}
        newcomer["key"] = new
        assert (await asked(port, newcomer))["type"] == "game-info"

        # A rated game moves two ratings: those two rows are read, nothing else.
        first = len(reads)
        db = records.backend.connect()
        try:
            with transaction(db):
                db.execute(
                    "INSERT INTO games (id, game, seed, settings, status, started_at, rated) "
                    "VALUES ('rated01', 'thud', 1, '{}', 'finished', 0, 1)"
                )
                assert rate(db, "rated01", "thud", ("Ugluk", "Newcomer"), 0)
        finally:
            db.close()
        rated = await changed(reads, first, lambda: roster.rating("thud", "Ugluk") is not None)
        assert rated == []
        assert sorted(pair for r in reads[first:] for pair in r.ratings) == [
            ("thud", "Newcomer"),
            ("thud", "Ugluk"),
        ]
        first = len(reads)
        await command("ladder", "season", "spring", *database)  # every bot afresh
        await changed(reads, first, lambda: roster.rating("thud", "Ugluk") is None)
        assert any(r.new_season and not r.ratings for r in reads[first:])
