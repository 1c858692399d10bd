"""A bot's mind, after a delay (issue 34, item 5): the debug text a bot sends with its move
reaches the pages watching its game ``spectatorDebugDelayTurns`` turns later, with the turn
and seat it was said at, never earlier; the opponent never gets it. Two bots over TCP and a
page's websocket, on a real arena and visor; and the watch page in Chromium lists what each
bot said, newest first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
from playwright.async_api import expect

from tests.browser import chromium_pages
from tests.conftest import RawClient, serving_visor, test_config
from tests.test_visor_ws import PageSocket

DELAY = 3
TURNS = 8


async def test_spectators_hear_each_bots_debug_text_some_turns_late_and_the_opponent_never(
    tmp_path: Path,
) -> None:
    config = test_config(spectator_debug_delay_turns=DELAY)
    async with (
        serving_visor(config, tmp_path / "arena.db") as served,
        aiohttp.ClientSession() as session,
        chromium_pages(served.url) as pages,
    ):
        first = await RawClient.connect(served.tcp_port)
        second = await RawClient.connect(served.tcp_port)
        await first.send({"type": "create-simulation", "game": "thud"})
        simulation = (await first.expect("ready"))["simulationId"]
        page = PageSocket(await session.ws_connect(f"{served.url}/ws"))
        await page.send({"type": "watch", "simulationId": simulation})
        await page.receive("snapshot")
        watching = await pages.open(f"/watch/{simulation}")
        seats: dict[str, RawClient] = {}
        for client in (first, second):
            await client.send({"type": "join-simulation", "simulationId": simulation})
            seats[(await client.expect("game-info"))["side"]] = client
        heard: list[dict[str, Any]] = []
        for number in range(1, TURNS + 1):
            mover = seats["dwarf" if number % 2 else "troll"]
            turn = await mover.expect("turn")
            assert "plan" not in str(turn)  # the opponent's text never reaches it
            move = turn["state"]["moves"][0]
            await mover.send({"type": "player-turn", "turn": number, "debug": f"plan {number}",
                              "move": {"from": move["from"], "to": move["to"]}})  # fmt: skip
            heard.append(await page.receive("turn"))
        for seen in heard:  # at turn N, what was said at turn N - DELAY, with its seat
            said = seen.get("debug", [])
            if seen["turn"] <= DELAY:
                assert said == [], seen
            else:
                number = seen["turn"] - DELAY
                side = "dwarf" if number % 2 else "troll"
                assert said == [{"turn": number, "seat": side, "debug": f"plan {number}"}]
        said = watching.locator("#said-log li")
        await expect(said).to_have_count(TURNS - DELAY)
        await expect(said.first).to_have_text(f"dwarf, turn {TURNS - DELAY}: plan {TURNS - DELAY}")
        for client in (first, second):
            await client.close()
        await page.ws.close()
