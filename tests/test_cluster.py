"""Arena nodes on Redis: three ``tavern serve`` processes and a real redis-server, as one arena.

Bots are real sockets to the nodes' TCP ports; pages are websockets (and, for one test,
Chromium) on their HTTP ports. Nodes say they are alive every 100 ms and are taken for dead
after 400 ms of silence, so that a lost node or Redis shows within a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench.common import ServerProcess, tavern_serve
from bench.load import tavern_moves
from server.protocol import encode, error_message
from tests.conftest import RawClient
from tests.services import RedisServer

WAIT_S = 10.0
DWARVES = {"team1": [1, 2, 3, 4, 5], "team2": [6, 7, 8, 9, 10]}


def tavern_move(team: str) -> bytes:
    """Every dwarf of the team a step in a random direction (bench/load.py's bots' move)."""
    return tavern_moves(DWARVES[team], random.Random(len(team)))


@contextlib.asynccontextmanager
async def nodes(
    redis: RedisServer, folder: Path, count: int = 3, **settings: Any
) -> AsyncIterator[list[ServerProcess]]:
    """``count`` nodes on ``redis``, started at once; each logs to ``folder``/node-N.log."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(index: int) -> ServerProcess:
            config = {
                "port": 0,
                "httpPort": 0,
                "database": str(folder / f"node-{index}.db"),
                "redis": redis.url,
                "nodeHeartbeatMs": 100,
                "nodeTtlMs": 400,
                "reconnectGraceMs": 0,
                **settings,
            }
            path = folder / f"node-{index}.json"
            path.write_bytes(orjson.dumps(config))
            log = folder / f"node-{index}.log"
            return await stack.enter_async_context(tavern_serve(path, log=log, node=True))

        yield list(await asyncio.gather(*(start(index) for index in range(count))))


async def bot(node: ServerProcess) -> RawClient:
    return await RawClient.connect(node.tcp_port)


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float = WAIT_S) -> Any:
    """The first truthy answer of ``check``, polled until ``timeout``."""
    async with asyncio.timeout(timeout):
        while not (answer := await check()):
            await asyncio.sleep(0.05)
        return answer


async def simulations(session: aiohttp.ClientSession, node: ServerProcess) -> list[Any]:
    async with session.get(f"http://127.0.0.1:{node.http_port}/api/simulations") as response:
        assert response.status == 200
        listed: list[Any] = (await response.json())["simulations"]
        return listed


async def listed_on(
    session: aiohttp.ClientSession, node: ServerProcess, simulation_id: str, present: bool = True
) -> None:
    async def check() -> bool:
        found = any(s["simulationId"] == simulation_id for s in await simulations(session, node))
        return found == present

    await eventually(check)


async def create(node: ServerProcess, game: str = "tavern", seed: int = 7) -> str:
    creator = await bot(node)
    await creator.send({"type": "create-simulation", "game": game, "seed": seed})
    ready = await creator.expect("ready")
    await creator.close()
    return str(ready["simulationId"])


async def join(
    node: ServerProcess, simulation_id: str | None, game: str = "tavern", nick: str = "bot"
) -> tuple[RawClient, dict[str, Any]]:
    client = await bot(node)
    message: dict[str, Any] = {"type": "join-simulation", "game": game, "nick": nick}
    if simulation_id is not None:
        message["simulationId"] = simulation_id
    await client.send(message)
    return client, await client.expect("game-info")


async def test_a_simulation_is_joined_played_and_rejoined_through_any_node(
    redis: RedisServer, tmp_path: Path
) -> None:
    async with nodes(redis, tmp_path, reconnectGraceMs=2000) as (a, b, c):
        simulation_id = await create(a)
        local, local_info = await join(a, simulation_id, nick="here")
        remote, remote_info = await join(b, simulation_id, nick="there")
        assert remote_info["simulationId"] == local_info["simulationId"] == simulation_id
        assert {local_info["team"], remote_info["team"]} == {"team1", "team2"}
        by_team = {local_info["team"]: local, remote_info["team"]: remote}
        # Turns alternate, on A's clock; a move out of turn is refused the same way, byte for
        # byte, whichever node the bot is connected through.
        for _ in range(3):
            for team, other in (("team1", "team2"), ("team2", "team1")):
                await by_team[team].expect("turn")
                await by_team[other].send_raw(tavern_move(other))
                refused = await by_team[other].receive_line()
                assert refused == encode(error_message("Not your turn", "wait for a turn message"))
                await by_team[team].send_raw(tavern_move(team))

        # The remote bot loses its connection and takes its seat back through node C.
        await remote.close()
        back = await bot(c)
        await back.send(
            {"type": "rejoin", "simulationId": simulation_id, "token": remote_info["token"]}
        )
        again = await back.expect("game-info")
        assert again["team"] == remote_info["team"] and again["token"] == remote_info["token"]
        if again["team"] == "team1":  # on move: its turn again, as a rejoin here would get
            await back.expect("turn")

        # The local bot leaves for good: the bot on C wins by forfeit, and is closed.
        await local.close()
        notice = await back.expect_error("Player disconnected")
        assert notice["type"] == "error"
        end = await back.receive(timeout=5)
        assert end["type"] == "win-game", end
        assert await back.is_closed(timeout=5)


async def test_wrong_ids_and_wrong_games_are_refused_alike_on_every_node(
    redis: RedisServer, tmp_path: Path
) -> None:
    async with nodes(redis, tmp_path, count=2) as (a, b):
        simulation_id = await create(a, game="thud")
        lines = []
        for node in (a, b):
            client = await bot(node)
            await client.send(
                {"type": "join-simulation", "simulationId": simulation_id, "game": "tavern"}
            )
            lines.append(await client.receive_line())
            await client.send({"type": "join-simulation", "simulationId": "nope123"})
            lines.append(await client.receive_line())
            await client.close()
        assert lines[:2] == lines[2:], lines
        assert b"Wrong game" in lines[0] and b"Wrong simulation ID" in lines[1]


async def test_random_join_finds_a_waiting_simulation_on_another_node(
    redis: RedisServer, tmp_path: Path
) -> None:
    async with nodes(redis, tmp_path, count=2) as (a, b), aiohttp.ClientSession() as session:
        first = await bot(a)
        await first.send({"type": "join-simulation", "game": "thud", "nick": "first"})
        first_info = await first.expect("game-info")
        simulation_id = first_info["simulationId"]
        await listed_on(session, b, simulation_id)
        second, second_info = await join(b, None, game="thud", nick="second")
        assert second_info["simulationId"] == simulation_id
        assert {first_info["side"], second_info["side"]} == {"dwarf", "troll"}
        dwarf = first if first_info["side"] == "dwarf" else second
        await dwarf.expect("turn")
        # Nothing waits any more: a third random join opens a new simulation.
        third, third_info = await join(b, None, game="thud", nick="third")
        assert third_info["simulationId"] != simulation_id
        for client in (first, second, third):
            await client.close()


async def test_every_lobby_shows_every_node_s_simulations_live(
    redis: RedisServer, tmp_path: Path
) -> None:
    async with nodes(redis, tmp_path) as (a, b, c), aiohttp.ClientSession() as session:
        on_a, on_b = await create(a, game="thud"), await create(b)
        for node in (a, b, c):
            await listed_on(session, node, on_a)
            await listed_on(session, node, on_b)
        # The lobby page's websocket hears of a simulation created on another node.
        async with session.ws_connect(f"http://127.0.0.1:{c.http_port}/ws") as page:
            await page.send_json({"type": "lobby"})
            on_a2 = await create(a)

            async def lobby_lists_it() -> bool:
                message = await page.receive_json(timeout=WAIT_S)
                ids = [s["simulationId"] for s in message.get("simulations", [])]
                return message["type"] == "lobby" and on_a2 in ids

            await eventually(lobby_lists_it)
        # A game played across nodes shows as playing everywhere, then leaves when it ends.
        local, _ = await join(a, on_a2)
        remote, _ = await join(b, on_a2)

        async def playing_on_c() -> bool:
            rows = [s for s in await simulations(session, c) if s["simulationId"] == on_a2]
            return bool(rows) and rows[0]["status"] == "playing"

        await eventually(playing_on_c)
        await local.close()  # a forfeit: the game ends
        assert await remote.is_closed()
        for node in (a, b, c):
            await listed_on(session, node, on_a2, present=False)
        await remote.close()


async def test_a_node_killed_mid_game_is_dropped_and_its_remote_seats_and_pages_told(
    redis: RedisServer, tmp_path: Path
) -> None:
    async with nodes(redis, tmp_path) as (a, b, c), aiohttp.ClientSession() as session:
        doomed = await create(a)
        local, local_info = await join(a, doomed)
        remote, _ = await join(b, doomed)
        await (local if local_info["team"] == "team1" else remote).expect("turn")
        # A game of B's own, and a page on C watching A's game.
        kept = await create(b, seed=9)
        kept_one, one_info = await join(b, kept)
        kept_two, two_info = await join(b, kept)
        by_team = {one_info["team"]: kept_one, two_info["team"]: kept_two}
        await listed_on(session, c, doomed)
        async with session.ws_connect(f"http://127.0.0.1:{c.http_port}/ws") as page:
            await page.send_json({"type": "watch", "simulationId": doomed})
            snapshot = await page.receive_json(timeout=WAIT_S)
            assert snapshot["type"] == "snapshot" and snapshot["simulationId"] == doomed

            a.process.send_signal(signal.SIGKILL)
            await a.process.wait()
            lost = await remote.expect_error("Arena node lost")
            reason = {"reason": lost["reason"]}
            assert "stopped answering" in lost["reason"]
            assert await remote.is_closed(timeout=5)

            async def page_told() -> bool:
                message = await page.receive_json(timeout=WAIT_S)
                return bool(message == {"type": "error", "message": "Arena node lost", **reason})

            await eventually(page_told)
        for node in (b, c):
            await listed_on(session, node, doomed, present=False)
        # Nothing else stopped: B's own game plays on.
        for team in ("team1", "team2", "team1"):
            await by_team[team].expect("turn")
            await by_team[team].send_raw(tavern_move(team))
        for client in (local, remote, kept_one, kept_two):
            await client.close()
