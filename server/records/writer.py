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

A database out of reach (PostgreSQL stopped or cut off, an SQLite file locked or unwritable:
``Backend.unavailable``) is waited for by nobody, and costs no record: the batch that failed,
and every batch after it, are appended to this process's journal (``server.records.journal``),
and every ``RETRY_S`` the writer tries the database again. Once it answers, the journal's
entries are written in their order, each in a transaction of its own, in passes of
``CATCH_UP_S`` between which the new batches go on to the journal's end (so that the order
holds); once every entry is written, the journal is emptied and batches are committed directly
again. A batch the journal has no room for (``journal_bytes``) waits in memory, in order, and
from three quarters of it on the arena opens no new game (``full``). A stop waits at most
``STOP_S`` for the writer, and whatever it could not write is in the journal, which the next
process to open the records from the same journal folder writes: the log says which games.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from server.games.base import JsonObject
from server.records import journal
from server.records.backends import Backend, Connection, Owners
from server.records.backlog import Backlog
from server.records.journal import JournalFile
from server.records.transaction import AWAY, COMMITTED, REFUSED, transaction
from server.records.writes import (
    MARK_UNFINISHED,
    TIMED_OUT,
    Batch,
    Chunk,
    Operation,
    TurnChunks,
    Write,
    decode,
)

log = logging.getLogger(__name__)

# How long writes wait on the event loop's side before going to the writer: a game's turns of a
# batch are one row, and each transaction's commit costs alike, so longer batches cost less a
# turn (writer thread under 100 games of bench/load.py, Tavern: 8 us a turn at 0.05 s, 5 at 0.2).
BATCH_S = 0.2
SWEEP_S = 10.0  # how often a writer looks for games of processes that are gone
RETRY_S = 1.0  # how often a writer whose database is out of reach tries it again
CATCH_UP_S = 0.2  # one pass of writing the journal, before the writer takes new batches
STOP_S = 5.0  # how long a stop waits for the writer before it keeps the rest in the journal
JOURNAL_BYTES = 256 * 1024 * 1024  # ``recordsJournalBytes``'s default
ID_ALPHABET = "0123456789abcdefghijklmnopqr"  # base 28, as the games' ids


class _AfterCommit:
    """Not a write: a callback the writer calls once the writes queued before it are kept."""

    def __init__(self, callback: Callable[[], object]) -> None:
        self.callback = callback

    def __call__(self, backend: Backend, db: Connection) -> None:
        raise TypeError("an _AfterCommit is called after the transaction, not inside it")

    def entry(self) -> list[object]:
        raise TypeError("an _AfterCommit is not kept in the journal")


def base28(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 28)
        digits = ID_ALPHABET[digit] + digits
        if not number:
            return digits


class Writer:
    """The writing side of the records, for a process that plays games (a node).

    A batch is acknowledged once its transaction commits, or once it is in the journal: an
    SQLite file is in WAL mode with ``synchronous=NORMAL``, PostgreSQL commits durably, and a
    journal entry is synced before it counts, so a node killed with ``kill -9`` loses nothing
    acknowledged: every finished game and the finished part of the others. Games still marked
    as playing whose node is gone are marked unfinished by the next node to open the records,
    and every ``sweep_s`` by every node that writes.
    """

    def __init__(
        self,
        backend: Backend,
        journal_folder: Path,
        journal_bytes: int = JOURNAL_BYTES,
        sweep_s: float = SWEEP_S,
    ) -> None:
        self.backend = backend
        self.journal_folder = journal_folder
        self.journal_bytes = journal_bytes
        self.sweep_s = sweep_s
        self._operations: queue.SimpleQueue[Batch | None] = queue.SimpleQueue()
        self._writes: Batch = []  # in the order they came
        self._chunks: dict[str, Chunk] = {}  # this batch's turns, by game; written after the rest
        self._pending_lock = threading.Lock()  # close() may run in a worker thread
        self._hand_over_scheduled = False  # a timer will hand the batch over (event loop only)
        self._thread: threading.Thread | None = None
        self._owners: Owners = backend.owners()
        self.owner = ""  # this process's owner id, once open
        self.node = 0  # this process's number in ``nodes``, once open
        # The writer thread's own, but for what a stop that gave up on it keeps (``close``):
        self._connection: Connection | None = None
        self.backlog = Backlog(journal_folder, journal_bytes, backend.describe())
        self._in_flight: Batch = []  # the batch being written
        self._sweep_failed = False  # said once, until a look succeeds again
        self._foreign: set[Path] = set()  # other databases' journals in the folder, said once
        # The database is out of reach: writes go to the journal (since ``away_since``,
        # time.time()) until it is all written. Set and cleared by the writer thread only.
        self.behind = False
        self.away_since: float | None = None

    # --- lifecycle ---------------------------------------------------------------------------
    def open(self) -> None:
        """Create or upgrade the records, close out interrupted games, start the writer.

        Only a process that plays games opens records this way. It claims an owner id, writes
        the journals that stopped processes left in its journal folder, and marks unfinished
        the games still marked as playing whose owner is gone (a process that stopped or was
        killed); games that another live process is playing are left alone. Readers such as
        ``tavern replay`` use ``open_to_read``.
        """
        writer = self.backend.connect()
        self.backend.migrate(writer)
        self.owner = self.backlog.owner = self._owners.claim()
        writer.execute(
            "INSERT INTO nodes (owner, host, started_at) VALUES (?, ?, ?)",
            (self.owner, socket.gethostname(), time.time()),
        )
        self.node = writer.execute(
            "SELECT number FROM nodes WHERE owner = ?", (self.owner,)
        ).fetchone()[0]
        self._connection = writer
        self._write_orphans()
        self._sweep(writer)
        self._thread = threading.Thread(target=self._write_loop, name="records-writer", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Write everything queued, keep this process's games in progress as unfinished, stop:
        within ``STOP_S``, after which what is not written is kept in the journal."""
        if self._thread is None:
            return
        self._hand_over()  # the last turns, to count them when the games are marked unfinished
        self.submit(Write("unfinished", self.owner), urgent=True)
        self._operations.put(None)
        self._thread.join(STOP_S)
        if self._thread.is_alive():  # a database that does not answer
            left = self.backlog.abandon([self._in_flight, *self._queued()])
            log.warning(
                "records: the database did not answer within %g s of the stop: %s", STOP_S, left
            )
        self._thread = None
        self._owners.release()

    @property
    def writing(self) -> bool:
        """The writer thread runs (``/healthz``): opened, not closed, and not dead of a bug."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def away(self) -> bool:
        """The database was out of reach at the last write, or the last look for stopped
        processes' games (``/readyz``'s ``degraded``)."""
        return self.behind or self._sweep_failed

    @property
    def full(self) -> bool:
        """The journal is three quarters full (or past full): no new game should open here
        until the database is back (``server.arena.Arena.check_open``)."""
        return self.backlog.full

    @property
    def id_tag(self) -> str:
        """What ends the ids of this node's games on a shared database (PostgreSQL): its
        number, so that two nodes never give a game the same id. An SQLite file's games keep
        the original's seven characters."""
        return "" if self.backend.name == "sqlite" else f"-{base28(self.node)}"

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
                    self._writes.append(TurnChunks([chunk]))
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
            batch.append(TurnChunks(chunks))
        if batch:
            self._operations.put(batch)

    async def flush(self) -> None:
        """Wait until everything queued so far is kept: committed, or in the journal (or, past
        the journal's bound, waiting in memory for the database)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def resolve() -> None:
            if not done.done():
                done.set_result(None)

        self.submit(_AfterCommit(lambda: loop.call_soon_threadsafe(resolve)), urgent=True)
        await done

    # --- the writer thread -------------------------------------------------------------------
    def _write_loop(self) -> None:
        running = True
        next_sweep = time.monotonic() + self.sweep_s
        next_try = 0.0
        while running:
            wake = next_try if self.behind else next_sweep
            try:
                first = self._operations.get(timeout=max(0.0, wake - time.monotonic()))
            except queue.Empty:
                if self.behind:
                    more = self._catch_up()
                    next_try = time.monotonic() + (0.0 if more else RETRY_S)
                else:
                    self._look_for_stopped()
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
            self._store([op for op in queued if not isinstance(op, _AfterCommit)])
            if self.backlog.abandoned:
                break
            for operation in queued:
                if isinstance(operation, _AfterCommit):
                    operation.callback()
        self._stopped()

    def _store(self, writes: Batch) -> None:
        """Commit a batch, or keep it in the journal while the database is out of reach."""
        if not writes:
            return
        self._in_flight = writes
        if self.behind:
            self.backlog.keep(writes)
        else:
            result = self._commit(writes)
            if result == AWAY:
                self._went_away()
                self.backlog.keep(writes)
            elif result == REFUSED:
                self._one_by_one(writes)
        self._in_flight = []

    def _commit(self, writes: Batch) -> str:
        """One transaction; on a connection the database cut (PostgreSQL restarted), once
        more on a new one."""
        assert self._connection is not None
        result = transaction(self.backend, self._connection, writes)
        if result == AWAY and self.backend.lost(self._connection) and self._reconnect():
            result = transaction(self.backend, self._connection, writes)
        return result

    def _one_by_one(self, writes: Batch, keep: bool = True) -> str:
        """A batch one write at a time, each game's turns on their own, so that one bad write
        does not take the others with it; ``AWAY`` if the database went (the rest kept in the
        journal if ``keep``: a journal's entry stays where it is, and is written again)."""
        singles: list[Operation] = []
        for operation in writes:
            singles += operation.one_by_one() if isinstance(operation, TurnChunks) else [operation]
        for index, single in enumerate(singles):
            result = self._commit([single])
            if result == AWAY:
                if keep and not self.behind:
                    self._went_away()
                    self.backlog.keep(singles[index:])
                return AWAY
            if result == REFUSED:
                log.error("records: a write the database refuses was dropped: %r", single)
        return COMMITTED

    def _reconnect(self) -> bool:
        """A new connection to a database that cut the writer's (PostgreSQL restarted, the
        network came back), and this node's owner lock taken again; one try."""
        try:
            connection = self.backend.connect()
            self._owners.renew()
        except self.backend.errors:
            return False
        if self._connection is not None:
            with contextlib.suppress(*self.backend.errors):
                self._connection.close()
        self._connection = connection
        log.info("records: connected again to %s", self.backend.describe())
        return True

    def _went_away(self) -> None:
        self.behind = True
        self.away_since = time.time()
        log.warning(
            "records: the database %s is out of reach: the records wait in the journal in %s "
            "(tried again every %g s; games play on)",
            self.backend.describe(),
            self.journal_folder,
            RETRY_S,
        )

    # --- the journal ----------------------------------------------------------------------------
    def _catch_up(self) -> bool:
        """Write the journal's entries, then the batches held in memory, for at most
        ``CATCH_UP_S``; True if there is more to write (the caller comes back at once), False
        once all is written (``behind`` cleared) or while the database stays out of reach."""
        assert self._connection is not None
        if self.backend.lost(self._connection) and not self._reconnect():
            return False
        backlog = self.backlog
        deadline = time.monotonic() + CATCH_UP_S
        while (entry := backlog.next_entry()) is not None:
            if self._write_entry(entry.payload) == AWAY:
                return False
            backlog.replayed = entry.end
            if time.monotonic() > deadline:
                return True
        while backlog.held and not backlog.abandoned:
            result = self._commit(backlog.held[0])
            if result == REFUSED:
                result = self._one_by_one(backlog.held[0], keep=False)
            if result == AWAY:
                return False
            backlog.held.pop(0)
            if time.monotonic() > deadline:
                return True
        written = backlog.emptied()
        if written is None:
            return not backlog.abandoned
        away_s = time.time() - (self.away_since or time.time())
        self.behind, self.away_since = False, None
        log.warning(
            "records: the database answers again: %s, kept in the journal for %.0f s, are written",
            written,
            away_s,
        )
        return False

    def _write_entry(self, payload: bytes) -> str:
        """One journal entry in one transaction (its writes one by one if it is refused)."""
        try:
            writes: Batch = list(decode(payload))
        except ValueError as error:  # sound framing, unreadable writes: another version's
            log.error("records: a journal entry does not read, skipped: %s", error)
            return REFUSED
        result = self._commit(writes)
        return self._one_by_one(writes, keep=False) if result == REFUSED else result

    def _write_orphans(self) -> None:
        """Write the journals that stopped processes left in the journal folder, and delete
        each once written (one found damaged is kept aside as ``.damaged``)."""
        database, foreign = self.backend.describe(), self._foreign
        for orphan in journal.orphans(self.journal_folder, database, self.owner, foreign):
            try:
                written = self._write_orphan(orphan)
            except BaseException:
                orphan.close(delete=False)
                raise
            if written is None:  # the database went meanwhile: the rest another time
                orphan.close(delete=False)
                return
            notes = f" ({'; '.join(orphan.skipped)})" if orphan.skipped else ""
            log.warning(
                "records: wrote the journal a stopped process left, %s: %d entries%s",
                orphan.path,
                written,
                notes,
            )
            if orphan.damaged:
                aside = orphan.path.with_suffix(".damaged")
                os.replace(orphan.path, aside)
                log.error("records: %s kept as %s: part of it did not read", orphan.path, aside)
            orphan.close(delete=not orphan.damaged)

    def _write_orphan(self, orphan: JournalFile) -> int | None:
        """A stopped process's journal written, entry by entry: how many (None if the
        database went on the way)."""
        written, offset = 0, orphan.start
        while (entry := orphan.entry(offset)) is not None:
            if self._write_entry(entry.payload) == AWAY:
                return None
            written, offset = written + 1, entry.end
        return written

    def _look_for_stopped(self) -> None:
        """The sweep, and the journals stopped processes left (``_write_orphans``)."""
        assert self._connection is not None
        failure = None
        try:
            if self.backend.lost(self._connection) and not self._reconnect():
                failure = "the database is out of reach"
            else:
                self._sweep(self._connection)
                self._write_orphans()
        except self.backend.errors as error:
            failure = str(error)
        except OSError as error:  # an owner's lock file, with no descriptor left
            failure = str(error)
        if failure is not None and not self._sweep_failed:
            log.warning(
                "records: looking for the games of stopped processes failed: %s "
                "(tried again every %g s)",
                failure,
                self.sweep_s,
            )
        self._sweep_failed = failure is not None

    def _stopped(self) -> None:
        """The thread's end: one last try at the journal if the database may be back, then
        the journal closed (deleted if empty), and what it holds said."""
        while self.behind and not self.backlog.abandoned and self._catch_up():
            pass
        left = self.backlog.close(self.behind)
        if self.behind and not self.backlog.abandoned:
            log.warning("records: stopped while the database is out of reach: %s", left)
        if self._connection is not None and not self.backlog.abandoned:
            with contextlib.suppress(*self.backend.errors):
                self._connection.close()

    def _queued(self) -> list[Batch]:
        """The batches the thread has not taken (for a stop that gave up on it)."""
        batches: list[Batch] = []
        while True:
            try:
                batch = self._operations.get_nowait()
            except queue.Empty:
                return batches
            if batch is not None:
                batches.append([op for op in batch if not isinstance(op, _AfterCommit)])

    # --- the writes --------------------------------------------------------------------------
    def tournament_started(
        self, tournament_id: str, name: str, game: str, spec: JsonObject
    ) -> None:
        row = (tournament_id, name, game, orjson.dumps(spec).decode(), time.time())
        self.submit(Write("tournament-started", row))

    def tournament_finished(self, tournament_id: str) -> None:
        self.submit(Write("tournament-finished", tournament_id, time.time()))

    def seat_stderr(self, game_id: str, seat: int, stderr: str) -> None:
        """Keep what a tournament bot wrote to stderr with its game's record."""
        self.submit(Write("seat-stderr", game_id, seat, stderr, about=game_id))

    def seat_exit(self, game_id: str, seat: int, exit: str) -> None:
        """Keep how a tournament bot's process ended ("exited with code 1", "did not join")."""
        self.submit(Write("seat-exit", game_id, seat, exit, about=game_id))

    def thud_api_game_created(
        self,
        token_digest: str,
        game_id: str,
        player_digests: tuple[str, str],
        player_names: tuple[str, str],
    ) -> None:
        """Remember a Thud HTTP API game: its game token's digest, its game, its players."""
        row = (token_digest, *player_digests, *player_names, time.time())
        self.submit(Write("thud-api-game-created", game_id, row, about=game_id))

    def thud_api_game_saved(self, token_digest: str) -> None:
        self.submit(Write("thud-api-game-saved", token_digest, time.time()))
