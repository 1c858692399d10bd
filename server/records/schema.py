"""The records' schema and its migrations, in SQLite's SQL and PostgreSQL's, and SQLite's own
connections, version and owner locks.

The migrations are written once, in SQLite's SQL; ``POSTGRES_MIGRATIONS`` are the same steps
in PostgreSQL's (types spelled its way, and the one data conversion that needs JSON functions
written again). Both backends therefore have the same schema versions; ``server.records.
backends`` holds what else differs (placeholders, the version's place, liveness of owners).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import socket
import sqlite3
from pathlib import Path

MIGRATIONS: tuple[str, ...] = (
    # 0 -> 1: games, their seats and their turns.
    """
    CREATE TABLE games (
        id TEXT PRIMARY KEY,
        game TEXT NOT NULL,
        seed INTEGER NOT NULL,
        settings TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('playing', 'finished', 'unfinished')),
        started_at REAL NOT NULL,
        finished_at REAL,
        reason TEXT,
        winner TEXT,
        score TEXT,
        turn_count INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX games_by_start ON games (started_at);
    CREATE TABLE seats (
        game_id TEXT NOT NULL REFERENCES games (id),
        seat INTEGER NOT NULL,
        seat_name TEXT NOT NULL,
        nick TEXT NOT NULL,
        names TEXT NOT NULL,
        kind TEXT NOT NULL,
        reply_mean_ms REAL,
        reply_worst_ms REAL,
        replies INTEGER NOT NULL DEFAULT 0,
        errors INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (game_id, seat)
    );
    CREATE INDEX seats_by_nick ON seats (nick);
    CREATE TABLE turns (
        game_id TEXT NOT NULL REFERENCES games (id),
        number INTEGER NOT NULL,
        seat INTEGER NOT NULL,
        action TEXT NOT NULL,
        timed_out INTEGER NOT NULL,
        PRIMARY KEY (game_id, number)
    ) WITHOUT ROWID;
    """,
    # 1 -> 2: tournaments, the bot behind each seat, and each bot's stderr.
    """
    CREATE TABLE tournaments (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        game TEXT NOT NULL,
        spec TEXT NOT NULL,
        created_at REAL NOT NULL,
        finished_at REAL
    );
    ALTER TABLE games ADD COLUMN tournament_id TEXT REFERENCES tournaments (id);
    ALTER TABLE games ADD COLUMN pairing TEXT;
    ALTER TABLE seats ADD COLUMN bot TEXT;
    ALTER TABLE seats ADD COLUMN stderr TEXT;
    ALTER TABLE seats ADD COLUMN last_error TEXT;
    CREATE INDEX games_by_tournament ON games (tournament_id);
    CREATE INDEX seats_by_bot ON seats (bot);
    """,
    # 2 -> 3: the games of the Thud HTTP API (visor/thud_api): which game each game token
    # plays and which player tokens move in it. Only SHA-256 digests of the tokens are kept.
    """
    CREATE TABLE thud_api_games (
        token_digest TEXT PRIMARY KEY,
        game_id TEXT NOT NULL,
        player_one_digest TEXT NOT NULL,
        player_two_digest TEXT NOT NULL,
        player_one TEXT NOT NULL,
        player_two TEXT NOT NULL,
        created_at REAL NOT NULL,
        saved_at REAL
    );
    CREATE INDEX thud_api_games_by_game ON thud_api_games (game_id);
    """,
    # 3 -> 4: which process plays each game (only it, or a process that finds it gone, may mark
    # the game unfinished), and how each seat's bot process ended, when a tournament ran it.
    """
    ALTER TABLE games ADD COLUMN owner TEXT;
    ALTER TABLE seats ADD COLUMN exit TEXT;
    CREATE INDEX games_by_owner ON games (owner) WHERE status = 'playing';
    """,
    # 4 -> 5: a game's turns in chunks, one row per game per batch the writer commits, instead
    # of one row per turn: ``turns`` is the JSON array of the chunk's turns from ``first_number``
    # on, each [seat, action, timed out]. A rowid table, so that a batch's chunks are appended
    # together; the seats count their timed-out turns for the league tables. Existing turns
    # become one chunk per run of consecutive numbers; an action that is not JSON is kept as a
    # string (its replay then fails as before, naming the turn).
    """
    CREATE TABLE turn_chunks (
        game_id TEXT NOT NULL REFERENCES games (id),
        first_number INTEGER NOT NULL,
        count INTEGER NOT NULL,
        turns TEXT NOT NULL,
        UNIQUE (game_id, first_number)
    );
    ALTER TABLE seats ADD COLUMN timed_out_turns INTEGER NOT NULL DEFAULT 0;
    UPDATE seats SET timed_out_turns = (
        SELECT COUNT(*) FROM turns t
        WHERE t.game_id = seats.game_id AND t.seat = seats.seat AND t.timed_out
    );
    INSERT INTO turn_chunks (game_id, first_number, count, turns)
    SELECT game_id, number, count, turns FROM (
        SELECT game_id, number,
            first_value(number) OVER run AS first_number,
            count(*) OVER run AS count,
            json_group_array(json(turn)) OVER run AS turns
        FROM (
            SELECT game_id, number,
                number - row_number() OVER (PARTITION BY game_id ORDER BY number) AS run,
                json_array(
                    seat,
                    CASE WHEN json_valid(action) THEN json(action) ELSE action END,
                    json(CASE WHEN timed_out THEN 'true' ELSE 'false' END)
                ) AS turn
            FROM turns
        )
        WINDOW run AS (
            PARTITION BY game_id, run ORDER BY number
            ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
        )
    ) WHERE number = first_number;
    DROP TABLE turns;
    """,
    # 5 -> 6: the processes (nodes) that opened the records to write: each gets a number, and
    # on a database shared by several machines its games' ids end with it, so that no two
    # nodes give a game the same id.
    """
    CREATE TABLE nodes (
        number INTEGER PRIMARY KEY AUTOINCREMENT,
        owner TEXT NOT NULL UNIQUE,
        host TEXT NOT NULL,
        started_at REAL NOT NULL
    );
    """,
    # 6 -> 7: the ladder. Registered bots (server.identity): each name's key, only as a salted
    # scrypt hash with its parameters ('' once revoked); ``folded`` keeps two names from
    # differing only by case. Ratings per game and season, and each rated game's change to
    # them (its row makes rating a game twice impossible); seasons, the latest the current.
    """
    CREATE TABLE bots (
        name TEXT PRIMARY KEY,
        folded TEXT NOT NULL UNIQUE,
        key_hash TEXT NOT NULL,
        created_at REAL NOT NULL,
        changed_at REAL NOT NULL,
        banned INTEGER NOT NULL DEFAULT 0
    );
    ALTER TABLE games ADD COLUMN rated INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE ladder_seasons (
        name TEXT PRIMARY KEY,
        started_at REAL NOT NULL
    );
    INSERT INTO ladder_seasons (name, started_at) VALUES ('1', 0);
    CREATE TABLE ratings (
        game TEXT NOT NULL,
        season TEXT NOT NULL,
        bot TEXT NOT NULL,
        mu REAL NOT NULL,
        sigma REAL NOT NULL,
        games INTEGER NOT NULL,
        wins INTEGER NOT NULL,
        losses INTEGER NOT NULL,
        draws INTEGER NOT NULL,
        last_game_id TEXT NOT NULL,
        last_played_at REAL NOT NULL,
        PRIMARY KEY (game, season, bot)
    );
    CREATE TABLE rating_history (
        game_id TEXT NOT NULL REFERENCES games (id),
        seat INTEGER NOT NULL,
        bot TEXT NOT NULL,
        opponent TEXT NOT NULL,
        game TEXT NOT NULL,
        season TEXT NOT NULL,
        result TEXT NOT NULL CHECK (result IN ('win', 'loss', 'draw')),
        mu_before REAL NOT NULL,
        sigma_before REAL NOT NULL,
        mu REAL NOT NULL,
        sigma REAL NOT NULL,
        rated_at REAL NOT NULL,
        PRIMARY KEY (game_id, seat)
    );
    CREATE INDEX rating_history_by_bot ON rating_history (bot, rated_at);
    """,
    # 7 -> 8: the roster read by what changed (server.records.identities). Each change of a bot
    # or of a rating takes the next number of ``roster_changes`` in its own transaction, whose
    # lock on that one row keeps the numbers in the order the changes commit; a node reads only
    # the rows numbered above the last it has. Rows from before are numbered 0.
    """
    CREATE TABLE roster_changes (number INTEGER NOT NULL);
    INSERT INTO roster_changes (number) VALUES (0);
    ALTER TABLE bots ADD COLUMN change_number INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX bots_by_change ON bots (change_number);
    ALTER TABLE ratings ADD COLUMN change_number INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX ratings_by_change ON ratings (season, change_number);
    """,
    # 8 -> 9: the games of a tournament its queue gave up on (server.tournament_queue's dead
    # letters: each stopped every worker that took it, or its entry did not read), with why:
    # the league lists them as the arena's faults, which score no bot.
    """
    CREATE TABLE tournament_faults (
        tournament_id TEXT NOT NULL REFERENCES tournaments (id),
        pairing TEXT NOT NULL,
        number INTEGER NOT NULL,
        reason TEXT NOT NULL,
        recorded_at REAL NOT NULL,
        PRIMARY KEY (tournament_id, pairing)
    );
    """,
    # 9 -> 10: hosted bots' versions (server.bot_versions): each its normalized archive, its
    # run command and their hash; one version of a bot is active (what it plays), the others
    # candidates (waiting to be tried) or retired.
    """
    CREATE TABLE bot_versions (
        bot TEXT NOT NULL REFERENCES bots (name),
        number INTEGER NOT NULL,
        content_hash TEXT NOT NULL,
        run TEXT NOT NULL,
        archive BLOB NOT NULL,
        archive_bytes INTEGER NOT NULL,
        unpacked_bytes INTEGER NOT NULL,
        files INTEGER NOT NULL,
        uploaded_at REAL NOT NULL,
        state TEXT NOT NULL,
        PRIMARY KEY (bot, number),
        UNIQUE (bot, content_hash)
    );
    CREATE INDEX bot_versions_by_hash ON bot_versions (content_hash);
    """,
    # 10 -> 11: the hash of the key a ``tavern worker --hosted`` plays a hosted bot with (its
    # owner's key stays the owner's), read into every node's roster as the key is.
    """
    ALTER TABLE bots ADD COLUMN hosting_key_hash TEXT NOT NULL DEFAULT '';
    """,
    # 11 -> 12: a candidate version's SPRT match against the active one (``tavern bots try``),
    # as JSON: its games, score, Elo estimate, LLR and verdict.
    """
    ALTER TABLE bot_versions ADD COLUMN sprt TEXT;
    """,
    # 12 -> 13: when a hosted worker took a candidate version to try (its SPRT gate played on
    # the workers), so that no other worker tries it too; and the games a version plays
    # (comma-separated; '' for every game), which the workers seek for it.
    """
    ALTER TABLE bot_versions ADD COLUMN trial_claimed_at REAL;
    ALTER TABLE bot_versions ADD COLUMN games TEXT NOT NULL DEFAULT '';
    """,
)


def _postgres_types(sql: str) -> str:
    """SQLite's column types as PostgreSQL spells them: 64-bit integers (seeds pass 2**31) and
    doubles (timestamps), identity columns, no ``WITHOUT ROWID``."""
    sql = sql.replace(
        "INTEGER PRIMARY KEY AUTOINCREMENT", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
    )
    sql = re.sub(r"\bINTEGER\b", "BIGINT", sql)
    sql = re.sub(r"\bREAL\b", "DOUBLE PRECISION", sql)
    sql = re.sub(r"\bBLOB\b", "BYTEA", sql)
    return sql.replace(") WITHOUT ROWID", ")")


# 4 -> 5 in PostgreSQL: the same chunks, built with its JSON functions. PostgreSQL 15 has no
# test of valid JSON, so a temporary function tries the cast (an action that is not JSON is
# kept as a string, as in SQLite).
_POSTGRES_CHUNKS = """
    CREATE TABLE turn_chunks (
        game_id TEXT NOT NULL REFERENCES games (id),
        first_number BIGINT NOT NULL,
        count BIGINT NOT NULL,
        turns TEXT NOT NULL,
        UNIQUE (game_id, first_number)
    );
    ALTER TABLE seats ADD COLUMN timed_out_turns BIGINT NOT NULL DEFAULT 0;
    UPDATE seats SET timed_out_turns = (
        SELECT COUNT(*) FROM turns t
        WHERE t.game_id = seats.game_id AND t.seat = seats.seat AND t.timed_out <> 0
    );
    CREATE FUNCTION pg_temp.json_or_string(action TEXT) RETURNS json LANGUAGE plpgsql AS $$
    BEGIN
        RETURN action::json;
    EXCEPTION WHEN invalid_text_representation THEN
        RETURN to_json(action);
    END $$;
    INSERT INTO turn_chunks (game_id, first_number, count, turns)
    SELECT game_id, min(number), count(*),
        json_agg(json_build_array(seat, pg_temp.json_or_string(action), timed_out <> 0)
            ORDER BY number)::text
    FROM (
        SELECT game_id, number, seat, action, timed_out,
            number - row_number() OVER (PARTITION BY game_id ORDER BY number) AS run
        FROM turns
    ) numbered
    GROUP BY game_id, run;
    DROP FUNCTION pg_temp.json_or_string(TEXT);
    DROP TABLE turns;
"""
POSTGRES_MIGRATIONS: tuple[str, ...] = (
    *(_postgres_types(migration) for migration in MIGRATIONS[:4]),
    _POSTGRES_CHUNKS,
    *(_postgres_types(migration) for migration in MIGRATIONS[5:]),
)
SCHEMA_VERSION = len(MIGRATIONS)
# The number of the last recorded turn of the row of ``games`` at hand (NULL before its first).
# A game's ``turn_count`` is written when it ends or is marked unfinished; while it is played,
# this is its count, so that recording a turn never touches the game's row.
LAST_TURN = (
    "(SELECT c.first_number + c.count - 1 FROM turn_chunks c WHERE c.game_id = games.id "
    "ORDER BY c.first_number DESC LIMIT 1)"
)
# A batch's chunks in one statement: their rows as a JSON array of [game id, first number,
# count, offset, length], their turns one after the other in a blob, each row's at its offset.
# One statement, whatever the number of chunks: the writer takes the interpreter lock back
# after each one, and waits for it while the event loop is busy. The turns are never parsed.
INSERT_CHUNKS = (
    "INSERT INTO turn_chunks (game_id, first_number, count, turns) "
    "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), "
    "json_extract(value, '$[2]'), "
    "CAST(substr(?2, json_extract(value, '$[3]'), json_extract(value, '$[4]')) AS TEXT) "
    "FROM json_each(?1) WHERE true "
    # Written again only for a game id recorded before (restored from an older record, say):
    # the newer turns win, as they did when each turn was a row.
    "ON CONFLICT (game_id, first_number) DO UPDATE SET count = excluded.count, "
    "turns = excluded.turns"
)
OWNER_ID = re.compile(r"[A-Za-z0-9._-]{1,200}")
MIN_SQLITE = (3, 33, 0)  # window and JSON functions (migration 5), 32,766 parameters a statement


def connect(path: Path) -> sqlite3.Connection:
    if sqlite3.sqlite_version_info < MIN_SQLITE:
        wanted = ".".join(map(str, MIN_SQLITE))
        raise RuntimeError(f"records need SQLite {wanted} or later, not {sqlite3.sqlite_version}")
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.execute("PRAGMA foreign_keys=ON")
    connection.execute("PRAGMA busy_timeout=5000")
    connection.row_factory = sqlite3.Row
    return connection


def too_new(found: int) -> RuntimeError:
    return RuntimeError(
        f"the records file has schema version {found}, newer than this server's "
        f"{SCHEMA_VERSION}: upgrade the server"
    )


def migrate(connection: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Bring the file up to ``target`` (``SCHEMA_VERSION``); returns the version it had.

    Each step reads the version again under SQLite's write lock, so processes that open one new
    file together (a worker and a tournament, say) migrate one after the other, the later ones
    finding nothing to do."""
    found: int = connection.execute("PRAGMA user_version").fetchone()[0]
    if found > SCHEMA_VERSION:
        raise too_new(found)
    while True:
        connection.execute("BEGIN IMMEDIATE")
        try:
            version: int = connection.execute("PRAGMA user_version").fetchone()[0]
            if version >= target:
                connection.execute("COMMIT")
                return found
            for statement in MIGRATIONS[version].split(";"):
                if statement.strip():
                    connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {version + 1}")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")


class OwnerLocks:
    """Which processes that write games to one records file are still running.

    Each holds an exclusive ``flock`` on a file named after its owner id, in a folder beside
    the records file; the kernel releases it when the process ends, however it ends (kill -9
    included), so a lock that can be taken is the lock of a process that is gone.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._held: tuple[str, int] | None = None

    def claim(self) -> str:
        """A new owner id for this process, locked until ``release``."""
        self.folder.mkdir(parents=True, exist_ok=True)
        owner = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
        descriptor = os.open(self.folder / owner, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._held = (owner, descriptor)
        return owner

    def is_alive(self, owner: str, db: object = None) -> bool:
        """Does the process of this owner id still run? (``db``: for PostgreSQL's locks.)"""
        if not OWNER_ID.fullmatch(owner):
            return False
        try:
            descriptor = os.open(self.folder / owner, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(descriptor)  # also releases the lock, if it was taken
        return False

    def renew(self) -> None:
        """A file's lock lasts as long as the process."""

    def forget(self, owner: str) -> None:
        if OWNER_ID.fullmatch(owner):
            with contextlib.suppress(FileNotFoundError):
                (self.folder / owner).unlink()

    def release(self) -> None:
        if self._held is not None:
            owner, descriptor = self._held
            self.forget(owner)
            os.close(descriptor)
            self._held = None
