"""Arena nodes on Redis: three ``tavern serve`` processes and a real redis-server, as one arena.

Bots are real sockets to the nodes' TCP ports; pages are websockets (and, for one test,
Chromium) on their HTTP ports. Nodes say they are alive every 150 ms and are taken for dead
after 900 ms of silence, so that a lost node shows within about a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from playwright.async_api import expect
from redis.asyncio import Redis
from redis.asyncio import RedisCluster as ClusterClient

from bench.common import ServerProcess, tavern_serve
from server.cluster import values, wire
from server.cluster.keys import alias_key, claim_key, inbox
from server.config import without_password
from server.games.thud.movegen import legal_moves
from server.games.thud.pieces import initial_state
from server.protocol import encode, error_message
from tests.browser import Pages, chromium_pages
from tests.conftest import RawClient
from tests.services import RedisCluster, RedisServer, redis_cluster, redis_store
from visor.thud_api.games import node_name

WAIT_S = 10.0
DWARVES = {"team1": [1, 2, 3, 4, 5], "team2": [6, 7, 8, 9, 10]}


def tavern_move(team: str, step: int) -> bytes:
    """Every dwarf of the team one step toward the middle of the board, then back."""
    forward, back = ("NORTH", "SOUTH") if team == "team1" else ("SOUTH", "NORTH")
    direction = forward if step % 2 == 0 else back
    actions = [{"botId": dwarf, "type": "MOVE", "direction": direction} for dwarf in DWARVES[team]]
    return orjson.dumps({"type": "player-turn", "actions": actions}) + b"\n"


@contextlib.asynccontextmanager
async def nodes(
    store: RedisServer | RedisCluster, folder: Path, count: int = 3, **settings: Any
) -> AsyncIterator[list[ServerProcess]]:
    """``count`` nodes on ``store`` (or on the ``redis`` URL the settings give: another user),
    started at once; each logs to ``folder``/node-N.log."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(index: int) -> ServerProcess:
            config = {
                "port": 0,
                "httpPort": 0,
                "database": str(folder / f"node-{index}.db"),
                "redis": store.url,
                "nodeHeartbeatMs": 150,
                "nodeTtlMs": 900,
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
    arena_redis: RedisServer | RedisCluster, tmp_path: Path
) -> None:
    async with nodes(arena_redis, tmp_path, reconnectGraceMs=2000) as (a, b, c):
        assert len({a.node_id, b.node_id, c.node_id}) == 3  # as `tavern serve` printed them
        simulation_id = await create(a)
        local, local_info = await join(a, simulation_id, nick="here")
        remote, remote_info = await join(b, simulation_id, nick="there")
        assert remote_info["simulationId"] == local_info["simulationId"] == simulation_id
        assert {local_info["team"], remote_info["team"]} == {"team1", "team2"}
        by_team = {local_info["team"]: local, remote_info["team"]: remote}
        # Turns alternate, on A's clock; a move out of turn is refused the same way, byte for
        # byte, whichever node the bot is connected through.
        for step in range(3):
            for team, other in (("team1", "team2"), ("team2", "team1")):
                await by_team[team].expect("turn")
                await by_team[other].send_raw(tavern_move(other, step))
                refused = await by_team[other].receive_line()
                assert refused == encode(error_message("Not your turn", "wait for a turn message"))
                await by_team[team].send_raw(tavern_move(team, step))
        # The last move was played (the next turn came) before the remote bot goes: its move
        # and its rejoin through node C travel different ways and could arrive in either order.
        await by_team["team1"].expect("turn")

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


async def test_random_joins_through_two_nodes_at_the_same_moment_meet_in_one_game(
    arena_redis: RedisServer | RedisCluster, tmp_path: Path
) -> None:
    redis = arena_redis
    async with nodes(redis, tmp_path, count=2) as (a, b):
        for _ in range(8):
            pair = [await bot(a), await bot(b)]
            message = {"type": "join-simulation", "game": "tavern", "nick": "random"}
            await asyncio.gather(*(client.send(message) for client in pair))
            infos = await asyncio.gather(*(client.expect("game-info") for client in pair))
            assert infos[0]["simulationId"] == infos[1]["simulationId"], infos
            assert {info["team"] for info in infos} == {"team1", "team2"}
            for client in pair:
                await client.close()


async def test_every_lobby_shows_every_node_s_simulations_live_then_finished(
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
        # A game played across nodes shows as playing everywhere, then leaves the live list
        # when it ends...
        local, _ = await join(a, on_a2)
        remote, remote_info = await join(b, on_a2)
        remote_team = remote_info["team"]

        async def playing_on_c() -> bool:
            rows = [s for s in await simulations(session, c) if s["simulationId"] == on_a2]
            return bool(rows) and rows[0]["status"] == "playing"

        await eventually(playing_on_c)
        await local.close()  # a forfeit: the game ends
        assert await remote.is_closed()
        for node in (a, b, c):
            await listed_on(session, node, on_a2, present=False)
        await remote.close()
        # ...for every lobby's finished games, with its result; every node's /watch shows it.
        result = None
        for node in (a, b, c):
            async with session.ws_connect(f"http://127.0.0.1:{node.http_port}/ws") as page:
                await page.send_json({"type": "lobby"})
                lobby = await page.receive_json(timeout=WAIT_S)
                rows = [s for s in lobby["simulations"] if s["simulationId"] == on_a2]
                assert [row["status"] for row in rows] == ["finished"], lobby
                result = result or rows[0]["result"]
                assert rows[0]["result"] == result and result["winner"] == remote_team, rows
                await page.send_json({"type": "watch", "simulationId": on_a2})
                told = await page.receive_json(timeout=WAIT_S)
                assert told["message"] == "This game has finished" and told["result"] == result
        # A node that joins the arena later lists it too.
        (tmp_path / "later").mkdir()
        async with (
            nodes(redis, tmp_path / "later", count=1) as (later,),
            session.ws_connect(f"http://127.0.0.1:{later.http_port}/ws") as page,
        ):
            await page.send_json({"type": "lobby"})
            lobby = await page.receive_json(timeout=WAIT_S)
            ended = [s for s in lobby["simulations"] if s["status"] == "finished"]
            assert [(s["simulationId"], s["result"]) for s in ended] == [(on_a2, result)]


async def test_a_node_killed_mid_game_is_dropped_and_its_remote_seats_and_pages_told(
    arena_redis: RedisServer | RedisCluster, tmp_path: Path
) -> None:
    redis = arena_redis
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
        async with (
            session.ws_connect(f"http://127.0.0.1:{c.http_port}/ws") as page,
            session.ws_connect(f"http://127.0.0.1:{c.http_port}/ws") as later_page,
        ):
            for watcher in (page, later_page):  # each gets its snapshot, the later one too
                await watcher.send_json({"type": "watch", "simulationId": doomed})

                async def snapshot_came(watcher: Any = watcher) -> bool:
                    message = await watcher.receive_json(timeout=WAIT_S)
                    return bool(message["type"] == "snapshot")

                await eventually(snapshot_came)

            a.process.send_signal(signal.SIGKILL)
            await a.process.wait()
            lost = await remote.expect_error("Arena node lost")
            reason = {"reason": lost["reason"]}
            assert "stopped answering" in lost["reason"]
            assert await remote.is_closed(timeout=5)

            for watcher in (page, later_page):

                async def page_told(watcher: Any = watcher) -> bool:
                    message = await watcher.receive_json(timeout=WAIT_S)
                    expected = {"type": "error", "message": "Arena node lost", **reason}
                    return bool(message == expected)

                await eventually(page_told)
                closing = await watcher.receive(timeout=WAIT_S)  # and then closed
                assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
        for node in (b, c):
            await listed_on(session, node, doomed, present=False)
        # A's entries (which have no expiry of their own) were deleted by a node that found it
        # dead, with its list of them; B's stay. No node ever scanned the arena's keys.
        async with redis_store(redis.url) as store:

            async def deleted() -> bool:
                return not await store.exists(f"tavern:sim:{doomed}", f"tavern:owned:{a.node_id}")

            await eventually(deleted)
            assert await store.exists(f"tavern:sim:{kept}")
            assert f"tavern:sim:{kept}".encode() in await store.smembers(
                f"tavern:owned:{b.node_id}"
            )
            # (a cluster's client answers each server's statistics)
            assert "cmdstat_scan" not in str(await store.info("commandstats"))
        # Nothing else stopped: B's own game plays on.
        for step, team in enumerate(("team1", "team2", "team1")):
            await by_team[team].expect("turn")
            await by_team[team].send_raw(tavern_move(team, step // 2))
        for client in (local, remote, kept_one, kept_two):
            await client.close()


async def play(client: RawClient, team: str, think_s: float, turns: int | None = None) -> int:
    """Answer every turn after ``think_s`` until the game ends, the connection closes or
    ``turns`` were played; returns the turns played."""
    played = 0
    while turns is None or played < turns:
        line = await client.receive_line(timeout=HELD_WAIT_S)
        if not line or line.startswith(tuple(b'{"type":"%s"' % end for end in ENDS)):
            break
        if line.startswith(b'{"type":"turn"'):
            await asyncio.sleep(think_s)
            await client.send_raw(tavern_move(team, played))
            played += 1
    return played


ENDS = (b"win-game", b"loss-game", b"draw-game", b"error")


async def test_a_page_in_chromium_on_node_c_watches_a_game_played_on_node_a(
    redis: RedisServer, tmp_path: Path
) -> None:
    """A late page on another node than the game's sees it live, and lists every turn from
    the first: the earlier ones come from the records of the node that plays it (each node
    here has records of its own), as they do for a late page on that node."""
    # No turn runs out of time while the bots stand still at the end.
    settings = {"turnTimeoutMs": 60_000}
    async with (
        nodes(redis, tmp_path, **settings) as (a, b, c),
        aiohttp.ClientSession() as session,
    ):
        simulation_id = await create(a)
        one, one_info = await join(a, simulation_id, nick="Ada")
        two, two_info = await join(b, simulation_id, nick="Bo")
        bots = [
            asyncio.create_task(play(client, info["team"], 0.03, turns=60))
            for client, info in ((one, one_info), (two, two_info))
        ]
        await listed_on(session, c, simulation_id)
        await asyncio.sleep(0.3)  # a late watcher: turns were played before the page came
        async with chromium_pages(f"http://127.0.0.1:{c.http_port}") as visor:
            page = await visor.open(f"/watch/{simulation_id}")
            nicks = {one_info["team"]: "Ada", two_info["team"]: "Bo"}
            for team, nick in nicks.items():
                await expect(page.locator(f"#players .seat-{team} .nick")).to_have_text(nick)
            await expect(page.locator("#turn")).to_have_text(re.compile(r"^[1-9]\d* of 1000$"))
            first = await page.locator("#turn").text_content()
            await expect(page.locator("#turn")).not_to_have_text(first or "", timeout=5000)
            on_a = Pages(visor.browser, f"http://127.0.0.1:{a.http_port}", visor.problems)
            here = await on_a.open(f"/watch/{simulation_id}")
            total = sum(await asyncio.gather(*bots))  # then the bots stand still
            for watcher in (page, here):
                await expect(watcher.locator("#turn")).to_have_text(f"{total} of 1000")
                summaries = watcher.locator("#log li.log-move .log-turn, #log li.log-hit .log-turn")
                await expect(summaries).to_have_count(total)
                turns = [int(turn) for turn in await summaries.all_text_contents()]
                assert turns == list(range(total, 0, -1))
        for client in (one, two):
            await client.close()


async def test_redis_restarted_mid_game_local_games_play_on_and_the_arena_comes_back(
    arena_redis: RedisServer | RedisCluster, tmp_path: Path
) -> None:
    redis = arena_redis
    async with nodes(redis, tmp_path, count=2) as (a, b), aiohttp.ClientSession() as session:
        local_game = await create(a)
        first, first_info = await join(a, local_game)
        second, second_info = await join(a, local_game)
        by_team = {first_info["team"]: first, second_info["team"]: second}
        crossing = await create(a, seed=8)
        here, _ = await join(a, crossing)
        there, _ = await join(b, crossing)
        await listed_on(session, b, local_game)

        redis.restart()
        lost = await there.expect_error("Arena link lost")
        assert "lost its link" in lost["reason"]
        assert await there.is_closed(timeout=5)
        # The game whose seats are all on node A plays on, through and after the outage.
        for step, team in enumerate(("team1", "team2", "team1", "team2")):
            await by_team[team].expect("turn")
            await by_team[team].send_raw(tavern_move(team, step // 2))
        # Once Redis is back, every node registers everything again.
        await listed_on(session, b, local_game)
        again = await create(a, seed=10)
        joined_here, _ = await join(a, again)
        joined_there, info = await join(b, again)
        assert info["simulationId"] == again
        for index in range(2):  # each node said what happened
            log = (tmp_path / f"node-{index}.log").read_text()
            assert "retrying in" in log and log.count("in the arena on") == 2, log
        for client in (first, second, here, there, joined_here, joined_there):
            await client.close()


@pytest.mark.parametrize(("blip_at", "cut"), [(4, False), (5, True)])
async def test_a_redis_blip_of_two_seconds_loses_no_move_of_a_game_across_nodes(
    redis: RedisServer, tmp_path: Path, blip_at: int, cut: bool
) -> None:
    """Redis stopped for 2 s (SIGSTOP, then SIGCONT) as a move is sent, and with ``cut`` every
    node's connection cut as it comes back: the seat on node B moves (its move crosses to the
    game on node A) or the seat on A does (the next turn crosses to B). Every move is played
    once and in order, and the game goes on: what a lost connection took is sent again by the
    seat's link."""
    assert redis.process is not None
    async with nodes(
        redis, tmp_path, count=2, nodeTtlMs=5000, reconnectGraceMs=5000, turnTimeoutMs=30_000
    ) as (a, b):
        simulation_id = await create(a, seed=11)
        here, here_info = await join(a, simulation_id)
        there, there_info = await join(b, simulation_id)
        by_team = {here_info["team"]: here, there_info["team"]: there}
        turns: list[int] = []
        for step, team in enumerate(("team1", "team2") * 5):
            turns.append((await by_team[team].expect("turn", timeout=WAIT_S))["turn"])
            if step != blip_at:
                await by_team[team].send_raw(tavern_move(team, step // 2))
                continue
            redis.process.send_signal(signal.SIGSTOP)
            try:
                await by_team[team].send_raw(tavern_move(team, step // 2))
                await asyncio.sleep(2.0)
            finally:
                redis.process.send_signal(signal.SIGCONT)
            if cut:
                async with Redis.from_url(redis.url) as admin:
                    for kind in ("normal", "pubsub"):
                        await admin.client_kill_filter(_type=kind, skipme=True)
        assert turns == list(range(1, 11))
        for client in (here, there):
            await client.close()


async def move_slot(cluster: RedisCluster, key: str) -> None:
    """The slot of ``key`` moved to another server of the cluster, its keys with it, as
    `redis-cli --cluster reshard` moves a slot (IMPORTING, MIGRATING, MIGRATE, NODE)."""
    async with redis_store(cluster.url) as store:
        assert isinstance(store, ClusterClient)
        slot, owner = store.keyslot(key), store.get_node_from_key(key)
    assert owner is not None
    servers = {server.port: Redis(port=server.port) for server in cluster.servers}

    async def ask(port: int, *command: object) -> Any:
        return await servers[port].execute_command(*command)  # type: ignore[no-untyped-call]

    try:
        ids = {port: (await ask(port, "CLUSTER", "MYID")).decode() for port in servers}
        source, target = int(owner.port), next(port for port in servers if port != owner.port)
        await ask(target, "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[source])
        await ask(source, "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[target])
        while keys := await ask(source, "CLUSTER", "GETKEYSINSLOT", slot, 100):
            await ask(source, "MIGRATE", "127.0.0.1", target, "", 0, 5000, "KEYS", *keys)
        for port in (target, source, *servers):
            await ask(port, "CLUSTER", "SETSLOT", slot, "NODE", ids[target])
    finally:
        for client in servers.values():
            await client.aclose()


async def test_a_cluster_that_moves_the_nodes_inboxes_loses_no_move_of_a_game_across_them(
    tmp_path: Path,
) -> None:
    """A Redis Cluster moves the slots of both nodes' inboxes to other servers mid-game: Redis
    ends each node's subscription and answers MOVED to what was sent to the old server; each
    node links again on the cluster's new map, and every move is played once, in order."""
    with redis_cluster() as cluster:
        async with nodes(
            cluster, tmp_path, count=2, nodeTtlMs=5000, reconnectGraceMs=5000, turnTimeoutMs=30_000
        ) as (a, b):
            assert a.node_id is not None and b.node_id is not None
            simulation_id = await create(a, seed=11)
            here, here_info = await join(a, simulation_id)
            there, there_info = await join(b, simulation_id)
            by_team = {here_info["team"]: here, there_info["team"]: there}
            turns: list[int] = []
            for step, team in enumerate(("team1", "team2") * 4):
                turns.append((await by_team[team].expect("turn", timeout=WAIT_S))["turn"])
                if step == 3:
                    await move_slot(cluster, inbox(a.node_id))
                    await move_slot(cluster, inbox(b.node_id))
                await by_team[team].send_raw(tavern_move(team, step // 2))
            assert turns == list(range(1, 9))
            for client in (here, there):
                await client.close()
    for index in range(2):
        log = (tmp_path / f"node-{index}.log").read_text()
        assert "Redis ended the subscription to" in log, log
        # Linked again at least once (twice if the other inbox's move came after: a MOVED).
        assert log.count("in the arena on") >= 2, log


async def test_the_thud_api_and_matchmaking_on_any_node_reach_a_game_on_another(
    arena_redis: RedisServer | RedisCluster, tmp_path: Path
) -> None:
    redis = arena_redis
    async with nodes(redis, tmp_path, count=2) as (a, b), aiohttp.ClientSession() as session:

        async def call(node: ServerProcess, path: str, body: dict[str, Any]) -> Any:
            url = f"http://127.0.0.1:{node.http_port}{path}"
            async with session.post(url, data=orjson.dumps(body)) as response:
                assert response.status == 200, await response.text()
                return orjson.loads(await response.read())

        game = await call(a, "/start", {"player_one": "Will", "player_two": "Tom"})
        token = {"game": game["game"]}
        assert await call(b, "/game", token) == game["board"]
        move = legal_moves(initial_state())[0]
        body = {
            "game": game["game"],
            "player": game["player_one"],
            "start": list(move.start),
            "destination": list(move.end),
        }
        assert await call(b, "/move", {**body, "player": game["player_two"]}) is False
        assert await call(b, "/move/validate", body) is True
        assert await call(b, "/move", body) is True
        board = await call(a, "/game", token)
        assert board != game["board"] and await call(b, "/game", token) == board
        assert await call(b, "/save", token) is True
        # The matchmaking socket of node B reaches it too.
        async with session.ws_connect(f"http://127.0.0.1:{b.http_port}/match/Ann") as socket:
            assert (await socket.receive_json(timeout=WAIT_S))[0] == "list"
            await socket.send_json(["game", token])
            assert await socket.receive_json(timeout=WAIT_S) == ["game", board]


async def scrape(session: aiohttp.ClientSession, node: ServerProcess) -> dict[str, float]:
    """GET /metrics, as Prometheus reads it: sample name with labels -> value."""
    async with session.get(f"http://127.0.0.1:{node.http_port}/metrics") as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=")
        text = await response.text()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


async def test_every_node_serves_its_metrics_and_an_arena_without_redis_too(
    redis: RedisServer, tmp_path: Path
) -> None:
    alone = tmp_path / "alone.json"
    alone.write_bytes(orjson.dumps({"port": 0, "httpPort": 0, "database": str(tmp_path / "a.db")}))
    async with (
        nodes(redis, tmp_path, count=2) as (a, b),
        tavern_serve(alone) as single,
        aiohttp.ClientSession() as session,
    ):
        for node in (a, single):
            simulation_id = await create(node)
            one, one_info = await join(node, simulation_id)
            two, two_info = await join(b if node is a else node, simulation_id)
            by_team = {one_info["team"]: one, two_info["team"]: two}
            for step, team in enumerate(("team1", "team2", "team1")):
                await by_team[team].expect("turn")
                await by_team[team].send_raw(tavern_move(team, step // 2))
            await by_team["team2"].expect("turn")
            samples = await scrape(session, node)
            assert samples["tavern_games_playing"] == 1
            assert samples['tavern_turns_total{game="tavern"}'] == 3
            assert samples['tavern_reply_seconds_count{game="tavern"}'] == 3
            assert samples["tavern_connections"] == (2 if node is single else 1)
            assert samples["tavern_pages"] == 0
            assert ("tavern_redis_round_trip_seconds" in samples) is (node is a)
            await one.close()
            await two.close()
        assert 0 < (await scrape(session, b))["tavern_redis_round_trip_seconds"] < 1


async def test_a_frame_redis_refuses_shows_in_the_log_and_metrics(
    redis: RedisServer, tmp_path: Path
) -> None:
    """Node A's Redis user may not SPUBLISH (an ACL): the frame seating B's bot in A's game is
    refused, and A says so in its log and counts it, where a reply-less link never knew."""
    async with Redis.from_url(redis.url) as admin:
        await admin.acl_setuser(
            "nosend", enabled=True, passwords=["+secret"], keys=["*"], channels=["*"],
            commands=["+@all", "-spublish"],
        )  # fmt: skip
    refusing = f"redis://nosend:secret@127.0.0.1:{redis.port}/0"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with (
        nodes(redis, tmp_path / "a", count=1, redis=refusing) as (a,),
        nodes(redis, tmp_path / "b", count=1) as (b,),
        aiohttp.ClientSession() as session,
    ):
        simulation_id = await create(a)
        await listed_on(session, b, simulation_id)
        there = await bot(b)
        await there.send(
            {"type": "join-simulation", "game": "tavern", "simulationId": simulation_id}
        )

        async def counted() -> bool:
            samples = await scrape(session, a)
            return samples.get('tavern_redis_errors_total{command="SPUBLISH"}', 0) >= 1

        await eventually(counted)
        log = (tmp_path / "a" / "node-0.log").read_text()
        assert "Redis refused SPUBLISH: this user has no permissions" in log, log
        assert "secret" not in log
        await there.close()


def test_logs_show_the_arena_without_its_password() -> None:
    assert without_password("redis://:s3cret@10.0.0.5:6379/0") == "redis://:***@10.0.0.5:6379/0"
    assert without_password("redis://app:s3cret@redis/1") == "redis://app:***@redis/1"
    assert without_password("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
    assert (
        without_password("postgresql://tavern:pw@[::1]:5432/arena")
        == "postgresql://tavern:***@[::1]:5432/arena"
    )


def test_an_arena_without_redis_never_imports_the_client() -> None:
    imported = subprocess.run(
        [sys.executable, "-c", "import sys, tavern_cli.cli; print('redis' in sys.modules)"],
        capture_output=True,
        check=True,
        text=True,
        timeout=60,
    )
    assert imported.stdout.strip() == "False"


async def test_a_person_on_node_b_plays_a_thud_game_a_bot_created_on_node_a(
    redis: RedisServer, tmp_path: Path
) -> None:
    async with nodes(redis, tmp_path, count=2) as (a, b), aiohttp.ClientSession() as session:
        simulation_id = await create(a, game="thud")
        dwarf, dwarf_info = await join(a, simulation_id, game="thud", nick="bot")
        assert dwarf_info["side"] == "dwarf"
        async with session.ws_connect(f"http://127.0.0.1:{b.http_port}/ws") as page:
            await page.send_json(
                {
                    "type": "play",
                    "game": "thud",
                    "side": "troll",
                    "nick": "Ann",
                    "simulationId": simulation_id,
                }
            )

            async def next_of(kind: str, for_the_seat: bool = True) -> dict[str, Any]:
                """The next message of this kind (for the seat, or the page's own)."""

                async def check() -> dict[str, Any] | None:
                    message: dict[str, Any] = await page.receive_json(timeout=WAIT_S)
                    if for_the_seat:
                        seat = message["message"] if message["type"] == "seat" else {}
                        return seat if seat.get("type") == kind else None
                    return message if message["type"] == kind else None

                found: dict[str, Any] = await eventually(check)
                return found

            assert (await next_of("game-info"))["side"] == "troll"
            seated = await next_of("seated", for_the_seat=False)
            assert seated["simulationId"] == simulation_id
            turn = await dwarf.expect("turn")
            first = turn["state"]["moves"][0]
            await dwarf.send(
                {"type": "player-turn", "move": {"from": first["from"], "to": first["to"]}}
            )
            troll_turn = await next_of("turn")
            reply = troll_turn["state"]["moves"][0]
            await page.send_json(
                {"type": "move", "move": {"from": reply["from"], "to": reply["to"]}}
            )
            await dwarf.expect("turn")  # the person's move was played, on node A
        await dwarf.close()


async def test_the_clock_of_a_game_is_its_node_s_and_a_remote_seat_times_out_alike(
    redis: RedisServer, tmp_path: Path
) -> None:
    timing = {"turnTimeoutMs": 300, "firstTurnTimeoutMs": 300, "maxConsecutiveTimeouts": 5}
    async with nodes(redis, tmp_path, count=2, **timing) as (a, b):
        simulation_id = await create(a)
        here, here_info = await join(a, simulation_id)
        there, there_info = await join(b, simulation_id)
        by_team = {here_info["team"]: here, there_info["team"]: there}
        timed_out = encode(error_message("Turn timeout", "no reply in 0.3 s: you passed"))
        for team, other in (("team1", "team2"), ("team2", "team1")):
            await by_team[team].expect("turn")
            assert await by_team[team].receive_line() == timed_out  # the same on either node
            await by_team[other].expect("turn")
            await by_team[other].send_raw(tavern_move(other, 0))
            if team == "team1":
                await by_team[team].expect("turn")
                await by_team[team].send_raw(tavern_move(team, 0))
        for client in (here, there):
            await client.close()


# --- what a node reads from Redis is untrusted ---------------------------------------------------
ATTACK_ROUNDS = 50


HELD_AT = 5  # the turn at which bots wait while the arena is attacked
# How long a bot waits for its next line: the whole of a hold (a node started meanwhile, on a
# busy machine), as the other bot of a held game waits for its turn all that time.
HELD_WAIT_S = 30.0


async def play_out(client: RawClient, team: str, held: asyncio.Event) -> bytes:
    """Answer every turn at once, but wait at turn ``HELD_AT`` until ``held`` is set, until
    the game ends: its last line (b"" if the connection closed first)."""
    step = 0
    while True:
        line = await client.receive_line(timeout=HELD_WAIT_S)
        if not line or line.startswith(tuple(b'{"type":"%s"' % end for end in ENDS)):
            return line
        if line.startswith(b'{"type":"turn"'):
            if step == HELD_AT:
                await held.wait()
            await client.send_raw(tavern_move(team, step))
            step += 1


async def crossing_games(
    here: ServerProcess, there: ServerProcess, count: int, held: asyncio.Event
) -> list[asyncio.Task[bytes]]:
    """``count`` games created on ``here``, each with a bot through each node, being played
    to their end (tasks answering with each bot's last line); every game waits at turn
    ``HELD_AT`` until ``held`` is set."""
    games = []
    for seed in range(count):
        simulation_id = await create(here, seed=seed)
        for node in (here, there):
            client, info = await join(node, simulation_id)
            games.append(asyncio.create_task(play_out(client, info["team"], held)))
    return games


async def ended_normally(games: list[asyncio.Task[bytes]]) -> None:
    ends = await asyncio.gather(*games)
    assert all(re.match(rb'\{"type":"(win|loss|draw)-game"', end) for end in ends), ends


def quiet_log(path: Path) -> str:
    """A node's log, which must show no traceback (nothing the node read broke it) and only
    a few lines about what it skipped."""
    log = path.read_text()
    assert "Traceback" not in log, log
    assert log.count("skipped") <= 40, log
    return log


async def test_bad_frames_on_a_node_s_inbox_cost_only_themselves(
    redis: RedisServer, tmp_path: Path
) -> None:
    """Anyone who reaches the Redis can publish on a node's inbox: batches that do not start
    with a node id, frames cut short, of no known kind, or whose payloads do not read are
    dropped (each costs only itself, and is logged at most once a minute per sender), while
    games across the nodes play on to their end."""
    async with (
        nodes(redis, tmp_path, count=2, turnLimit=60) as (a, b),
        Redis.from_url(redis.url) as client,
    ):
        held = asyncio.Event()
        games = await crossing_games(a, b, 3, held)
        sender = (b.node_id or "").encode()
        far = 10**9  # a connection number no node gave
        bad = [
            b"12345678X",
            b"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8" + wire.frame(wire.DATA, far, b"x"),
            b"short",
            b"",
            sender + b"\x00\x01",
            sender + wire.HEADER.pack(wire.DATA, far, 1000) + b"abc",
            sender + wire.frame(b"Z", far, b"a kind no node sends"),
            sender + wire.frame(wire.JOIN, far, b"not json"),
            sender + wire.frame(wire.JOIN, far, b"[1, 2]"),
            sender + wire.frame(wire.JOIN, far, b'{"simulationId": 5, "message": []}'),
            sender + wire.frame(wire.REFUSED, far, b"\xff"),
            sender + wire.frame(wire.REFUSED, far, b'{"message": 3}'),
            sender + wire.frame(wire.SPECTATE, 0, b"\xff\xfe x"),
            sender + wire.frame(wire.WATCH, 0, b"\xff"),
            sender + wire.frame(wire.UNWATCH, 0, b"\xff"),
            sender + wire.frame(wire.MOVE, far, b"not json"),
        ]
        for _ in range(ATTACK_ROUNDS):
            for node in (a, b):
                for payload in bad:
                    await client.spublish(inbox(node.node_id or ""), payload)
            await asyncio.sleep(0.01)
        held.set()
        await ended_normally(games)
        # The link never dropped, and new games across the nodes play as before.
        await ended_normally(await crossing_games(b, a, 1, held))
        for index, node in enumerate((a, b)):
            assert node.process.returncode is None
            log = quiet_log(tmp_path / f"node-{index}.log")
            assert "retrying in" not in log and "frames dropped" in log, log


async def test_bad_values_in_redis_are_skipped_and_no_node_stops(
    redis: RedisServer, tmp_path: Path
) -> None:
    """Directory entries (listed among a node's keys), nodes, finished games and lobby messages
    that do not read (not JSON, JSON of the wrong shape or types, a fake node) are skipped and
    said, while a node joins and reads every node's entries: no node stops, the games in play
    finish, new ones start across the nodes."""
    async with (
        nodes(redis, tmp_path, count=2, turnLimit=60) as (a, b),
        Redis.from_url(redis.url) as client,
        aiohttp.ClientSession() as session,
    ):
        held = asyncio.Event()
        games = await crossing_games(a, b, 3, held)
        row = {
            "simulationId": "wwwwwww",
            "game": "tavern",
            "status": "waiting",
            "players": [None, None],
            "scores": None,
            "turn": 0,
            "spectators": 0,
            "node": b.node_id,
            "free": [0, 1],
            "created": 1.0,
        }
        bad_rows = [
            b"not json",
            b"\xff\xfe",
            b"[1, 2]",
            b'{"simulationId": "xxxxxxx", "node": 5}',
            orjson.dumps({**row, "players": "x"}),
            orjson.dumps({**row, "free": [7]}),
            orjson.dumps({**row, "created": None}),
        ]
        for number, value in enumerate(bad_rows):  # listed among node B's keys
            await client.set(f"tavern:sim:zzzzzz{number}", value)
            await client.sadd(f"tavern:owned:{b.node_id}", f"tavern:sim:zzzzzz{number}")
        await client.set("tavern:node:deadbeef", "not json")  # a node no one runs
        await client.sadd("tavern:nodes", "deadbeef", "not-a-node", b"\xff\xfe")
        await client.lpush("tavern:finished", "not json", '{"simulationId": 3}', "[]")
        for message in (
            b"not json",
            b'{"node": "deadbeef", "set": [{"status": "waiting", "simulationId": "a"}], "del": []}',
            b'{"node": "deadbeef", "set": "x", "del": 5}',
            orjson.dumps({"node": "deadbeef", "set": [row], "del": [], "ended": [row, 3]}),
            orjson.dumps({"node": b.node_id, "set": [{**row, "turn": "x"}], "del": []}),
        ):
            await client.publish("tavern:lobby", message)
        # A node joins: it reads every node's entries, and the others read its own.
        (tmp_path / "later").mkdir()
        async with nodes(redis, tmp_path / "later", count=1) as (c,):
            await asyncio.sleep(1.0)  # several heartbeats: every node has seen the new one
            held.set()
            await ended_normally(games)
            for node in (a, b, c):
                assert node.process.returncode is None
                listed = await simulations(session, node)
                assert not any(s["simulationId"].startswith("zzzzzz") for s in listed), listed
            # New games start and play across the nodes, the new one too.
            await ended_normally(
                await crossing_games(c, a, 1, held) + await crossing_games(b, c, 1, held)
            )
            later = quiet_log(tmp_path / "later" / "node-0.log")
            # The node that joined read B's entries, the bad ones among them.
            assert "tavern:sim:zzzzzz0" in later and "not JSON" in later, later
        for index in range(2):
            quiet_log(tmp_path / f"node-{index}.log")


async def test_bad_claims_and_aliases_refuse_no_join_and_fail_no_request(
    redis: RedisServer, tmp_path: Path
) -> None:
    """A random join's claim that does not read, or names a node no one runs, is put aside: the
    join is seated all the same. A Thud API alias that does not read, or names a node whose
    entry does not read, is a game no node plays: the API answers as for an unknown token."""
    async with (
        nodes(redis, tmp_path, count=2) as (a, b),
        Redis.from_url(redis.url) as store,
        aiohttp.ClientSession() as session,
    ):
        await store.set(claim_key("tavern"), b"\xff\xfe")
        await store.set(claim_key("thud"), b"deadbeef 1234567")
        # Random joins through both nodes at the same moment still meet in one game.
        pair = [await bot(a), await bot(b)]
        message = {"type": "join-simulation", "game": "tavern", "nick": "random"}
        await asyncio.gather(*(joiner.send(message) for joiner in pair))
        infos = await asyncio.gather(*(joiner.expect("game-info") for joiner in pair))
        assert infos[0]["simulationId"] == infos[1]["simulationId"], infos
        # A claim of a node no one runs: the join opens a game, which the next one joins.
        first, first_info = await join(a, None, game="thud")
        await listed_on(session, b, first_info["simulationId"])
        second, second_info = await join(b, None, game="thud")
        assert second_info["simulationId"] == first_info["simulationId"]
        # Aliases: one that is not JSON, one naming a node whose entry is not JSON, one naming
        # a node whose entry does not read (a version of the frames that is none).
        await store.set("tavern:node:deadbeef", "not json")
        await store.set("tavern:node:0badadd0", orjson.dumps({"wire": 0}))
        forged = {
            "forged-1": b"not json",
            "forged-2": orjson.dumps({"simulationId": "abc1234", "node": "deadbeef"}),
            "forged-3": orjson.dumps({"simulationId": "abc1234", "node": "0badadd0"}),
        }
        for token, value in forged.items():
            await store.set(alias_key(node_name(token)), value)
        for node in (a, b):
            for token in forged:
                url = f"http://127.0.0.1:{node.http_port}/game"
                async with session.post(url, data=orjson.dumps({"game": token})) as response:
                    assert (response.status, await response.json()) == (200, False)
        for client in (*pair, first, second):
            await client.close()
        for index, node in enumerate((a, b)):
            assert node.process.returncode is None
            quiet_log(tmp_path / f"node-{index}.log")


FRAMES = st.lists(
    st.tuples(st.sampled_from(sorted(wire.KINDS)), st.integers(0, 2**32 - 1), st.binary()),
    max_size=5,
)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_read_as_a_batch_never_raise(data: bytes) -> None:
    batch = wire.read_batch(data)
    assert (batch.sender is None) == (not re.fullmatch(rb"[0-9a-f]{8}", data[:8]))
    assert all(kind in wire.KINDS for kind, _, _ in batch.frames)
    assert (batch.dropped == 0) == (batch.fault == "")


@settings(max_examples=300, deadline=None)
@given(FRAMES, st.binary(max_size=20), st.integers(0, 40))
def test_a_batch_s_good_frames_read_back_whatever_follows_them(
    frames: list[tuple[bytes, int, bytes]], tail: bytes, cut: int
) -> None:
    """What a node sends reads back exactly; bytes after it, or a batch cut short, cost only
    the frames they touch."""
    sent = b"".join(wire.frame(*frame) for frame in frames)
    assert wire.read_batch(b"0123abcd" + sent) == wire.Batch("0123abcd", frames)
    spoiled = wire.read_batch(b"0123abcd" + sent + tail)
    assert spoiled.frames[: len(frames)] == frames
    short = wire.read_batch(b"0123abcd" + sent[: max(0, len(sent) - cut)])
    assert short.frames == frames[: len(short.frames)]
    not_a_node = wire.Batch(None, [], 1, "the batch does not start with a node id")
    assert wire.read_batch(b"0123abcX" + sent) == not_a_node


def test_bad_values_are_said_once_a_minute_per_key(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    complaints = values.Complaints("0123abcd", clock=lambda: now[0])
    for second in range(30):
        now[0] = float(second)
        complaints("tavern:sim:zzzzzzz", "not JSON")
        complaints("frames from 12345678", "a frame cut short")
    assert len(caplog.records) == 2
    now[0] = 61.0
    complaints("tavern:sim:other", "not JSON")
    assert [record.getMessage() for record in caplog.records[2:]] == [
        "node 0123abcd: tavern:sim:zzzzzzz: 29 more like it in 60 s; skipped",
        "node 0123abcd: frames from 12345678: 29 more like it in 60 s; skipped",
        "node 0123abcd: tavern:sim:other: not JSON; skipped",
    ]
    caplog.clear()
    for number in range(values.COMPLAINT_KEYS + 100):  # a flood of keys: one line a minute more
        complaints(f"tavern:sim:{number}", "not JSON")
    assert len(caplog.records) == values.COMPLAINT_KEYS


@pytest.mark.parametrize(
    "read, raw",
    [
        (values.directory_entry, b"not json"),
        (values.directory_entry, b"\xff\xfe"),
        (values.directory_entry, b"[1, 2]"),
        (values.directory_entry, b'{"simulationId": "xxxxxxx", "node": 5}'),
        (values.finished_entry, b'{"simulationId": 3}'),
        (values.alias, b'{"simulationId": "abc1234"}'),
        (values.alias, b'{"simulationId": "abc1234", "node": "../../x"}'),
        (values.claim, b"\xff\xfe"),
        (values.claim, b"garbage"),
        (values.node_wire, b"not json"),
        (values.node_wire, b'{"wire": "3"}'),
        (values.lobby_change, b'{"node": "deadbeef", "set": "x", "del": 5}'),
        (values.join_request, b'{"simulationId": 5, "message": []}'),
        (values.refusal, b'{"message": 3}'),
        (values.move, b"[]"),
        (values.text, b"\xff"),
    ],
)
def test_a_value_that_does_not_read_is_refused(read: Callable[[bytes], object], raw: bytes) -> None:
    with pytest.raises(values.BadValue):
        read(raw)


def test_a_directory_entry_is_read_as_its_node_wrote_it_and_nothing_more() -> None:
    entry = {
        "simulationId": "abc1234-1",
        "game": "tavern",
        "status": "waiting",
        "players": [None, {"seat": "team2", "nick": "Bo", "names": ["A"], "kind": "bot"}],
        "scores": {"team1": 0, "team2": 0},
        "turn": 0,
        "spectators": 0,
        "node": "0123abcd",
        "free": [0],
        "created": 1.5,
    }
    assert values.directory_entry(orjson.dumps({**entry, "extra": "x" * 100})) == entry
    for field, bad in (("free", [1]), ("players", [{"seat": 1}]), ("game", "chess")):
        with pytest.raises(values.BadValue):
            values.directory_entry({**entry, field: bad})
