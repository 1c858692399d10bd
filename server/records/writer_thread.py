"""The records' writer thread: it commits the batches the event loop hands it
(``server.records.writer``), one transaction each, on the only writing connection.

A database out of reach (PostgreSQL stopped or cut off, an SQLite file locked or unwritable:
``Backend.unavailable``) is waited for by nobody, and costs no record: the batch that failed,
and every batch after it, are appended to this process's journal (``server.records.journal``),
and every ``RETRY_S`` the writer tries the database again. Once it answers, the journal's
entries are written in their order, each in a transaction of its own, in passes of
``CATCH_UP_S`` between which the new batches go on to the journal's end (so that the order
holds); once every entry is written, the journal is emptied and batches are committed directly
again. A batch the journal has no room for (``journal_bytes``) waits in memory, in order, and
from three quarters of it on the arena opens no new game (``Writer.full``). A stop waits at
most ``server.records.writer.STOP_S`` for the thread, and whatever it could not write is in the
journal, which the next process to open the records from the same journal folder writes: the log
says which games.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

from server.records import journal
from server.records.backends import Backend, Connection, Owners
from server.records.backlog import Backlog
from server.records.journal import JournalFile
from server.records.transaction import AWAY, COMMITTED, REFUSED, transaction
from server.records.writes import MARK_UNFINISHED, Batch, Operation, TurnChunks, decode

log = logging.getLogger(__name__)

RETRY_S = 1.0  # how often a writer whose database is out of reach tries it again
CATCH_UP_S = 0.2  # one pass of writing the journal, before the writer takes new batches


class AfterCommit:
    """Not a write: a callback the writer calls once the writes queued before it are kept."""

    def __init__(self, callback: Callable[[], object]) -> None:
        self.callback = callback

    def __call__(self, backend: Backend, db: Connection) -> None:
        raise TypeError("an AfterCommit is called after the transaction, not inside it")

    def entry(self) -> list[object]:
        raise TypeError("an AfterCommit is not kept in the journal")


class WriterThread:
    """The writer thread and what only it touches: the writing connection, the journal while
    the database is out of reach, the look for the games of stopped processes. The event loop
    only hands it batches (``operations``) and reads its state."""

    def __init__(
        self,
        backend: Backend,
        journal_folder: Path,
        journal_bytes: int,
        sweep_s: float,
        owners: Owners,
        operations: queue.SimpleQueue[Batch | None],
    ) -> None:
        self.backend = backend
        self.journal_folder = journal_folder
        self.sweep_s = sweep_s
        self.operations = operations  # the batches handed over; ``None`` to stop
        self.owner = ""  # this process's owner id, once started
        self._owners = owners
        self._thread: threading.Thread | None = None
        # The thread's own, but for what a stop that gave up on it keeps (``stop``):
        self._connection: Connection | None = None
        self.backlog = Backlog(journal_folder, journal_bytes, backend.describe())
        self._in_flight: Batch = []  # the batch being written
        self.sweep_failed = False  # said once, until a look succeeds again
        self._foreign: set[Path] = set()  # other databases' journals in the folder, said once
        # The database is out of reach: writes go to the journal (since ``away_since``,
        # time.time()) until it is all written. Set and cleared by the thread only.
        self.behind = False
        self.away_since: float | None = None

    def start(self, connection: Connection, owner: str) -> None:
        """Write the journals that stopped processes left, mark their games unfinished, and
        start the thread, writing on ``connection`` for ``owner``."""
        self.owner = self.backlog.owner = owner
        self._connection = connection
        self._write_orphans()
        self._sweep(connection)
        self._thread = threading.Thread(target=self._write_loop, name="records-writer", daemon=True)
        self._thread.start()

    @property
    def started(self) -> bool:
        """Started, and not stopped since."""
        return self._thread is not None

    @property
    def alive(self) -> bool:
        """The thread runs: started, not stopped, and not dead of a bug."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout_s: float) -> None:
        """Write what was handed over and end the thread, waiting at most ``timeout_s``: what
        it has not written by then is kept in the journal."""
        if self._thread is None:
            return
        self.operations.put(None)
        self._thread.join(timeout_s)
        if self._thread.is_alive():  # a database that does not answer
            left = self.backlog.abandon([self._in_flight, *self._queued()])
            log.warning(
                "records: the database did not answer within %g s of the stop: %s", timeout_s, left
            )
        self._thread = None

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

    # --- the thread ---------------------------------------------------------------------------
    def _write_loop(self) -> None:
        running = True
        next_sweep = time.monotonic() + self.sweep_s
        next_try = 0.0
        while running:
            wake = next_try if self.behind else next_sweep
            try:
                first = self.operations.get(timeout=max(0.0, wake - time.monotonic()))
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
                    batches.append(self.operations.get_nowait())
                except queue.Empty:
                    break
            if None in batches:
                running = False
            queued = [op for batch in batches if batch is not None for op in batch]
            self._store([op for op in queued if not isinstance(op, AfterCommit)])
            if self.backlog.abandoned:
                break
            for operation in queued:
                if isinstance(operation, AfterCommit):
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
        if failure is not None and not self.sweep_failed:
            log.warning(
                "records: looking for the games of stopped processes failed: %s "
                "(tried again every %g s)",
                failure,
                self.sweep_s,
            )
        self.sweep_failed = failure is not None

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
                batch = self.operations.get_nowait()
            except queue.Empty:
                return batches
            if batch is not None:
                batches.append([op for op in batch if not isinstance(op, AfterCommit)])
