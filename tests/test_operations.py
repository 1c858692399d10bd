"""Operating nodes: health for load balancers, draining before a restart (SIGUSR1), as an
operator runs them: real ``tavern serve`` processes, real signals, a real redis-server.

Games here are short (``turnLimit``), and bots hold their games at a turn until the test lets
them go, so that the drain is seen while games play, with no sleep.
"""

from __future__ import annotations

import asyncio
import re
import signal
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench.common import ServerProcess, tavern_serve
from tests.conftest import RawClient
from tests.services import RedisServer, postgres_server
from tests.test_cluster import (
    ENDS,
    HELD_AT,
    WAIT_S,
    bot,
    create,
    crossing_games,
    ended_normally,
    eventually,
    join,
    nodes,
    play_out,
    tavern_move,
)

SHORT_GAME = {"tavern": {"turnLimit": 20}}


def node_config(folder: Path, **settings: Any) -> Path:
    """A config for one node on ephemeral ports, its records in ``folder``."""
    config = {
        "port": 0,
        "httpPort": 0,
        "database": str(folder / "arena.db"),
        "reconnectGraceMs": 0,
        "drainNoticeMs": 0,  # no load balancer to notice the drain
        **SHORT_GAME,
        **settings,
    }
    path = folder / "node.json"
    path.write_bytes(orjson.dumps(config))
    return path


async def health(
    session: aiohttp.ClientSession, node: ServerProcess, path: str
) -> tuple[int, dict[str, Any]]:
    async with session.get(f"http://127.0.0.1:{node.http_port}{path}") as response:
        body: dict[str, Any] = await response.json()
        return response.status, body


async def exit_status(node: ServerProcess) -> int:
    async with asyncio.timeout(WAIT_S):
        return await node.process.wait()


def recorded(database: Path) -> dict[str, str]:
    """Every game in the records, with its status."""
    with sqlite3.connect(database) as db:
        return dict(db.execute("SELECT id, status FROM games").fetchall())


async def test_a_node_without_its_redis_stays_ready_and_plays_the_games_it_can(
    redis: RedisServer, tmp_path: Path
) -> None:
    """While the node's Redis is away, /readyz and /healthz pass, and /readyz says what it
    lacks (a balancer keeps sending it new games, which it plays: before, every node of the
    arena failed /readyz and the balancer refused every set-up); a game is created, joined and
    played to its end there meanwhile. Once Redis is back, nothing is lacking."""
    async with nodes(redis, tmp_path, count=1) as (node,), aiohttp.ClientSession() as session:
        expected = {"ok": True, "why": [], "degraded": [], "games": 0, "draining": False}
        assert await health(session, node, "/healthz") == (200, expected)
        assert await health(session, node, "/readyz") == (200, expected)
        await asyncio.to_thread(redis.stop)

        async def unlinked() -> Any:
            status, body = await health(session, node, "/readyz")
            return body["degraded"] and (status, body)

        status, body = await eventually(unlinked)
        assert (status, body["why"]) == (200, []), body
        assert body["degraded"] == [
            "not linked to the arena's Redis: it plays the games whose seats are all here"
        ]
        held = asyncio.Event()
        held.set()
        await ended_normally(await crossing_games(node, node, 1, held))
        await asyncio.to_thread(redis.start)

        async def relinked() -> bool:
            return await health(session, node, "/readyz") == (200, expected)

        await eventually(relinked)


async def test_a_draining_node_plays_its_games_to_the_end_takes_no_new_one_then_exits(
    tmp_path: Path,
) -> None:
    """SIGUSR1: /readyz fails, saying why; create and random join are refused with `Server
    draining`; a simulation created before can still be joined; the games play to their end
    and the pages are served meanwhile; then the node exits 0, every game finished."""
    async with (
        tavern_serve(node_config(tmp_path), log=tmp_path / "node.log") as node,
        aiohttp.ClientSession() as session,
    ):
        held = asyncio.Event()
        playing = await create(node)
        games = []
        for _ in range(2):
            client, info = await join(node, playing)
            games.append(asyncio.create_task(play_out(client, info["team"], held)))
        created_before = await create(node, seed=8)

        node.process.send_signal(signal.SIGUSR1)

        async def draining() -> Any:
            status, body = await health(session, node, "/readyz")
            return status == 503 and body

        body = await eventually(draining)
        assert body["why"] == ["draining: finishing its games before a restart"], body
        assert body["draining"] and body["games"] == 1
        assert (await health(session, node, "/healthz"))[0] == 200
        for _ in range(2):
            client, info = await join(node, created_before)
            games.append(asyncio.create_task(play_out(client, info["team"], held)))
        late = await bot(node)
        await late.send({"type": "create-simulation", "game": "tavern"})
        refused = await late.expect_error("Server draining")
        assert "connect again" in refused["reason"]
        await late.send({"type": "join-simulation", "game": "tavern", "nick": "r"})
        await late.expect_error("Server draining")  # no simulation waits here: none opens
        async with session.ws_connect(f"http://127.0.0.1:{node.http_port}/ws") as page:
            players = ["wanderer", "wanderer"]
            await page.send_json({"type": "run-game", "game": "tavern", "players": players})
            async with asyncio.timeout(10):
                answer = await page.receive_json()
                while answer["type"] == "lobby":
                    answer = await page.receive_json()
            assert answer["type"] == "error" and answer["message"] == "Server draining", answer
        async with session.get(f"http://127.0.0.1:{node.http_port}/api/simulations") as response:
            listed = {row["simulationId"] for row in (await response.json())["simulations"]}
        assert {playing, created_before} <= listed
        assert node.process.returncode is None
        held.set()
        await ended_normally(games)
        assert await exit_status(node) == 0
        await late.close()
    assert recorded(tmp_path / "arena.db") == {playing: "finished", created_before: "finished"}
    assert "draining: nothing left to play" in (tmp_path / "node.log").read_text()


async def test_a_drain_that_times_out_keeps_the_games_still_playing_unfinished(
    tmp_path: Path,
) -> None:
    config = node_config(tmp_path, drainTimeoutMs=200, firstTurnTimeoutMs=60_000)
    async with tavern_serve(config) as node:
        stuck = await create(node)
        players = [(await join(node, stuck))[0] for _ in range(2)]  # who never move
        node.process.send_signal(signal.SIGUSR1)
        assert await exit_status(node) == 0
        for player in players:
            while (message := await player.receive())["type"] != "error":
                assert message["type"] == "turn", message
            assert message["message"] == "Server shutting down", message
            await player.close()
    assert recorded(tmp_path / "arena.db") == {stuck: "unfinished"}


async def test_a_draining_node_sends_random_joins_to_other_nodes_and_waits_for_its_seats_there(
    redis: RedisServer, tmp_path: Path
) -> None:
    """Node A drains while one of its bots plays a game node B plays: A stays up until that
    game is over (the bot's seat goes through A), then exits 0. A random join through A finds
    the simulation waiting on B; one that finds none anywhere is refused."""
    async with nodes(redis, tmp_path, count=2, drainNoticeMs=0, **SHORT_GAME) as (a, b):
        held = asyncio.Event()
        crossing = await create(b)
        games = []
        for node in (a, b):
            client, info = await join(node, crossing)
            games.append(asyncio.create_task(play_out(client, info["team"], held)))
        waiting_on_b = await create(b, seed=9)
        first, first_info = await join(b, waiting_on_b)
        a.process.send_signal(signal.SIGUSR1)
        second, second_info = await join(a, None)  # a random join, through A
        assert second_info["simulationId"] == waiting_on_b
        for client, info in ((first, first_info), (second, second_info)):
            games.append(asyncio.create_task(play_out(client, info["team"], held)))
        nowhere = await bot(a)
        await nowhere.send({"type": "join-simulation", "game": "tavern", "nick": "n"})
        await nowhere.expect_error("Server draining")
        assert a.process.returncode is None
        held.set()
        await ended_normally(games)
        assert await exit_status(a) == 0
        await nowhere.close()
    assert "draining: nothing left to play" in (tmp_path / "node-0.log").read_text()


class Holds:
    """Where the test's bots wait: at ``HELD_AT`` until ``first``, at ``AGAIN_AT`` until
    ``again``; ``waiting``: how many wait at ``AGAIN_AT`` (one a game: its other bot waits
    for its turn)."""

    def __init__(self) -> None:
        self.first, self.again = asyncio.Event(), asyncio.Event()
        self.waiting = 0

    async def at(self, step: int) -> None:
        if step == HELD_AT:
            await self.first.wait()
        elif step == AGAIN_AT:
            self.waiting += 1
            await self.again.wait()


async def play_on(client: RawClient, team: str, holds: Holds) -> tuple[bytes, int]:
    """As ``play_out``, but a turn that timed out is played on past: the game's last line, and
    how many of this seat's turns timed out."""
    step = timeouts = 0
    while True:
        line = await client.receive_line(timeout=WAIT_S)
        if line.startswith(TURN_TIMED_OUT):
            timeouts += 1
        elif not line or line.startswith(tuple(b'{"type":"%s"' % end for end in ENDS)):
            return line, timeouts
        elif line.startswith(b'{"type":"turn"'):
            await holds.at(step)
            await client.send_raw(tavern_move(team, step))
            step += 1


TURN_TIMED_OUT = b'{"type":"error","message":"Turn timeout"'
AGAIN_AT = HELD_AT + 10
CROSSING_GAMES = 30
OUTAGE_S = 2.0  # how long Redis is away (the 5 s would cost the suite 3 s more)


async def test_redis_restarts_forfeit_no_game_that_crosses_nodes(
    redis: RedisServer, tmp_path: Path
) -> None:
    """30 games, each with a seat through each of two nodes, play on while redis-server is
    stopped for 2 s and started again on its port, twice within ``reconnectGraceMs``: the
    seats are held (the moves and turns sent meanwhile wait for the link), the frames in
    flight as Redis stopped are sent again once both nodes are back, so that no turn times out
    and every game ends normally, and each is in the records of the node that played it,
    finished, once."""
    # A turn whose frame were lost would time out after 6 s (longer than the bots wait at a
    # hold); the games are long enough (200 turns) to be playing still each time Redis stops.
    timeouts = {"turnTimeoutMs": 6000, "firstTurnTimeoutMs": 6000}
    settings = {"reconnectGraceMs": 10_000, **timeouts, "tavern": {"turnLimit": 200}}
    async with nodes(redis, tmp_path, count=2, **settings) as (a, b):
        holds = Holds()
        games: list[asyncio.Task[tuple[bytes, int]]] = []
        created: list[str] = []
        for seed in range(CROSSING_GAMES):
            here, there = (a, b) if seed % 2 else (b, a)
            simulation_id = await create(here, seed=seed)
            created.append(simulation_id)
            for node in (here, there):
                client, info = await join(node, simulation_id)
                games.append(asyncio.create_task(play_on(client, info["team"], holds)))

        async def restart_as(go_on: asyncio.Event) -> None:
            # Redis stops as the games go on: frames that cross nodes are in flight as it
            # stops, and those sent after wait for the link.
            go_on.set()
            await asyncio.to_thread(redis.stop)
            await asyncio.sleep(OUTAGE_S)  # the outage itself
            await asyncio.to_thread(redis.start)

        async def all_waiting() -> bool:
            return holds.waiting == CROSSING_GAMES

        await restart_as(holds.first)
        await eventually(all_waiting)  # every game went on past the first restart
        await restart_as(holds.again)  # the second, within the first's grace
        ends = await asyncio.gather(*games)
        bad = [end for end, _ in ends if not re.match(rb'\{"type":"(win|loss|draw)-game"', end)]
        assert bad == [], bad
        assert [timeouts for _, timeouts in ends] == [0] * len(ends), ends

        async def all_recorded() -> bool:
            # A game's end reaches its bots as its record is written (the writer's thread),
            # and the nodes are killed at the end of this block: wait for the last records.
            finished = recorded(tmp_path / "node-0.db") | recorded(tmp_path / "node-1.db")
            return finished == dict.fromkeys(created, "finished")

        await eventually(all_recorded)
    for index in range(2):
        assert "held for 10 s" in (tmp_path / f"node-{index}.log").read_text()


async def test_a_join_of_another_node_s_game_while_redis_is_away_is_seated_once_it_is_back(
    redis: RedisServer, tmp_path: Path
) -> None:
    """A bot joins, through node B, a game node A plays while their Redis is away: the join
    waits for the link (within ``reconnectGraceMs``) and is seated once Redis is back, and the
    game is played to its end (before: refused at once, ``Arena link lost``, though the node
    could serve it a moment later); a join still waiting when the grace is over is refused."""
    async with nodes(redis, tmp_path, count=2, reconnectGraceMs=20_000, **SHORT_GAME) as (a, b):
        simulation_id = await create(a)
        here, _ = await join(a, simulation_id)
        await asyncio.to_thread(redis.stop)
        there = await bot(b)
        await there.send({"type": "join-simulation", "simulationId": simulation_id, "nick": "b"})
        await asyncio.sleep(OUTAGE_S)  # the outage itself: the join waits meanwhile
        await asyncio.to_thread(redis.start)
        info = await there.expect("game-info")
        assert info["simulationId"] == simulation_id
        free = asyncio.Event()
        free.set()
        ends = await asyncio.gather(play_out(here, "team1", free), play_out(there, "team2", free))
        assert all(re.match(rb'\{"type":"(win|loss|draw)-game"', end) for end in ends), ends
        for client in (here, there):
            await client.close()
    (tmp_path / "short").mkdir()
    async with nodes(redis, tmp_path / "short", count=2, reconnectGraceMs=300) as (a, b):
        simulation_id = await create(a)
        await asyncio.to_thread(redis.stop)
        late = await bot(b)
        await late.send({"type": "join-simulation", "simulationId": simulation_id, "nick": "b"})
        refused = await late.expect_error("Arena link lost")
        assert "lost its link" in refused["reason"]
        await late.close()
        await asyncio.to_thread(redis.start)


async def test_a_seat_across_nodes_is_given_up_once_the_link_stays_lost_past_the_grace(
    redis: RedisServer, tmp_path: Path
) -> None:
    """Redis stays away: after ``reconnectGraceMs`` the held seat is told why and closed, and
    the game's node forfeits it (its own player wins)."""
    async with nodes(redis, tmp_path, count=2, reconnectGraceMs=300, **SHORT_GAME) as (a, b):
        simulation_id = await create(a)
        here, _ = await join(a, simulation_id)
        there, _ = await join(b, simulation_id)
        await asyncio.to_thread(redis.stop)
        lost = await there.expect_error("Arena link lost")
        assert "lost its link" in lost["reason"]
        assert await there.is_closed()
        while (message := await here.receive())["type"] == "turn":
            pass  # the turn the game was at, before the seat went
        assert message == {"type": "error", "message": "Player disconnected"}
        await here.expect("win-game")
        for client in (here, there):
            await client.close()
    for index in range(2):  # each held the seat first
        assert "held for 0.3 s" in (tmp_path / f"node-{index}.log").read_text()


async def test_a_node_whose_records_cannot_be_written_stays_ready_and_says_so(
    tmp_path: Path,
) -> None:
    """PostgreSQL is killed: once a write fails, /readyz still passes (the node plays on, its
    records waiting in its journal: tests/test_records_outage.py) and says what it lacks, as
    /healthz does; once the database is back, nothing is lacking."""
    with postgres_server() as postgres:
        database = postgres.create_database("records")
        config = node_config(tmp_path, database=database, recordsJournal=str(tmp_path / "j"))
        async with tavern_serve(config) as node, aiohttp.ClientSession() as session:
            assert (await health(session, node, "/readyz"))[0] == 200
            await asyncio.to_thread(postgres.kill)
            simulation_id = await create(node)
            players = [(await join(node, simulation_id))[0] for _ in range(2)]  # a write

            async def degraded() -> Any:
                status, body = await health(session, node, "/readyz")
                return body["degraded"] and (status, body)

            status, body = await eventually(degraded)
            lacking = (
                f"the records database is out of reach ({database}): the records wait in the "
                "journal ("
            )
            assert (status, body["why"]) == (200, []), body
            assert body["degraded"][0].startswith(lacking), body
            # /healthz says the same (the journal's size may have grown meanwhile).
            status, body = await health(session, node, "/healthz")
            assert (status, body["why"]) == (200, []), body
            assert body["degraded"][0].startswith(lacking), body
            await asyncio.to_thread(postgres.start)

            async def whole() -> bool:
                degraded: list[str] = (await health(session, node, "/readyz"))[1]["degraded"]
                return not degraded

            await eventually(whole)
            for player in players:
                await player.close()
