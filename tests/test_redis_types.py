"""Keys of the arena's Redis that hold another type of value than the nodes keep there (issue
30, item 10): two `tavern serve` nodes on a real redis-server and one PostgreSQL database. The
three of the issue (a list in `tavern:nodes`, in a bot's `tavern:held:NAME`, a string in the
seek pool), then every kind of key `server.cluster.keys` lists at once: no node stops, their
`/readyz` answers 200 throughout, neither takes the other for lost, games go on, matchmaking
and random joins resume, a third node joins; each key holds its own type again (or nothing)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from redis.asyncio import Redis

from bench.common import ServerProcess
from server.cluster import keys
from server.identity import new_key
from tests.conftest import RawClient
from tests.services import PostgresServer, RedisServer
from tests.test_cluster import create, ended_normally, eventually, join, nodes, play_out
from tests.test_identity import added
from tests.test_ladder_nodes import seek
from visor.thud_api.games import node_name

BOUND_S = 3.0  # matchmaking resumes within this


@contextlib.asynccontextmanager
async def readiness(
    http: aiohttp.ClientSession, servers: list[ServerProcess]
) -> AsyncIterator[list[int]]:
    """Every node's ``/readyz`` every 50 ms for the block: the statuses answered."""
    statuses: list[int] = []

    async def ask() -> None:
        while True:
            for server in servers:
                async with http.get(f"http://127.0.0.1:{server.http_port}/readyz") as response:
                    statuses.append(response.status)
            await asyncio.sleep(0.05)

    asking = asyncio.create_task(ask())
    try:
        yield statuses
    finally:
        asking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asking


async def crossing_game(a: ServerProcess, b: ServerProcess, held: asyncio.Event) -> Any:
    """A game created on A with a bot through each node, played to its end once ``held``."""
    simulation_id = await create(a)
    games = []
    for node in (a, b):
        client, info = await join(node, simulation_id)
        games.append(asyncio.create_task(play_out(client, info["team"], held)))
    return simulation_id, games


async def wrong_type(store: Redis, key: str) -> None:
    """Another type of value than the nodes keep at ``key``: a list for a string, else a string."""
    await store.delete(key)
    if keys.value_type(key) == "string":
        await store.rpush(key, "not a string")
    else:
        await store.set(key, "not a " + keys.value_type(key))


async def paired(*clients: RawClient) -> None:
    async with asyncio.timeout(BOUND_S):
        for client in clients:
            await client.expect("game-info")


def no_node_lost(folder: Path, count: int) -> str:
    logs = ""
    for index in range(count):
        log = (folder / f"node-{index}.log").read_text()
        assert not re.search(r"node \w+: lost ", log), log
        assert "Traceback" not in log, log
        logs += log
    return logs


async def bad_values(http: aiohttp.ClientSession, server: ServerProcess) -> dict[str, float]:
    """``tavern_redis_bad_values_total`` by kind of key, from a node's /metrics."""
    async with http.get(f"http://127.0.0.1:{server.http_port}/metrics") as response:
        text = await response.text()
    found = re.findall(r'tavern_redis_bad_values_total\{key="(\w+)"\} (\S+)', text)
    return {kind: float(count) for kind, count in found}


async def test_a_list_in_nodes_or_in_a_bot_s_holdings_and_a_string_pool_stop_no_node(
    redis: RedisServer, postgres: PostgresServer, tmp_path: Path
) -> None:
    url = postgres.create_database("wrong_types_three")
    bot_keys = {name: added(url, name) for name in ("Grimli", "Ugluk")}
    async with (
        nodes(redis, tmp_path, count=2, database=url, turnLimit=40) as (a, b),
        Redis.from_url(redis.url) as store,
        aiohttp.ClientSession() as http,
        readiness(http, [a, b]) as ready,
    ):
        held = asyncio.Event()
        _, games = await crossing_game(a, b, held)
        grimli = await RawClient.connect(a.tcp_port)
        await grimli.send(seek("Grimli", bot_keys["Grimli"]))
        holdings, pool = keys.held_key("grimli"), keys.seeks_key("thud")
        await eventually(lambda: store.hget(holdings, a.node_id or ""))
        assert await store.zcard(pool) == 1
        for key in (keys.NODES, holdings, pool):
            await wrong_type(store, key)
        await asyncio.sleep(1.0)  # heartbeats go by: six of each node's
        # Rated matchmaking resumes: Grimli's seek, lost with the pool, is put back.
        ugluk = await RawClient.connect(b.tcp_port)
        await ugluk.send(seek("Ugluk", bot_keys["Ugluk"]))
        await paired(grimli, ugluk)
        held.set()
        await ended_normally(games)
        # Each key holds what the nodes keep there again.
        members = {node.encode() for node in (a.node_id or "", b.node_id or "")}
        await eventually(lambda: _equals(store.smembers(keys.NODES), members))
        await eventually(lambda: _equals(store.type(holdings), b"hash"))
        assert await store.type(pool) in (b"zset", b"none")
        counted = [await bad_values(http, node) for node in (a, b)]
        for client in (grimli, ugluk):
            await client.close()
    assert len(ready) > 40 and set(ready) == {200}, ready
    logs = no_node_lost(tmp_path, 2)
    for key in ("tavern:nodes: another type", "tavern:held:grimli: another", "tavern:seeks"):
        assert key in logs, logs
    for kind in ("nodes", "held", "seeks"):  # each counted by a node that met it
        assert sum(found.get(kind, 0) for found in counted) >= 1, counted


async def test_every_kind_of_key_holding_another_type_costs_only_itself(
    redis: RedisServer, postgres: PostgresServer, tmp_path: Path
) -> None:
    url = postgres.create_database("wrong_types_all")
    bot_keys = {name: added(url, name) for name in ("Grimli", "Ugluk")}
    async with (
        nodes(redis, tmp_path, count=2, database=url, turnLimit=40) as (a, b),
        Redis.from_url(redis.url) as store,
        aiohttp.ClientSession() as http,
    ):
        assert a.node_id is not None and b.node_id is not None
        held = asyncio.Event()
        simulation_id, games = await crossing_game(a, b, held)
        ugluk = await RawClient.connect(b.tcp_port)  # present on B, to be challenged
        await ugluk.send(seek("Ugluk", bot_keys["Ugluk"]))
        await eventually(lambda: store.get(keys.bot_key("ugluk")))
        await eventually(lambda: _equals(store.zcard(keys.seeks_key("thud")), 1))
        token = "a-token-no-node-plays-of-32-chars"
        every = [
            keys.node_key(a.node_id),
            keys.NODES,
            keys.owned_key(a.node_id),
            keys.sim_key(simulation_id),
            keys.FINISHED,
            keys.alias_key(node_name(token)),
            keys.claim_key("tavern"),
            keys.seeks_key("thud"),
            keys.paired_key("thud"),
            keys.pairing_key("thud"),
            keys.bot_key("ugluk"),
            keys.held_key("grimli"),
            keys.last_key("grimli"),
            keys.paced_key("127.0.0.1"),
        ]
        # Every kind of key but the arena's registrations, which only a registration reads
        # (with "registration": "open"), and whose script replaces another type of value itself
        # (tests/test_ladder_nodes.py).
        assert {keys.kind_of(key) for key in every} == set(keys.TYPES) - {"registrations"}
        async with readiness(http, [a, b]) as ready:
            for key in every:
                await wrong_type(store, key)
            await asyncio.sleep(1.0)  # heartbeats go by
            # A wrong key is refused as ever (its address's pacing read), a right one seeks, and
            # Grimli (its holdings and last game unreadable) and Ugluk meet.
            assert (await asked(a, seek("Grimli", new_key())))["message"] == "Invalid bot key"
            grimli = await RawClient.connect(a.tcp_port)
            await grimli.send(seek("Grimli", bot_keys["Grimli"]))
            await paired(grimli, ugluk)
            # Random joins through both nodes at once are seated.
            joiners = [await RawClient.connect(node.tcp_port) for node in (a, b)]
            message = {"type": "join-simulation", "game": "tavern", "nick": "random"}
            for joiner in joiners:
                await joiner.send(message)
            await paired(*joiners)
            # A Thud API game no node plays, under an alias that does not read: unknown.
            url_of_game = f"http://127.0.0.1:{b.http_port}/game"
            async with http.post(url_of_game, data=orjson.dumps({"game": token})) as response:
                assert (response.status, await response.json()) == (200, False)
            # A third node joins, reading the directory and the finished games.
            (tmp_path / "later").mkdir()
            async with nodes(redis, tmp_path / "later", count=1, database=url) as (c,):
                await asyncio.sleep(1.0)
                async with http.get(f"http://127.0.0.1:{c.http_port}/readyz") as response:
                    assert response.status == 200
            held.set()
            await ended_normally(games)
        for client in (grimli, ugluk, *joiners):
            await client.close()
        for key in every:
            assert await store.type(key) in (keys.value_type(key).encode(), b"none"), key
    assert len(ready) > 40 and set(ready) == {200}, ready
    no_node_lost(tmp_path, 2)
    no_node_lost(tmp_path / "later", 1)


async def asked(node: ServerProcess, message: dict[str, Any]) -> dict[str, Any]:
    client = await RawClient.connect(node.tcp_port)
    try:
        await client.send(message)
        return await client.receive()
    finally:
        await client.close()


async def _equals(check: Any, expected: object) -> bool:
    return bool(await check == expected)
