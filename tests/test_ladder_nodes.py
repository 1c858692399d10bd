"""The ladder across nodes (issue 22): two `tavern serve` nodes on a real redis-server and one
PostgreSQL database; registered bots seeking through different nodes meet (both nodes' /tv
name their game and bots), and their ratings move once; a challenge across nodes is declined,
another accepted and played; a game whose node is killed is not rated. What the nodes share about
bots: wrong keys paced per address whichever node they reach, `maxGamesPerBot` counted over the
nodes (and no longer for a node that dies), the last opponent and side remembered for a pairing
on another node, `online` from any node; a pair claimed after its seeker here left puts the
other seeker back in the pool (a node in this process, the other played by the test)."""

from __future__ import annotations

import asyncio
import functools
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
import pytest
from redis.asyncio import Redis

from bench.common import ServerProcess
from server.cluster import keys as redis_keys
from server.cluster import values
from server.cluster.keys import bot_key
from server.identity import KEY_BURST, KEY_REFILL_S, new_key
from server.ladder import Seeker
from server.redis_client import Client
from tests.conftest import RawClient
from tests.services import PostgresServer, RedisCluster, RedisServer, redis_store
from tests.test_cluster import eventually, nodes, scrape
from tests.test_cluster_frames import SENDER, node_and_other
from tests.test_identity import added, asked
from tests.test_ladder import answers_to, kinds
from tests.test_ladder_connections import by_side, played_out, seated

BOTS = ("Grimli", "Ugluk", "Third")
TEAMS = ("team1", "team2")
OTHER = ("127.0.0.2", 0)  # another loopback address, for the guesser (paced apart)


def ratings(url: str) -> dict[str, tuple[int, int, int]]:
    with psycopg.connect(url) as db:
        rows = db.execute("SELECT bot, games, wins, losses, mu FROM ratings WHERE game = 'thud'")
        return {bot: (games, wins, losses) for bot, games, wins, losses, _ in rows}


def seek(name: str, key: str, rated: bool = True) -> dict[str, Any]:
    return {"type": "seek", "game": "thud", "bot": name, "key": key, "rated": rated}


TOO_MANY = {
    "type": "error",
    "message": "Too many games",
    "reason": "a bot may play 1 games at once",
}


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
    redis: RedisServer | RedisCluster, a: ServerProcess, b: ServerProcess, keys: dict[str, str]
) -> None:
    """Ugluk, present on B, declines Grimli's challenge from A, then accepts the next one,
    and they play it out (Grimli leaves: Ugluk wins)."""
    ugluk, grimli = await RawClient.connect(b.tcp_port), await RawClient.connect(a.tcp_port)
    await ugluk.send({"type": "seek", "game": "tavern", "bot": "Ugluk", "key": keys["Ugluk"]})
    async with redis_store(redis.url) as client:
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
    arena_redis: RedisServer | RedisCluster, postgres: PostgresServer, tmp_path: Path
) -> None:
    redis = arena_redis
    url = postgres.create_database(f"ladder_nodes_{type(redis).__name__.lower()}")
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
        # A rated game whose node is killed (the node that paired it: either): never rated.
        grimli, third = await RawClient.connect(a.tcp_port), await RawClient.connect(b.tcp_port)
        await grimli.send(seek("Grimli", keys["Grimli"]))
        await third.send(seek("Third", keys["Third"]))
        await grimli.expect("game-info")
        await third.expect("game-info")
        async with aiohttp.ClientSession() as session:
            playing = [n for n in (a, b) if (await scrape(session, n))["tavern_games_playing"]]
        assert len(playing) == 1, playing
        survivor = third if playing[0] is a else grimli
        playing[0].process.kill()
        await playing[0].process.wait()
        assert await end_of(survivor) == "Arena node lost"
        await survivor.close()
    assert ratings(url) == moved


async def online(session: aiohttp.ClientSession, node: ServerProcess, bot: str) -> bool:
    async with session.get(f"http://127.0.0.1:{node.http_port}/api/bots/{bot}") as response:
        assert response.status == 200
        return bool((await response.json())["online"])


async def held(store: Client, bot: str) -> dict[bytes | str, bytes | str]:
    """What a bot holds on each node, as the nodes wrote it."""
    return await store.hgetall(redis_keys.held_key(bot.casefold()))


async def test_pacing_holdings_last_games_and_presence_are_the_arena_s_not_a_node_s(
    arena_redis: RedisServer | RedisCluster, postgres: PostgresServer, tmp_path: Path
) -> None:
    """Three registered bots through two nodes, `maxGamesPerBot` 1: each thing the nodes share
    about bots, seen from the node that did not write it."""
    redis = arena_redis
    url = postgres.create_database(f"ladder_shared_{type(redis).__name__.lower()}")
    keys = {name: added(url, name) for name in BOTS}
    open_registration = {"registration": "open", "registrationsPerHour": 2}
    async with (
        nodes(redis, tmp_path, count=2, database=url, maxGamesPerBot=1, **open_registration) as (
            a,
            b,
        ),
        redis_store(redis.url) as store,
        aiohttp.ClientSession() as http,
    ):
        assert a.node_id is not None and b.node_id is not None
        # A guesser from another address, switching nodes, is paced as on one node: after its
        # burst, the next key from its address waits for a token, and a right one is let in.
        guesser = [
            RawClient(*await asyncio.open_connection("127.0.0.1", n.tcp_port, local_addr=OTHER))
            for n in (a, b)
        ]
        for attempt in range(KEY_BURST):
            await guesser[attempt % 2].send(seek("Grimli", new_key()))
            assert (await guesser[attempt % 2].expect("error"))["message"] == "Invalid bot key"
        started = time.monotonic()
        create = {"type": "create-simulation", "game": "thud", "bot": "Grimli"}
        await guesser[1].send({**create, "key": keys["Grimli"]})
        await guesser[1].expect("ready")
        assert time.monotonic() - started > KEY_REFILL_S / 2  # it waited for the token
        for client in guesser:
            await client.close()
        # The arena's registrations (2 an hour) are counted over both nodes (their count kept
        # in Redis, which another type of value there does not stop: it is replaced); a
        # look-alike of a name registered on the other node is taken, once that node's row is
        # read.
        await store.rpush(redis_keys.REGISTRATIONS, "not a time")
        for node, name in ((a, "Selfmade1"), (b, "Selfmade2")):
            assert (await asked(node.tcp_port, register(name)))["type"] == "registered"
        closed = await asked(a.tcp_port, register("Selfmade3"))
        assert closed["message"] == "Registration closed"
        assert str(closed["reason"]).startswith(
            "the arena takes at most 2 registrations an hour: try again in "
        )
        taken = await eventually(lambda: _taken(b.tcp_port, "SeIfmade1"))
        assert taken["reason"] == "'SeIfmade1' looks like the registered bot 'Selfmade1'"
        # Grimli seeks on B: it is online on A too; its seek is its one game, on both nodes.
        grimli = await RawClient.connect(b.tcp_port)
        await grimli.send(seek("Grimli", keys["Grimli"], rated=False))
        await eventually(lambda: held(store, "Grimli"))
        assert await online(http, a, "Grimli") and not await online(http, a, "Third")
        assert await asked(a.tcp_port, seek("Grimli", keys["Grimli"])) == TOO_MANY
        # It meets Ugluk, seeking on A: the game on B holds it; it ends, and holds it no more.
        ugluk = await RawClient.connect(a.tcp_port)
        await ugluk.send(seek("Ugluk", keys["Ugluk"], rated=False))
        first_side = (await grimli.expect("game-info"))["side"]
        await ugluk.expect("game-info")
        assert await asked(a.tcp_port, seek("Grimli", keys["Grimli"])) == TOO_MANY
        await ugluk.close()
        assert await end_of(grimli) == "win-game"
        await grimli.close()
        await eventually(lambda: _not(held(store, "Grimli")))
        # On A, which did not pair them: no immediate rematch, though Ugluk waited longest of
        # the equals; Grimli's side alternates.
        grimli, ugluk = await RawClient.connect(a.tcp_port), await RawClient.connect(a.tcp_port)
        pool = redis_keys.seeks_key("thud")
        for count, (client, name) in enumerate(((grimli, "Grimli"), (ugluk, "Ugluk")), 1):
            await client.send(seek(name, keys[name], rated=False))
            await eventually(lambda: _equals(store.zcard(pool), count))  # noqa: B023
        third = await RawClient.connect(a.tcp_port)
        await third.send(seek("Third", keys["Third"], rated=False))
        assert (await grimli.expect("game-info"))["side"] != first_side
        await third.expect("game-info")
        assert await store.zcard(pool) == 1  # Ugluk waits on
        # A dies: what Grimli held there no longer counts, and it is online nowhere.
        await eventually(functools.partial(on_tv, http, b))  # B follows A's game
        a.process.kill()
        await a.process.wait()
        await eventually(lambda: _not(on_tv(http, b)))  # B has found A gone, with its game
        assert not await online(http, b, "Grimli")
        late = await RawClient.connect(b.tcp_port)
        await late.send(seek("Grimli", keys["Grimli"]))
        on_b = b.node_id.encode()
        await eventually(lambda: _equals(store.hget(redis_keys.held_key("grimli"), on_b), b"1"))
        await late.close()


def register(name: str) -> dict[str, Any]:
    return {"type": "register", "bot": name}


async def _taken(port: int, name: str) -> dict[str, Any] | None:
    answer = await asked(port, register(name))
    return answer if answer.get("message") == "Bot name taken" else None


async def _not(check: Any) -> bool:
    return not await check


async def _equals(check: Any, expected: object) -> bool:
    return bool(await check == expected)


async def test_a_pair_claimed_after_its_seeker_here_left_puts_the_other_back_in_the_pool(
    redis: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim won the race with the withdrawal of the node's own seeker (read in the pool,
    gone from the node by the time of the claim): no match opens, and the other node's seeker
    waits on in the pool, not noted as paired (its node could put it back)."""
    async with node_and_other(redis) as (node, other):
        pool = redis_keys.seeks_key("thud")
        gone = Seeker(f"{node.id}/1", "near", "thud", False, 25.0, time.time())
        theirs = Seeker(f"{SENDER}/1", "far", "thud", False, 25.0, time.time() + 1)
        member, ours = values.seek_member(SENDER, theirs), values.seek_member(node.id, gone)
        await other.store.zadd(pool, {ours: 25.0, member: 25.0})
        node.seeks.local["1"] = (ours, gone, NeverPaired())
        read = node.seeks._members

        async def withdrawn_once_read(
            redis: Redis, key: str, game: str, members: list[bytes]
        ) -> tuple[dict[str, tuple[str, bytes]], list[Seeker]]:
            found = await read(redis, key, game, members)
            del node.seeks.local["1"]  # its withdrawal, not in Redis yet
            return found

        monkeypatch.setattr(node.seeks, "_members", withdrawn_once_read)
        assert node.link.redis is not None
        await node.seeks._pair(node.link.redis, "thud")  # the older seeker's node pairs them
        await eventually(lambda: _equals(other.store.zrange(pool, 0, -1), [member]))
        assert not node.arena.matches
        assert await other.store.zrange(redis_keys.paired_key("thud"), 0, -1) == [ours]


class NeverPaired:
    def paired(self, match: Any, seat: int) -> None:
        raise AssertionError("paired after it left")

    def paired_elsewhere(self, simulation_id: str) -> None:
        raise AssertionError("paired after it left")


async def test_ladder_bots_stay_connected_between_games_across_nodes(
    redis: RedisServer, postgres: PostgresServer, tmp_path: Path
) -> None:
    """Issue 30 on two nodes: two registered bots seeking through different nodes play a game
    to its end, wait past the idle timeout (present), and each seeks again on the same
    connection and is paired, the one whose seat was on the other node too (item 1, 2); a
    Tavern seek's names are its seat's on the other node (item 16); a challenge to a name
    nobody registered is refused, one to a registered bot not connected declined (item 16)."""
    url = postgres.create_database("ladder_stay")
    keys = {name: added(url, name) for name in BOTS}
    async with (
        nodes(redis, tmp_path, count=2, database=url, idleTimeoutMs=500) as (a, b),
        Redis.from_url(redis.url) as store,
    ):
        pool = redis_keys.seeks_key("thud")
        bots = {"Grimli": await RawClient.connect(a.tcp_port)}
        await bots["Grimli"].send(seek("Grimli", keys["Grimli"], rated=False))
        await eventually(lambda: _equals(store.zcard(pool), 1))  # older: A plays the game
        bots["Ugluk"] = await RawClient.connect(b.tcp_port)
        await bots["Ugluk"].send(seek("Ugluk", keys["Ugluk"], rated=False))
        clients = list(bots.values())
        await played_out(*by_side(clients, await seated(*clients)))
        await asyncio.sleep(1.0)  # past idleTimeoutMs: both wait, present for challenges
        for name, guest_node in (("Grimli", b), ("Ugluk", a)):
            await bots[name].send(seek(name, keys[name], rated=False))
            guest = await RawClient.connect(guest_node.tcp_port)
            await guest.send({"type": "seek", "game": "thud", "nick": f"guest of {name}"})
            await seated(bots[name], guest)
        # Names given in Tavern seeks through either node are the seats' names.
        names = [[f"{node.node_id} {n}" for n in range(1, 6)] for node in (a, b)]
        tavern_pool = redis_keys.seeks_key("tavern")
        tavern = []
        for count, (node, its_names) in enumerate(zip((a, b), names, strict=True), 1):
            tavern.append(await RawClient.connect(node.tcp_port))
            await tavern[-1].send(
                {"type": "seek", "game": "tavern", "nick": f"on {node.node_id}"}
                | {"names": its_names}
            )
            waiting = count % 2  # the first waits; with the second, neither
            await eventually(lambda: _equals(store.zcard(tavern_pool), waiting))  # noqa: B023
        await seated(*tavern)
        turn = await tavern[0].expect("turn")  # the longer waiting, on A: team1
        assert [[dwarf["name"] for dwarf in turn["state"][team]] for team in TEAMS] == names
        # Challenges to a name nobody registered, and to a registered bot connected nowhere.
        challenger = await RawClient.connect(a.tcp_port)
        challenge = {"type": "challenge", "game": "thud", "bot": "Grimli", "key": keys["Grimli"]}
        await challenger.send(challenge | {"opponent": "Nobody"})
        refused = await challenger.expect_error("Unknown bot")
        assert refused["reason"] == "no bot named Nobody is registered"
        await challenger.send(challenge | {"opponent": "Third"})
        sent = await challenger.expect("challenge-sent")
        declined = await challenger.expect("challenge-declined")
        assert declined == {
            "type": "challenge-declined",
            "challenge": sent["challenge"],
            "reason": "Third is not connected",
        }


async def test_a_flood_of_challenges_across_nodes_never_reaches_its_target(
    redis: RedisServer, postgres: PostgresServer, tmp_path: Path
) -> None:
    """Issue 30, item 4, on two nodes: challengers on A flood a bot present on B; A refuses each
    sender's past 5 waiting (the challenges A waits on an answer for, from B), B declines those
    past the target's 8; the target is sent 8, stays, and accepts one across the nodes."""
    url = postgres.create_database("ladder_flood")
    keys = {name: added(url, name) for name in BOTS}
    caps = {"maxOpenChallengesPerBot": 5, "maxOpenChallengesToBot": 8}
    async with (
        # A node's heartbeat may be late on a busy machine: one taken for lost meanwhile would
        # find Ugluk gone ("not connected"), which this test is not about.
        nodes(redis, tmp_path, count=2, database=url, messageGapMs=5, nodeTtlMs=3000, **caps) as (
            a,
            b,
        ),
        Redis.from_url(redis.url) as store,
    ):
        ugluk = await RawClient.connect(b.tcp_port)
        await ugluk.send({"type": "create-simulation", "bot": "Ugluk", "key": keys["Ugluk"]})
        await ugluk.expect("ready")
        await eventually(lambda: store.get(bot_key("ugluk")))  # present, found from A
        async with aiohttp.ClientSession() as http:  # and A takes B for alive (its heartbeat)
            await eventually(functools.partial(online, http, a, "Ugluk"))
        senders = {name: await RawClient.connect(a.tcp_port) for name in ("Grimli", "Third")}
        flood = {"type": "challenge", "opponent": "Ugluk", "game": "tavern"}
        grimli = await answers_to(senders["Grimli"], 30 * [flood | fields("Grimli", keys)])
        assert kinds(grimli) == {"challenge-sent": 5, "Too many challenges": 25}
        offered = [await ugluk.expect("challenge") for _ in range(5)]
        third = await answers_to(senders["Third"], 30 * [flood | fields("Third", keys)])
        sent = kinds(third)["challenge-sent"]  # A's count goes down as B's declines come
        assert sent >= 5 and kinds(third)["Too many challenges"] == 30 - sent
        for _ in range(sent - 3 - kinds(third)["challenge-declined"]):
            third.append(await senders["Third"].expect("challenge-declined"))
        declined = [answer["reason"] for answer in third if answer["type"] == "challenge-declined"]
        assert set(declined) == {"Ugluk has 8 challenges waiting for its answer: try again later"}
        offered += await answers_to(ugluk, [])
        assert Counter(answer["from"] for answer in offered) == {"Grimli": 5, "Third": 3}
        await ugluk.send({"type": "accept", "challenge": offered[-1]["challenge"]})
        assert (await ugluk.expect("game-info"))["team"] == "team2"
        assert (await senders["Third"].expect("game-info"))["team"] == "team1"
        for client in (ugluk, *senders.values()):
            await client.close()


def fields(name: str, keys: dict[str, str]) -> dict[str, str]:
    return {"bot": name, "key": keys[name]}


async def test_one_node_at_a_time_reads_and_pairs_a_game_s_seek_pool(
    redis: RedisServer, postgres: PostgresServer, tmp_path: Path
) -> None:
    """Seekers of one game wait on both nodes (two seeks of one bot, which never meet): only the
    node holding the game's pairing lease reads the pool, four times a second, not both; a
    seeker on the other node is paired by it all the same."""
    url = postgres.create_database("pairing_lease")
    keys = {name: added(url, name) for name in BOTS}
    async with (
        nodes(redis, tmp_path, count=2, database=url) as (a, b),
        Redis.from_url(redis.url) as store,
    ):
        waiting = [await RawClient.connect(node.tcp_port) for node in (a, b)]
        for client in waiting:
            await client.send(seek("Grimli", keys["Grimli"]))
        pool, lease = redis_keys.seeks_key("thud"), redis_keys.pairing_key("thud")
        await eventually(lambda: _equals(store.zcard(pool), 2))
        holder = (await eventually(lambda: store.get(lease))).decode()
        assert holder in (a.node_id, b.node_id)

        async def pool_reads() -> int:
            return int((await store.info("commandstats"))["cmdstat_zrange"]["calls"])

        before, started = await pool_reads(), time.monotonic()
        await asyncio.sleep(2.0)
        reads, took = await pool_reads() - before, time.monotonic() - started
        assert reads <= took / 0.25 + 2, (reads, took)  # one node's passes; two would be twice
        assert await store.get(lease) == holder.encode()
        # Ugluk seeks through the node that does not pair: the pairing node pairs it.
        other = b if holder == a.node_id else a
        ugluk = await RawClient.connect(other.tcp_port)
        await ugluk.send(seek("Ugluk", keys["Ugluk"]))
        assert (await ugluk.expect("game-info"))["game"] == "thud"
        for client in (*waiting, ugluk):
            await client.close()
