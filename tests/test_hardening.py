"""Limits, slow readers, reconnection and graceful shutdown, over real sockets."""

from __future__ import annotations

import asyncio
import signal
import socket
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from bench.common import tavern_serve
from bots import tavern_dummy
from server.records import GameFilter, Records
from tests.conftest import RawClient, serving, test_config

ROOT = Path(__file__).resolve().parent.parent
NAMES = ["A", "B", "C", "D", "E"]


def join(simulation_id: str | None = None) -> dict[str, Any]:
    return {"type": "join-simulation", "nick": "n", "names": NAMES, "simulationId": simulation_id}


def pass_all(state: dict[str, Any], team: str) -> dict[str, Any]:
    return {
        "type": "player-turn",
        "actions": [{"botId": d["id"], "type": "PASS"} for d in state[team]],
    }


async def test_connections_per_address_and_in_total_are_limited() -> None:
    async with serving(test_config(max_connections_per_address=2)) as arena:
        assert arena.tcp_port is not None
        kept = [await RawClient.connect(arena.tcp_port) for _ in range(2)]
        extra = await RawClient.connect(arena.tcp_port)
        error = await extra.expect_error("Too many connections")
        assert "one address" in error["reason"]
        assert await extra.is_closed()
        for client in kept:  # the others are untouched
            await client.send({"type": "create-simulation"})
            await client.expect("ready")
        for client in (*kept, extra):
            await client.close()
    async with serving(test_config(max_connections=1)) as arena:
        assert arena.tcp_port is not None
        first = await RawClient.connect(arena.tcp_port)
        await first.send({"type": "join-simulation", "nick": "seated"})
        await first.expect("game-info")
        second = await RawClient.connect(arena.tcp_port)  # a seated bot never gives way
        await second.expect_error("Too many connections")
        await first.close()
        await second.close()


async def test_simulations_per_connection_are_limited() -> None:
    async with serving(test_config(max_simulations_per_connection=2)) as arena:
        assert arena.tcp_port is not None
        client = await RawClient.connect(arena.tcp_port)
        for _ in range(2):
            await client.send({"type": "create-simulation"})
            await client.expect("ready")
        await client.send({"type": "create-simulation"})
        await client.expect_error("Too many simulations")
        assert await client.is_closed()
        assert len(arena.matches) == 2
        await client.close()


async def test_an_idle_connection_that_never_joins_is_closed() -> None:
    async with serving(test_config(idle_timeout_ms=200)) as arena:
        assert arena.tcp_port is not None
        idle, waiting = (
            await RawClient.connect(arena.tcp_port),
            await RawClient.connect(arena.tcp_port),
        )
        await waiting.send(join())
        await waiting.expect("game-info")
        error = await idle.expect_error("Idle timeout")
        assert "0.2 s" in error["reason"]
        assert await idle.is_closed()
        await asyncio.sleep(0.3)
        await waiting.send({"type": "create-simulation"})  # seated: never idle
        await waiting.expect("ready")
        for client in (idle, waiting):
            await client.close()


async def test_the_first_reply_gets_the_start_up_time() -> None:
    config = test_config(
        turn_timeout_ms=150, first_turn_timeout_ms=1500, max_consecutive_timeouts=1
    )
    async with serving(config) as arena:
        assert arena.tcp_port is not None
        one, two = await RawClient.connect(arena.tcp_port), await RawClient.connect(arena.tcp_port)
        for client in (one, two):
            await client.send(join())
            await client.expect("game-info")
        turn = await one.expect("turn")
        await asyncio.sleep(0.5)  # slower than a turn, within the start-up time
        await one.send(pass_all(turn["state"], "team1"))
        turn = await two.expect("turn")
        await two.send(pass_all(turn["state"], "team2"))
        await one.expect("turn")  # now a late reply loses
        assert (await one.expect("loss-game"))["result"]["reason"] == "Too many timeouts"
        for client in (one, two):
            await client.close()


async def test_a_bot_that_stops_reading_is_dropped_and_forfeits() -> None:
    # Its errors are not metered here, so that its backlog grows fast (metered, it grows at
    # maxErrorsPerSecond lines a second, and the kernel's buffers take minutes to fill).
    config = test_config(max_send_buffer_bytes=16_384, max_errors_per_second=1_000_000)
    async with serving(config) as arena:
        assert arena.tcp_port is not None
        opponent = await RawClient.connect(arena.tcp_port)
        await opponent.send(join())  # team1, on move while the other floods
        await opponent.expect("game-info")
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", arena.tcp_port))
        sock.setblocking(False)
        _, writer = await asyncio.open_connection(sock=sock)
        writer.write(orjson.dumps(join()) + b"\n")
        await opponent.expect("turn")
        # It never reads again, and floods turns out of turn: each one earns an error line.
        flood = (
            orjson.dumps({"type": "player-turn", "actions": [{"botId": 1, "type": "PASS"}]}) + b"\n"
        )
        async with asyncio.timeout(20):
            try:
                while arena.connections and len(arena.connections) > 1:
                    writer.write(flood * 200)
                    await writer.drain()
                    await asyncio.sleep(0.005)
            except ConnectionError:
                pass  # the server dropped it
        await opponent.expect_error("Player disconnected")
        assert (await opponent.expect("win-game"))["result"]["reason"] == "Player disconnected"
        writer.close()
        await opponent.close()


async def test_a_bot_rejoins_its_seat_with_its_token() -> None:
    async with serving(test_config(reconnect_grace_ms=3000)) as arena:
        assert arena.tcp_port is not None
        one, two = await RawClient.connect(arena.tcp_port), await RawClient.connect(arena.tcp_port)
        await one.send(join())
        info = await one.expect("game-info")
        await two.send(join(info["simulationId"]))
        await two.expect("game-info")
        first = await one.expect("turn")
        one.writer.transport.abort()  # the connection is lost while team1 is on move
        back = await RawClient.connect(arena.tcp_port)
        await back.send({"type": "rejoin", "simulationId": info["simulationId"], "token": "guess"})
        await back.expect_error("Invalid token")
        await back.send(
            {"type": "rejoin", "simulationId": info["simulationId"], "token": info["token"]}
        )
        again = await back.expect("game-info")
        assert (again["team"], again["token"]) == ("team1", info["token"])
        rejoined = await back.expect("turn")
        assert (rejoined["state"], rejoined["turn"]) == (first["state"], first["turn"])
        # The clock kept running while the bot was away: the reply has what is left of it.
        assert 0 < rejoined["timeoutMs"] < first["timeoutMs"]
        await back.send(pass_all(first["state"], "team1"))
        turn = await two.expect("turn")
        # A second rejoin takes the seat over; the connection it replaced can no longer act.
        other = await RawClient.connect(arena.tcp_port)
        await other.send(
            {"type": "rejoin", "simulationId": info["simulationId"], "token": info["token"]}
        )
        await other.expect("game-info")
        assert await back.is_closed()
        await two.send(pass_all(turn["state"], "team2"))
        await other.expect("turn")
        for client in (back, two, other):
            await client.close()


async def test_a_seat_that_does_not_come_back_forfeits_after_the_grace_period() -> None:
    async with serving(test_config(reconnect_grace_ms=300)) as arena:
        assert arena.tcp_port is not None
        one, two = await RawClient.connect(arena.tcp_port), await RawClient.connect(arena.tcp_port)
        for client in (one, two):
            await client.send(join())
            await client.expect("game-info")
        await one.expect("turn")
        started = asyncio.get_running_loop().time()
        await one.close()
        await two.expect_error("Player disconnected")
        assert asyncio.get_running_loop().time() - started >= 0.25
        assert (await two.expect("win-game"))["result"]["reason"] == "Player disconnected"
        await two.close()


async def test_sigterm_tells_everyone_keeps_the_games_and_exits_0(tmp_path: Path) -> None:
    database = tmp_path / "arena.db"
    config = tmp_path / "config.json"
    config.write_text(orjson.dumps({"port": 0, "httpPort": 0, "database": str(database)}).decode())
    async with tavern_serve(config) as server:
        tcp_port, http_port = server.tcp_port, server.http_port
        one, two = await RawClient.connect(tcp_port), await RawClient.connect(tcp_port)
        await one.send(join())
        info = await one.expect("game-info")
        await two.send(join(info["simulationId"]))
        await two.expect("game-info")
        turn = await one.expect("turn")
        await one.send(pass_all(turn["state"], "team1"))
        await two.expect("turn")
        async with aiohttp.ClientSession() as session:
            ws = await session.ws_connect(f"http://127.0.0.1:{http_port}/ws")
            await ws.send_json({"type": "watch", "simulationId": info["simulationId"]})
            assert (await ws.receive_json(timeout=10))["type"] == "snapshot"
            server.process.send_signal(signal.SIGTERM)
            for client in (one, two):
                error = await client.expect_error("Server shutting down")
                assert error["reason"]
                assert await client.is_closed()
            notice = await ws.receive_json(timeout=10)
            assert notice == {"type": "error", "message": "Server shutting down"}
        assert await asyncio.wait_for(server.process.wait(), 20) == 0
    records = Records(database)
    records.open_to_read()
    (game,) = records.games(GameFilter())["games"]
    assert game["status"] == "unfinished"
    assert game["turnCount"] == 1


async def test_dummy_bots_still_finish_with_the_default_grace_period() -> None:
    async with serving(test_config(reconnect_grace_ms=10_000)) as arena:
        assert arena.tcp_port is not None
        first = asyncio.create_task(tavern_dummy.play("127.0.0.1", arena.tcp_port, None, "a"))
        await asyncio.sleep(0.05)
        second = await tavern_dummy.play("127.0.0.1", arena.tcp_port, None, "b")
        assert sorted([(await first)["type"], second["type"]]) in (
            ["loss-game", "win-game"],
            ["draw-game", "draw-game"],
        )


async def test_a_second_loss_gets_its_own_grace_period() -> None:
    """The first loss's timer must not end the grace period of a loss after a rejoin."""
    async with serving(test_config(reconnect_grace_ms=600)) as arena:
        assert arena.tcp_port is not None
        one, two = await RawClient.connect(arena.tcp_port), await RawClient.connect(arena.tcp_port)
        await one.send(join())
        info = await one.expect("game-info")
        await two.send(join(info["simulationId"]))
        await two.expect("game-info")
        await one.expect("turn")
        rejoin = {"type": "rejoin", "simulationId": info["simulationId"], "token": info["token"]}
        one.writer.transport.abort()
        await asyncio.sleep(0.4)
        back = await RawClient.connect(arena.tcp_port)
        await back.send(rejoin)
        await back.expect("game-info")
        await back.expect("turn")
        back.writer.transport.abort()  # lost again, 0.4 s into the first grace period
        await asyncio.sleep(0.4)  # the first period is over; the second is not
        again = await RawClient.connect(arena.tcp_port)
        await again.send(rejoin)
        await again.expect("game-info")
        turn = await again.expect("turn")
        await again.send(pass_all(turn["state"], "team1"))
        await two.expect("turn")  # no "Player disconnected": the game went on
        for client in (two, again):
            await client.close()


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
async def test_the_dummy_bots_play_a_whole_game_on_either_event_loop(
    tmp_path: Path, loop: str
) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        orjson.dumps({"port": 0, "httpPort": 0, "database": str(tmp_path / "a.db")}).decode()
    )
    async with tavern_serve(config, "--loop", loop) as server:
        first = asyncio.create_task(tavern_dummy.play("127.0.0.1", server.tcp_port, None, "a"))
        await asyncio.sleep(0.05)
        second = await asyncio.wait_for(
            tavern_dummy.play("127.0.0.1", server.tcp_port, None, "b"), 60
        )
        assert sorted([(await first)["type"], second["type"]]) in (
            ["loss-game", "win-game"],
            ["draw-game", "draw-game"],
        )
