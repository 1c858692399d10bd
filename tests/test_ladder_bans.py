"""A bot banned, and a key revoked or replaced, on live nodes (issue 30, item 21): the organiser
types `tavern ladder ban NAME`, `tavern bots revoke NAME`, `tavern bots rotate NAME` against the
records the nodes use, while bots seek and while they play. A seeking bot's seek is withdrawn
and it is told why, and it may not seek or challenge again; a game being played goes on to its
end, and is rated. On SQLite with one node, and on PostgreSQL with two nodes on Redis (each
bot through either node); bots are real sockets, the commands real processes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from server.cluster.keys import seeks_key
from server.records import Records
from tests.conftest import RawClient, test_config
from tests.services import PostgresServer, RedisServer
from tests.test_cluster import ENDS, eventually, nodes, play_out
from tests.test_command_line import tavern
from tests.test_identity import added, arena_on

TURNS = 20  # a Tavern game's turns: played out in well under a second
SLOW_TURNS = {"turnTimeoutMs": 20_000, "firstTurnTimeoutMs": 20_000}  # the bots wait for the test
BANNED = {"type": "error", "message": "Bot banned", "reason": "{} is banned from the ladder"}
Pooled = Callable[[str], Awaitable[int]]  # how many seeks of a game wait in the pool


def seek(bot: str, key: str, game: str = "tavern") -> dict[str, Any]:
    return {"type": "seek", "game": game, "bot": bot, "key": key, "rated": True}


def banned(bot: str) -> dict[str, str]:
    return {**BANNED, "reason": BANNED["reason"].format(bot)}


def invalid_key(bot: str, done: str) -> dict[str, str]:
    return {"type": "error", "message": "Invalid bot key", "reason": f"the key of {bot} was {done}"}


async def organiser(*arguments: str) -> None:
    """A `tavern` command as the organiser types it (in a thread: the nodes play on)."""
    run = await asyncio.to_thread(tavern, *arguments)
    assert run.returncode == 0, run


async def first_answer(port: int, message: dict[str, Any]) -> str:
    """What a new connection is first answered to ``message``: a message's type, or an error's
    text."""
    client = await RawClient.connect(port)
    try:
        await client.send(message)
        answer = await client.receive()
        return str(answer["message"] if answer["type"] == "error" else answer["type"])
    finally:
        await client.close()


async def seeking(client: RawClient, message: dict[str, Any], pooled: Pooled, count: int) -> None:
    """Send a seek, and wait until it is in the pool (``count`` seeks of its game there)."""
    await client.send(message)
    game = message["game"]
    await eventually(lambda: _is(pooled(game), count))


async def _is(value: Awaitable[int], expected: int) -> bool:
    return await value == expected


async def walk(ports: tuple[int, int], database: str, pooled: Pooled, keys: dict[str, str]) -> None:
    """The walk, with the bots of each pair on ``ports`` (two nodes, or one node twice)."""
    here, there = ports
    # While they seek: Grimli is banned, Ugluk's key revoked. Each seek is withdrawn and its
    # bot told why; the challenge Grimli was sent and had not answered is declined; neither
    # may seek, challenge or accept again.
    grimli, ugluk = await RawClient.connect(here), await RawClient.connect(there)
    await seeking(grimli, seek("Grimli", keys["Grimli"], "thud"), pooled, 1)
    await seeking(ugluk, seek("Ugluk", keys["Ugluk"]), pooled, 1)
    challenger = await RawClient.connect(there)
    await challenger.send(
        {**seek("Third", keys["Third"]), "type": "challenge", "opponent": "Grimli"}
    )
    sent = await challenger.expect("challenge-sent")
    assert (await grimli.expect("challenge"))["challenge"] == sent["challenge"]
    await organiser("ladder", "ban", "Grimli", "--database", database)
    await organiser("bots", "revoke", "Ugluk", "--database", database)
    assert await grimli.receive() == banned("Grimli")
    assert await ugluk.receive() == invalid_key("Ugluk", "revoked")
    assert await challenger.receive() == {
        "type": "challenge-declined",
        "challenge": sent["challenge"],
        "reason": "Grimli is banned from the ladder",
    }
    await challenger.close()
    assert (await pooled("thud"), await pooled("tavern")) == (0, 0)
    await grimli.send({"type": "accept", "challenge": sent["challenge"]})
    assert (await grimli.receive())["message"] == "Unknown challenge"
    await grimli.send(seek("Grimli", keys["Grimli"], "thud"))
    assert await grimli.receive() == banned("Grimli")
    await grimli.send({**seek("Grimli", keys["Grimli"]), "type": "challenge", "opponent": "Third"})
    assert (await grimli.receive())["message"] == "Bot banned"
    await ugluk.send(seek("Ugluk", keys["Ugluk"]))
    assert (await ugluk.receive())["message"] == "Invalid bot key"
    for client in (grimli, ugluk):
        await client.close()

    # While they play: Third is banned, Fourth's key replaced (rotate). Their game goes on
    # untouched to its end, and is rated; then neither may seek as before.
    third, fourth = await RawClient.connect(here), await RawClient.connect(there)
    await third.send(seek("Third", keys["Third"]))
    await fourth.send(seek("Fourth", keys["Fourth"]))
    infos = [await third.expect("game-info"), await fourth.expect("game-info")]
    assert infos[0]["simulationId"] == infos[1]["simulationId"]
    held = asyncio.Event()  # each bot stops at a turn of the game until the nodes know
    games = [
        asyncio.create_task(play_out(client, info["team"], held))
        for client, info in zip((third, fourth), infos, strict=True)
    ]
    await organiser("ladder", "ban", "Third", "--database", database)
    new_key = await asyncio.to_thread(added, database, "Fourth", "rotate")
    probe = {"type": "challenge", "game": "tavern", "opponent": "Nobody"}
    await eventually(
        lambda: _says(
            first_answer(here, {**probe, "bot": "Third", "key": keys["Third"]}), "Bot banned"
        )
    )
    await eventually(
        lambda: _says(
            first_answer(there, {**probe, "bot": "Fourth", "key": keys["Fourth"]}),
            "Invalid bot key",
        )
    )
    held.set()
    ends = await asyncio.gather(*games)
    assert all(end.startswith(tuple(b'{"type":"%s' % kind for kind in ENDS[:3])) for end in ends), (
        ends
    )
    # The game over, each connects again (the arena closes a connection at its game's end).
    for client in (third, fourth):
        await client.close()
    third, fourth = await RawClient.connect(here), await RawClient.connect(there)
    await third.send(seek("Third", keys["Third"]))
    assert await third.receive() == banned("Third")
    await fourth.send(seek("Fourth", keys["Fourth"]))
    assert (await fourth.receive())["message"] == "Invalid bot key"
    await seeking(fourth, seek("Fourth", new_key), pooled, 1)  # the new key seeks
    for client in (third, fourth):
        await client.close()

    def ladder() -> dict[str, int]:
        records = Records(database)
        records.open_to_read()
        table = records.ladder("tavern", None)
        assert table is not None
        return {row["bot"]: row["games"] for row in table["bots"]}

    async def rated() -> dict[str, int]:
        return await asyncio.to_thread(ladder)

    await eventually(lambda: _rated_once(rated()))


async def _says(answer: Awaitable[str], expected: str) -> bool:
    return await answer == expected


async def _rated_once(table: Awaitable[dict[str, int]]) -> bool:
    return await table == {"Third": 1, "Fourth": 1}


NAMES = ("Grimli", "Ugluk", "Third", "Fourth")


async def test_bans_and_revoked_keys_on_one_node_on_sqlite(tmp_path: Path) -> None:
    database = str(tmp_path / "arena.db")
    keys = {name: added(database, name) for name in NAMES}
    config = test_config().with_turn_limit("tavern", TURNS)
    settings = {
        "game_settings": config.game_settings,
        "turn_timeout_ms": SLOW_TURNS["turnTimeoutMs"],
        "first_turn_timeout_ms": SLOW_TURNS["firstTurnTimeoutMs"],
    }
    async with arena_on(database, **settings) as (arena, port):

        async def pooled(game: str) -> int:
            return sum(seeker.game == game for seeker in arena.seeks.seekers.values())

        await walk((port, port), database, pooled, keys)


async def test_bans_and_revoked_keys_on_two_nodes_on_postgresql_and_redis(
    redis: RedisServer, postgres: PostgresServer, tmp_path: Path
) -> None:
    url = postgres.create_database("ladder_bans")
    keys = {name: added(url, name) for name in NAMES}
    settings = {"database": url, "tavern": {"turnLimit": TURNS}, **SLOW_TURNS}
    async with (
        nodes(redis, tmp_path, count=2, **settings) as (a, b),
        Redis.from_url(redis.url) as store,
    ):

        async def pooled(game: str) -> int:
            return int(await store.zcard(seeks_key(game)))

        await walk((a.tcp_port, b.tcp_port), url, pooled, keys)
