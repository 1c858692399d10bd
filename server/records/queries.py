"""Reading the records: games, tournaments and results, shaped as the API serves them.

Reads use their own connections, one per thread (neither SQLite's WAL readers nor PostgreSQL's
block the writer), and run in worker threads: ``await asyncio.to_thread(records.game, id)``.
A read that finds the database out of reach raises ``RecordsOutOfReach`` (the visor answers
503); the log says so once an outage, when the first read fails and when one succeeds again.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

import orjson

from server.debug import without_debug
from server.games import GAMES
from server.games.base import JsonObject
from server.league import GameResult
from server.match_events import VOIDED_REASON
from server.records import versions
from server.records.backends import Backend, Connection, RecordsOutOfReach
from server.records.identities import RosterChanges, RosterRead, roster_changes
from server.records.ladder import bot_record, ladder_table, seasons
from server.records.schema import LAST_TURN
from server.replay import DamagedRecord

log = logging.getLogger(__name__)

PAGE_SIZE_LIMIT = 200
# A game the arena broke (``Game voided``) counts for nothing: no result, no pairing played.
NOT_VOIDED = f"(reason IS NULL OR reason <> '{VOIDED_REASON}')"
GAME_COLUMNS = (  # a game's row, and its turn count, also while it is played
    "games.*, CASE WHEN games.status = 'playing' THEN coalesce("
    f"{LAST_TURN}, games.turn_count) ELSE games.turn_count END AS turns_played"
)

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class GameFilter:
    game: str | None = None
    player: str | None = None  # a nick or a tournament bot name
    result: str | None = None  # "win", "draw", "unfinished" or a seat name that won
    tournament: str | None = None
    page: int = 1
    per_page: int = 50


@dataclass(frozen=True, slots=True)
class Archived:
    """Which finished games an export reads (``Queries.finished_after``): of a game, of a bot
    (a registered bot in any case, a tournament's entrant as written), started from ``since``
    and before ``until`` (epoch seconds), after the cursor ``after`` (a game's start and id)."""

    game: str | None = None
    bot: str | None = None
    since: float | None = None
    until: float | None = None
    after: tuple[float, str] | None = None


@dataclass(frozen=True, slots=True)
class Listed:
    """A game in an export's page: its id and start (its place, for the cursor)."""

    id: str
    started_at: float


def read(
    method: Callable[Concatenate[Queries, Connection, P], T],
) -> Callable[Concatenate[Queries, P], T]:
    """A read of the records, given this thread's connection. A connection is found cut only
    when used, so the first read after a database restart fails on it: it is read once more,
    on a fresh connection, and answered rather than failed. A database out of reach is a
    ``RecordsOutOfReach``."""

    @functools.wraps(method)
    def reading(self: Queries, /, *args: P.args, **kwargs: P.kwargs) -> T:
        for again in (False, True):
            try:
                answer = method(self, self._reader(), *args, **kwargs)
            except self.backend.errors as error:
                reader: Connection | None = getattr(self._local, "reader", None)
                if not again and reader is not None and self.backend.lost(reader):
                    self._local.reader = None  # cut: read again on a new one
                    continue
                if not self.backend.unavailable(error, reader):
                    raise
                raise self.outage.failed(error) from error
            self.outage.answered()
            return answer
        raise AssertionError("unreachable: the second try answers or raises")

    return reading


class ReadOutage:
    """Reads failing because the database is out of reach: said in the log when the first
    fails and when one answers again, not per read (reads run in several threads)."""

    def __init__(self, describe: str) -> None:
        self.describe = describe
        self.since: float | None = None
        self.refused = 0
        self._lock = threading.Lock()

    def failed(self, error: Exception) -> RecordsOutOfReach:
        why = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        with self._lock:
            self.refused += 1
            first = self.since is None
            if first:
                self.since = time.monotonic()
        if first:
            log.warning(
                "records: the database %s is out of reach (%s): reads are answered 503 until "
                "it is back",
                self.describe,
                why,
            )
        return RecordsOutOfReach(why)

    def answered(self) -> None:
        if self.since is None:  # the usual case: no lock taken
            return
        with self._lock:
            if self.since is None:
                return
            away_s, refused = time.monotonic() - self.since, self.refused
            self.since, self.refused = None, 0
        log.warning(
            "records: the database %s answers reads again, after %.0f s (%d reads refused)",
            self.describe,
            away_s,
            refused,
        )


class Queries:
    """The reading side of the records; every read is a ``read``."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._local = threading.local()
        self.outage = ReadOutage(backend.describe())

    def _reader(self) -> Connection:
        reader: Connection | None = getattr(self._local, "reader", None)
        if reader is None or self.backend.lost(reader):  # a new one after a database restart
            reader = self.backend.connect()
            self._local.reader = reader
        return reader

    @read
    def thud_api_game(self, reader: Connection, token_digest: str) -> JsonObject | None:
        """The Thud HTTP API game of a game token's digest, or None."""
        row = reader.execute(
            "SELECT * FROM thud_api_games WHERE token_digest = ?", (token_digest,)
        ).fetchone()
        if row is None:
            return None
        return {
            "gameId": row["game_id"],
            "playerDigests": (row["player_one_digest"], row["player_two_digest"]),
            "players": (row["player_one"], row["player_two"]),
            "createdAt": row["created_at"],
            "savedAt": row["saved_at"],
        }

    @read
    def roster_changes(self, reader: Connection, since: RosterRead) -> RosterChanges:
        """The registered bots and the current season's ratings changed since ``since``
        (``server.identity.Roster``)."""
        return roster_changes(reader, since)

    @read
    def ladder(self, reader: Connection, game: str, season: str | None) -> JsonObject | None:
        """A game's ladder in a season (the current one if None); None for no such season."""
        played = seasons(reader)
        chosen = played[0] if season is None else season
        if chosen not in played:
            return None
        table = ladder_table(reader, game, chosen)
        return {"game": game, "season": chosen, "seasons": played, "bots": table}

    @read
    def ladder_bot(self, reader: Connection, name: str) -> JsonObject | None:
        """A registered bot's ratings, rated games, head-to-head and voided games; None if not
        registered."""
        return bot_record(reader, name)

    @read
    def tournaments(self, reader: Connection) -> list[JsonObject]:
        rows = reader.execute("SELECT * FROM tournaments ORDER BY created_at DESC")
        return [_tournament(row) for row in rows]

    @read
    def tournament(self, reader: Connection, tournament_id: str) -> JsonObject | None:
        row = reader.execute("SELECT * FROM tournaments WHERE id = ?", (tournament_id,)).fetchone()
        return None if row is None else _tournament(row)

    @read
    def bot_versions(self, reader: Connection, bot: str) -> list[JsonObject]:
        """A hosted bot's versions, newest first (``server.records.versions``)."""
        return versions.versions(reader, bot)

    @read
    def version_archive(self, reader: Connection, content_hash: str) -> tuple[bytes, str] | None:
        return versions.version_archive(reader, content_hash)

    @read
    def active_version(self, reader: Connection, bot: str) -> tuple[str, str] | None:
        return versions.active_version(reader, bot)

    @read
    def version_by_number(
        self, reader: Connection, bot: str, number: int
    ) -> tuple[str, str] | None:
        return versions.version_by_number(reader, bot, number)

    @read
    def active_hosted(self, reader: Connection, game: str) -> list[tuple[str, str, str]]:
        return versions.active_hosted(reader, game)

    @read
    def games_of_bot(self, reader: Connection, bot: str, count: int) -> list[str]:
        """The ids of the last ``count`` games a bot had a seat in, newest first: a registered
        bot by its name in any case, a tournament's entrant by its name as written."""
        rows = reader.execute(
            "SELECT games.id FROM games JOIN seats ON seats.game_id = games.id "
            "WHERE seats.bot = coalesce((SELECT name FROM bots WHERE folded = ?), ?) "
            "ORDER BY games.started_at DESC LIMIT ?",
            (bot.casefold(), bot, count),
        )
        return [str(row["id"]) for row in rows]

    @read
    def finished_after(self, reader: Connection, where: Archived, count: int) -> list[Listed]:
        """The next ``count`` finished games ``where`` says, oldest first (by start, then id),
        after its cursor: the archive's export reads a page at a time, never the table."""
        clauses: list[str] = ["status = 'finished'"]
        parameters: list[Any] = []
        if where.game:
            clauses.append("game = ?")
            parameters.append(where.game)
        if where.bot:
            clauses.append(
                "EXISTS (SELECT 1 FROM seats s WHERE s.game_id = games.id AND s.bot = "
                "coalesce((SELECT name FROM bots WHERE folded = ?), ?))"
            )
            parameters += [where.bot.casefold(), where.bot]
        if where.since is not None:
            clauses.append("started_at >= ?")
            parameters.append(where.since)
        if where.until is not None:
            clauses.append("started_at < ?")
            parameters.append(where.until)
        if where.after is not None:
            clauses.append("(started_at > ? OR (started_at = ? AND id > ?))")
            parameters += [where.after[0], where.after[0], where.after[1]]
        rows = reader.execute(
            f"SELECT id, started_at FROM games WHERE {' AND '.join(clauses)} "
            "ORDER BY started_at, id LIMIT ?",
            [*parameters, count],
        )
        return [Listed(str(row["id"]), float(row["started_at"])) for row in rows]

    @read
    def tournament_faults(self, reader: Connection, tournament_id: str) -> list[JsonObject]:
        """The games of a tournament its queue gave up on (the arena's faults), by number."""
        rows = reader.execute(
            "SELECT number, pairing, reason FROM tournament_faults WHERE tournament_id = ? "
            "ORDER BY number",
            (tournament_id,),
        )
        return [
            {"number": number, "pairing": pairing, "reason": reason, "fault": "arena"}
            for number, pairing, reason in rows
        ]

    @read
    def results(self, reader: Connection, tournament_id: str | None = None) -> list[GameResult]:
        """Finished games between named bots (a tournament's, or all), in the order they ended,
        with how each seat's bot process ended and how many of its turns timed out.

        A tournament's pairing counts once: should two games of one pairing finish (a worker
        thought dead that played on), the first to finish is its result."""
        # Each finished game with its rank among its pairing's finished games (one pass over
        # them: a pairing's other games are not looked up game by game).
        finished = (
            "SELECT id, game, winner, score, reason, pairing, finished_at, row_number() OVER "
            "(PARTITION BY tournament_id, pairing ORDER BY finished_at, id) AS nth "
            f"FROM games WHERE status = 'finished' AND {NOT_VOIDED}"
        )
        parameters: list[Any] = []
        if tournament_id is not None:
            finished += " AND tournament_id = ?"
            parameters.append(tournament_id)
        sql = (
            "SELECT g.id, g.game, g.winner, g.score, g.reason, g.pairing, s0.bot AS bot0, "
            "s1.bot AS bot1, "
            "s0.seat_name AS seat0, s1.seat_name AS seat1, s0.exit AS exit0, s1.exit AS exit1, "
            f"s0.timed_out_turns AS late0, s1.timed_out_turns AS late1 FROM ({finished}) g "
            "JOIN seats s0 ON s0.game_id = g.id AND s0.seat = 0 "
            "JOIN seats s1 ON s1.game_id = g.id AND s1.seat = 1 "
            "WHERE s0.bot IS NOT NULL AND s1.bot IS NOT NULL AND (g.pairing IS NULL OR g.nth = 1)"
        )
        results = []
        for row in reader.execute(sql + " ORDER BY g.finished_at, g.id", parameters):
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
                    pairing=row["pairing"] or "",
                )
            )
        return results

    @read
    def finished_pairings(self, reader: Connection, tournament_id: str) -> set[str]:
        return _pairings(reader, tournament_id, "finished")

    @read
    def playing_pairings(self, reader: Connection, tournament_id: str) -> set[str]:
        """The pairings of a tournament's games being played, on whichever node."""
        return _pairings(reader, tournament_id, "playing")

    @read
    def games(self, reader: Connection, where: GameFilter) -> JsonObject:
        """One page of game summaries, newest first."""
        clauses, parameters = _filter_sql(where)
        sql_where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        total = reader.execute(f"SELECT COUNT(*) FROM games {sql_where}", parameters).fetchone()[0]
        per_page = max(1, min(where.per_page, PAGE_SIZE_LIMIT))
        page = max(1, where.page)
        rows = reader.execute(
            f"SELECT {GAME_COLUMNS} FROM games {sql_where} ORDER BY games.started_at DESC, "
            "games.id LIMIT ? OFFSET ?",
            [*parameters, per_page, (page - 1) * per_page],
        ).fetchall()
        return {
            "games": [_listed(reader, row) for row in rows],
            "page": page,
            "perPage": per_page,
            "total": total,
        }

    @read
    def game_status(self, reader: Connection, game_id: str) -> str | None:
        """A game's status alone (``playing``, ``finished``...), None if it is not recorded:
        what a worker waits on before it writes beside the game, without reading its turns."""
        row = reader.execute("SELECT status FROM games WHERE id = ?", (game_id,)).fetchone()
        return None if row is None else str(row["status"])

    @read
    def game(self, reader: Connection, game_id: str) -> JsonObject | None:
        """The full record of one game (docs/records.md), or None; raises ``DamagedRecord``
        if what is stored does not read back."""
        row = reader.execute(
            f"SELECT {GAME_COLUMNS} FROM games WHERE games.id = ?", (game_id,)
        ).fetchone()
        if row is None:
            return None
        try:
            record = _summary(reader, row)
            record["settings"] = orjson.loads(row["settings"])
            seat_names = [player["seat"] for player in record["players"]]
            # Every row is fetched before any is read: a statement left half-read by an error
            # would hold this thread's connection on an old snapshot of the file.
            chunks = reader.execute(
                "SELECT first_number, count, turns FROM turn_chunks WHERE game_id = ? "
                "ORDER BY first_number",
                (game_id,),
            ).fetchall()
            record["turns"] = [turn for chunk in chunks for turn in _turns(seat_names, *chunk)]
            if record["status"] == "playing":  # a bot's debug text is shown once it is over
                for turn in record["turns"]:
                    if isinstance(turn["action"], dict):
                        turn["action"] = without_debug(turn["action"])
        except (IndexError, KeyError, TypeError, ValueError) as error:
            raise DamagedRecord(f"game {game_id}: its record does not read: {error}") from error
        return record


def _pairings(reader: Connection, tournament_id: str, status: str) -> set[str]:
    """A tournament's pairings with a game of ``status``: a voided game is none (it is played
    again)."""
    rows = reader.execute(
        f"SELECT pairing FROM games WHERE tournament_id = ? AND status = ? AND {NOT_VOIDED}",
        (tournament_id, status),
    )
    return {row["pairing"] for row in rows}


def _turns(seat_names: list[str], first: int, count: int, text: str) -> list[JsonObject]:
    """The turns of one chunk, as the API gives them."""
    turns = orjson.loads(text)
    if not isinstance(turns, list) or len(turns) != count:
        raise ValueError(f"the turns from {first} on are not a list of {count}")
    return [
        {
            "number": number,
            "seat": _seat_name(seat_names, seat),
            "action": action,
            "timedOut": bool(timed_out),
        }
        for number, (seat, action, timed_out) in enumerate(turns, start=first)
    ]


def _listed(reader: Connection, row: Any) -> JsonObject:
    """A game's summary for a list; a damaged one is listed as such, not left out."""
    try:
        return _summary(reader, row)
    except (IndexError, KeyError, TypeError, ValueError) as error:
        log.warning("records: game %s does not read: %s", row["id"], error)
        return {
            "id": row["id"],
            "game": row["game"],
            "status": row["status"],
            "startedAt": row["started_at"],
            "damaged": str(error),
        }


def _summary(reader: Connection, row: Any) -> JsonObject:
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
        "turnCount": row["turns_played"],
        "players": players,
        "result": result,
        "tournament": row["tournament_id"],
        "pairing": row["pairing"],
    }


def _seat_name(seat_names: list[str], seat: object) -> str:
    if not isinstance(seat, int) or not 0 <= seat < len(seat_names):
        raise IndexError(f"a turn's seat is {seat!r}, not one of the game's seats")
    return seat_names[seat]


def _tournament(row: Any) -> JsonObject:
    return {
        "id": row["id"],
        "name": row["name"],
        "game": row["game"],
        "spec": orjson.loads(row["spec"]),
        "createdAt": row["created_at"],
        "finishedAt": row["finished_at"],
    }


def _seat_score(game: str, score: JsonObject, seat: int) -> int:
    return int(score.get(GAMES[game].score_names[seat], 0))


def _filter_sql(where: GameFilter) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    parameters: list[Any] = []
    if where.game:
        clauses.append("games.game = ?")
        parameters.append(where.game)
    if where.player:
        clauses.append(
            "EXISTS (SELECT 1 FROM seats s WHERE s.game_id = games.id "
            "AND (s.nick = ? OR s.bot = ?))"
        )
        parameters += [where.player, where.player]
    if where.tournament:
        clauses.append("games.tournament_id = ?")
        parameters.append(where.tournament)
    if where.result == "draw":
        clauses.append("games.status = 'finished' AND games.winner IS NULL")
    elif where.result == "unfinished":
        clauses.append("games.status = 'unfinished'")
    elif where.result == "win":
        clauses.append("games.winner IS NOT NULL")
    elif where.result:
        clauses.append("games.winner = ?")
        parameters.append(where.result)
    return clauses, parameters
