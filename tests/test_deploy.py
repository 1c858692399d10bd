"""The shipped deployment files, each used as shipped: the systemd unit template checked by
systemd-analyze, and deploy/haproxy.cfg run by a real HAProxy (from Debian: `make test`
installs it) in front of three ``tavern serve`` nodes on one redis-server, with bots that
connect only to HAProxy. Its addresses and check timings are the environment variables the
file names (HAProxy expands them as it reads it); checks every 100 ms here.
"""

from __future__ import annotations

import asyncio
import collections
import configparser
import shutil
import subprocess
from pathlib import Path
from typing import Any

import aiohttp

from bench.common import ROOT
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
from tests.services import postgres_server
from tests.test_cluster import crossing_games, ended_normally

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


async def test_a_rolling_restart_behind_haproxy_loses_no_game(tmp_path: Path) -> None:
    """30 games play through HAProxy while each of the three nodes is drained (SIGUSR1),
    waited for and started again in turn, and new games keep starting: every game ends
    normally, each is in the records once, finished; no connection is refused; every node
    exits 0."""
    async with balanced_arena(tmp_path, turns=40) as balanced:
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
        async with balanced_arena(tmp_path, 10, database=url, recordsJournal=journal) as arena:
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
