"""Writing the records: one writer thread, fed batches from the event loop, never waited for.

One writer thread owns the only writing connection. The event loop never waits for it: writes
are collected on the loop's side and handed to the thread as one batch every ``BATCH_S`` (at
once for a finished game, with that game's turns only, and for ``flush``), and the thread
commits each batch in one transaction. Handing over batches rather than single writes matters:
every hand-over wakes the thread, and each wake-up takes the interpreter lock from the event
loop.

Turns, by far the most frequent write, cost the loop one append each: a game's turns of one
batch gather in one chunk, stored as one row (a busy game writes one row per batch, not one per
turn) after the batch's other writes, all the chunks of a batch in one statement. The writer
takes the interpreter lock back after every statement (``executemany`` after every row), and
while the event loop is busy it waits for it, woken again at each of the loop's system calls:
a statement per chunk would cost more than the chunks. Nothing else is written per turn: a
game's row gets its turn count when the game ends or is marked unfinished.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator

import orjson

from server.game_file import recorded_settings
from server.games.base import JsonObject
from server.match import GameFinished, GameStarted, TurnPlayed, Update
from server.records.backends import Backend, Connection, Owners
from server.records.ladder import rate
from server.records.schema import LAST_TURN

log = logging.getLogger(__name__)

# How long writes wait on the event loop's side before going to the writer: a game's turns of a
# batch are one row, and each transaction's commit costs alike, so longer batches cost less a
# turn (writer thread under 100 games of bench/load.py, Tavern: 8 us a turn at 0.05 s, 5 at 0.2).
BATCH_S = 0.2
SWEEP_S = 10.0  # how often a writer looks for games of processes that are gone
RECONNECT_FOR_S = 60.0  # how long a writer tries to reach a database that cut its connection
RECONNECT_EVERY_S = 1.0
ID_ALPHABET = "0123456789abcdefghijklmnopqr"  # base 28, as the games' ids
TIMED_OUT = (b"false", b"true")
MARK_UNFINISHED = (
    f"UPDATE games SET status = 'unfinished', turn_count = coalesce({LAST_TURN}, turn_count) "
    "WHERE status = 'playing' AND owner IS ?"
)

Operation = Callable[[Connection], object]
Turn = tuple[int, bytes, bytes]  # seat, the action as JSON, timed out as JSON


class Chunk:
    """Consecutive turns of one game, from ``first``: one row of ``turn_chunks``."""

    __slots__ = ("first", "game_id", "turns")

    def __init__(self, game_id: str, first: int) -> None:
        self.game_id = game_id
        self.first = first
        self.turns: list[Turn] = []


class TurnChunks:
    """The chunks of a batch, written as one operation."""

    def __init__(self, chunks: list[Chunk], backend: Backend) -> None:
        self.chunks = chunks
        self.backend = backend

    def __call__(self, db: Connection) -> None:
        self.backend.insert_chunks(
            db,
            [
                (
                    chunk.game_id,
                    chunk.first,
                    len(chunk.turns),
                    b"[%s]" % b",".join([b"[%d,%s,%s]" % turn for turn in chunk.turns]),
                )
                for chunk in self.chunks
            ],
        )
        late = collections.Counter(
            (chunk.game_id, seat)
            for chunk in self.chunks
            for seat, _, timed_out in chunk.turns
            if timed_out == TIMED_OUT[True]
        )
        if late:  # rare: each took a turn's whole time limit
            db.executemany(
                "UPDATE seats SET timed_out_turns = timed_out_turns + ? "
                "WHERE game_id = ? AND seat = ?",
                [(count, game_id, seat) for (game_id, seat), count in late.items()],
            )

    def one_by_one(self) -> Iterator[TurnChunks]:
        return (TurnChunks([chunk], self.backend) for chunk in self.chunks)


class _AfterCommit:
    """Not a write: a callback the writer calls once the writes queued before it are committed."""

    def __init__(self, callback: Callable[[], object]) -> None:
        self.callback = callback

    def __call__(self, db: Connection) -> None:
        raise TypeError("an _AfterCommit is called after the transaction, not inside it")


def _commit(backend: Backend, connection: Connection, operations: list[Operation]) -> bool:
    """Run writes in one transaction; False (and nothing written) if any of them fails."""
    try:
        connection.execute("BEGIN")
        for operation in operations:
            operation(connection)
        connection.execute("COMMIT")
    except backend.errors as error:
        if backend.lost(connection):  # the database went away: no bug to show a traceback of
            log.warning("records: the database cut the writer's connection: %s", error)
        else:
            log.exception("records: a transaction of %d writes failed", len(operations))
        with contextlib.suppress(*backend.errors):
            connection.execute("ROLLBACK")
        return False
    return True


def base28(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 28)
        digits = ID_ALPHABET[digit] + digits
        if not number:
            return digits


class Writer:
    """The writing side of the records, for a process that plays games (a node).

    A batch is acknowledged once its transaction commits: an SQLite file is in WAL mode with
    ``synchronous=NORMAL``, PostgreSQL commits durably, so a node killed with ``kill -9`` loses
    nothing committed: every finished game and the finished part of the others. Games still
    marked as playing whose node is gone are marked unfinished by the next node to open the
    records, and every ``sweep_s`` by every node that writes.
    """

    def __init__(self, backend: Backend, sweep_s: float = SWEEP_S) -> None:
        self.backend = backend
        self.sweep_s = sweep_s
        self._operations: queue.SimpleQueue[list[Operation] | None] = queue.SimpleQueue()
        self._writes: list[Operation] = []  # in the order they came
        self._chunks: dict[str, Chunk] = {}  # this batch's turns, by game; written after the rest
        self._pending_lock = threading.Lock()  # close() may run in a worker thread
        self._hand_over_scheduled = False  # a timer will hand the batch over (event loop only)
        self._thread: threading.Thread | None = None
        self._owners: Owners = backend.owners()
        self.owner = ""  # this process's owner id, once open
        # The last write (or look for stopped processes' games) failed: the records cannot be
        # written now (``/readyz``). Set and cleared by the writer thread only.
        self.failing = False
        self.node = 0  # this process's number in ``nodes``, once open

    # --- lifecycle ---------------------------------------------------------------------------
    def open(self) -> None:
        """Create or upgrade the records, close out interrupted games, start the writer.

        Only a process that plays games opens records this way. It claims an owner id, and
        marks unfinished the games still marked as playing whose owner is gone (a process that
        stopped or was killed); games that another live process is playing are left alone.
        Readers such as ``tavern replay`` use ``open_to_read``.
        """
        writer = self.backend.connect()
        self.backend.migrate(writer)
        self.owner = self._owners.claim()
        writer.execute(
            "INSERT INTO nodes (owner, host, started_at) VALUES (?, ?, ?)",
            (self.owner, socket.gethostname(), time.time()),
        )
        self.node = writer.execute(
            "SELECT number FROM nodes WHERE owner = ?", (self.owner,)
        ).fetchone()[0]
        self._sweep(writer)
        self._thread = threading.Thread(
            target=self._write_loop, args=(writer,), name="records-writer", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Write everything queued, keep this process's games in progress as unfinished, stop."""
        if self._thread is None:
            return
        self._hand_over()  # the last turns, to count them when the games are marked unfinished
        owner = self.owner
        self.submit(lambda db: db.execute(MARK_UNFINISHED, (owner,)), urgent=True)
        self._operations.put(None)
        self._thread.join()
        self._thread = None
        self._owners.release()

    @property
    def writing(self) -> bool:
        """The writer thread runs (``/healthz``): opened, not closed, and not dead of a bug."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def id_tag(self) -> str:
        """What ends the ids of this node's games on a shared database (PostgreSQL): its
        number, so that two nodes never give a game the same id. An SQLite file's games keep
        the original's seven characters."""
        return "" if self.backend.name == "sqlite" else f"-{base28(self.node)}"

    def _reconnected(self, lost: Connection) -> Connection:
        """A new connection once the database is back (PostgreSQL restarted, the network came
        back), and this node's owner lock taken again; tried for ``RECONNECT_FOR_S``, then the
        lost connection is kept, its batch dropped (logged), and the next batch tries again."""
        self.failing = True  # until a write goes through again
        with contextlib.suppress(*self.backend.errors):
            lost.close()
        deadline = time.monotonic() + RECONNECT_FOR_S
        while True:
            try:
                connection = self.backend.connect()
                self._owners.renew()
            except self.backend.errors:
                if time.monotonic() > deadline:
                    log.exception("records: the database stays out of reach")
                    return lost
                time.sleep(RECONNECT_EVERY_S)
                continue
            log.warning("records: connected again to %s", self.backend.describe())
            return connection

    def _sweep(self, connection: Connection) -> None:
        """Mark unfinished the games of every owner that is gone, and only those (after making
        sure that this node's own lock still holds)."""
        self._owners.renew()
        owners = [
            row[0]
            for row in connection.execute(
                "SELECT DISTINCT owner FROM games WHERE status = 'playing'"
            ).fetchall()
        ]
        for owner in owners:
            if owner is not None and self._owners.is_alive(owner, connection):
                continue
            interrupted = connection.execute(MARK_UNFINISHED, (owner,)).rowcount
            log.info("records: %d games of a stopped process marked unfinished", interrupted)
            if owner is not None:
                self._owners.forget(owner)

    # --- batching ----------------------------------------------------------------------------
    def submit(
        self, operation: Operation, *, urgent: bool = False, turns_of: str | None = None
    ) -> None:
        """Queue a write; it is committed with the others of its batch, before the batch's turns.

        ``urgent`` hands the batch to the writer at once instead of within ``BATCH_S``: with
        ``turns_of``, only that game's turns go with it (a finished game's), the other games'
        wait for their batch.
        """
        with self._pending_lock:
            self._writes.append(operation)
        if urgent:
            self._hand_over(turns_of)
        else:
            self._schedule_hand_over()

    def record_turn(
        self, game_id: str, number: int, seat: int, action_json: bytes, timed_out: bool
    ) -> None:
        """Queue one turn; ``action_json`` is kept as it is, so it must be its own bytes."""
        with self._pending_lock:
            chunk = self._chunks.get(game_id)
            if chunk is None or chunk.first + len(chunk.turns) != number:
                if chunk is not None:  # a chunk's turns follow each other; these jumped
                    self._writes.append(TurnChunks([chunk], self.backend))
                chunk = self._chunks[game_id] = Chunk(game_id, number)
            chunk.turns.append((seat, action_json, TIMED_OUT[timed_out]))
        if not self._hand_over_scheduled:
            self._schedule_hand_over()

    def _schedule_hand_over(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on an event loop: nothing will come back to hand over
            self._hand_over()
            return
        if not self._hand_over_scheduled:
            self._hand_over_scheduled = True
            loop.call_later(BATCH_S, self._scheduled_hand_over)

    def _scheduled_hand_over(self) -> None:
        # Only the timer clears its flag: were an urgent hand-over to clear it, the next write
        # would start a second timer beside the pending one, and every urgent hand-over another
        # (batches every few milliseconds instead of every BATCH_S).
        self._hand_over_scheduled = False
        self._hand_over()

    def _hand_over(self, turns_of: str | None = None) -> None:
        """Hand the pending writes to the writer, and the turns of every game or of one."""
        with self._pending_lock:
            batch, self._writes = self._writes, []
            if turns_of is None:
                chunks, self._chunks = list(self._chunks.values()), {}
            else:
                chunk = self._chunks.pop(turns_of, None)
                chunks = [] if chunk is None else [chunk]
        if chunks:
            batch.append(TurnChunks(chunks, self.backend))
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

    def _write_loop(self, connection: Connection) -> None:
        running = True
        next_sweep = time.monotonic() + self.sweep_s
        while running:
            try:
                first = self._operations.get(timeout=max(0.0, next_sweep - time.monotonic()))
            except queue.Empty:
                try:
                    if self.backend.lost(connection):
                        connection = self._reconnected(connection)
                    self._sweep(connection)
                    self.failing = False
                except self.backend.errors:
                    self.failing = True
                    log.exception("records: looking for the games of stopped processes failed")
                except OSError as error:  # an owner's lock file, with no descriptor left
                    log.warning(
                        "records: looking for the games of stopped processes failed: %s "
                        "(tried again in %g s)",
                        error,
                        self.sweep_s,
                    )
                next_sweep = time.monotonic() + self.sweep_s
                continue
            batches = [first]
            while len(batches) < 100:
                try:
                    batches.append(self._operations.get_nowait())
                except queue.Empty:
                    break
            if None in batches:
                running = False
            queued = [op for batch in batches if batch is not None for op in batch]
            operations = [op for op in queued if not isinstance(op, _AfterCommit)]
            committed = not operations or _commit(self.backend, connection, operations)
            if not committed and self.backend.lost(connection):
                connection = self._reconnected(connection)
                committed = _commit(self.backend, connection, operations)
            if operations:
                self.failing = not committed
            if not committed:
                # One bad write must not take the others of its batch with it: one at a time,
                # and each game's turns on their own.
                for operation in operations:
                    singles = (
                        operation.one_by_one() if isinstance(operation, TurnChunks) else [operation]
                    )
                    for single in singles:
                        if not _commit(self.backend, connection, [single]):
                            log.error("records: a write failed and was dropped: %r", single)
            for operation in queued:
                if isinstance(operation, _AfterCommit):
                    operation.callback()
        connection.close()

    # --- the writes --------------------------------------------------------------------------
    def tournament_started(
        self, tournament_id: str, name: str, game: str, spec: JsonObject
    ) -> None:
        row = (tournament_id, name, game, orjson.dumps(spec).decode(), time.time())
        self.submit(
            lambda db: db.execute(
                "INSERT INTO tournaments (id, name, game, spec, created_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                row,
            )
        )

    def tournament_finished(self, tournament_id: str) -> None:
        row = (time.time(), tournament_id)
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
        row = (token_digest, game_id, *player_digests, *player_names, time.time())
        self.submit(
            lambda db: db.execute(
                "INSERT INTO thud_api_games (token_digest, game_id, player_one_digest, "
                "player_two_digest, player_one, player_two, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                row,
            )
        )

    def thud_api_game_saved(self, token_digest: str) -> None:
        row = (time.time(), token_digest)
        self.submit(
            lambda db: db.execute(
                "UPDATE thud_api_games SET saved_at = ? WHERE token_digest = ?", row
            )
        )


class Recorder:
    """Follows the arena's games and queues their records; never blocks a game."""

    def __init__(self, records: Writer) -> None:
        self.records = records

    def __call__(self, update: Update) -> None:
        if isinstance(update, TurnPlayed):
            result = update.result
            self.records.record_turn(
                result.match_id, result.number, result.seat, result.action_json, result.timed_out
            )
        elif isinstance(update, GameStarted):
            self.records.submit(_started(update, self.records.owner))
            seat_names = update.view.codec.seat_names
            for turn in update.turns_before:  # a game played on from a recorded one's turn
                self.records.record_turn(
                    update.view.match_id,
                    turn["number"],
                    seat_names.index(turn["seat"]),
                    orjson.dumps(turn["action"]),
                    turn["timedOut"],
                )
        elif isinstance(update, GameFinished):
            self.records.submit(_finished(update), urgent=True, turns_of=update.view.match_id)


def _started(started: GameStarted, owner: str) -> Operation:
    view = started.view
    game = view.codec
    settings = orjson.dumps(recorded_settings(view)).decode()
    game_row = (
        view.match_id,
        game.name,
        view.seed,
        settings,
        started.started_at,
        view.tournament_id,
        view.pairing,
        owner,
        int(view.rated),
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

    def write(db: Connection) -> None:
        # A resumed game (one restored from its record) is the same row playing on; its
        # dwarves keep the names they started with, which the replay needs.
        db.execute(
            "INSERT INTO games (id, game, seed, settings, status, started_at, tournament_id, "
            "pairing, owner, rated) VALUES (?, ?, ?, ?, 'playing', ?, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE "
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
    bots = tuple(None if player is None else player.bot for player in view.players)
    rated = view.rated and len(bots) == 2 and None not in bots and bots[0] != bots[1]

    def write(db: Connection) -> None:
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
        if rated:
            rate(db, view.match_id, game.name, (str(bots[0]), str(bots[1])), outcome.winner)

    return write
