"""The shipped deployment files, each used as shipped: the systemd unit template checked by
systemd-analyze, and deploy/haproxy.cfg run by a real HAProxy (from Debian: `make test`
installs it) in front of three ``tavern serve`` nodes on one redis-server, with bots that
connect only to HAProxy. Its addresses, limits and check timings are the environment
variables the file names (HAProxy expands them as it reads it); checks every 100 ms here.
HAProxy reaches the nodes from 127.0.0.2, which they list as a balancer; the clients connect
from addresses of their own (127.0.6.x), which the nodes see through its PROXY headers.
"""

from __future__ import annotations

import asyncio
import collections
import configparser
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from bench.balancer import HAPROXY_CONFIG
from bench.common import ROOT, connect_from
from bench.rolling import (
    CHECK_INTER_MS,
    WAIT_S,
    Figures,
    balanced_arena,
    connected,
    one_game,
    recorded,
    rolling_restart,
)
from server.config import ArenaConfig
from tests.services import postgres_server
from tests.test_cluster import crossing_games, ended_normally
from tests.test_visor_limits import session_from

UNIT = ROOT / "deploy" / "tavern@.service"


def test_the_systemd_unit_template_verifies_and_drains_on_reload(tmp_path: Path) -> None:
    instance = tmp_path / "tavern@1.service"  # a template is verified as one of its instances
    shutil.copy(UNIT, instance)
    verified = subprocess.run(
        ["/usr/bin/systemd-analyze", "verify", str(instance)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (verified.returncode, verified.stdout, verified.stderr) == (0, "", "")
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.read(UNIT)
    service = unit["Service"]
    assert service["ExecReload"] == "/bin/kill -USR1 $MAINPID"  # a drain (server.draining)
    assert service["Restart"] == "always"  # a drained node exits 0: it starts again
    assert "%i" in service["ExecStart"]


@pytest.mark.parametrize("cluster", [False, True], ids=["one-redis", "redis-cluster"])
async def test_a_rolling_restart_behind_haproxy_loses_no_game(
    tmp_path: Path, cluster: bool
) -> None:
    """30 games play through HAProxy while each of the three nodes is drained (SIGUSR1),
    waited for and started again in turn, and new games keep starting: every game ends
    normally, each is in the records once, finished; no connection is refused; every node
    exits 0. On one Redis and on a Redis Cluster alike."""
    async with balanced_arena(tmp_path, turns=40, cluster=cluster) as balanced:
        figures, _, statuses = await rolling_restart(balanced, games=30, think_s=0.02)
    assert statuses == [0, 0, 0]
    assert figures.abnormal() == {}
    assert figures.started_during_restart > 0
    assert figures.refused == 0
    records = recorded(balanced.nodes)
    counts = collections.Counter(game for game, _ in records)
    assert [game for game, count in counts.items() if count > 1] == []
    assert dict(records) == dict.fromkeys(figures.games, "finished")


async def test_a_node_killed_behind_haproxy_gets_no_new_connection(tmp_path: Path) -> None:
    """kill -9 one node: HAProxy's checks mark it down, and meanwhile a connection sent to it
    is sent again to another node; every new game through HAProxy is created, played and
    ended normally on the others."""
    async with balanced_arena(tmp_path, turns=10) as balanced:
        killed = balanced.nodes[0]
        await killed.kill()
        figures = Figures()
        for seed in range(10):
            await one_game(balanced.bots_port, seed, 0.0, figures)
        assert figures.abnormal() == {}
        assert figures.refused == 0
        log = tmp_path / "haproxy.log"
        async with asyncio.timeout(WAIT_S):  # its checks run every CHECK_INTER_MS
            while "nodes_tcp/node1 is DOWN" not in log.read_text():
                await asyncio.sleep(CHECK_INTER_MS / 1000)
        bot, _ = await connected(
            balanced.bots_port, figures, {"type": "create-simulation"}, "ready"
        )
        bot.close()
        assert figures.refused == 0
    assert set(figures.games) <= {game for game, _ in recorded(balanced.nodes[1:])}


async def test_outages_of_redis_and_postgresql_refuse_no_set_up_behind_haproxy(
    tmp_path: Path,
) -> None:
    """Redis and PostgreSQL both stop under three nodes behind HAProxy, and each node plays a
    game meanwhile (its records go to its journal): every node stays in service (HAProxy marks
    none down), and every set-up through HAProxy is answered; before, each node failed /readyz
    and HAProxy refused every new connection."""
    free = asyncio.Event()
    free.set()
    with postgres_server() as postgres:
        url = postgres.create_database("balanced")
        journal = str(tmp_path / "journal")
        async with balanced_arena(
            tmp_path, 10, {"database": url, "recordsJournal": journal}
        ) as arena:
            await asyncio.to_thread(postgres.stop)
            await asyncio.to_thread(arena.nodes[0].redis.stop)
            for node in arena.nodes:  # a write each, which finds the database away
                assert node.process is not None
                await ended_normally(await crossing_games(node.process, node.process, 1, free))
            figures = Figures()
            async with asyncio.timeout(WAIT_S):
                for _ in range(20):  # well past HAProxy's checks (every CHECK_INTER_MS)
                    bot, _ = await connected(
                        arena.bots_port, figures, {"type": "create-simulation"}, "ready"
                    )
                    bot.close()
                    await asyncio.sleep(CHECK_INTER_MS / 1000)
            assert figures.refused == 0
            assert "is DOWN" not in (tmp_path / "haproxy.log").read_text()
            await asyncio.to_thread(postgres.start)


async def page_message(ws: aiohttp.ClientWebSocketResponse, kind: str) -> dict[str, Any]:
    async with asyncio.timeout(WAIT_S):
        while True:
            message: dict[str, Any] = await ws.receive_json()
            if message["type"] == kind:
                return message


async def test_pages_and_their_websockets_go_through_haproxy(tmp_path: Path) -> None:
    """The pages' port of the shipped config: a page loads, its websocket is upgraded through
    HAProxy, and it watches a game played through the bots' port (on whichever node each
    landed: the nodes share their lobby and relay turns over Redis) turn by turn, to its end."""
    async with balanced_arena(tmp_path, turns=60) as balanced:
        figures = Figures()
        playing = asyncio.create_task(one_game(balanced.bots_port, 7, 0.03, figures))
        async with asyncio.timeout(WAIT_S):
            while not figures.games:
                await asyncio.sleep(0.01)
        (simulation_id,) = figures.games
        pages = f"http://127.0.0.1:{balanced.pages_port}"
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{pages}/") as response:
                assert response.status == 200
                assert "text/html" in response.headers["Content-Type"]
            async with session.ws_connect(f"{pages}/ws") as ws, asyncio.timeout(WAIT_S):
                while True:  # until its seats are taken and the nodes list it
                    await ws.send_json({"type": "watch", "simulationId": simulation_id})
                    answer = await ws.receive_json()
                    while answer["type"] == "lobby":
                        answer = await ws.receive_json()
                    if answer["type"] == "snapshot":
                        break
                    assert answer["message"] == "There is no simulation with this id", answer
                    await asyncio.sleep(0.02)
                assert answer["simulationId"] == simulation_id
                snapshot = answer
                turn = await page_message(ws, "turn")
                assert turn["turn"] >= snapshot["turn"]
                await playing
        assert figures.abnormal() == {}


class Line:
    """A bot's connection through HAProxy from a loopback address of its own."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, source: str, port: int) -> Line:
        reader, writer = await asyncio.open_connection(sock=await connect_from(source, port))
        return cls(reader, writer)

    async def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self.writer.write(orjson.dumps(message) + b"\n")
        async with asyncio.timeout(WAIT_S):
            answer: dict[str, Any] = orjson.loads(await self.reader.readline())
            return answer


async def test_behind_haproxy_each_client_is_counted_as_itself(tmp_path: Path) -> None:
    """Through the shipped config's PROXY headers each node counts every client by its own
    address: one address at its caps on every node (two waiting simulations, two pages, the
    burst of wrong keys) refuses nobody else (before: every client was HAProxy's address, so
    the other address's create and page were refused, and its keys paced)."""
    caps = {"maxWaitingSimulationsPerAddress": 2, "maxPagesPerAddress": 2}
    async with balanced_arena(tmp_path, turns=10, settings=caps) as balanced:
        port, pages = balanced.bots_port, f"http://127.0.0.1:{balanced.pages_port}"
        greedy = [await Line.open("127.0.6.1", port) for _ in balanced.nodes]  # one a node
        for line in greedy:
            answers = [await line.ask({"type": "create-simulation"}) for _ in range(3)]
            assert [a["type"] for a in answers] == ["ready", "ready", "error"], answers
            assert "2 waiting simulations from one address" in answers[2]["reason"]
        other = await Line.open("127.0.6.2", port)
        assert (await other.ask({"type": "create-simulation"}))["type"] == "ready"
        wrong = {"type": "create-simulation", "bot": "Nobody", "key": "tvk_wrong"}
        for _ in range(5):  # the address's burst of wrong keys, shared by every node
            refused = await greedy[0].ask(wrong)
            assert refused["reason"].startswith("no bot 'Nobody'"), refused
        started = time.monotonic()
        refused = await other.ask(wrong)  # another address's own burst is whole
        assert refused["reason"].startswith("no bot 'Nobody'"), refused
        assert time.monotonic() - started < 1.0
        async with session_from("127.0.6.1") as mine, session_from("127.0.6.2") as theirs:
            held = [await mine.ws_connect(f"{pages}/ws") for _ in range(2 * len(balanced.nodes))]
            for ws in held:
                await ws.send_json({"type": "lobby"})
                assert (await ws.receive_json())["type"] == "lobby"
            async with mine.ws_connect(f"{pages}/ws") as one_more:
                error = await one_more.receive_json()
                assert "at most 2 pages from one address" in error["reason"], error
            async with theirs.ws_connect(f"{pages}/ws") as ws:
                await ws.send_json({"type": "lobby"})
                assert (await ws.receive_json())["type"] == "lobby"
            for ws in held:
                await ws.close()
        for line in (*greedy, other):
            line.writer.close()


def haproxy_setting(text: str, section: str, keyword: str) -> str:
    """A setting's value in the shipped config's section, as HAProxy reads it by default."""
    body = re.search(rf"^{re.escape(section)}\n((?:[ \t].*\n|\n)*)", text, re.MULTILINE)
    assert body is not None, section
    found = re.search(rf"^\s+{re.escape(keyword)} (.+)$", body.group(1), re.MULTILINE)
    assert found is not None, (section, keyword)
    value = found.group(1).strip()
    default = re.fullmatch(r'"\$\{\w+-(.+)\}"', value)  # "${VARIABLE-default}"
    return default.group(1) if default else value


def test_the_shipped_haproxy_cfg_gives_each_frontend_its_share_and_bounds_requests() -> None:
    """Pages can never take the bots' connections: each frontend has a maxconn, together less
    than the global one; the pages' is above what the nodes take of pages (so that the nodes,
    which see each client, choose whom to refuse); a request's head must come within `timeout
    http-request`; every node is reached with a PROXY header, from an address of HAProxy's
    own."""
    text = (ROOT / HAPROXY_CONFIG).read_text()
    total = int(haproxy_setting(text, "global", "maxconn"))
    bots = int(haproxy_setting(text, "frontend bots", "maxconn"))
    pages = int(haproxy_setting(text, "frontend pages", "maxconn"))
    assert bots + pages < total
    page_nodes = re.findall(r"^\s+server .*HTTP_PORT.*check check-send-proxy$", text, re.M)
    assert pages > len(page_nodes) * ArenaConfig().max_pages
    assert haproxy_setting(text, "frontend pages", "timeout http-request") == "5s"
    assert haproxy_setting(text, "defaults", "source") == "127.0.0.2"
    servers = re.findall(r"^\s+server .*$", text, re.MULTILINE)
    assert len(servers) == 6
    assert all("send-proxy-v2" in line and "check-send-proxy" in line for line in servers)


HALF_A_REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: holding"


async def test_half_sent_http_requests_through_haproxy_leave_the_bots_their_share(
    tmp_path: Path,
) -> None:
    """The shipped config with small limits (HAProxy 40 connections, bots 10, pages 20; a
    request's head within 1 s): 40 connections hold half a request each on the pages' port,
    more than HAProxy takes in all. A new bot on the bots' port is answered at once (before:
    the pages' connections took every one HAProxy had, and bots waited for one to close), and
    the half-sent requests are closed at `timeout http-request`."""
    limits = {
        "TAVERN_MAXCONN": "40",
        "TAVERN_BOTS_MAXCONN": "10",
        "TAVERN_PAGES_MAXCONN": "20",
        "TAVERN_HTTP_REQUEST_TIMEOUT": "1s",
    }
    async with balanced_arena(tmp_path, turns=10, variables=limits) as balanced:
        loop = asyncio.get_running_loop()
        holding = []
        for index in range(40):
            sock = await connect_from(f"127.0.7.{index + 1}", balanced.pages_port)
            await loop.sock_sendall(sock, HALF_A_REQUEST)
            holding.append(sock)
        await asyncio.sleep(0.2)  # HAProxy takes what its pages' share allows
        started = time.monotonic()
        bot = await Line.open("127.0.6.3", balanced.bots_port)
        assert (await bot.ask({"type": "create-simulation"}))["type"] == "ready"
        assert time.monotonic() - started < 1.0
        bot.writer.close()
        async with asyncio.timeout(5):  # the first ones, taken in, are closed at 1 s
            answer = await loop.sock_recv(holding[0], 4096)
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        for sock in holding:
            sock.close()


async def seats_by_place(session: aiohttp.ClientSession, node: Any) -> dict[str, float]:
    """A node's ``tavern_seats`` gauge, by ``where``."""
    async with session.get(f"http://127.0.0.1:{node.http_port}/metrics") as response:
        text = await response.text()
    return {
        where: float(value)
        for where, value in re.findall(r'^tavern_seats\{where="(\w+)"\} (\S+)$', text, re.M)
    }


async def test_a_join_or_rejoin_by_id_through_haproxy_reaches_the_game_s_node(
    tmp_path: Path,
) -> None:
    """With the shipped config, games created through HAProxy land on any node (leastconn), and
    every join by id, and a rejoin, reaches the node that plays the game: no seat is held
    through another node (each node's tavern_seats{where="remote"} stays 0), where balancing
    alone sends about two joins in three elsewhere."""
    async with balanced_arena(tmp_path, turns=50) as balanced, aiohttp.ClientSession() as session:
        port = balanced.bots_port
        games = []
        for number in range(6):
            creator = await Line.open(f"127.0.7.{number + 1}", port)
            ready = await creator.ask({"type": "create-simulation"})
            assert re.fullmatch(r"[0-9a-r]{7}-node[123]", ready["simulationId"]), ready
            games.append(ready["simulationId"])
            creator.writer.close()
        seated: list[tuple[Line, dict[str, Any]]] = []
        for number, simulation_id in enumerate(games):
            for side in range(2):
                line = await Line.open(f"127.0.8.{2 * number + side + 1}", port)
                join = {"type": "join-simulation", "simulationId": simulation_id}
                info = await line.ask({**join, "nick": f"bot{side}"})
                assert info["type"] == "game-info", info
                seated.append((line, info))
        homes = {f"node{node.index + 1}": node for node in balanced.nodes}
        assert len({simulation_id.rsplit("-", 1)[1] for simulation_id in games}) > 1, games
        places = [await seats_by_place(session, node) for node in balanced.nodes]
        assert all(place["remote"] == 0 for place in places), places
        assert sum(place["local"] for place in places) == 12, places
        for simulation_id in games:  # each game's node holds both its seats
            local = await seats_by_place(session, homes[simulation_id.rsplit("-", 1)[1]])
            assert local["local"] >= 2, (simulation_id, local)
        # A rejoin through HAProxy comes home too.
        line, info = seated[0]
        line.writer.close()
        again = await Line.open("127.0.9.1", port)
        rejoin = {"type": "rejoin", "simulationId": info["simulationId"]}
        answer = await again.ask({**rejoin, "token": info["token"]})
        assert answer["type"] in ("game-info", "turn"), answer
        places = [await seats_by_place(session, node) for node in balanced.nodes]
        assert all(place["remote"] == 0 for place in places), places
        again.writer.close()
        for line, _ in seated[1:]:
            line.writer.close()
