"""A seat hears at once when its opponent's connection drops and when it comes back.

Only seats that asked (``"opponentNotices": true`` in their join) are told: the original's
bots hang up on a message type they do not know, so they hear nothing new.
"""

from __future__ import annotations

import asyncio
from typing import Any

from server.games.tavern.codec import TavernCodec
from server.games.tavern.house import choose_actions, view_of_wire
from server.games.thud.codec import ThudCodec
from tests.conftest import RawClient, serving, test_config
from tests.golden_files import check_golden
from tests.test_legacy_bots import LEGACY_DUMMY, run_node

NAMES = ["Ann", "Bo", "Cy", "Di", "Ed"]


def join(simulation_id: str | None = None, notices: bool = True) -> dict[str, Any]:
    request: dict[str, Any] = {
        "type": "join-simulation",
        "nick": "n",
        "names": NAMES,
        "simulationId": simulation_id,
    }
    if notices:
        request["opponentNotices"] = True
    return request


def test_the_notices_on_the_wire() -> None:
    tavern = TavernCodec.from_settings(test_config().game_settings["tavern"])
    check_golden("tavern/opponent-gone", tavern.opponent_gone_message(10))
    check_golden("tavern/opponent-back", tavern.opponent_back_message())
    thud = ThudCodec.from_settings({})
    check_golden("thud/opponent-gone", thud.opponent_gone_message(10))
    check_golden("thud/opponent-back", thud.opponent_back_message())


async def test_the_opponent_hears_at_once_that_a_seat_left_and_came_back() -> None:
    async with serving(test_config(reconnect_grace_ms=2500)) as arena:
        assert arena.tcp_port is not None
        one, two = await RawClient.connect(arena.tcp_port), await RawClient.connect(arena.tcp_port)
        await one.send(join())
        info = await one.expect("game-info")
        await two.send(join(info["simulationId"]))
        await two.expect("game-info")
        turn = await one.expect("turn")
        loop = asyncio.get_running_loop()
        dropped = loop.time()
        one.writer.transport.abort()  # lost while on move
        gone = await two.expect("opponent-gone")
        assert gone == {"type": "opponent-gone", "seconds": 3}  # 2.5 s, rounded up
        assert loop.time() - dropped < 1.0  # at once, not at the end of the grace period
        back = await RawClient.connect(arena.tcp_port)
        await back.send(
            {"type": "rejoin", "simulationId": info["simulationId"], "token": info["token"]}
        )
        await back.expect("game-info")
        assert (await two.expect("opponent-back")) == {"type": "opponent-back"}
        again = await back.expect("turn")
        assert again["state"] == turn["state"]
        await back.send(
            {
                "type": "player-turn",
                "actions": [{"botId": d["id"], "type": "PASS"} for d in again["state"]["team1"]],
            }
        )
        assert (await two.expect("turn"))["turn"] == 2
        for client in (back, two):
            await client.close()


async def test_a_seat_that_did_not_ask_hears_only_the_forfeit() -> None:
    async with serving(test_config(reconnect_grace_ms=300)) as arena:
        assert arena.tcp_port is not None
        one, two = await RawClient.connect(arena.tcp_port), await RawClient.connect(arena.tcp_port)
        await one.send(join(notices=True))
        info = await one.expect("game-info")
        await two.send(join(info["simulationId"], notices=False))
        await two.expect("game-info")
        await one.expect("turn")
        await one.close()
        await two.expect_error("Player disconnected")  # the first thing it hears
        assert (await two.expect("win-game"))["result"]["reason"] == "Player disconnected"
        await two.close()


async def test_thud_notices_name_their_game() -> None:
    async with serving(test_config(reconnect_grace_ms=1000)) as arena:
        assert arena.tcp_port is not None
        dwarf, troll = (
            await RawClient.connect(arena.tcp_port),
            await RawClient.connect(arena.tcp_port),
        )
        request = {"type": "join-simulation", "game": "thud", "nick": "d", "opponentNotices": True}
        await dwarf.send(request)
        info = await dwarf.expect("game-info")
        await troll.send({**request, "nick": "t", "simulationId": info["simulationId"]})
        await troll.expect("game-info")
        await dwarf.expect("turn")
        troll.writer.transport.abort()  # the side not on move drops
        gone = await dwarf.expect("opponent-gone")
        assert gone == {"type": "opponent-gone", "game": "thud", "seconds": 1}
        await dwarf.expect_error("Player disconnected")
        assert (await dwarf.expect("win-game"))["result"]["reason"] == "Player disconnected"
        await dwarf.close()


async def test_the_original_dummy_bot_plays_on_while_its_opponent_drops_and_rejoins() -> None:
    """The dummy bot ends its connection on any message type it does not know: it must hear
    nothing of its opponent's drop, and finish the game."""
    async with serving(test_config(reconnect_grace_ms=5000)) as arena:
        assert arena.tcp_port is not None
        one = await RawClient.connect(arena.tcp_port)
        await one.send(join())
        info = await one.expect("game-info")
        dummy = asyncio.create_task(
            run_node(LEGACY_DUMMY, info["simulationId"], str(arena.tcp_port))
        )
        turn = await one.expect("turn", timeout=30)
        one.writer.transport.abort()
        await asyncio.sleep(0.3)  # the dummy bot waits, and would hear any notice now
        client = await RawClient.connect(arena.tcp_port)
        await client.send(
            {"type": "rejoin", "simulationId": info["simulationId"], "token": info["token"]}
        )
        await client.expect("game-info")
        async with asyncio.timeout(120):
            while True:
                message = await client.receive(timeout=30)
                if message["type"] == "turn":
                    view = view_of_wire(message["state"], "team1", info["width"], info["height"])
                    await client.send({"type": "player-turn", "actions": choose_actions(view)})
                elif message["type"] in ("win-game", "loss-game", "draw-game"):
                    break
        code, out, err = await dummy
        assert code == 0, err
        assert '"type":"opponent' not in out
        last = out.splitlines()[-1]
        assert last in ('{"type":"win-game"}', '{"type":"loss-game"}', '{"type":"draw-game"}')
        assert turn["turn"] == 1
        await client.close()
