"""Bots written for the original server play whole games unchanged.

Some of them parse each TCP read as exactly one JSON message and send bare JSON with no
newline. The arena must never deliver two messages to such a bot in one read (see
``server/connection.py``), so these bots play complete games here and fail loudly if it did.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from bots import tavern_dummy
from server.games.tavern.house import choose_actions, view_of_wire
from tests.conftest import Running, tap

LEGACY_DUMMY = Path(__file__).parent / "legacy" / "dummy-bot.js"
JS_BOT = Path(__file__).parent.parent / "bots" / "js" / "tavern-bot.js"
NAMES = ["Carawebo", "Pantuflo", "Chistaburras", "Pontato", "Jhonny Tablas"]


async def per_read_bot(port: int, simulation_id: str | None, reads: list[int]) -> dict[str, Any]:
    """A bot that treats every read as one JSON message, as the original's dummy bot did."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    join = {
        "type": "join-simulation",
        "nick": "per-read",
        "names": NAMES,
        "simulationId": simulation_id,
    }
    writer.write(json.dumps(join).encode())  # bare JSON, no newline
    team = ""
    width = height = 0
    try:
        while True:
            async with asyncio.timeout(30):
                chunk = await reader.read(65536)
            assert chunk, "the server closed the connection before the game ended"
            reads[0] += 1
            message = json.loads(chunk)  # raises if two messages came in one read
            if message["type"] == "game-info":
                team, width, height = message["team"], message["width"], message["height"]
            elif message["type"] == "turn":
                view = view_of_wire(message["state"], team, width, height)
                reply = {"type": "player-turn", "actions": choose_actions(view)}
                writer.write(json.dumps(reply).encode())
            elif message["type"] in ("win-game", "loss-game", "draw-game"):
                result: dict[str, Any] = message
                return result
            else:
                assert message["type"] == "score", message
    finally:
        writer.close()


async def test_per_read_bots_complete_whole_games(arena: Running) -> None:
    assert arena.tcp_port is not None
    reads = [0]
    for _ in range(3):
        first = asyncio.create_task(per_read_bot(arena.tcp_port, None, reads))
        await asyncio.sleep(0.02)
        second = asyncio.create_task(per_read_bot(arena.tcp_port, None, reads))
        async with asyncio.timeout(120):
            finals = sorted([(await first)["type"], (await second)["type"]])
        assert finals in (["loss-game", "win-game"], ["draw-game", "draw-game"])
    assert reads[0] > 300  # whole games were played, read by read


def node() -> str:
    path = shutil.which("node")
    if path is None:
        pytest.fail("these tests need Node.js: `make test` installs it")
    return path


async def run_node(script: Path, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        node(), str(script), *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    async with asyncio.timeout(120):
        out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_the_original_dummy_bot_plays_itself_unchanged(arena: Running) -> None:
    assert arena.tcp_port is not None
    port = str(arena.tcp_port)
    for _ in range(3):
        first = asyncio.create_task(run_node(LEGACY_DUMMY, "", port))
        await asyncio.sleep(0.1)
        second = asyncio.create_task(run_node(LEGACY_DUMMY, "", port))
        results = [await first, await second]
        for code, _, err in results:
            assert code == 0, err
        ends = sorted(json.loads(out.splitlines()[-1])["type"] for _, out, _ in results)
        assert ends in (["loss-game", "win-game"], ["draw-game", "draw-game"])


async def test_the_original_dummy_bot_against_the_sdk_bot(arena: Running) -> None:
    assert arena.tcp_port is not None
    dummy = asyncio.create_task(run_node(LEGACY_DUMMY, "", str(arena.tcp_port)))
    await asyncio.sleep(0.1)
    final = await tavern_dummy.play("127.0.0.1", arena.tcp_port, None, "sdk")
    code, out, err = await dummy
    assert code == 0, err
    assert final["type"] in ("win-game", "loss-game", "draw-game")
    assert json.loads(out.splitlines()[-1])["type"] in ("win-game", "loss-game", "draw-game")


async def test_the_js_bot_plays_a_whole_game(arena: Running) -> None:
    """Against the SDK's bot, both through a tap: each names the turn every reply answers."""
    assert arena.tcp_port is not None
    async with tap(arena.tcp_port) as (port, connections):
        js = asyncio.create_task(run_node(JS_BOT, "--port", str(port), "--nick", "js"))
        await asyncio.sleep(0.1)
        final = await tavern_dummy.play("127.0.0.1", port, None, "python")
        code, out, err = await js
    assert code == 0, err
    assert "joined" in out
    assert final["type"] in ("win-game", "loss-game", "draw-game")
    assert out.strip().splitlines()[-1].split(":")[0] in ("win-game", "loss-game", "draw-game")
    assert len(connections) == 2
    for connection in connections:
        replies, turns = connection.replies_and_turns()
        assert len(turns) > 10
        assert replies == turns


async def test_back_to_back_messages_never_share_a_read(arena: Running) -> None:
    """game-info and the first turn go to team1 in two reads, at least the gap apart."""
    assert arena.tcp_port is not None
    one_reader, one_writer = await asyncio.open_connection("127.0.0.1", arena.tcp_port)
    _, two_writer = await asyncio.open_connection("127.0.0.1", arena.tcp_port)
    join = {"type": "join-simulation", "nick": "x", "names": NAMES, "simulationId": None}
    one_writer.write(json.dumps(join).encode())
    await one_writer.drain()
    await asyncio.sleep(0.01)
    two_writer.write(json.dumps(join).encode())
    await two_writer.drain()
    loop = asyncio.get_running_loop()
    chunks: list[tuple[float, bytes]] = []
    async with asyncio.timeout(10):
        while len(chunks) < 2:
            chunk = await one_reader.read(65536)
            chunks.append((loop.time(), chunk))
    (t_info, info), (t_turn, turn) = chunks
    assert json.loads(info)["type"] == "game-info"
    assert json.loads(turn)["type"] == "turn"
    # Measured where the reads return, so a little less than the server's 50 ms gap.
    assert t_turn - t_info >= 0.02
    for writer in (one_writer, two_writer):
        writer.close()


async def test_a_message_waiting_out_its_gap_is_not_overtaken(arena: Running) -> None:
    """team1's first turn waits out the gap after game-info; an answer to something team1
    sends meanwhile comes after that turn, not before it."""
    assert arena.tcp_port is not None
    one_reader, one_writer = await asyncio.open_connection("127.0.0.1", arena.tcp_port)
    _, two_writer = await asyncio.open_connection("127.0.0.1", arena.tcp_port)
    join = {"type": "join-simulation", "nick": "x", "names": NAMES, "simulationId": None}
    one_writer.write(json.dumps(join).encode() + b"\n")
    await one_writer.drain()
    await asyncio.sleep(0.01)
    two_writer.write(json.dumps(join).encode() + b"\n")
    await two_writer.drain()
    async with asyncio.timeout(10):
        assert json.loads(await one_reader.readline())["type"] == "game-info"
        await asyncio.sleep(0.01)  # the turn is due now, waiting out the gap (50 ms)
        one_writer.write(b"not json\n")  # answered at once, but after the turn
        await one_writer.drain()
        second = json.loads(await one_reader.readline())
        third = json.loads(await one_reader.readline())
    assert (second["type"], third.get("type"), third.get("message")) == (
        "turn",
        "error",
        "Invalid JSON",
    ), (second, third)
    for writer in (one_writer, two_writer):
        writer.close()
