"""What the records' writer has not written yet because the database is out of reach: this
process's journal file (``server.records.journal``), and, past the journal's bound, the batches
held in memory, in their order.

The writer thread keeps batches here, writes them back in order once the database answers, and
empties it; a stop that gave up waiting for the thread (``abandon``) keeps the rest here too, and
from then on the thread keeps nothing more: one lock orders the two, so that no batch lands in
the journal behind a later one.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterable
from pathlib import Path

from server.records import journal
from server.records.journal import Entry, JournalFile
from server.records.writes import Batch, Operation, TurnChunks, Write, encode

log = logging.getLogger(__name__)

FULL_AT = 0.75  # of the journal's bound: from here on, no new game opens (the rest is theirs)
GAMES_NAMED = 5  # games a log line names, before "and N more"


def games_of(write: Operation) -> list[str]:
    """The games a write is of, for the log."""
    if isinstance(write, TurnChunks):
        return [chunk.game_id for chunk in write.chunks]
    return [write.about] if isinstance(write, Write) and write.about else []


def games_named(games: Iterable[str]) -> str:
    ids = sorted(set(games))
    named = ", ".join(ids[:GAMES_NAMED])
    more = f" and {len(ids) - GAMES_NAMED} more" if len(ids) > GAMES_NAMED else ""
    return f"{len(ids)} games ({named}{more})" if ids else "no game"


class Backlog:
    """The writes kept for later, and what they are of (for the log)."""

    def __init__(self, folder: Path, limit_bytes: int, database: str) -> None:
        self.folder = folder
        self.limit_bytes = limit_bytes
        self.database = database  # the journal's header names it
        self.owner = ""  # the journal file's name, once the records are open
        self.held: list[Batch] = []  # batches the journal had no room for, in order
        self.replayed = 0  # where the journal's entries not written yet start
        self.abandoned = False  # a stop gave up waiting for the writer thread
        self._file: JournalFile | None = None  # created at the first batch kept
        self._lock = threading.Lock()
        self._writes = 0
        self._games: set[str] = set()

    @property
    def size(self) -> int:
        """What the journal holds, in bytes (written back or not, until it is emptied)."""
        kept = self._file
        return 0 if kept is None else kept.size - kept.start

    @property
    def full(self) -> bool:
        """Three quarters of the bound reached (or batches held past it)."""
        return bool(self.held) or self.size >= self.limit_bytes * FULL_AT

    def keep(self, writes: Batch) -> None:
        """Append a batch to the journal, or hold it in memory past the journal's bound (or if
        the journal cannot be written); once a stop gave up on the thread, keep nothing."""
        with self._lock:
            if self.abandoned:
                return
            if self.held:  # the order holds: behind the batches held already
                self.held.append(writes)
                return
            payload = encode(writes)
            if self.size + len(payload) + journal.HEAD > self.limit_bytes:
                log.error(
                    "records: the journal is full (recordsJournalBytes, %d bytes): writes wait "
                    "in memory until the database is back, and no new game opens here",
                    self.limit_bytes,
                )
                self.held.append(writes)
                return
            try:
                self._append(payload, writes)
            except OSError as error:
                log.error(
                    "records: the journal cannot be written (%s): writes wait in memory", error
                )
                self.held.append(writes)

    def _append(self, payload: bytes, writes: Batch) -> None:
        """Append to this process's journal, created at its first entry (the lock is held)."""
        if self._file is None:
            self._file = journal.create(self.folder, self.database, self.owner)
            self.replayed = self._file.start
        self._file.append(payload)
        self._writes += len(writes)
        self._games.update(game for write in writes for game in games_of(write))

    def next_entry(self) -> Entry | None:
        """The first entry not written back yet (None once there is none)."""
        kept = self._file
        return None if kept is None or self.abandoned else kept.entry(self.replayed)

    def emptied(self) -> str | None:
        """Everything kept is written: empty the journal, and say what was in it (None if a
        batch was appended meanwhile, or a stop gave up on the thread)."""
        with self._lock:
            kept = self._file
            if self.abandoned or self.held or (kept is not None and self.replayed < kept.size):
                return None
            if kept is not None:
                kept.clear()
                self.replayed = kept.start
            said = f"{self._writes} writes of {games_named(self._games)}"
            self._writes, self._games = 0, set()
        return said

    def close(self, behind: bool) -> str:
        """The writer thread's end: batches held in memory go to the journal, past its bound
        rather than lost; the journal is closed (deleted if nothing is left in it). Says what
        is left."""
        with self._lock:
            kept = self._file
            if self.abandoned:  # the stop kept the rest, and said what
                if kept is not None:
                    kept.close(delete=False)
                return ""
            for batch in self.held:
                with contextlib.suppress(OSError):
                    self._append(encode(batch), batch)
            left = self._said()
            if kept is not None:
                kept.close(delete=not behind)
                self._file = None
        return left

    def abandon(self, batches: list[Batch]) -> str:
        """A stop that gave up waiting for the writer thread keeps ``batches`` (what the thread
        had not written: its batch under way, and those queued), past the bound if need be;
        from now on the thread keeps nothing. Says what is left, and what could not be kept."""
        lost: list[Operation] = []
        with self._lock:
            self.abandoned = True
            for batch in (*self.held, *batches):
                if not batch:
                    continue
                try:
                    self._append(encode(batch), batch)
                except OSError as error:
                    log.error("records: the journal cannot be written: %s", error)
                    lost += batch
            left = self._said()
        if lost:
            games = games_named(game for write in lost for game in games_of(write))
            left += f"; {len(lost)} writes could not be kept, of {games}"
        return left

    def _said(self) -> str:
        """What the journal holds, in words (the lock is held)."""
        kept = self._file
        if kept is None or kept.size <= self.replayed:
            return "nothing was left to write"
        return (
            f"{self._writes} writes of {games_named(self._games)} are kept in the journal "
            f"{kept.path} ({kept.size - self.replayed} bytes); the next process to open these "
            "records with this journal folder writes them"
        )
