"""Hostile input over real sockets while real games are being played.

Every loop here is bounded in count and time, and every connection targets 127.0.0.1 only.
The server must survive, answer each bad input with an error line or a close, and let the
games in progress finish correctly.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import struct
from typing import Any

import orjson

from bots import tavern_dummy
from bots.house import run_games
from tests.conftest import RawClient, serving, test_config

END_TYPES = {"win-game", "loss-game", "draw-game"}


async def answer_or_close(client: RawClient, timeout: float = 5) -> str:
    """What the server did with the input: "error", "closed", or another message type."""
    try:
        message = await client.receive(timeout)
    except ConnectionError:
        return "closed"
    return str(message["type"])


async def random_bytes(port: int, rng: random.Random) -> str:
    client = await RawClient.connect(port)
    garbage = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 2048)))
    await client.send_raw(garbage.replace(b"{", b"(") + b"\n")  # never a real object
    outcome = await answer_or_close(client)
    await client.close()
    return outcome


async def wrong_shape(port: int, message: dict[str, Any]) -> str:
    client = await RawClient.connect(port)
    await client.send_raw(json.dumps(message).encode() + b"\n")  # json: it writes huge ints
    outcome = await answer_or_close(client)
    await client.close()
    return outcome


async def truncated_then_closed(port: int) -> None:
    client = await RawClient.connect(port)
    await client.send_raw(b'{"type": "create-simul')
    await client.close()


async def reset_mid_message(port: int) -> None:
    sock = socket.socket()
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, ("127.0.0.1", port))
    await loop.sock_sendall(sock, b'{"type": "join-simulation", "nick": "x", "na')
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()  # RST, not FIN


async def open_and_close(port: int) -> None:
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.close()
    await writer.wait_closed()


async def slow_drip(port: int) -> str:
    client = await RawClient.connect(port)
    for byte in orjson.dumps({"type": "create-simulation"}) + b"\n":
        await client.send_raw(bytes([byte]))
        await asyncio.sleep(0.01)
    outcome = await answer_or_close(client)
    await client.close()
    return outcome


async def create_flood(port: int) -> list[str]:
    client = await RawClient.connect(port)
    await client.send_raw(orjson.dumps({"type": "create-simulation"}) * 50)
    outcomes = []
    while True:
        outcome = await answer_or_close(client)
        outcomes.append(outcome)
        if outcome != "ready":
            break
    await client.close()
    return outcomes


async def turns_for_others(port: int) -> list[str]:
    """A real player who sends turns out of turn and for the other team's dwarves."""
    one, two = await RawClient.connect(port), await RawClient.connect(port)
    await one.send({"type": "join-simulation", "nick": "a", "names": ["x"]})
    info = await one.expect("game-info")
    await two.send({"type": "join-simulation", "nick": "b", "simulationId": info["simulationId"]})
    await two.expect("game-info")
    turn = await one.expect("turn")
    move = {"type": "MOVE", "direction": "NORTH"}
    await two.send({"type": "player-turn", "actions": [{"botId": 6, **move}]})
    seen = [(await two.expect("error"))["message"]]
    await one.send({"type": "player-turn", "actions": [{"botId": 6, **move}]})
    seen.append((await one.expect("error"))["message"])
    await one.send(
        {"type": "player-turn", "actions": [{"botId": turn["state"]["team1"][0]["id"], **move}]}
    )
    await two.expect("turn")
    await one.close()
    await two.close()
    return seen


WRONG_SHAPES: list[dict[str, Any]] = [
    {"type": 5},
    {"type": ["join-simulation"]},
    {"type": "join-simulation", "simulationId": [1, 2]},
    {"type": "join-simulation", "nick": {"a": 1}},
    {"type": "join-simulation", "names": {"a": 1}},
    {"type": "join-simulation", "game": 3},
    {"type": "create-simulation", "seed": "seven"},
    {"type": "create-simulation", "seed": 2**80},
    {"type": "create-simulation", "game": None, "seed": True},
    {"type": "player-turn", "actions": "MOVE"},
    {"type": "rejoin", "simulationId": "x", "token": 5},
    {"type": "rejoin"},
    {"type": "no-such-message"},
    {"type": "x" * 1000},
]


async def test_the_arena_survives_hostile_input_while_games_finish() -> None:
    config = test_config(max_message_bytes=4096, max_simulations_per_connection=20)
    async with serving(config) as arena:
        assert arena.tcp_port is not None
        port = arena.tcp_port
        rng = random.Random(2013)
        games: list[asyncio.Task[Any]] = []
        for number in range(4):
            games.append(
                asyncio.create_task(tavern_dummy.play("127.0.0.1", port, None, f"a{number}"))
            )
            await asyncio.sleep(0.02)
            games.append(
                asyncio.create_task(tavern_dummy.play("127.0.0.1", port, None, f"b{number}"))
            )
        thud = asyncio.create_task(
            run_games("thud", "random", "random", "127.0.0.1", port, 2, seed=9)
        )
        async with asyncio.timeout(120):
            garbage = await asyncio.gather(*(random_bytes(port, rng) for _ in range(40)))
            shapes = await asyncio.gather(*(wrong_shape(port, m) for m in WRONG_SHAPES))
            oversized = await wrong_shape(port, {"type": "create-simulation", "pad": "x" * 10_000})
            await asyncio.gather(*(truncated_then_closed(port) for _ in range(20)))
            await asyncio.gather(*(reset_mid_message(port) for _ in range(20)))
            await asyncio.gather(*(open_and_close(port) for _ in range(100)))
            drip = await slow_drip(port)
            flood = await create_flood(port)
            others = await turns_for_others(port)
            finals = await asyncio.gather(*games)
            thud_finals = await thud
        assert set(garbage) == {"error"}
        assert set(shapes) == {"error"}
        assert oversized == "error"
        assert drip == "ready"
        assert flood.count("ready") == 20
        assert flood[-1] == "error"
        assert others == ["Not your turn", "Invalid turn"]
        for final in [*finals, *thud_finals]:
            assert final["type"] in END_TYPES
            assert final["result"]["reason"] != "Server error"
        # Still serving, and nothing leaked: every hostile connection is gone.
        client = await RawClient.connect(port)
        await client.send({"type": "create-simulation"})
        await client.expect("ready")
        await client.close()
        async with asyncio.timeout(5):
            while len(arena.connections) > 0:
                await asyncio.sleep(0.02)
