"""The registered bots in the records (``bots``), and the node's copy of them kept fresh.

``tavern bots`` changes the table on its own connection; every node reads it again every
``ROSTER_REFRESH_S`` into its ``server.identity.Roster``, so that a bot added, rotated or
revoked counts on every node within that time, and the check of a key never waits for the
database. Only hashes of keys are ever read or written here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable

from server.identity import RegisteredBot, Roster
from server.records.backends import Backend, Connection, RecordsOutOfReach
from server.records.writer import Writer
from server.records.writes import Write, kind

log = logging.getLogger(__name__)

ROSTER_REFRESH_S = 1.0


def registered_bots(db: Connection) -> list[RegisteredBot]:
    return [
        RegisteredBot(row["name"], row["key_hash"], bool(row["banned"]))
        for row in db.execute("SELECT name, key_hash, banned FROM bots ORDER BY name")
    ]


def add_bot(db: Connection, bot: RegisteredBot) -> bool:
    """Keep a new bot; False if its name (in any case) is taken."""
    now = time.time()
    inserted = db.execute(
        "INSERT INTO bots (name, folded, key_hash, created_at, changed_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (bot.name, bot.name.casefold(), bot.key_hash, now, now),
    )
    return inserted.rowcount == 1


def set_key(db: Connection, name: str, key_hash: str) -> str | None:
    """Give the bot ``name`` (in any case) a new key hash ('' revokes its key); its name as
    registered, or None if there is no such bot."""
    row = db.execute("SELECT name FROM bots WHERE folded = ?", (name.casefold(),)).fetchone()
    if row is None:
        return None
    db.execute(
        "UPDATE bots SET key_hash = ?, changed_at = ? WHERE name = ?",
        (key_hash, time.time(), row["name"]),
    )
    return str(row["name"])


def keep_registered(records: Writer, bot: RegisteredBot) -> None:
    """A bot registered itself over TCP: kept with the batch (the first node to commit a
    name keeps it; another node's registration of it is gone at its next refresh)."""
    records.submit(Write("bot-registered", bot.name, bot.key_hash), urgent=True)


@kind("bot-registered")
def write_registered(backend: Backend, db: Connection, name: str, key_hash: str) -> None:
    add_bot(db, RegisteredBot(name, key_hash, False))


def current_ratings(db: Connection) -> dict[tuple[str, str], float]:
    """The current season's ratings: (game, bot) -> mu."""
    rows = db.execute(
        "SELECT game, bot, mu FROM ratings WHERE season = "
        "(SELECT name FROM ladder_seasons ORDER BY started_at DESC, name DESC LIMIT 1)"
    )
    return {(row["game"], row["bot"]): float(row["mu"]) for row in rows}


@contextlib.asynccontextmanager
async def roster_kept(
    read: Callable[[], tuple[list[RegisteredBot], dict[tuple[str, str], float]]],
    writer: Writer,
    roster: Roster,
) -> AsyncIterator[None]:
    """Fill ``roster`` from the records (``read``: the bots and the ratings), and refresh it
    until the block ends."""
    backend: Backend = writer.backend

    async def load() -> None:
        bots, ratings = await asyncio.to_thread(read)
        roster.replace(bots)
        roster.replace_ratings(ratings)

    await load()
    roster.keep = lambda bot: keep_registered(writer, bot)

    async def refresh() -> None:
        while True:
            await asyncio.sleep(ROSTER_REFRESH_S)
            try:
                await load()
            except RecordsOutOfReach:
                pass  # said once an outage (``server.records.queries.ReadOutage``)
            except backend.errors as error:
                log.warning("records: reading the registered bots failed: %s", error)

    task = asyncio.create_task(refresh(), name="roster-refresh")
    try:
        yield
    finally:
        roster.keep = None
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
