"""The registered bots in the records (``bots``), and the node's copy of them kept fresh.

``tavern bots`` changes the table on its own connection; every node reads what changed every
``ROSTER_REFRESH_S`` into its ``server.identity.Roster``, so that a bot added, rotated, revoked
or banned counts on every node within that time, and the check of a key never waits for the
database. What changed is what a node has not read yet: each change of a bot or of a rating is
numbered (``records.ladder.next_change``), the numbers commit in order, and a node asks only for
the rows numbered above the last it has (an index each): with 200,000 bots a refresh reads the
few that changed, not the table. Only hashes of keys are ever read or written here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from server.identity import RegisteredBot, Roster
from server.records.backends import Backend, Connection, RecordsOutOfReach
from server.records.ladder import current_season, next_change
from server.records.writer import Writer
from server.records.writes import Write, kind

log = logging.getLogger(__name__)

ROSTER_REFRESH_S = 1.0


@dataclass(frozen=True, slots=True)
class RosterRead:
    """How far a node has read: the last change number of ``bots`` and of ``ratings`` it has
    (-1: none yet), and the season its ratings are of."""

    bots: int = -1
    ratings: int = -1
    season: str | None = None


@dataclass(frozen=True, slots=True)
class RosterChanges:
    """What changed since a ``RosterRead``, and how far that goes."""

    bots: list[RegisteredBot]
    ratings: dict[tuple[str, str], float]  # (game, bot) -> mu, in the current season
    new_season: bool  # ``ratings`` is then the whole table of a season not read before
    read: RosterRead


def roster_changes(db: Connection, since: RosterRead) -> RosterChanges:
    """The bots and the current season's ratings changed since ``since`` (all at first)."""
    season = current_season(db)
    new_season = season != since.season
    ratings_after = -1 if new_season else since.ratings
    bots = db.execute(
        "SELECT name, key_hash, banned, hosting_key_hash, change_number FROM bots "
        "WHERE change_number > ?",
        (since.bots,),
    ).fetchall()
    ratings = db.execute(
        "SELECT game, bot, mu, change_number FROM ratings WHERE season = ? AND change_number > ?",
        (season, ratings_after),
    ).fetchall()
    return RosterChanges(
        [_bot(row) for row in bots],
        {(row["game"], row["bot"]): float(row["mu"]) for row in ratings},
        new_season,
        RosterRead(
            max((int(row["change_number"]) for row in bots), default=since.bots),
            max((int(row["change_number"]) for row in ratings), default=ratings_after),
            season,
        ),
    )


def registered_bots(db: Connection) -> list[RegisteredBot]:
    """Every registered bot (``tavern bots add``'s look-alike check)."""
    return [
        _bot(row) for row in db.execute("SELECT name, key_hash, banned, hosting_key_hash FROM bots")
    ]


def _bot(row: Any) -> RegisteredBot:
    hosting = str(row["hosting_key_hash"] or "").split()
    hashes = tuple(part.split("=", 1)[1] for part in hosting if "=" in part)
    return RegisteredBot(row["name"], row["key_hash"], bool(row["banned"]), hashes)


MAX_HOSTING_KEYS = 16  # workers' keys kept a bot; past it the oldest goes (a worker killed)


def set_hosting_key(db: Connection, name: str, worker: str, key_hash: str) -> bool:
    """The hash of the key the worker ``worker`` plays the hosted bot ``name`` (as registered)
    with ('' for none), beside other workers' (``bots.hosting_key_hash``: ``WORKER=HASH`` each,
    space-separated); False if there is no such bot. In a transaction: the change number taken
    first holds every other such transaction back until this one ends."""
    change = next_change(db)
    row = db.execute("SELECT hosting_key_hash FROM bots WHERE name = ?", (name,)).fetchone()
    if row is None:
        return False
    keys = dict(part.split("=", 1) for part in str(row[0] or "").split() if "=" in part)
    keys.pop(worker, None)
    if key_hash:
        keys[worker] = key_hash
    kept = list(keys.items())[-MAX_HOSTING_KEYS:]
    db.execute(
        "UPDATE bots SET hosting_key_hash = ?, change_number = ? WHERE name = ?",
        (" ".join(f"{owner}={value}" for owner, value in kept), change, name),
    )
    return True


def add_bot(db: Connection, bot: RegisteredBot) -> bool:
    """Keep a new bot; False if its name (in any case) is taken. In a transaction."""
    now = time.time()
    inserted = db.execute(
        "INSERT INTO bots (name, folded, key_hash, created_at, changed_at, change_number) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (bot.name, bot.name.casefold(), bot.key_hash, now, now, next_change(db)),
    )
    return inserted.rowcount == 1


def set_key(db: Connection, name: str, key_hash: str) -> str | None:
    """Give the bot ``name`` (in any case) a new key hash ('' revokes its key); its name as
    registered, or None if there is no such bot. In a transaction."""
    row = db.execute("SELECT name FROM bots WHERE folded = ?", (name.casefold(),)).fetchone()
    if row is None:
        return None
    db.execute(
        "UPDATE bots SET key_hash = ?, changed_at = ?, change_number = ? WHERE name = ?",
        (key_hash, time.time(), next_change(db), row["name"]),
    )
    return str(row["name"])


def keep_registered(records: Writer, bot: RegisteredBot) -> None:
    """A bot registered itself over TCP: kept with the batch (the first node to commit a
    name keeps it; another node's registration of it is replaced at its next refresh by the
    row that was kept)."""
    records.submit(Write("bot-registered", bot.name, bot.key_hash), urgent=True)


@kind("bot-registered")
def write_registered(backend: Backend, db: Connection, name: str, key_hash: str) -> None:
    add_bot(db, RegisteredBot(name, key_hash, False))


@contextlib.asynccontextmanager
async def roster_kept(
    read: Callable[[RosterRead], RosterChanges], writer: Writer, roster: Roster
) -> AsyncIterator[None]:
    """Fill ``roster`` from the records (``read``: what changed since a ``RosterRead``), and
    keep it up to date until the block ends."""
    backend: Backend = writer.backend
    since = RosterRead()

    async def load() -> None:
        nonlocal since
        changes = await asyncio.to_thread(read, since)
        roster.update(changes.bots)
        if changes.new_season:
            roster.replace_ratings(changes.ratings)
        else:
            roster.update_ratings(changes.ratings)
        since = changes.read

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
