"""Every game the arena plays, kept in SQLite: who played, every turn, the result.

One writer thread owns the only writing connection. The event loop never waits for it: writes
are collected on the loop's side and handed to the thread as one batch every ``BATCH_S`` (at
once for a finished game), and the thread commits each batch in one transaction, so turns are
saved in batches as the game goes. Handing over batches rather than single writes matters: every
hand-over wakes the thread, and each wake-up takes the interpreter lock from the event loop.
Consecutive turns go in one statement over a JSON array of them: ``executemany`` would hand the
interpreter lock back and forth once per row.

The database is in WAL mode with ``synchronous=NORMAL``: a server killed with ``kill -9`` keeps
every committed transaction, so every finished game and the finished part of the others; games
still marked as playing when a server opens the file are marked unfinished. Reads use their own
connections (WAL readers never block the writer) and run in worker threads.

The schema is versioned with ``PRAGMA user_version``; ``MIGRATIONS[n]`` upgrades a file from
version n to n + 1, so a newer server opens an older file.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import queue
import re
import secrets
import socket
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from server.games.base import JsonObject
from server.league import GameResult
from server.match import GameFinished, GameStarted, Listener, TurnPlayed, Update
from server.replay import DamagedRecord

log = logging.getLogger(__name__)

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
    # 2 -> 3: the games of the Thud HTTP API (visor/thud_api.py): which game each game token
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
)
SCHEMA_VERSION = len(MIGRATIONS)
BATCH_S = 0.05  # how long writes wait on the event loop's side before going to the writer
PAGE_SIZE_LIMIT = 200
OWNER_ID = re.compile(r"[A-Za-z0-9._-]{1,200}")
MIN_SQLITE = (3, 33, 0)  # UPDATE ... FROM, and the JSON functions, as the turn batches use them


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


def migrate(connection: sqlite3.Connection) -> int:
    """Bring the file up to ``SCHEMA_VERSION``; returns the version it had."""
    found: int = connection.execute("PRAGMA user_version").fetchone()[0]
    if found > SCHEMA_VERSION:
        raise RuntimeError(
            f"the records file has schema version {found}, newer than this server's "
            f"{SCHEMA_VERSION}: upgrade the server"
        )
    for version in range(found, SCHEMA_VERSION):
        connection.execute("BEGIN IMMEDIATE")
        try:
            for statement in MIGRATIONS[version].split(";"):
                if statement.strip():
                    connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {version + 1}")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
    return found


Operation = Callable[[sqlite3.Connection], object]
TurnRow = bytes  # JSON [game id, number, seat, action, timed out]


def _commit(connection: sqlite3.Connection, operations: list[Operation]) -> bool:
    """Run writes in one transaction; False (and nothing written) if any of them fails."""
    try:
        connection.execute("BEGIN")
        for operation in operations:
            operation(connection)
        connection.execute("COMMIT")
    except sqlite3.Error:
        log.exception("records: a transaction of %d writes failed", len(operations))
        with contextlib.suppress(sqlite3.Error):
            connection.execute("ROLLBACK")
        return False
    return True


class _AfterCommit:
    """Not a write: a callback the writer calls once the writes queued before it are committed."""

    def __init__(self, callback: Callable[[], object]) -> None:
        self.callback = callback

    def __call__(self, db: sqlite3.Connection) -> None:
        raise TypeError("an _AfterCommit is called after the transaction, not inside it")


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

    def is_alive(self, owner: str) -> bool:
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


@dataclass(frozen=True, slots=True)
class GameFilter:
    game: str | None = None
    player: str | None = None  # a nick or a tournament bot name
    result: str | None = None  # "win", "draw", "unfinished" or a seat name that won
    tournament: str | None = None
    page: int = 1
    per_page: int = 50


class Records:
    """The arena's store of games."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._operations: queue.SimpleQueue[list[Operation] | None] = queue.SimpleQueue()
        # Writes in the order they came; consecutive turns (the most frequent write) share a run.
        self._pending: list[Operation | list[TurnRow]] = []
        self._pending_lock = threading.Lock()  # close() may run in a worker thread
        self._hand_over_scheduled = False
        self._thread: threading.Thread | None = None
        self._local = threading.local()
        self._owners = OwnerLocks(path.with_name(path.name + ".owners"))
        self.owner = ""  # this process's owner id, once open

    # --- lifecycle ---------------------------------------------------------------------------
    def open(self) -> None:
        """Create or upgrade the file, close out interrupted games, start the writer.

        Only a process that plays games opens records this way. It claims an owner id, and
        marks unfinished the games still marked as playing whose owner is gone (a process that
        stopped or was killed); games that another live process is playing are left alone.
        Readers such as ``tavern replay`` use ``open_to_read``.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        writer = connect(self.path)
        migrate(writer)
        self.owner = self._owners.claim()
        owners = [
            row[0]
            for row in writer.execute(
                "SELECT DISTINCT owner FROM games WHERE status = 'playing'"
            ).fetchall()
        ]
        for owner in owners:
            if owner is not None and self._owners.is_alive(owner):
                continue
            interrupted = writer.execute(
                "UPDATE games SET status = 'unfinished' WHERE status = 'playing' AND owner IS ?",
                (owner,),
            ).rowcount
            log.info("records: %d games of a stopped process marked unfinished", interrupted)
            if owner is not None:
                self._owners.forget(owner)
        self._thread = threading.Thread(
            target=self._write_loop, args=(writer,), name="records-writer", daemon=True
        )
        self._thread.start()

    def open_to_read(self) -> None:
        """Upgrade the file if it is older than this code, and nothing else."""
        with contextlib.closing(connect(self.path)) as connection:
            migrate(connection)

    def close(self) -> None:
        """Write everything queued, keep this process's games in progress as unfinished, stop."""
        if self._thread is None:
            return
        owner = self.owner
        self.submit(
            lambda db: db.execute(
                "UPDATE games SET status = 'unfinished' WHERE status = 'playing' AND owner = ?",
                (owner,),
            ),
            urgent=True,
        )
        self._operations.put(None)
        self._thread.join()
        self._thread = None
        self._owners.release()

    # --- writing -----------------------------------------------------------------------------
    def submit(self, operation: Operation, *, urgent: bool = False) -> None:
        """Queue a write; it is committed with the others of its batch.

        ``urgent`` hands the batch to the writer at once instead of within ``BATCH_S``.
        """
        with self._pending_lock:
            self._pending.append(operation)
        if urgent:
            self._hand_over()
        else:
            self._schedule_hand_over()

    def _schedule_hand_over(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on an event loop: nothing will come back to hand over
            self._hand_over()
            return
        if not self._hand_over_scheduled:
            self._hand_over_scheduled = True
            loop.call_later(BATCH_S, self._hand_over)

    def record_turn(self, row: TurnRow) -> None:
        """Queue one turn; a batch's turns are written with one statement."""
        with self._pending_lock:
            if self._pending and isinstance(self._pending[-1], list):
                self._pending[-1].append(row)
            else:
                self._pending.append([row])
        self._schedule_hand_over()

    def _hand_over(self) -> None:
        with self._pending_lock:
            pending, self._pending = self._pending, []
            self._hand_over_scheduled = False
        batch = [_turns_operation(item) if isinstance(item, list) else item for item in pending]
        if batch:
            self._operations.put(batch)

    async def flush(self) -> None:
        """Wait until everything queued so far is committed."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def resolve() -> None:
            if not done.done():
                done.set_result(None)

        self.submit(_AfterCommit(lambda: loop.call_soon_threadsafe(resolve)), urgent=True)
        await done

    def _write_loop(self, connection: sqlite3.Connection) -> None:
        running = True
        while running:
            batches = [self._operations.get()]
            while len(batches) < 100:
                try:
                    batches.append(self._operations.get_nowait())
                except queue.Empty:
                    break
            if None in batches:
                running = False
            queued = [op for batch in batches if batch is not None for op in batch]
            operations = [op for op in queued if not isinstance(op, _AfterCommit)]
            if operations and not _commit(connection, operations):
                # One bad write must not take the others of its batch with it: one at a time.
                for operation in operations:
                    if not _commit(connection, [operation]):
                        log.error("records: a write failed and was dropped: %r", operation)
            for operation in queued:
                if isinstance(operation, _AfterCommit):
                    operation.callback()
        connection.close()

    def tournament_started(
        self, tournament_id: str, name: str, game: str, spec: JsonObject
    ) -> None:
        row = (tournament_id, name, game, orjson.dumps(spec).decode(), now())
        self.submit(
            lambda db: db.execute(
                "INSERT OR IGNORE INTO tournaments (id, name, game, spec, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                row,
            )
        )

    def tournament_finished(self, tournament_id: str) -> None:
        row = (now(), tournament_id)
        self.submit(
            lambda db: db.execute("UPDATE tournaments SET finished_at = ? WHERE id = ?", row)
        )

    def seat_stderr(self, game_id: str, seat: int, stderr: str) -> None:
        """Keep what a tournament bot wrote to stderr with its game's record."""
        row = (stderr, game_id, seat)
        self.submit(
            lambda db: db.execute("UPDATE seats SET stderr = ? WHERE game_id = ? AND seat = ?", row)
        )

    def seat_exit(self, game_id: str, seat: int, exit: str) -> None:
        """Keep how a tournament bot's process ended ("exited with code 1", "did not join")."""
        row = (exit, game_id, seat)
        self.submit(
            lambda db: db.execute("UPDATE seats SET exit = ? WHERE game_id = ? AND seat = ?", row)
        )

    def thud_api_game_created(
        self,
        token_digest: str,
        game_id: str,
        player_digests: tuple[str, str],
        player_names: tuple[str, str],
    ) -> None:
        """Remember a Thud HTTP API game: its game token's digest, its game, its players."""
        row = (token_digest, game_id, *player_digests, *player_names, now())
        self.submit(
            lambda db: db.execute(
                "INSERT OR IGNORE INTO thud_api_games (token_digest, game_id, player_one_digest, "
                "player_two_digest, player_one, player_two, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                row,
            )
        )

    def thud_api_game_saved(self, token_digest: str) -> None:
        row = (now(), token_digest)
        self.submit(
            lambda db: db.execute(
                "UPDATE thud_api_games SET saved_at = ? WHERE token_digest = ?", row
            )
        )

    # --- reading (call from a worker thread: ``await asyncio.to_thread(records.game, id)``) ---
    def thud_api_game(self, token_digest: str) -> JsonObject | None:
        """The Thud HTTP API game of a game token's digest, or None."""
        row = (
            self._reader()
            .execute("SELECT * FROM thud_api_games WHERE token_digest = ?", (token_digest,))
            .fetchone()
        )
        if row is None:
            return None
        return {
            "gameId": row["game_id"],
            "playerDigests": (row["player_one_digest"], row["player_two_digest"]),
            "players": (row["player_one"], row["player_two"]),
            "createdAt": row["created_at"],
            "savedAt": row["saved_at"],
        }

    def tournaments(self) -> list[JsonObject]:
        rows = self._reader().execute("SELECT * FROM tournaments ORDER BY created_at DESC")
        return [_tournament(row) for row in rows]

    def tournament(self, tournament_id: str) -> JsonObject | None:
        row = (
            self._reader()
            .execute("SELECT * FROM tournaments WHERE id = ?", (tournament_id,))
            .fetchone()
        )
        return None if row is None else _tournament(row)

    def results(self, tournament_id: str | None = None) -> list[GameResult]:
        """Finished games between named bots (a tournament's, or all), in the order they ended,
        with how each seat's bot process ended and how many of its turns timed out."""
        sql = (
            "SELECT g.id, g.game, g.winner, g.score, g.reason, s0.bot AS bot0, s1.bot AS bot1, "
            "s0.seat_name AS seat0, s1.seat_name AS seat1, s0.exit AS exit0, s1.exit AS exit1, "
            "(SELECT COUNT(*) FROM turns t WHERE t.game_id = g.id AND t.seat = 0 "
            "AND t.timed_out) AS late0, "
            "(SELECT COUNT(*) FROM turns t WHERE t.game_id = g.id AND t.seat = 1 "
            "AND t.timed_out) AS late1 FROM games g "
            "JOIN seats s0 ON s0.game_id = g.id AND s0.seat = 0 "
            "JOIN seats s1 ON s1.game_id = g.id AND s1.seat = 1 "
            "WHERE g.status = 'finished' AND s0.bot IS NOT NULL AND s1.bot IS NOT NULL"
        )
        parameters: list[Any] = []
        if tournament_id is not None:
            sql += " AND g.tournament_id = ?"
            parameters.append(tournament_id)
        results = []
        for row in self._reader().execute(sql + " ORDER BY g.finished_at, g.id", parameters):
            seats = (row["seat0"], row["seat1"])
            score = orjson.loads(row["score"]) if row["score"] else {}
            results.append(
                GameResult(
                    game=row["game"],
                    bots=(row["bot0"], row["bot1"]),
                    seat_names=seats,
                    winner=None if row["winner"] is None else seats.index(row["winner"]),
                    scores=(_seat_score(row["game"], score, 0), _seat_score(row["game"], score, 1)),
                    game_id=row["id"],
                    reason=row["reason"] or "",
                    exits=(row["exit0"], row["exit1"]),
                    timed_out_turns=(row["late0"], row["late1"]),
                )
            )
        return results

    def finished_pairings(self, tournament_id: str) -> set[str]:
        rows = self._reader().execute(
            "SELECT pairing FROM games WHERE tournament_id = ? AND status = 'finished'",
            (tournament_id,),
        )
        return {row["pairing"] for row in rows}

    def _reader(self) -> sqlite3.Connection:
        reader: sqlite3.Connection | None = getattr(self._local, "reader", None)
        if reader is None:
            reader = connect(self.path)
            self._local.reader = reader
        return reader

    def games(self, where: GameFilter) -> JsonObject:
        """One page of game summaries, newest first."""
        clauses, parameters = _filter_sql(where)
        sql_where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        reader = self._reader()
        total = reader.execute(f"SELECT COUNT(*) FROM games g {sql_where}", parameters).fetchone()[
            0
        ]
        per_page = max(1, min(where.per_page, PAGE_SIZE_LIMIT))
        page = max(1, where.page)
        rows = reader.execute(
            f"SELECT g.* FROM games g {sql_where} ORDER BY g.started_at DESC, g.id "
            "LIMIT ? OFFSET ?",
            [*parameters, per_page, (page - 1) * per_page],
        ).fetchall()
        return {
            "games": [self._listed(reader, row) for row in rows],
            "page": page,
            "perPage": per_page,
            "total": total,
        }

    def game(self, game_id: str) -> JsonObject | None:
        """The full record of one game (docs/records.md), or None; raises ``DamagedRecord``
        if what is stored does not read back."""
        reader = self._reader()
        row = reader.execute("SELECT * FROM games WHERE id = ?", (game_id,)).fetchone()
        if row is None:
            return None
        try:
            record = self._summary(reader, row)
            record["settings"] = orjson.loads(row["settings"])
            seat_names = [player["seat"] for player in record["players"]]
            # Every row is fetched before any is read: a statement left half-read by an error
            # would hold this thread's connection on an old snapshot of the file.
            turns = reader.execute(
                "SELECT * FROM turns WHERE game_id = ? ORDER BY number", (game_id,)
            ).fetchall()
            record["turns"] = [
                {
                    "number": turn["number"],
                    "seat": _seat_name(seat_names, turn["seat"]),
                    "action": orjson.loads(turn["action"]),
                    "timedOut": bool(turn["timed_out"]),
                }
                for turn in turns
            ]
        except (IndexError, KeyError, TypeError, ValueError) as error:
            raise DamagedRecord(f"game {game_id}: its record does not read: {error}") from error
        return record

    def _listed(self, reader: sqlite3.Connection, row: sqlite3.Row) -> JsonObject:
        """A game's summary for a list; a damaged one is listed as such, not left out."""
        try:
            return self._summary(reader, row)
        except (IndexError, KeyError, TypeError, ValueError) as error:
            log.warning("records: game %s does not read: %s", row["id"], error)
            return {
                "id": row["id"],
                "game": row["game"],
                "status": row["status"],
                "startedAt": row["started_at"],
                "damaged": str(error),
            }

    def _summary(self, reader: sqlite3.Connection, row: sqlite3.Row) -> JsonObject:
        players = [
            {
                "seat": seat["seat_name"],
                "nick": seat["nick"],
                "names": orjson.loads(seat["names"]),
                "kind": seat["kind"],
                "bot": seat["bot"],
                "replies": seat["replies"],
                "replyMeanMs": seat["reply_mean_ms"],
                "replyWorstMs": seat["reply_worst_ms"],
                "errors": seat["errors"],
                "lastError": seat["last_error"],
                "stderr": seat["stderr"],
                "exit": seat["exit"],
            }
            for seat in reader.execute(
                "SELECT * FROM seats WHERE game_id = ? ORDER BY seat", (row["id"],)
            ).fetchall()
        ]
        result = None
        if row["reason"] is not None:
            result = {
                "reason": row["reason"],
                "winner": row["winner"],
                "score": orjson.loads(row["score"]) if row["score"] else None,
            }
        return {
            "id": row["id"],
            "game": row["game"],
            "seed": row["seed"],
            "status": row["status"],
            "startedAt": row["started_at"],
            "finishedAt": row["finished_at"],
            "turnCount": row["turn_count"],
            "players": players,
            "result": result,
            "tournament": row["tournament_id"],
            "pairing": row["pairing"],
        }


def _seat_name(seat_names: list[str], seat: object) -> str:
    if not isinstance(seat, int) or not 0 <= seat < len(seat_names):
        raise IndexError(f"a turn's seat is {seat!r}, not one of the game's seats")
    return seat_names[seat]


def _tournament(row: sqlite3.Row) -> JsonObject:
    return {
        "id": row["id"],
        "name": row["name"],
        "game": row["game"],
        "spec": orjson.loads(row["spec"]),
        "createdAt": row["created_at"],
        "finishedAt": row["finished_at"],
    }


SCORE_KEYS = {"thud": ("dwarfs", "trolls"), "tavern": ("team1", "team2")}


def _seat_score(game: str, score: JsonObject, seat: int) -> int:
    return int(score.get(SCORE_KEYS[game][seat], 0))


def _filter_sql(where: GameFilter) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    parameters: list[Any] = []
    if where.game:
        clauses.append("g.game = ?")
        parameters.append(where.game)
    if where.player:
        clauses.append(
            "EXISTS (SELECT 1 FROM seats s WHERE s.game_id = g.id AND (s.nick = ? OR s.bot = ?))"
        )
        parameters += [where.player, where.player]
    if where.tournament:
        clauses.append("g.tournament_id = ?")
        parameters.append(where.tournament)
    if where.result == "draw":
        clauses.append("g.status = 'finished' AND g.winner IS NULL")
    elif where.result == "unfinished":
        clauses.append("g.status = 'unfinished'")
    elif where.result == "win":
        clauses.append("g.winner IS NOT NULL")
    elif where.result:
        clauses.append("g.winner = ?")
        parameters.append(where.result)
    return clauses, parameters


def now() -> float:
    return time.time()


class Recorder:
    """Follows the arena's games and queues their records; never blocks a game."""

    def __init__(self, records: Records) -> None:
        self.records = records

    def __call__(self, update: Update) -> None:
        if isinstance(update, GameStarted):
            self.records.submit(_started(update, self.records.owner))
        elif isinstance(update, TurnPlayed):
            result = update.result
            self.records.record_turn(
                b'["%s",%d,%d,%s,%s]'
                % (
                    result.match_id.encode(),
                    result.number,
                    result.seat,
                    result.action_json,
                    b"true" if result.timed_out else b"false",
                )
            )
        elif isinstance(update, GameFinished):
            self.records.submit(_finished(update), urgent=True)


def _started(started: GameStarted, owner: str) -> Operation:
    view = started.view
    game = view.codec
    settings = orjson.dumps(
        {
            **game.settings(),
            "turnTimeoutMs": round(view.limits.turn_timeout_s * 1000),
            "maxConsecutiveTimeouts": view.limits.max_consecutive_timeouts,
        }
    ).decode()
    game_row = (
        view.match_id,
        game.name,
        view.seed,
        settings,
        started.started_at,
        view.tournament_id,
        view.pairing,
        owner,
    )
    seat_rows = [
        (
            view.match_id,
            index,
            player.seat,
            player.nick,
            orjson.dumps(list(player.names)).decode(),
            player.kind,
            player.bot,
        )
        for index, player in enumerate(view.players)
        if player is not None
    ]

    def write(db: sqlite3.Connection) -> None:
        # A resumed game (one restored from its record) is the same row playing on; its
        # dwarves keep the names they started with, which the replay needs.
        db.execute(
            "INSERT INTO games (id, game, seed, settings, status, started_at, tournament_id, "
            "pairing, owner) VALUES (?, ?, ?, ?, 'playing', ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE "
            "SET status = 'playing', finished_at = NULL, reason = NULL, winner = NULL, "
            "score = NULL, owner = excluded.owner",
            game_row,
        )
        db.executemany(
            "INSERT INTO seats (game_id, seat, seat_name, nick, names, kind, bot) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (game_id, seat) DO UPDATE SET "
            "nick = excluded.nick, kind = excluded.kind, bot = excluded.bot",
            seat_rows,
        )

    return write


def _turns_operation(rows: list[TurnRow]) -> Operation:
    return lambda db: _insert_turns(db, rows)


def _insert_turns(db: sqlite3.Connection, rows: list[TurnRow]) -> None:
    """One batch of turns, and each game's turn count, in one statement each."""
    batch = (b"[" + b",".join(rows) + b"]").decode()
    db.execute(
        "INSERT OR REPLACE INTO turns (game_id, number, seat, action, timed_out) "
        "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), "
        "json_extract(value, '$[2]'), json_extract(value, '$[3]'), json_extract(value, '$[4]') "
        "FROM json_each(?)",
        (batch,),
    )
    db.execute(
        "UPDATE games SET turn_count = played.count FROM (SELECT json_extract(value, '$[0]') "
        "AS id, max(json_extract(value, '$[1]')) AS count FROM json_each(?) GROUP BY 1) "
        "AS played WHERE games.id = played.id",
        (batch,),
    )


def _finished(finished: GameFinished) -> Operation:
    view, outcome = finished.view, finished.outcome
    game = view.codec
    score = view.scores()
    winner = None if outcome.winner is None else game.seat_names[outcome.winner]
    game_row = (
        finished.finished_at,
        outcome.reason,
        winner,
        None if score is None else orjson.dumps(score).decode(),
        view.turn,
        view.match_id,
    )
    seat_rows = [
        (
            stats.reply_mean_ms,
            stats.reply_worst_ms,
            stats.replies,
            stats.errors,
            stats.last_error,
            view.match_id,
            index,
        )
        for index, stats in enumerate(finished.stats)
        if stats is not None
    ]

    def write(db: sqlite3.Connection) -> None:
        db.execute(
            "UPDATE games SET status = 'finished', finished_at = ?, reason = ?, winner = ?, "
            "score = ?, turn_count = ? WHERE id = ?",
            game_row,
        )
        db.executemany(
            "UPDATE seats SET reply_mean_ms = ?, reply_worst_ms = ?, replies = ?, errors = ?, "
            "last_error = ? WHERE game_id = ? AND seat = ?",
            seat_rows,
        )

    return write


@contextlib.asynccontextmanager
async def recording(listeners: list[Listener], path: Path) -> AsyncIterator[Records]:
    """Keep every game in the records file for the block: ``listeners`` are the arena's."""
    records = Records(path)
    await asyncio.to_thread(records.open)
    listeners.append(Recorder(records))
    try:
        yield records
    finally:
        await asyncio.to_thread(records.close)
