"""A node lost while it holds bots' connections to games other nodes play, and games of its own
with bots through other nodes (issue 30, item 21): killed (SIGKILL), or stopped (SIGSTOP) past
``nodeTtlMs`` and continued (SIGCONT). Two ``tavern serve`` processes on a real redis-server,
bots on real sockets; nodes beat every 150 ms and are taken for dead after 900 ms of silence.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from redis.asyncio import Redis

from bench.common import ServerProcess
from server.cluster.keys import seeks_key
from tests.conftest import RawClient
from tests.services import RedisServer
from tests.test_cluster import WAIT_S, bot, create, eventually, listed_on, nodes, tavern_move

GRACE_MS = 1000  # reconnectGraceMs: how long a seat whose connection went may be rejoined
# No turn times out while the bots wait for the test (a turn left would hang the game, and
# show as a timeout of the test's own waits).
SETTINGS = {
    "reconnectGraceMs": GRACE_MS,
    "turnTimeoutMs": 30_000,
    "firstTurnTimeoutMs": 30_000,
    "tavern": {"turnLimit": 40},
}
HELD_AT = 3  # the step at which each game's bot on move waits for the test
ENDS = (b'{"type":"win-game"', b'{"type":"loss-game"', b'{"type":"draw-game"')


class Hold:
    """Where the bots wait: each game's bot on move at ``HELD_AT``, until ``go``."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.arrived = 0


class Seat:
    """A bot in a Tavern game: what it was sent, line by line, as it plays."""

    def __init__(self, client: RawClient, info: dict[str, Any]) -> None:
        self.client = client
        self.info = info
        self.lines: list[dict[str, Any]] = []

    @property
    def team(self) -> str:
        return str(self.info["team"])

    async def play(self, hold: Hold | None = None) -> bytes:
        """Answer every turn (waiting at ``HELD_AT`` for ``hold``) until the game ends or the
        connection closes: the last line (b"" if closed)."""
        step = 0
        while True:
            try:
                line = await self.client.receive_line(timeout=WAIT_S)
            except ConnectionError:  # its node is gone
                return b""
            if not line:
                return line
            self.lines.append(orjson.loads(line))
            if line.startswith(ENDS):
                return line
            if line.startswith(b'{"type":"turn"'):
                if hold is not None and step == HELD_AT:
                    hold.arrived += 1
                    await hold.go.wait()
                with contextlib.suppress(ConnectionError):  # its node may be gone by now
                    await self.client.send_raw(tavern_move(self.team, step))
                step += 1

    def errors(self) -> list[str]:
        return [line["message"] for line in self.lines if line["type"] == "error"]


async def seat(node: ServerProcess, simulation_id: str) -> Seat:
    client = await bot(node)
    await client.send(
        {"type": "join-simulation", "simulationId": simulation_id, "opponentNotices": True}
    )
    return Seat(client, await client.expect("game-info"))


def game_record(database: Path, simulation_id: str) -> tuple[str, str | None, str | None]:
    """A game's status, reason and winner in a node's records."""
    with sqlite3.connect(database) as db:
        row = db.execute(
            "SELECT status, reason, winner FROM games WHERE id = ?", (simulation_id,)
        ).fetchone()
    assert row is not None, simulation_id
    return row[0], row[1], row[2]


def said(node_log: Path, text: str) -> bool:
    return text in node_log.read_text()


async def test_a_node_holding_bots_of_another_node_s_games_is_killed(
    redis: RedisServer, tmp_path: Path
) -> None:
    """Node A holds one seat of each of two games node B plays; A is killed (SIGKILL). Once B
    finds A gone (nodeTtlMs), each seat is held for the grace (its opponent hears
    `opponent-gone`): the bot that connects again through B and rejoins with its token plays
    its game to its end; the other seat forfeits once the grace is over (`Player
    disconnected`, then `win-game` to its opponent), and B's records say so."""
    async with nodes(redis, tmp_path, count=2, **SETTINGS) as (a, b):
        hold = Hold()
        forfeited, rejoined = await create(b, seed=1), await create(b, seed=2)
        kept = {name: await seat(b, name) for name in (forfeited, rejoined)}
        through_a = {name: await seat(a, name) for name in (forfeited, rejoined)}
        plays = {
            name: [asyncio.create_task(s.play(hold)) for s in (kept[name], through_a[name])]
            for name in (forfeited, rejoined)
        }
        await eventually(lambda: _is(hold.arrived, 2))  # both games are being played
        a.process.send_signal(signal.SIGKILL)
        await a.process.wait()
        hold.go.set()
        for name in (forfeited, rejoined):
            assert await plays[name][1] == b""  # A's connections went with A
        # B finds A gone: each of A's seats is held for the grace, and its opponent told.
        await eventually(lambda: _said(tmp_path / "node-1.log", f"lost {a.node_id}"))
        loop = asyncio.get_running_loop()
        lost_at = loop.time()
        back = await bot(b)
        token = through_a[rejoined].info["token"]
        await back.send({"type": "rejoin", "simulationId": rejoined, "token": token})
        again = Seat(back, await back.expect("game-info"))
        assert again.team == through_a[rejoined].team
        resumed = asyncio.create_task(again.play())
        ends = [await plays[forfeited][0], await plays[rejoined][0], await resumed]
        forfeited_at = loop.time()
        assert all(end.startswith(ENDS) for end in ends), ends
        winner = kept[forfeited]
        assert winner.lines[-1]["type"] == "win-game"
        assert winner.errors() == ["Player disconnected"]
        gone = [line for line in winner.lines if line["type"] == "opponent-gone"]
        assert gone == [{"type": "opponent-gone", "seconds": GRACE_MS // 1000}]
        assert forfeited_at - lost_at >= GRACE_MS / 1000 - 0.2  # not before the grace was over
        assert kept[rejoined].errors() == again.errors() == []
        assert [line["type"] for line in kept[rejoined].lines].count("opponent-back") == 1
        records = tmp_path / "node-1.db"
        assert game_record(records, forfeited) == ("finished", "Player disconnected", winner.team)
        status, reason, _ = game_record(records, rejoined)
        assert status == "finished" and reason != "Player disconnected", reason
        for one in (*kept.values(), again):
            await one.client.close()


async def _is(value: int, expected: int) -> bool:
    return value == expected


async def _said(node_log: Path, text: str) -> bool:
    return said(node_log, text)


async def test_a_node_stopped_past_its_ttl_and_continued_gives_up_what_the_others_dropped(
    redis: RedisServer, tmp_path: Path
) -> None:
    """Node A is stopped (SIGSTOP) until B has taken it for lost, and a guest seeks on B
    meanwhile; then A is continued (SIGCONT). B did what it does for a node lost: told its bot
    in A's game `Arena node lost` and closed it, forfeited A's bot's seat in its own game after
    the grace, dropped A's simulations and A's seek from the pool. A, back, notices that its
    key had expired, and does its part rather than play on for seats nobody holds: its bot in
    B's game is told `Arena link lost` and closed; B's bot's seat in A's game forfeits after
    A's grace (its own bot wins, `Player disconnected`), not turn by turn on time; A's game
    with both seats on A plays on to its end; A's simulations are in B's lobby again and A's
    seek in the pool, where it meets B's seeker."""
    async with (
        nodes(redis, tmp_path, count=2, **SETTINGS) as (a, b),
        Redis.from_url(redis.url) as store,
        aiohttp.ClientSession() as session,
    ):
        hold = Hold()
        on_a, on_b, only_a = (
            await create(a, seed=1),
            await create(b, seed=2),
            await create(a, seed=3),
        )
        seats = {
            on_a: (await seat(a, on_a), await seat(b, on_a)),  # B's bot in A's game
            on_b: (await seat(b, on_b), await seat(a, on_b)),  # A's bot in B's game
            only_a: (await seat(a, only_a), await seat(a, only_a)),
        }
        plays = {
            name: [asyncio.create_task(s.play(hold)) for s in pair] for name, pair in seats.items()
        }
        seeker_a = await bot(a)
        await seeker_a.send({"type": "seek", "game": "thud", "nick": "seeker on A"})
        pool = seeks_key("thud")
        await eventually(lambda: _equals(store.zcard(pool), 1))
        await eventually(lambda: _is(hold.arrived, 3))  # every game is being played

        a.process.send_signal(signal.SIGSTOP)
        try:
            await eventually(lambda: _said(tmp_path / "node-1.log", f"lost {a.node_id}"))
            await listed_on(session, b, only_a, present=False)
            seeker_b = await bot(b)
            await seeker_b.send({"type": "seek", "game": "thud", "nick": "seeker on B"})
            # B, pairing, removes A's seek from the pool: B's waits there alone.
            await eventually(lambda: _only_member(store, pool, b.node_id))
        finally:
            a.process.send_signal(signal.SIGCONT)
        await listed_on(session, b, only_a)  # A's games are in B's lobby again
        # A's seek is in the pool again: the two seekers meet.
        for seeker in (seeker_a, seeker_b):
            await seeker.expect("game-info")
        hold.go.set()

        # B's bot in A's game: told by B at once; A's own bot wins once A's grace is over.
        a_own, b_bot = seats[on_a]
        assert await plays[on_a][1] == b""
        assert b_bot.errors() == ["Arena node lost"]
        assert (await plays[on_a][0]).startswith(b'{"type":"win-game"')
        assert a_own.errors() == ["Player disconnected"]
        assert "Turn timeout" not in a_own.errors()
        # A's bot in B's game: told by A once A is back; B's own bot won after B's grace.
        b_own, a_bot = seats[on_b]
        assert await plays[on_b][1] == b""
        assert a_bot.errors() == ["Arena link lost"]
        assert (await plays[on_b][0]).startswith(b'{"type":"win-game"')
        assert b_own.errors() == ["Player disconnected"]
        # A's game of its own played on to its end.
        for play in plays[only_a]:
            assert (await play).startswith(ENDS)
        records_a, records_b = tmp_path / "node-0.db", tmp_path / "node-1.db"
        assert game_record(records_a, on_a) == ("finished", "Player disconnected", a_own.team)
        assert game_record(records_b, on_b) == ("finished", "Player disconnected", b_own.team)
        status, reason, _ = game_record(records_a, only_a)
        assert status == "finished" and reason != "Player disconnected", reason
        for pair in seats.values():
            for one in pair:
                await one.client.close()
        for seeker in (seeker_a, seeker_b):
            await seeker.close()
    assert said(tmp_path / "node-0.log", "it was taken for lost")


async def _equals(value: Any, expected: object) -> bool:
    return bool(await value == expected)


async def _only_member(store: Redis, pool: str, node: str | None) -> bool:
    """The pool holds one seek, of ``node``'s."""
    members = await store.zrange(pool, 0, -1)
    return (
        len(members) == 1
        and isinstance(members[0], bytes)
        and (orjson.loads(members[0])["node"] == node)
    )
