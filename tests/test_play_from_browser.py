"""Play from any position over real sockets and in Chromium: a bot creates a simulation at a
position over TCP and two bots play it from there; the replay page's "Play from here" opens one
at the turn shown, a bot joins the id it shows and a person takes the other side on /play/thud;
each record says where its game began and replays from there."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import aiohttp
import pytest
from playwright.async_api import expect

from server.errors import BotError
from server.replay import frames
from tests.browser import Pages, module_chromium, module_pages, module_served
from tests.conftest import RawClient, Served
from tests.test_visor_records_browser import THUD_SEED, get_json, house_game, shows_frame

# One Chromium for the module's tests, on the module's event loop (tests.browser).
pytestmark = pytest.mark.asyncio(loop_scope="module")
chromium = module_chromium
served = module_served
pages = module_pages

TAVERN_TURN = 10  # turns played before the position a bot gives
THUD_TURN = 12  # plies played before "Play from here": the dwarfs move next


def position_of(replay: dict[str, Any], turn: int, on_move: str) -> dict[str, Any]:
    """A Tavern position from a replay's frame, as a bot would paste it."""
    frame = replay["frames"][turn]
    return {"state": frame["state"], "turn": turn + 1, "score": frame["scores"], "team": on_move}


async def test_a_bot_creates_a_simulation_at_a_position_and_two_bots_play_from_it(
    served: Served,
) -> None:
    source = await house_game(served, "tavern", ["pusher", "wanderer"], 5)
    replay = await get_json(served, f"/api/games/{source.id}/replay")
    maker = await RawClient.connect(served.tcp_port)
    bad = position_of(replay, TAVERN_TURN, "team1")
    bad["state"] = {**bad["state"], "team1": bad["state"]["team1"][:4]}
    await maker.send({"type": "create-simulation", "position": bad})
    refused = await maker.expect_error(BotError.INVALID_POSITION)
    assert refused["reason"] == "team1 has 4 dwarves; this tavern has 5 a team"
    position = position_of(replay, TAVERN_TURN, "team1")
    await maker.send({"type": "create-simulation", "seed": 3, "position": position})
    ready = await maker.expect("ready")
    first = await RawClient.connect(served.tcp_port)
    second = await RawClient.connect(served.tcp_port)
    for bot, nick in ((first, "a"), (second, "b")):
        await bot.send(
            {"type": "join-simulation", "nick": nick, "simulationId": ready["simulationId"]}
        )
        await bot.expect("game-info")
    turn = await first.expect("turn")
    assert (turn["state"], turn["turn"], turn["score"]) == (
        position["state"],
        TAVERN_TURN + 1,
        position["score"],
    )
    dwarf = turn["state"]["team1"][0]["id"]
    move = {"botId": dwarf, "type": "MOVE", "direction": "NORTH"}
    await first.send({"type": "player-turn", "turn": TAVERN_TURN + 1, "actions": [move]})
    answer = await second.expect("turn")
    assert answer["turn"] == TAVERN_TURN + 2
    for bot in (maker, first, second):
        await bot.close()
    await served.records.flush()
    record = await get_json(served, f"/api/games/{ready['simulationId']}")
    assert record["settings"]["from"]["position"] == position
    assert record["turns"][0]["number"] == TAVERN_TURN + 1
    played = await get_json(served, f"/api/games/{ready['simulationId']}/replay")
    assert played["from"] == {"game": None, "turn": TAVERN_TURN, "given": True}
    assert [frame["turn"] for frame in played["frames"][:2]] == [TAVERN_TURN, TAVERN_TURN + 1]
    assert played["frames"][0]["state"] == position["state"]
    assert played["frames"][1]["state"] == answer["state"]


async def test_play_from_here_opens_the_turn_shown_for_a_bot_and_a_person(
    served: Served, pages: Pages
) -> None:
    source = await house_game(served, "thud", ["dwarf", "troll"], THUD_SEED)
    replay = await get_json(served, f"/api/games/{source.id}/replay")
    page = await pages.open(f"/replay/{source.id}?turn={THUD_TURN}", connected=False)
    await shows_frame(page, THUD_TURN)
    await page.click("#play-from-button")
    await expect(page.locator("#play-from-created")).to_be_visible()
    simulation_id = await page.locator("#play-from-id").text_content()
    assert simulation_id
    await expect(page.locator("#play-from-turn")).to_contain_text(f"ply {THUD_TURN + 1}")
    join = await page.locator("#play-from-join").text_content()
    assert join is not None
    person_link = page.locator("#play-from-person")
    await expect(person_link).to_have_attribute("href", f"/play/thud?simulation={simulation_id}")

    # A bot joins with the line shown, as the dwarfs; a person follows the link as the trolls.
    bot = await RawClient.connect(served.tcp_port)
    await bot.send_raw(join.encode() + b"\n")
    info = await bot.expect("game-info")
    assert (info["simulationId"], info["side"]) == (simulation_id, "dwarf")
    await person_link.click()
    await page.wait_for_url(f"**/play/thud?simulation={simulation_id}")
    await expect(page.locator("#connection")).to_have_attribute("data-status", "open")
    await expect(page.locator("#opponent")).to_have_value("join")
    await page.locator('input[name="side"][value="troll"]').check()
    await page.click("#start")
    await expect(page.locator("#sim-id")).to_have_text(simulation_id)

    turn = await bot.expect("turn")
    shown = replay["frames"][THUD_TURN]["state"]
    assert turn["turn"] == THUD_TURN + 1
    assert {k: turn["state"][k] for k in shown} == shown
    first = turn["state"]["moves"][0]
    await bot.send(
        {
            "type": "player-turn",
            "turn": turn["turn"],
            "move": {"from": first["from"], "to": first["to"]},
        }
    )
    await expect(page.locator("#turn-status")).to_contain_text("Your move")
    await served.records.flush()
    # The game tavern play --from plays: its record begins with the old game's turns before.
    played = await get_json(served, f"/api/games/{simulation_id}/replay")
    assert played["from"] == {"game": source.id, "turn": THUD_TURN, "given": False}
    assert played["seed"] == THUD_SEED
    assert [frame["state"] for frame in played["frames"][: THUD_TURN + 1]] == [
        frame["state"] for frame in replay["frames"][: THUD_TURN + 1]
    ]
    await bot.close()

    # The end of a finished game is no position to play from: the page says why.
    ended = await pages.open(f"/replay/{source.id}", connected=False)
    await ended.click("#last")
    pages.http_errors_expected = True  # the page's request is answered 409
    await ended.click("#play-from-button")
    await expect(ended.locator("#play-from-error")).to_contain_text("Invalid position")


@pytest.mark.parametrize("width", [1280, 390])
async def test_play_from_here_keeps_the_game_s_seed_and_draws_as_tavern_play_from_does(
    served: Served, pages: Pages, width: int
) -> None:
    """A Tavern game's dice: the simulation "Play from here" opens goes on with the recorded
    game's seed, its random generator where the recorded game's was after the turn shown (once,
    a new seed was drawn, so the same moves gave other throws than the CLI's), and says so."""
    source = await house_game(served, "tavern", ["pusher", "wanderer"], 5)
    record = await asyncio.to_thread(served.records.game, source.id)
    assert record is not None
    expected = random.Random(record["seed"])
    for frame in frames(record, expected):
        if frame.turn == TAVERN_TURN:
            break
    page = await pages.open(f"/replay/{source.id}?turn={TAVERN_TURN}", width, connected=False)
    await shows_frame(page, TAVERN_TURN)
    await page.click("#play-from-button")
    await expect(page.locator("#play-from-created")).to_be_visible()
    simulation_id = await page.locator("#play-from-id").text_content()
    assert simulation_id
    await expect(page.locator("#play-from-seed")).to_have_text(
        f"It keeps game {source.id}'s settings and seed (5), its random draws going on from "
        f"there as that game's did: as tavern play --from {source.id} --turn {TAVERN_TURN} "
        "plays it."
    )
    box = await page.locator("#play-from-seed").bounding_box()
    assert box is not None and box["x"] + box["width"] <= width
    simulation = served.arena.matches[simulation_id]
    assert simulation.seed == 5
    assert simulation.rng.getstate() == expected.getstate()
    assert simulation.options.resume is not None
    assert simulation.options.resume.turns == tuple(record["turns"][:TAVERN_TURN])


async def test_play_from_a_turn_a_game_does_not_have_or_on_a_draining_node_is_refused(
    served: Served,
) -> None:
    source = await house_game(served, "thud", ["dwarf", "troll"], THUD_SEED)
    async with aiohttp.ClientSession() as session:
        url = f"{served.url}/api/games/{source.id}/play-from?turn={source.turn_count + 1}"
        async with session.post(url) as response:
            assert response.status == 404
            assert (await response.json())["error"] == (
                f"game {source.id} has {source.turn_count} turns; there is no turn "
                f"{source.turn_count + 1}"
            )
        async with session.post(f"{served.url}/api/games/nosuch1/play-from?turn=1") as response:
            assert response.status == 404
        # It opens a simulation as a bot's create does: not on a draining node.
        served.arena.draining = True
        async with session.post(f"{served.url}/api/games/{source.id}/play-from?turn=1") as response:
            assert response.status == 409
            assert (await response.json())["message"] == BotError.SERVER_DRAINING


async def test_play_from_a_game_charging_think_time_charges_it_too(served: Served) -> None:
    """A game created with ``"clock": {"charge": "think"}`` keeps it in its settings, and the
    simulation played on from one of its turns charges its replies their think time too."""
    first, second = (
        await RawClient.connect(served.tcp_port),
        await RawClient.connect(served.tcp_port),
    )
    await first.send({"type": "create-simulation", "game": "thud", "clock": {"charge": "think"}})
    simulation = (await first.expect("ready"))["simulationId"]
    for client in (first, second):
        await client.send({"type": "join-simulation", "simulationId": simulation})
        assert (await client.expect("game-info"))["charge"] == "think"
    turn = await first.expect("turn")
    move = turn["state"]["moves"][0]
    await first.send({"type": "player-turn", "turn": 1, "move": move})
    await second.expect("turn")
    await second.close()  # the game ends: the dwarfs win, the record finished
    assert (await first.expect("error"))["message"] == BotError.PLAYER_DISCONNECTED
    await first.expect("win-game")
    await first.close()
    await served.records.flush()
    record = await asyncio.to_thread(served.records.game, simulation)
    assert record is not None and record["settings"]["charge"] == "think"
    async with aiohttp.ClientSession() as session:
        url = f"{served.url}/api/games/{simulation}/play-from?turn=1"
        async with session.post(url) as response:
            assert response.status == 200, await response.text()
            created = await response.json()
    assert served.arena.matches[created["simulationId"]].limits.charge_think
