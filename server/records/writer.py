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

A database out of reach is the writer thread's business (``server.records.writer_thread``):
nobody waits for it and no record is lost, the batches going to this process's journal until
the database answers again; a stop waits at most ``STOP_S`` for the thread.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import socket
import threading
import time
from pathlib import Path

import orjson

from server.games.base import JsonObject
from server.records.backends import Backend, Owners
from server.records.backlog import Backlog
from server.records.writer_thread import AfterCommit, WriterThread
from server.records.writes import (
    TIMED_OUT,
    Batch,
    Chunk,
    Operation,
    TurnChunks,
    Write,
)

log = logging.getLogger(__name__)

# How long writes wait on the event loop's side before going to the writer: a game's turns of a
# batch are one row, and each transaction's commit costs alike, so longer batches cost less a
# turn (writer thread under 100 games of bench/load.py, Tavern: 8 us a turn at 0.05 s, 5 at 0.2).
BATCH_S = 0.2
SWEEP_S = 10.0  # how often a writer looks for games of processes that are gone
STOP_S = 5.0  # how long a stop waits for the writer before it keeps the rest in the journal
JOURNAL_BYTES = 256 * 1024 * 1024  # ``recordsJournalBytes``'s default
ID_ALPHABET = "0123456789abcdefghijklmnopqr"  # base 28, as the games' ids


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
        self._owners: Owners = backend.owners()
        self.owner = ""  # this process's owner id, once open
        self.node = 0  # this process's number in ``nodes``, once open
        self._thread = WriterThread(
            backend, journal_folder, journal_bytes, sweep_s, self._owners, self._operations
        )

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
        self.owner = self._owners.claim()
        writer.execute(
            "INSERT INTO nodes (owner, host, started_at) VALUES (?, ?, ?)",
            (self.owner, socket.gethostname(), time.time()),
        )
        self.node = writer.execute(
            "SELECT number FROM nodes WHERE owner = ?", (self.owner,)
        ).fetchone()[0]
        self._thread.start(writer, self.owner)

    def close(self) -> None:
        """Write everything queued, keep this process's games in progress as unfinished, stop:
        within ``STOP_S``, after which what is not written is kept in the journal."""
        if not self._thread.started:
            return
        self._hand_over()  # the last turns, to count them when the games are marked unfinished
        self.submit(Write("unfinished", self.owner), urgent=True)
        self._thread.stop(STOP_S)
        self._owners.release()

    @property
    def writing(self) -> bool:
        """The writer thread runs (``/healthz``): opened, not closed, and not dead of a bug."""
        return self._thread.alive

    @property
    def away(self) -> bool:
        """The database was out of reach at the last write, or the last look for stopped
        processes' games (``/readyz``'s ``degraded``)."""
        return self._thread.behind or self._thread.sweep_failed

    @property
    def full(self) -> bool:
        """The journal is three quarters full (or past full): no new game should open here
        until the database is back (``server.arena.Arena.check_open``)."""
        return self._thread.backlog.full

    @property
    def behind(self) -> bool:
        """The database is out of reach: writes wait in the journal until it is all written."""
        return self._thread.behind

    @property
    def away_since(self) -> float | None:
        """Since when (``time.time()``) the database is out of reach, while ``behind``."""
        return self._thread.away_since

    @property
    def backlog(self) -> Backlog:
        """What waits for the database: the journal, and the batches held past its bound."""
        return self._thread.backlog

    @property
    def id_tag(self) -> str:
        """What ends the ids of this node's games on a shared database (PostgreSQL): its
        number, so that two nodes never give a game the same id. An SQLite file's games keep
        the original's seven characters."""
        return "" if self.backend.name == "sqlite" else f"-{base28(self.node)}"

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

        self.submit(AfterCommit(lambda: loop.call_soon_threadsafe(resolve)), urgent=True)
        await done

    # --- the writes --------------------------------------------------------------------------
    def tournament_started(
        self, tournament_id: str, name: str, game: str, spec: JsonObject
    ) -> None:
        row = (tournament_id, name, game, orjson.dumps(spec).decode(), time.time())
        self.submit(Write("tournament-started", row))

    def tournament_finished(self, tournament_id: str) -> None:
        self.submit(Write("tournament-finished", tournament_id, time.time()))

    def tournament_fault(self, tournament_id: str, pairing: str, number: int, reason: str) -> None:
        """Keep a game of a tournament its queue gave up on, and why (the arena's fault)."""
        row = [tournament_id, pairing, number, reason, time.time()]
        self.submit(Write("tournament-fault", row))

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
