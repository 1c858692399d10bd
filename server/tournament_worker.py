"""``tavern worker``: takes a tournament's games from the queue (``server.tournament_queue``)
one at a time, plays each with the tournament's own runner, and acknowledges it once recorded.

A game handed out more than ``MAX_DELIVERIES`` times (each worker that took it stopped before its
end: killed, or its machine lost) and an entry that does not read (its tournament's spec gone
from Redis, a field missing) are not handed out again: they go to the dead letters (``DEAD``),
which the tournament's command reads, counts as done and shows with the league, so that it
never waits for them.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import IO, TYPE_CHECKING, Any

from server.cancelling import stop_if_cancelled
from server.config import ArenaConfig
from server.records import Records
from server.tournament.runner import Progress, TournamentRunner
from server.tournament.spec import TournamentError
from server.tournament_queue import (
    CLAIM_TIMEOUT_MS,
    DEAD,
    DEAD_KEPT,
    GROUP,
    MAX_DELIVERIES,
    READ_BLOCK_MS,
    SPECS_CACHED,
    STREAM,
    QueuedGame,
    QueuedSpec,
    QueueLink,
    ensure_group,
    lost_group,
    spec_key,
)

if TYPE_CHECKING:
    from server.redis_client import Client

log = logging.getLogger(__name__)

Entry = tuple[bytes, dict[bytes, bytes], int]  # an entry's id, its fields, times handed out
QUEUED_FIELDS: tuple[bytes, ...] = (
    b"tournament",
    b"number",
    b"key",
)  # what a dead letter keeps of its entry


class Worker:
    """Takes games from the stream one at a time, plays them, acknowledges them once recorded."""

    def __init__(
        self,
        config: ArenaConfig,
        records: Records,
        link: QueueLink,
        claim_timeout_ms: int = CLAIM_TIMEOUT_MS,
        out: IO[str] = sys.stderr,
    ) -> None:
        self.config = config
        self.records = records
        self.link = link
        self.claim_timeout_ms = claim_timeout_ms
        self.out = out
        self.name = records.owner  # the consumer's name: unique, and names the games' owner
        self._specs: dict[str, QueuedSpec] = {}  # the last tournaments played, by id

    async def run(self) -> None:
        """Play games until cancelled."""
        await self.link.call(ensure_group)
        while True:
            stop_if_cancelled()
            entry = await self._next()
            if entry is not None:
                await self._take(*entry)

    async def _next(self) -> Entry | None:
        """The next game to play, once Redis answers; None if there is none yet."""
        try:
            return await self.link.call(self._read)
        except Exception as error:
            if not lost_group(error):
                raise
        log.warning("worker: the queue is not in Redis (it restarted without it): made again")
        await self.link.call(ensure_group)
        return None

    async def _read(self, client: Client) -> Entry | None:
        """A game another worker lost (idle past the claim timeout), with how many times it
        was handed out (Redis counts them), else a new one."""
        claimed: Any = await client.xautoclaim(
            STREAM, GROUP, self.name, self.claim_timeout_ms, start_id="0-0", count=1
        )
        if claimed[1]:
            entry_id, fields = claimed[1][0]
            pending: Any = await client.xpending_range(
                STREAM, GROUP, min=entry_id, max=entry_id, count=1
            )
            deliveries = int(pending[0]["times_delivered"]) if pending else 1
            log.info("worker: took over %s, a game of a worker that is gone", entry_id)
            return bytes(entry_id), dict(fields), deliveries
        read: Any = await client.xreadgroup(
            GROUP, self.name, {STREAM: ">"}, count=1, block=READ_BLOCK_MS
        )
        if not read or not read[0][1]:
            return None
        entry_id, fields = read[0][1][0]
        return bytes(entry_id), dict(fields), 1

    async def _spec(self, tournament_id: str) -> QueuedSpec:
        """A tournament's spec, read from Redis the first time one of its games is taken."""
        queued = self._specs.get(tournament_id)
        if queued is None:
            key = spec_key(tournament_id)
            value: Any = await self.link.call(lambda client: client.get(key))
            queued = QueuedSpec.from_value(value, tournament_id)
            self._specs[tournament_id] = queued
            while len(self._specs) > SPECS_CACHED:
                del self._specs[next(iter(self._specs))]
        return queued

    async def _take(self, entry_id: bytes, fields: dict[bytes, bytes], deliveries: int) -> None:
        try:
            game = QueuedGame.from_fields(fields)
            if deliveries > MAX_DELIVERIES:  # each worker that took it stopped before its end
                taken = deliveries - 1
                raise TournamentError(f"stopped the {taken} workers that took it: not played")
            spec, pairing = game.pairing(await self._spec(game.tournament_id))
        except TournamentError as error:
            # Handed out again, it would fail the same way: given up on, and said.
            await self._bury(entry_id, fields, str(error))
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
        never reaches the claim timeout while this worker is alive. While Redis is away the
        game plays on, and is claimed again once Redis is back (unless Redis lost it)."""
        while True:
            await asyncio.sleep(self.claim_timeout_ms / 3000)
            try:
                await self.link.attempt(
                    lambda client: client.xclaim(
                        STREAM,
                        GROUP,
                        self.name,
                        min_idle_time=0,
                        message_ids=[entry_id],
                        justid=True,
                    )
                )
            except Exception as error:
                if not lost_group(error):
                    raise
            stop_if_cancelled()  # the game is over: a cancelled claim that Redis answered anyway

    async def _bury(self, entry_id: bytes, fields: dict[bytes, bytes], reason: str) -> None:
        """Give up on an entry: into the dead letters (which the tournament's command reads
        and shows with the league), off the queue. Said in the log and the worker's output."""
        log.error("worker: entry %s given up on: %s", entry_id, reason)
        self.out.write(f"tavern: a queued game was given up on: {reason}\n")
        letter = {name: fields[name] for name in QUEUED_FIELDS if name in fields}
        letter.update({b"reason": reason.encode(), b"entry": entry_id})

        async def bury(client: Client) -> None:
            async with client.pipeline(transaction=False) as pipe:
                pipe.xadd(DEAD, letter, maxlen=DEAD_KEPT, approximate=True)  # type: ignore[arg-type]
                pipe.xack(STREAM, GROUP, entry_id)
                pipe.xdel(STREAM, entry_id)
                await pipe.execute()

        await self.link.call(bury)

    async def _done(self, entry_id: bytes) -> None:
        """Acknowledge and delete the entry, once Redis answers (nothing to do if it restarted
        without it)."""

        async def acknowledge(client: Client) -> None:
            async with client.pipeline(transaction=True) as pipe:
                pipe.xack(STREAM, GROUP, entry_id)
                pipe.xdel(STREAM, entry_id)
                await pipe.execute()

        await self.link.call(acknowledge)
