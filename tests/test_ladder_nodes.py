"""The ladder across nodes (issue 22): two `tavern serve` nodes on a real redis-server and one
PostgreSQL database; registered bots seeking through different nodes meet (both nodes' /tv
name their game and bots), and their ratings move once; a challenge across nodes is declined,
another accepted and played; a game whose node is killed is not rated."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
from redis.asyncio import Redis

from bench.common import ServerProcess
from server.cluster.keys import bot_key
from tests.conftest import RawClient
from tests.services import PostgresServer, RedisServer
from tests.test_cluster import eventually, nodes
from tests.test_identity import added

BOTS = ("Grimli", "Ugluk", "Third")


def ratings(url: str) -> dict[str, tuple[int, int, int]]:
    with psycopg.connect(url) as db:
        rows = db.execute("SELECT bot, games, wins, losses, mu FROM ratings WHERE game = 'thud'")
        return {bot: (games, wins, losses) for bot, games, wins, losses, _ in rows}


def seek(name: str, key: str) -> dict[str, Any]:
    return {"type": "seek", "game": "thud", "bot": name, "key": key, "rated": True}


async def on_tv(session: aiohttp.ClientSession, node: ServerProcess) -> Any:
    """The game a node's /tv shows (``/api/tv``)."""
    async with session.get(f"http://127.0.0.1:{node.http_port}/api/tv") as response:
        assert response.status == 200
        return (await response.json())["simulation"]


async def end_of(client: RawClient) -> str:
    for _ in range(1000):
        message = await client.receive()
        if message["type"] in ("win-game", "loss-game", "draw-game"):
            return str(message["type"])
        if message.get("message") == "Arena node lost":
            return "Arena node lost"
    raise AssertionError("no end of the game")


async def challenges_across(
    redis: RedisServer, a: ServerProcess, b: ServerProcess, keys: dict[str, str]
) -> None:
    """Ugluk, present on B, declines Grimli's challenge from A, then accepts the next one,
    and they play it out (Grimli leaves: Ugluk wins)."""
    ugluk, grimli = await RawClient.connect(b.tcp_port), await RawClient.connect(a.tcp_port)
    await ugluk.send({"type": "seek", "game": "tavern", "bot": "Ugluk", "key": keys["Ugluk"]})
    async with Redis.from_url(redis.url) as client:
        await eventually(lambda: client.get(bot_key("ugluk")))
    challenge = {"type": "challenge", "opponent": "Ugluk", "game": "thud", "side": "dwarf"}
    challenge |= {"bot": "Grimli", "key": keys["Grimli"]}
    for answer in ("decline", "accept"):
        await grimli.send(challenge)
        sent = await grimli.expect("challenge-sent")
        offered = await ugluk.expect("challenge")
        assert (offered["from"], offered["side"]) == ("Grimli", "troll")
        await ugluk.send({"type": answer, "challenge": sent["challenge"], "reason": "not now"})
        if answer == "decline":
            assert (await grimli.expect("challenge-declined"))["reason"] == "not now"
    assert (await ugluk.expect("game-info"))["side"] == "troll"
    assert (await grimli.expect("game-info"))["side"] == "dwarf"
    await grimli.close()
    assert await end_of(ugluk) == "win-game"
    await ugluk.close()


async def test_bots_seeking_through_two_nodes_meet_and_only_finished_games_are_rated(
    redis: RedisServer, postgres: PostgresServer, tmp_path: Path
) -> None:
    url = postgres.create_database("ladder_nodes")
    keys = {name: added(url, name) for name in BOTS}
    async with nodes(redis, tmp_path, count=2, database=url) as (a, b):
        grimli, ugluk = await RawClient.connect(a.tcp_port), await RawClient.connect(b.tcp_port)
        await grimli.send(seek("Grimli", keys["Grimli"]))
        await ugluk.send(seek("Ugluk", keys["Ugluk"]))
        sides = {
            (await grimli.expect("game-info"))["side"],
            (await ugluk.expect("game-info"))["side"],
        }
        assert sides == {"dwarf", "troll"}
        async with aiohttp.ClientSession() as session:  # /tv on either node: the same game
            shown = [await eventually(functools.partial(on_tv, session, n)) for n in (a, b)]
        assert shown[0] == shown[1]
        assert {player["bot"] for player in shown[0]["players"]} == {"Grimli", "Ugluk"}
        await ugluk.close()  # it leaves mid-game: Grimli wins by forfeit
        assert await end_of(grimli) == "win-game"
        await grimli.close()
        moved = ratings(url)
        assert moved == {"Grimli": (1, 1, 0), "Ugluk": (1, 0, 1)}
        await challenges_across(redis, a, b, keys)
        # A rated game whose node is killed: never rated.
        grimli, third = await RawClient.connect(a.tcp_port), await RawClient.connect(b.tcp_port)
        await grimli.send(seek("Grimli", keys["Grimli"]))
        await third.send(seek("Third", keys["Third"]))
        await grimli.expect("game-info")
        await third.expect("game-info")
        a.process.kill()
        await a.process.wait()
        assert await end_of(third) == "Arena node lost"
        await third.close()
    assert ratings(url) == moved
