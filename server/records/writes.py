"""The records' writes as data: each a kind (a function of ``KINDS``) and its arguments (JSON
values), built on the event loop and applied by the writer thread in a transaction.

Being data, a write the database cannot take now waits in the journal (``server.records.
journal``) as ``[kind, *args]``, and is applied later, by this process or the next. A journal
is written again from its start after a crash in the middle of writing it, so every write may
be applied twice, in its order: each is an upsert keyed by the schema's keys, an update to the
values it carries, or looks first (a game rated already is not rated again; a chunk of turns
written already has had its late turns counted).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import orjson

from server.game_file import recorded_settings
from server.match_events import VOIDED_REASON, GameFinished, GameStarted
from server.records.backends import Backend, Connection
from server.records.ladder import rate
from server.records.schema import LAST_TURN

Apply = Callable[..., None]  # (backend, db, *args)
KINDS: dict[str, Apply] = {}
TIMED_OUT = (b"false", b"true")
MARK_UNFINISHED = (
    f"UPDATE games SET status = 'unfinished', turn_count = coalesce({LAST_TURN}, turn_count) "
    "WHERE status = 'playing' AND owner IS ?"
)
Turn = tuple[int, bytes, bytes]  # seat, the action as JSON, timed out as JSON
# The kinds whose first argument is a game's id (the log names it).
GAME_KINDS = frozenset(
    {"game-started", "game-finished", "seat-stderr", "seat-exit", "thud-api-game-created"}
)


def kind(name: str) -> Callable[[Apply], Apply]:
    """Register the function that applies the writes of a kind (the journal names it)."""

    def register(apply: Apply) -> Apply:
        KINDS[name] = apply
        return apply

    return register


class Operation(Protocol):
    """A write the writer commits: applied in a transaction, or kept in the journal."""

    def __call__(self, backend: Backend, db: Connection) -> None: ...
    def entry(self) -> list[Any]: ...


Batch = list[Operation]


class Write:
    """One write: its kind and its arguments; ``about`` names what it is of (a game's id) for
    the log, never a secret."""

    __slots__ = ("about", "args", "kind")

    def __init__(self, kind: str, *args: Any, about: str = "") -> None:
        self.kind = kind
        self.args = args
        self.about = about

    def __call__(self, backend: Backend, db: Connection) -> None:
        KINDS[self.kind](backend, db, *self.args)

    def entry(self) -> list[Any]:
        return [self.kind, *self.args]

    def __repr__(self) -> str:
        return f"<{self.kind} of {self.about}>" if self.about else f"<{self.kind}>"


def from_entry(entry: object) -> Write:
    """A write read back from the journal (its kind is checked when it is applied)."""
    if not isinstance(entry, list) or not entry or not isinstance(entry[0], str):
        raise ValueError(f"not a write: {entry!r:.80}")
    about = entry[1] if len(entry) > 1 and isinstance(entry[1], str) else ""
    return Write(entry[0], *entry[1:], about=about if entry[0] in GAME_KINDS else "")


def decode(payload: bytes) -> list[Write]:
    """A journal entry's writes."""
    entries = orjson.loads(payload)
    if not isinstance(entries, list):
        raise ValueError("a journal entry is not a list of writes")
    return [from_entry(entry) for entry in entries]


def encode(operations: list[Operation]) -> bytes:
    return orjson.dumps([operation.entry() for operation in operations])


# --- a game's turns ------------------------------------------------------------------------------
class Chunk:
    """Consecutive turns of one game, from ``first``: one row of ``turn_chunks``."""

    __slots__ = ("first", "game_id", "turns")

    def __init__(self, game_id: str, first: int) -> None:
        self.game_id = game_id
        self.first = first
        self.turns: list[Turn] = []


ChunkRow = tuple[str, int, int, bytes, list[tuple[int, int]]]  # and late turns by seat


class TurnChunks:
    """The chunks of a batch, written as one operation; their rows are built by the writer
    thread, not the event loop."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = chunks

    def rows(self) -> list[ChunkRow]:
        rows = []
        for chunk in self.chunks:
            late = [seat for seat, _, timed_out in chunk.turns if timed_out == TIMED_OUT[True]]
            rows.append(
                (
                    chunk.game_id,
                    chunk.first,
                    len(chunk.turns),
                    b"[%s]" % b",".join([b"[%d,%s,%s]" % turn for turn in chunk.turns]),
                    sorted(collections.Counter(late).items()) if late else [],
                )
            )
        return rows

    def __call__(self, backend: Backend, db: Connection) -> None:
        write_turns(backend, db, self.rows())

    def entry(self) -> list[Any]:
        rows = [[*row[:3], row[3].decode(), row[4]] for row in self.rows()]
        return ["turns", rows]

    def one_by_one(self) -> Iterator[TurnChunks]:
        return (TurnChunks([chunk]) for chunk in self.chunks)

    def __repr__(self) -> str:
        return f"<turns of {', '.join(chunk.game_id for chunk in self.chunks)}>"


@kind("turns")
def write_turns(backend: Backend, db: Connection, rows: list[Any]) -> None:
    """The chunks in one statement, then each seat's count of timed-out turns (rare: each
    took a turn's whole time limit) for the chunks not written before."""
    late = [row for row in rows if row[4]]
    written_before = {
        (row[0], row[1])
        for row in late
        if db.execute(
            "SELECT 1 FROM turn_chunks WHERE game_id = ? AND first_number = ?", (row[0], row[1])
        ).fetchone()
    }
    backend.insert_chunks(
        db,
        [
            (game_id, first, count, turns if isinstance(turns, bytes) else turns.encode())
            for game_id, first, count, turns, _ in rows
        ],
    )
    counts = [
        (count, row[0], seat)
        for row in late
        if (row[0], row[1]) not in written_before
        for seat, count in row[4]
    ]
    if counts:
        db.executemany(
            "UPDATE seats SET timed_out_turns = timed_out_turns + ? WHERE game_id = ? AND seat = ?",
            counts,
        )


# --- a game's start and end ----------------------------------------------------------------------
def started(update: GameStarted, owner: str) -> Write:
    view = update.view
    settings = orjson.dumps(recorded_settings(view)).decode()
    game_row = (
        view.codec.name,
        view.seed,
        settings,
        update.started_at,
        view.tournament_id,
        view.pairing,
        owner,
        int(view.rated),
    )
    seat_rows = [
        (
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
    return Write("game-started", view.match_id, game_row, seat_rows, about=view.match_id)


@kind("game-started")
def write_started(
    backend: Backend, db: Connection, game_id: str, game_row: list[Any], seat_rows: list[Any]
) -> None:
    # A resumed game (one restored from its record) is the same row playing on; its dwarves
    # keep the names they started with, which the replay needs.
    db.execute(
        "INSERT INTO games (id, game, seed, settings, started_at, tournament_id, pairing, owner, "
        "rated, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'playing') "
        "ON CONFLICT (id) DO UPDATE "
        "SET status = 'playing', finished_at = NULL, reason = NULL, winner = NULL, "
        "score = NULL, owner = excluded.owner",
        (game_id, *game_row),
    )
    db.executemany(
        "INSERT INTO seats (game_id, seat, seat_name, nick, names, kind, bot) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (game_id, seat) DO UPDATE SET "
        "nick = excluded.nick, kind = excluded.kind, bot = excluded.bot",
        [(game_id, *row) for row in seat_rows],
    )


def finished(update: GameFinished) -> Write:
    view, outcome = update.view, update.outcome
    game = view.codec
    score = view.scores()
    winner = None if outcome.winner is None else game.seat_names[outcome.winner]
    game_row = (
        update.finished_at,
        outcome.reason.value,  # the text, whatever a driver makes of an enum
        winner,
        None if score is None else orjson.dumps(score).decode(),
        view.turn,
    )
    seat_rows = [
        (
            index,
            stats.reply_mean_ms,
            stats.reply_worst_ms,
            stats.replies,
            stats.errors,
            stats.last_error,
        )
        for index, stats in enumerate(update.stats)
        if stats is not None
    ]
    bots = tuple(None if player is None else player.bot for player in view.players)
    rated = view.rated and len(bots) == 2 and None not in bots and bots[0] != bots[1]
    rated = rated and outcome.reason.value != VOIDED_REASON  # the arena's fault: no result
    rating = (game.name, str(bots[0]), str(bots[1]), outcome.winner) if rated else None
    return Write("game-finished", view.match_id, game_row, seat_rows, rating, about=view.match_id)


@kind("game-finished")
def write_finished(
    backend: Backend,
    db: Connection,
    game_id: str,
    game_row: list[Any],
    seat_rows: list[Any],
    rating: list[Any] | None,
) -> None:
    db.execute(
        "UPDATE games SET status = 'finished', finished_at = ?, reason = ?, winner = ?, "
        "score = ?, turn_count = ? WHERE id = ?",
        (*game_row, game_id),
    )
    db.executemany(
        "UPDATE seats SET reply_mean_ms = ?, reply_worst_ms = ?, replies = ?, errors = ?, "
        "last_error = ? WHERE game_id = ? AND seat = ?",
        [(*row[1:], game_id, row[0]) for row in seat_rows],
    )
    if rating is not None:
        name, first, second, winner = rating
        rate(db, game_id, name, (first, second), winner)


@kind("unfinished")
def write_unfinished(backend: Backend, db: Connection, owner: str) -> None:
    """A stopping process's games in progress, kept as unfinished."""
    db.execute(MARK_UNFINISHED, (owner,))


# --- tournaments and the Thud HTTP API's games ---------------------------------------------------
@kind("tournament-started")
def write_tournament_started(backend: Backend, db: Connection, row: list[Any]) -> None:
    db.execute(
        "INSERT INTO tournaments (id, name, game, spec, created_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        row,
    )


@kind("tournament-finished")
def write_tournament_finished(
    backend: Backend, db: Connection, tournament_id: str, at: float
) -> None:
    db.execute("UPDATE tournaments SET finished_at = ? WHERE id = ?", (at, tournament_id))


@kind("tournament-fault")
def write_tournament_fault(backend: Backend, db: Connection, row: list[Any]) -> None:
    db.execute(
        "INSERT INTO tournament_faults (tournament_id, pairing, number, reason, recorded_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        row,
    )


@kind("seat-stderr")
def write_seat_stderr(
    backend: Backend, db: Connection, game_id: str, seat: int, stderr: str
) -> None:
    db.execute(
        "UPDATE seats SET stderr = ? WHERE game_id = ? AND seat = ?", (stderr, game_id, seat)
    )


@kind("seat-exit")
def write_seat_exit(backend: Backend, db: Connection, game_id: str, seat: int, exit: str) -> None:
    db.execute("UPDATE seats SET exit = ? WHERE game_id = ? AND seat = ?", (exit, game_id, seat))


@kind("thud-api-game-created")
def write_thud_api_game_created(
    backend: Backend, db: Connection, game_id: str, row: list[Any]
) -> None:
    db.execute(
        "INSERT INTO thud_api_games (token_digest, game_id, player_one_digest, "
        "player_two_digest, player_one, player_two, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (row[0], game_id, *row[1:]),
    )


@kind("thud-api-game-saved")
def write_thud_api_game_saved(
    backend: Backend, db: Connection, token_digest: str, at: float
) -> None:
    db.execute("UPDATE thud_api_games SET saved_at = ? WHERE token_digest = ?", (at, token_digest))
