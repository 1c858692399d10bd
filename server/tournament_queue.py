"""Tournaments spread over worker machines: a Redis stream of games, workers that play them.

    tavern tournament FILE --redis URL     # queues the games, shows progress, prints the league
    tavern worker --redis URL              # on each worker machine: takes games and plays them

Each game of a tournament is one entry of the stream ``STREAM``: the tournament's id, the
pairing's number and key, its bots by seat and its seed (a Swiss or knockout event's games follow
the results: the command pairs each round once the last one is over, and queues it). The
tournament itself, its file as it was read (its JSON) and the folder its bots' paths are
relative to, is kept once, beside the stream (``spec_key``), written with the entries that need
it; a worker reads it once per tournament. Workers read the stream in
the consumer group ``GROUP``. A worker plays each game it takes with
the tournament's own runner (``TournamentRunner.play``: the bots under the tournament's limits,
on an arena of the worker's own), records it in the shared database (every worker and the
command that queued the games use the same ``database``, PostgreSQL when they are on several
machines), and acknowledges the entry only once the game's record is committed.

While it plays, a worker claims its entry again every third of the claim timeout, which keeps
the entry's idle time short. A worker that is killed stops doing so: once its entry has been
idle for the claim timeout, another worker takes it over (``XAUTOCLAIM``) and plays the game
again from its start, with the same seed. A game is never counted twice: a worker skips an
entry whose pairing has already finished, and the league counts each pairing's first finished
game only (``Records.results``). The killed worker's own game stays ``playing`` until a node
that remains finds its owner gone and marks it ``unfinished`` (``server.records``).

The command that queued the games follows them in the database: it shows their progress across
workers and, once every pairing has finished, prints the league as a local run would (same
seeds, same pairings, so the same table for bots that play the same moves given a seed).

Redis may go away and come back (``QueueLink``): the command and the workers wait for it, with
a backoff, and say so in one line when it goes and one when it is back. A game being played
then is played to its end and recorded; it is acknowledged once Redis is back. Redis may come
back without the queue (restarted without its data, or from an older snapshot): the workers
make the consumer group again, and the command, which sees that Redis restarted, queues again
the games that are neither finished nor in the stream, once none of them has been played for
a bot's start-up time (``REQUEUE_AFTER_S`` more): a game a worker took just before the restart
is being played by then, and is not queued twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import orjson

from server.cancelling import stop_if_cancelled
from server.config import without_password
from server.league import GameResult
from server.records import Records
from server.tournament.runner import Progress, begin
from server.tournament.schedule import Pairing, next_games, schedule
from server.tournament.spec import (
    TournamentError,
    TournamentSpec,
    check_programs,
    spec_from_mapping,
)

if TYPE_CHECKING:
    from server.redis_client import Client

log = logging.getLogger(__name__)
T = TypeVar("T")

STREAM = "tavern:tournament-games"
GROUP = "workers"
CLAIM_TIMEOUT_MS = 60_000  # an entry idle this long belongs to a worker that is gone
MIN_CLAIM_TIMEOUT_MS = 300
READ_BLOCK_MS = 1_000  # how long a worker waits on the stream before it looks for lost games
PROGRESS_S = 0.5  # how often the queuing command reads the progress from the records
RETRY_FIRST_S = 0.1  # how long a call waits for Redis before it is made again, doubling...
RETRY_MAX_S = 5.0  # ...up to this
CHECK_REDIS_S = 1.0  # how often the queuing command asks whether Redis restarted
REQUEUE_AFTER_S = 2.0  # beyond a bot's start-up: a game taken before a restart is played by then
SPEC_KEPT_MS = 30 * 24 * 3_600_000  # a tournament's spec outlives its queue's last write by this
SPECS_CACHED = 16  # tournaments whose spec a worker keeps once read
DEAD = "tavern:tournament-dead"  # the games the queue gave up on, with why
DEAD_KEPT = 10_000  # about how many the dead letters keep (XADD's MAXLEN ~)
MAX_DELIVERIES = 3  # a game handed out this many times and never played is not handed out again


def spec_key(tournament_id: str) -> str:
    """Where a queued tournament's spec is kept, once for all its entries."""
    return f"tavern:tournament-spec:{tournament_id}"


@dataclasses.dataclass(frozen=True, slots=True)
class QueuedSpec:
    """A queued tournament, as every worker that plays one of its games reads it."""

    spec: dict[str, Any]  # the tournament file, as read
    base: str  # the folder the bots' commands and files are relative to (a shared path)

    def value(self) -> bytes:
        return orjson.dumps({"spec": self.spec, "base": self.base})

    @classmethod
    def of(cls, spec: TournamentSpec) -> QueuedSpec:
        return cls(spec.raw, str(spec.entrants[0].cwd))

    @classmethod
    def from_value(cls, value: object, tournament_id: str) -> QueuedSpec:
        if not isinstance(value, bytes):
            raise TournamentError(f"tournament {tournament_id} is not in the queue's Redis")
        try:
            read = orjson.loads(value)
            spec, base = read["spec"], read["base"]
        except (orjson.JSONDecodeError, KeyError, TypeError) as error:
            raise TournamentError(f"tournament {tournament_id} does not read: {error!r}") from error
        if not isinstance(spec, dict) or not isinstance(base, str):
            raise TournamentError(f"tournament {tournament_id} does not read")
        return cls(spec, base)


@dataclasses.dataclass(frozen=True, slots=True)
class QueuedGame:
    """One entry of the stream: which game of which tournament (``QueuedSpec`` is the rest)."""

    tournament_id: str
    number: int
    key: str
    bots: tuple[str, str]  # the entrants' names, by seat
    seed: int

    def fields(self) -> dict[str, bytes]:
        return {
            "tournament": self.tournament_id.encode(),
            "number": str(self.number).encode(),
            "key": self.key.encode(),
            "bots": orjson.dumps(self.bots),
            "seed": str(self.seed).encode(),
        }

    @classmethod
    def of(cls, spec: TournamentSpec, pairing: Pairing) -> QueuedGame:
        bots = (pairing.bots[0].name, pairing.bots[1].name)
        return cls(spec.id, pairing.number, pairing.key, bots, pairing.seed)

    @classmethod
    def from_fields(cls, fields: dict[bytes, bytes]) -> QueuedGame:
        try:
            first, second = orjson.loads(fields[b"bots"])
            return cls(
                fields[b"tournament"].decode(),
                int(fields[b"number"]),
                fields[b"key"].decode(),
                (str(first), str(second)),
                int(fields[b"seed"]),
            )
        except (KeyError, ValueError, UnicodeDecodeError, TypeError) as error:
            raise TournamentError(f"the entry does not read: {error!r}") from error

    def pairing(self, queued: QueuedSpec) -> tuple[TournamentSpec, Pairing]:
        """The tournament and the game, as the queuing command paired it."""
        spec = dataclasses.replace(
            spec_from_mapping(queued.spec, Path(queued.base)), id=self.tournament_id
        )
        by_name = {entrant.name: entrant for entrant in spec.entrants}
        if not all(name in by_name for name in self.bots):
            raise TournamentError(f"game {self.number} of {self.tournament_id} names no entrant")
        bots = (by_name[self.bots[0]], by_name[self.bots[1]])
        return spec, Pairing(self.number, bots, self.key, self.seed)


@dataclasses.dataclass(frozen=True, slots=True)
class DeadGame:
    """A game the queue gave up on (it stopped every worker that took it, or its entry does
    not read): never handed out again, and shown with its tournament's league."""

    tournament_id: str
    number: int
    key: str
    reason: str

    def fields(self) -> dict[str, bytes]:
        return {
            "tournament": self.tournament_id.encode(),
            "number": str(self.number).encode(),
            "key": self.key.encode(),
            "reason": self.reason.encode(),
        }

    @classmethod
    def from_fields(cls, fields: dict[bytes, bytes]) -> DeadGame | None:
        """The dead letter, or None if it does not read (a tournament cannot wait for it)."""
        try:
            return cls(
                fields[b"tournament"].decode(),
                int(fields[b"number"]),
                fields[b"key"].decode(),
                fields[b"reason"].decode(),
            )
        except (KeyError, ValueError, UnicodeDecodeError):
            return None

    def text(self) -> str:
        return f"game {self.number} ({self.key}): {self.reason}"


async def dead_games(
    client: Client, tournament_id: str, after: bytes
) -> tuple[dict[str, DeadGame], bytes]:
    """The games of a tournament that the queue gave up on since the dead letter ``after``
    (its id; ``0-0`` for all), by pairing key, and the id of the last letter read: a caller
    that asks again reads only the new ones."""
    entries: Any = await client.xrange(DEAD, min=b"(" + after)
    dead = {}
    for entry_id, fields in entries:
        after = bytes(entry_id)
        game = DeadGame.from_fields(fields)
        if game is not None and game.tournament_id == tournament_id:
            dead[game.key] = game
    return dead, after


class QueueLink:
    """The queue's Redis, as the workers and the queuing command use it. A call that finds
    Redis away (stopped, restarting, out of reach) waits for it and is made again, with a
    backoff up to ``RETRY_MAX_S``: one line says that Redis is away, one that it is back, never
    one per try. A Redis that answers but refuses (a wrong password, a database it does not
    have) is a ``TournamentError``, said as such. The client is imported only here: an arena
    without Redis never loads it."""

    def __init__(self, redis_url: str, say: Callable[[str], object] | None = None) -> None:
        from redis import exceptions  # noqa: PLC0415

        self.url = redis_url
        self.client: Client | None = None  # made at the first call, and again after a failure
        self.where = without_password(redis_url)
        self.say = say  # besides the log: where the line is shown (the command's progress)
        self.away = False
        self._refusals = (
            exceptions.AuthenticationError,
            exceptions.AuthorizationError,
            exceptions.ResponseError,
        )
        self._away_errors = (exceptions.ConnectionError, exceptions.TimeoutError, OSError)

    async def call(self, operation: Callable[[Client], Awaitable[T]]) -> T:
        """What ``operation`` answers, once Redis answers it."""
        pause = RETRY_FIRST_S
        while True:
            stop_if_cancelled()
            answered = await self._made(operation)
            if answered is not None:
                return answered[0]
            await asyncio.sleep(pause)
            pause = min(pause * 2, RETRY_MAX_S)

    async def attempt(self, operation: Callable[[Client], Awaitable[T]]) -> T | None:
        """What ``operation`` answers, or None at once if Redis is away."""
        answered = await self._made(operation)
        return None if answered is None else answered[0]

    async def _made(self, operation: Callable[[Client], Awaitable[T]]) -> tuple[T] | None:
        """``operation``'s answer, or None if Redis is away."""
        from server import redis_client  # noqa: PLC0415

        try:
            if self.client is None:
                self.client, _ = await redis_client.connect(self.url)
            answer = await operation(self.client)
        except self._refusals as error:
            raise self._refused(error) from None
        except self._away_errors as error:
            await self._gone(error)
            return None
        self._back()
        return (answer,)

    def _refused(self, error: Exception) -> Exception:
        """What to raise for a refusal: the queue lost with a restart is the caller's to
        handle (``lost_group``), anything else stops the command."""
        if lost_group(error):
            return error
        return TournamentError(f"Redis at {self.where} refused: {error}")

    async def _gone(self, error: Exception) -> None:
        # The client goes, with every connection (after a restart each would fail once more):
        # the next call makes another, which finds a cluster's servers again too.
        client, self.client = self.client, None
        if client is not None:
            with contextlib.suppress(*self._away_errors):
                await client.aclose()
        if not self.away:
            self.away = True
            self._tell(f"waiting for Redis at {self.where}: {error}; retrying")

    def _back(self) -> None:
        if self.away:
            self.away = False
            self._tell(f"Redis at {self.where} is back")

    def _tell(self, line: str) -> None:
        log.warning("%s", line)
        if self.say is not None:
            self.say(line)

    async def close(self) -> None:
        if self.client is not None:
            await self.client.aclose()


async def ensure_group(client: Client) -> None:
    """The stream and its consumer group, from the stream's start (idempotent)."""
    from redis.exceptions import ResponseError  # noqa: PLC0415

    try:
        await client.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    except ResponseError as error:
        if "BUSYGROUP" not in str(error):
            raise


def lost_group(error: Exception) -> bool:
    """Is ``error`` Redis saying that the stream or its group is not there (Redis restarted
    without them)?"""
    from redis.exceptions import ResponseError  # noqa: PLC0415

    return isinstance(error, ResponseError) and str(error).startswith("NOGROUP")


async def run_id(client: Client) -> str:
    """The run id of the Redis server holding the queue: another one once it restarted."""
    from server import redis_client  # noqa: PLC0415

    return await redis_client.run_id(client, STREAM)


async def queue_games(client: Client, spec: TournamentSpec, games: list[Pairing]) -> int:
    """Put ``games`` of ``spec`` on the queue for the workers, the spec first (written again
    with every batch: Redis may have restarted without it); how many were queued."""
    await ensure_group(client)
    async with client.pipeline(transaction=False) as pipe:
        if games:
            pipe.set(spec_key(spec.id), QueuedSpec.of(spec).value(), px=SPEC_KEPT_MS)
        for pairing in games:
            pipe.xadd(STREAM, QueuedGame.of(spec, pairing).fields())  # type: ignore[arg-type]
        await pipe.execute()
    return len(games)


class LostGames:
    """The games a restarted Redis may have lost (queued, neither finished nor in its queue):
    each is queued again unless it finishes, or a worker is seen playing it, before the grace
    period (a bot's start-up time and ``REQUEUE_AFTER_S``) is over."""

    def __init__(self, spec: TournamentSpec) -> None:
        self.grace_s = spec.limits.startup_ms / 1000 + REQUEUE_AFTER_S
        self._due: dict[str, tuple[float, Pairing]] = {}  # by key: when to queue it again

    def __bool__(self) -> bool:
        return bool(self._due)

    def suspect(self, games: Iterable[Pairing], now: float) -> None:
        for pairing in games:
            self._due.setdefault(pairing.key, (now + self.grace_s, pairing))

    def clear(self) -> None:
        self._due.clear()

    def due(self, finished: set[str], playing: set[str], now: float) -> list[Pairing]:
        """The games to queue again now; the finished ones are forgotten, and those a worker
        plays on wait again (queued again only if it stops)."""
        due = []
        for key, (deadline, pairing) in list(self._due.items()):
            if key in finished:
                del self._due[key]
            elif key in playing:
                self._due[key] = (now + self.grace_s, pairing)
            elif now >= deadline:
                due.append(pairing)
        return due

    def queued(self, games: Iterable[Pairing]) -> None:
        for pairing in games:
            del self._due[pairing.key]


# --- the command that queues a tournament --------------------------------------------------------
async def run_queued(
    spec: TournamentSpec,
    records: Records,
    redis_url: str,
    out: IO[str] = sys.stderr,
) -> tuple[list[GameResult], list[DeadGame]]:
    """Queue the games not yet finished, follow them until every one has (or was given up on),
    return the results and the games given up on. A Swiss or knockout event is queued a round
    at a time, each paired from the results before it; a round a game of which was given up on
    is left short, and the event unfinished (the next run plays it again)."""
    if spec.format == "arena":  # each bot paired again the moment its game ends
        raise TournamentError("an arena event plays on this machine, not on workers (yet)")
    check_programs(spec.entrants, spec.game)
    spec = await begin(records, spec)
    await records.flush()
    link = QueueLink(redis_url, say=lambda line: out.write(f"tavern: {line}\n"))
    dead: dict[str, DeadGame] = {}
    complete = True
    try:
        rounds = spec.format in ("swiss", "knockout")
        while True:
            results = await asyncio.to_thread(records.results, spec.id)
            todo = next_games(spec, results) if rounds else schedule(spec)
            if rounds and not todo:
                break
            queued = QueuedTournament(spec, records, link, todo)
            await queued.follow(out)
            dead.update(queued.dead)
            if not rounds or queued.dead.keys() & {pairing.key for pairing in todo}:
                complete = not rounds
                break
        await link.attempt(lambda client: client.delete(spec_key(spec.id)))
    finally:
        await link.close()
    if complete:
        records.tournament_finished(spec.id)
    await records.flush()
    finished = await asyncio.to_thread(records.finished_pairings, spec.id)
    given_up = [game for game in dead.values() if game.key not in finished]
    results = await asyncio.to_thread(records.results, spec.id)
    return results, sorted(given_up, key=lambda game: game.number)


class QueuedTournament:
    """A tournament's games on the queue, as the command that queued them follows them."""

    def __init__(
        self, spec: TournamentSpec, records: Records, link: QueueLink, pairings: list[Pairing]
    ) -> None:
        self.spec = spec
        self.pairings = pairings  # the games to play: all, or a round's
        self.records = records
        self.link = link
        self.redis_run = ""  # the run id of the Redis server the games were queued on
        self.suspects = LostGames(spec)
        self.dead: dict[str, DeadGame] = {}  # the games given up on, by pairing key
        self._dead_read = b"0-0"  # the last dead letter read

    async def follow(self, out: IO[str]) -> None:
        """Queue the games not finished and not in the queue, then follow them to the end."""
        finished, playing = await self._played()
        missing, queued = await self.link.call(
            lambda client: self._queue(client, finished, playing)
        )
        now = time.monotonic()
        self.suspects.suspect([p for p in missing if p.key in playing], now)
        total = len(self.pairings)
        progress = Progress(total, len(finished), out)
        self.link.say = progress.update
        note = f"{queued} games queued"
        if queued < total - len(finished):
            note += f", {total - len(finished) - queued} still in the queue or being played"
        progress.update(note + (", resuming" if finished else ""))
        checked = now
        while progress.done < progress.total:
            stop_if_cancelled()
            await asyncio.sleep(PROGRESS_S)
            finished, playing = await self._played()
            if (len(finished), len(playing)) != (progress.done, progress.running):
                progress.done, progress.running = len(finished), len(playing)
                progress.update(f"{len(playing)} being played by the workers")
            now = time.monotonic()
            if now - checked >= CHECK_REDIS_S:
                checked = now
                await self._check_redis(finished, progress)
            await self._requeue(finished, playing, now, progress)

    async def _played(self) -> tuple[set[str], set[str]]:
        """The pairings done (finished, or given up on by the queue), and those being played."""
        finished = await asyncio.to_thread(self.records.finished_pairings, self.spec.id)
        playing = await asyncio.to_thread(self.records.playing_pairings, self.spec.id)
        read = await self.link.attempt(
            lambda client: dead_games(client, self.spec.id, self._dead_read)
        )
        if read is not None:  # else Redis is away: those known so far
            dead, self._dead_read = read
            for key in sorted(dead.keys() - self.dead.keys() - finished):
                log.error("tournament %s: %s", self.spec.id, dead[key].text())
                # In the records, for the league's pages: the arena's fault, no bot's.
                self.records.tournament_fault(self.spec.id, key, dead[key].number, dead[key].reason)
            self.dead.update(dead)
        return finished | self.dead.keys(), playing

    async def _queue(
        self, client: Client, finished: set[str], playing: set[str]
    ) -> tuple[list[Pairing], int]:
        """Queue the games neither finished, nor in the queue, nor being played. Returns the
        games neither finished nor in the queue, and how many of them were queued."""
        self.redis_run = await run_id(client)
        missing = await self._unqueued(client, finished)
        games = [p for p in missing if p.key not in playing]
        return missing, await queue_games(client, self.spec, games)

    async def _unqueued(self, client: Client, finished: set[str]) -> list[Pairing]:
        """The games neither finished nor in the queue."""
        entries: Any = await client.xrange(STREAM)
        queued = {(fields.get(b"tournament"), fields.get(b"number")) for _, fields in entries}
        tournament = self.spec.id.encode()
        return [
            pairing
            for pairing in self.pairings
            if pairing.key not in finished and (tournament, b"%d" % pairing.number) not in queued
        ]

    async def _check_redis(self, finished: set[str], progress: Progress) -> None:
        """Has Redis restarted since the games were queued? It may have lost them: each game
        not finished and not in the queue is queued again unless played before long."""

        async def restarted(client: Client) -> tuple[str, list[Pairing]] | None:
            run = await run_id(client)
            return None if run == self.redis_run else (run, await self._unqueued(client, finished))

        found = await self.link.attempt(restarted)
        if found is None:  # the same Redis, or none at the moment
            return
        self.redis_run, missing = found
        self.suspects.suspect(missing, time.monotonic())
        if missing:
            log.warning("Redis restarted without %d games of the queue", len(missing))
            progress.update(f"Redis restarted: {len(missing)} games not in its queue")

    async def _requeue(
        self, finished: set[str], playing: set[str], now: float, progress: Progress
    ) -> None:
        """Queue again the games Redis lost that no worker played since."""
        due = self.suspects.due(finished, playing, now)
        if not due or await self.link.attempt(lambda c: queue_games(c, self.spec, due)) is None:
            return  # none due, or Redis is away: tried again at the next round
        self.suspects.queued(due)
        log.warning("%d games queued again: %s", len(due), ", ".join(p.key for p in due))
        progress.update(f"{len(due)} games queued again")
