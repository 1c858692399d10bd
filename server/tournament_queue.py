"""Tournaments spread over worker machines: a Redis stream of games, workers that play them.

    tavern tournament FILE --redis URL     # queues the games, shows progress, prints the league
    tavern worker --redis URL              # on each worker machine: takes games and plays them

Each game of a tournament is one entry of the stream ``STREAM``: the tournament's file as it was
read (its JSON), the folder its bots' paths are relative to, and the pairing's number and key.
Workers read the stream in the consumer group ``GROUP``. A worker plays each game it takes with
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
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson

from server.config import ArenaConfig
from server.league import GameResult
from server.records import Records
from server.tournament import (
    Pairing,
    Progress,
    TournamentError,
    TournamentRunner,
    TournamentSpec,
    check_programs,
    schedule,
    spec_from_mapping,
)

if TYPE_CHECKING:
    import redis.asyncio as aioredis

log = logging.getLogger(__name__)

STREAM = "tavern:tournament-games"
GROUP = "workers"
CLAIM_TIMEOUT_MS = 60_000  # an entry idle this long belongs to a worker that is gone
MIN_CLAIM_TIMEOUT_MS = 300
READ_BLOCK_MS = 1_000  # how long a worker waits on the stream before it looks for lost games
PROGRESS_S = 0.5  # how often the queuing command reads the progress from the records


@dataclasses.dataclass(frozen=True, slots=True)
class QueuedGame:
    """One entry of the stream: enough for any worker to play the game as a local run would."""

    tournament_id: str
    spec: dict[str, Any]  # the tournament file, as read
    base: str  # the folder the bots' commands and files are relative to (a shared path)
    number: int
    key: str

    def fields(self) -> dict[str, bytes]:
        return {
            "tournament": self.tournament_id.encode(),
            "spec": orjson.dumps(self.spec),
            "base": self.base.encode(),
            "number": str(self.number).encode(),
            "key": self.key.encode(),
        }

    @classmethod
    def of(cls, spec: TournamentSpec, pairing: Pairing) -> QueuedGame:
        return cls(spec.id, spec.raw, str(spec.entrants[0].cwd), pairing.number, pairing.key)

    @classmethod
    def from_fields(cls, fields: dict[bytes, bytes]) -> QueuedGame:
        try:
            spec = orjson.loads(fields[b"spec"])
            if not isinstance(spec, dict):
                raise TournamentError("the entry's tournament is not an object")
            return cls(
                fields[b"tournament"].decode(),
                spec,
                fields[b"base"].decode(),
                int(fields[b"number"]),
                fields[b"key"].decode(),
            )
        except (KeyError, ValueError, UnicodeDecodeError) as error:
            raise TournamentError(f"the entry does not read: {error!r}") from error

    def pairing(self) -> tuple[TournamentSpec, Pairing]:
        """The tournament and the game, as the queuing command scheduled them."""
        spec = dataclasses.replace(
            spec_from_mapping(self.spec, Path(self.base)), id=self.tournament_id
        )
        pairings = schedule(spec)
        if not 1 <= self.number <= len(pairings) or pairings[self.number - 1].key != self.key:
            raise TournamentError(f"game {self.number} of {self.tournament_id} is not {self.key}")
        return spec, pairings[self.number - 1]


def stop_if_cancelled() -> None:
    """Raise the cancellation a Redis call swallowed: redis-py's (8.1) pipelines sometimes
    return normally when cancelled, which would keep a worker, or the command, going after
    SIGTERM. A task that was cancelled and not uncancelled is still ``cancelling``."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def connect(redis_url: str) -> aioredis.Redis:
    """A client of the queue's Redis, imported only here: an arena without Redis never loads
    the client."""
    import redis.asyncio as aioredis  # noqa: PLC0415

    return aioredis.from_url(redis_url)


async def ensure_group(client: aioredis.Redis) -> None:
    """The stream and its consumer group, from the stream's start (idempotent)."""
    from redis.exceptions import ResponseError  # noqa: PLC0415

    try:
        await client.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    except ResponseError as error:
        if "BUSYGROUP" not in str(error):
            raise


# --- the command that queues a tournament --------------------------------------------------------
async def run_queued(
    spec: TournamentSpec,
    records: Records,
    redis_url: str,
    out: IO[str] = sys.stderr,
) -> list[GameResult]:
    """Queue the games not yet finished, follow them until every one has, return the results."""
    check_programs(spec.entrants, spec.game)
    pairings = schedule(spec)
    records.tournament_started(spec.id, spec.name, spec.game, spec.raw)
    await records.flush()
    finished = await asyncio.to_thread(records.finished_pairings, spec.id)
    todo = [pairing for pairing in pairings if pairing.key not in finished]
    client = connect(redis_url)
    try:
        await ensure_group(client)
        # A run that resumes does not queue again the games still in the stream.
        entries: Any = await client.xrange(STREAM)
        queued = {(fields.get(b"tournament"), fields.get(b"number")) for _, fields in entries}
        missing = [
            pairing
            for pairing in todo
            if (spec.id.encode(), str(pairing.number).encode()) not in queued
        ]
        async with client.pipeline(transaction=False) as pipe:
            for pairing in missing:
                pipe.xadd(STREAM, QueuedGame.of(spec, pairing).fields())  # type: ignore[arg-type]
            await pipe.execute()
        progress = Progress(len(pairings), len(pairings) - len(todo), out)
        note = f"{len(missing)} games queued"
        if len(missing) < len(todo):
            note += f", {len(todo) - len(missing)} still in the queue"
        progress.update(note + (", resuming" if finished else ""))
        while progress.done < progress.total:
            stop_if_cancelled()
            await asyncio.sleep(PROGRESS_S)
            done = len(await asyncio.to_thread(records.finished_pairings, spec.id))
            running = await asyncio.to_thread(records.playing, spec.id)
            if (done, running) != (progress.done, progress.running):
                progress.done, progress.running = done, running
                progress.update(f"{running} being played by the workers")
    finally:
        await client.aclose()
    records.tournament_finished(spec.id)
    await records.flush()
    return await asyncio.to_thread(records.results, spec.id)


# --- tavern worker -------------------------------------------------------------------------------
class Worker:
    """Takes games from the stream one at a time, plays them, acknowledges them once recorded."""

    def __init__(
        self,
        config: ArenaConfig,
        records: Records,
        client: aioredis.Redis,
        claim_timeout_ms: int = CLAIM_TIMEOUT_MS,
        out: IO[str] = sys.stderr,
    ) -> None:
        self.config = config
        self.records = records
        self.client = client
        self.claim_timeout_ms = claim_timeout_ms
        self.out = out
        self.name = records.owner  # the consumer's name: unique, and names the games' owner

    async def run(self) -> None:
        """Play games until cancelled."""
        await ensure_group(self.client)
        while True:
            stop_if_cancelled()
            entry = await self._next()
            if entry is not None:
                await self._take(*entry)

    async def _next(self) -> tuple[bytes, dict[bytes, bytes]] | None:
        """A game another worker lost (idle past the claim timeout), else a new one."""
        claimed: Any = await self.client.xautoclaim(
            STREAM, GROUP, self.name, self.claim_timeout_ms, start_id="0-0", count=1
        )
        if claimed[1]:
            entry_id, fields = claimed[1][0]
            log.info("worker: took over %s, a game of a worker that is gone", entry_id)
            return bytes(entry_id), dict(fields)
        read: Any = await self.client.xreadgroup(
            GROUP, self.name, {STREAM: ">"}, count=1, block=READ_BLOCK_MS
        )
        if not read or not read[0][1]:
            return None
        entry_id, fields = read[0][1][0]
        return bytes(entry_id), dict(fields)

    async def _take(self, entry_id: bytes, fields: dict[bytes, bytes]) -> None:
        try:
            game = QueuedGame.from_fields(fields)
            spec, pairing = game.pairing()
        except TournamentError as error:
            # Played again by every worker, it would fail the same way: dropped, and said.
            log.error("worker: entry %s dropped: %s", entry_id, error)
            self.out.write(f"tavern: a queued game was dropped: {error}\n")
            await self._done(entry_id)
            return
        finished = await asyncio.to_thread(self.records.finished_pairings, spec.id)
        if pairing.key not in finished:
            keeping = asyncio.create_task(self._keep_claim(entry_id))
            try:
                runner = TournamentRunner(spec, self.config, self.records, self.out)
                progress = Progress(1, 0, self.out)
                await runner.play([pairing], progress)
                await self.records.flush()  # the game's record is committed: only then, ack
            finally:
                keeping.cancel()
                await asyncio.wait({keeping})  # a cancellation of this task still propagates
        await self._done(entry_id)

    async def _keep_claim(self, entry_id: bytes) -> None:
        """Claim the entry again and again while its game is played, so that its idle time
        never reaches the claim timeout while this worker is alive."""
        while True:
            await asyncio.sleep(self.claim_timeout_ms / 3000)
            await self.client.xclaim(
                STREAM, GROUP, self.name, min_idle_time=0, message_ids=[entry_id], justid=True
            )

    async def _done(self, entry_id: bytes) -> None:
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.xack(STREAM, GROUP, entry_id)
            pipe.xdel(STREAM, entry_id)
            await pipe.execute()


@contextlib.asynccontextmanager
async def local_workers(
    count: int, config: ArenaConfig, log_file: Path, redis_url: str
) -> AsyncIterator[None]:
    """``count`` ``tavern worker`` processes on this machine for the block (``--workers N``),
    writing to the tournament's log (so that nothing breaks into the command's progress line);
    stopped with SIGTERM at its end, as a user would."""
    with log_file.open("ab") as log_output:
        workers = [
            await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "server", "worker", "--redis", redis_url),
                *("--database", config.database, "--log", str(log_file)),
                stdout=log_output,
                stderr=log_output,
            )
            for _ in range(count)
        ]
        try:
            yield
        finally:
            for worker in workers:
                if worker.returncode is None:
                    worker.send_signal(signal.SIGTERM)
            for worker in workers:
                await worker.wait()
