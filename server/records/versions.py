"""Hosted bots' versions in the records (``bot_versions``): kept on a connection of their own,
in one transaction each (an upload is rare, and its author waits for its number), read by the
pages and by the workers that play them.

A bot's first version is active at once; a later one is a candidate until it is made active
(by its owner, forcing it, or once it has shown itself better: issue 33's SPRT gate), which
retires the version active before it. The same files and run command uploaded again are the
version they already are.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import orjson

from server.bot_versions import Version
from server.games.base import JsonObject
from server.records.backends import Backend, Connection, transacted
from server.records.ladder import current_season, next_change

ACTIVE, CANDIDATE, RETIRED = "active", "candidate", "retired"


@dataclass(frozen=True, slots=True)
class Stored:
    """A version as the records keep it: its bot (as registered), number and state, and
    whether this upload added it."""

    bot: str
    number: int
    state: str
    added: bool


def store_version(
    backend: Backend, bot: str, version: Version, activate: bool, games: tuple[str, ...] = ()
) -> Stored | None:
    """Keep an uploaded version of the bot ``bot`` (in any case); None if there is no such
    bot. ``activate``: it becomes the active one (else only if the bot has none). ``games``:
    those it plays (none named: every game); the same files uploaded again keep the games
    they were first uploaded with."""
    with transacted(backend) as db:
        return _store(db, bot, version, activate, games)


def plays(games: str, game: str) -> bool:
    """Does a version of these ``games`` (as kept: comma-separated, '' for all) play ``game``?"""
    return not games or game in games.split(",")


def _store(
    db: Connection, bot: str, version: Version, activate: bool, games: tuple[str, ...]
) -> Stored | None:
    row = db.execute("SELECT name FROM bots WHERE folded = ?", (bot.casefold(),)).fetchone()
    if row is None:
        return None
    name = str(row["name"])
    known = db.execute(
        "SELECT number, state FROM bot_versions WHERE bot = ? AND content_hash = ?",
        (name, version.content_hash),
    ).fetchone()
    active = db.execute(
        "SELECT number FROM bot_versions WHERE bot = ? AND state = ?", (name, ACTIVE)
    ).fetchone()
    if known is not None:
        number, added = int(known["number"]), False
    else:
        last = db.execute(
            "SELECT MAX(number) AS last FROM bot_versions WHERE bot = ?", (name,)
        ).fetchone()
        number, added = int(last["last"] or 0) + 1, True
        db.execute(
            "INSERT INTO bot_versions (bot, number, content_hash, run, archive, archive_bytes, "
            "unpacked_bytes, files, uploaded_at, state, games) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                name, number, version.content_hash, version.run, version.archive,
                len(version.archive), version.unpacked_bytes, version.files, time.time(),
                CANDIDATE, ",".join(games),
            ),
        )  # fmt: skip
    if activate or active is None:
        _activate(db, name, number)
        return Stored(name, number, ACTIVE, added)
    state = db.execute(
        "SELECT state FROM bot_versions WHERE bot = ? AND number = ?", (name, number)
    ).fetchone()["state"]
    return Stored(name, number, str(state), added)


def versions(db: Connection, bot: str) -> list[JsonObject]:
    """A bot's versions, newest first, without their files."""
    rows = db.execute(
        "SELECT number, content_hash, run, archive_bytes, unpacked_bytes, files, uploaded_at, "
        "state, sprt, games FROM bot_versions WHERE bot = (SELECT name FROM bots WHERE folded = ?) "
        "ORDER BY number DESC",
        (bot.casefold(),),
    )
    return [
        {
            "number": row["number"],
            "hash": row["content_hash"],
            "run": row["run"],
            "archiveBytes": row["archive_bytes"],
            "unpackedBytes": row["unpacked_bytes"],
            "files": row["files"],
            "uploadedAt": row["uploaded_at"],
            "state": row["state"],
            "sprt": None if row["sprt"] is None else orjson.loads(row["sprt"]),
            "games": str(row["games"]).split(",") if row["games"] else [],
        }
        for row in rows
    ]


def version_archive(db: Connection, content_hash: str) -> tuple[bytes, str] | None:
    """A version's normalized archive and run command, by its hash (what a worker fetches)."""
    row = db.execute(
        "SELECT archive, run FROM bot_versions WHERE content_hash = ? LIMIT 1", (content_hash,)
    ).fetchone()
    return None if row is None else (bytes(row["archive"]), str(row["run"]))


def version_by_number(db: Connection, bot: str, number: int) -> tuple[str, str] | None:
    """The hash and run command of a bot's version ``number``, or None."""
    row = db.execute(
        "SELECT content_hash, run FROM bot_versions WHERE number = ? AND "
        "bot = (SELECT name FROM bots WHERE folded = ?)",
        (number, bot.casefold()),
    ).fetchone()
    return None if row is None else (str(row["content_hash"]), str(row["run"]))


def keep_trial(
    backend: Backend,
    bot: str,
    number: int,
    sprt: JsonObject,
    activate: bool,
    game: str,
    mu_change: float,
) -> None:
    """A candidate version's SPRT match kept with it; ``activate``: it won, and becomes the
    bot's active version (the one active before retired), the bot's rating in ``game`` this
    season moved by ``mu_change`` (a bot not rated there yet is not)."""
    with transacted(backend) as db:
        row = db.execute("SELECT name FROM bots WHERE folded = ?", (bot.casefold(),))
        name = str(row.fetchone()["name"])
        db.execute(
            "UPDATE bot_versions SET sprt = ? WHERE bot = ? AND number = ?",
            (orjson.dumps(sprt).decode(), name, number),
        )
        if activate:
            _activate(db, name, number)
            db.execute(
                "UPDATE ratings SET mu = mu + ?, change_number = ? "
                "WHERE game = ? AND season = ? AND bot = ?",
                (mu_change, next_change(db), game, current_season(db), name),
            )


def claim_trial(db: Connection, game: str, now: float, stale_s: float) -> tuple[str, int] | None:
    """A candidate version to try against its bot's active one (``tavern worker --hosted``
    plays the trials of new versions), taken for this worker: the oldest upload not tried yet
    that plays ``game``, whose bot has an active version and is not banned, that no worker took,
    or took more than ``stale_s`` ago (a worker lost mid-trial); None if there is none. One
    statement that writes at once (no read first that SQLite could not then turn into a
    write), whose conditions are checked again on the row it takes (PostgreSQL does so for a
    row another worker took meanwhile): only one worker takes a version."""
    free = "v.sprt IS NULL AND (v.trial_claimed_at IS NULL OR v.trial_claimed_at < ?) AND "
    free += "(v.games = '' OR ',' || v.games || ',' LIKE ?)"  # it plays the game
    free_values = (now - stale_s, f"%,{game},%")
    row = db.execute(
        f"UPDATE bot_versions AS v SET trial_claimed_at = ? WHERE v.state = ? AND {free} "
        "AND (v.bot, v.number) IN (SELECT v.bot, v.number FROM bot_versions v "
        f"JOIN bots b ON b.name = v.bot WHERE v.state = ? AND b.banned = 0 AND {free} "
        "AND EXISTS (SELECT 1 FROM bot_versions a WHERE a.bot = v.bot AND a.state = ?) "
        "ORDER BY v.uploaded_at LIMIT 1) RETURNING bot, number",
        (now, CANDIDATE, *free_values, CANDIDATE, *free_values, ACTIVE),
    ).fetchone()
    return None if row is None else (str(row["bot"]), int(row["number"]))


def _activate(db: Connection, bot: str, number: int) -> None:
    """The bot's version ``number`` active; the one active before, retired."""
    db.execute(
        "UPDATE bot_versions SET state = ? WHERE bot = ? AND state = ?", (RETIRED, bot, ACTIVE)
    )
    db.execute(
        "UPDATE bot_versions SET state = ? WHERE bot = ? AND number = ?", (ACTIVE, bot, number)
    )


def active_hosted(db: Connection, game: str) -> list[tuple[str, str, str]]:
    """Every bot with an active version that plays ``game``, not banned: its name, the
    version's hash and run command (what a ``tavern worker --hosted GAME`` plays)."""
    rows = db.execute(
        "SELECT v.bot, v.content_hash, v.run, v.games FROM bot_versions v "
        "JOIN bots b ON b.name = v.bot WHERE v.state = ? AND b.banned = 0 ORDER BY v.bot",
        (ACTIVE,),
    )
    return [
        (str(row["bot"]), str(row["content_hash"]), str(row["run"]))
        for row in rows
        if plays(str(row["games"]), game)
    ]


def active_version(db: Connection, bot: str) -> tuple[str, str] | None:
    """The hash and run command of a bot's active version, or None."""
    row = db.execute(
        "SELECT content_hash, run FROM bot_versions WHERE state = ? AND "
        "bot = (SELECT name FROM bots WHERE folded = ?)",
        (ACTIVE, bot.casefold()),
    ).fetchone()
    return None if row is None else (str(row["content_hash"]), str(row["run"]))
