"""The ladder's pages in Chromium (issue 22, item 6): /ladder lists the season's table live,
/bots/NAME draws the rating over time as an SVG of its own, on a desktop and on a phone; and
(item 2) a person on /play/thud seeks an unrated game against a seeking bot, or cancels."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from bots.sdk import ArenaClient, JsonObject
from tests.browser import Pages, chromium_pages
from tests.conftest import Served, serving_visor, test_config
from tests.test_identity import added
from tests.test_ladder import rated
from tests.test_visor_browser import click_square


@pytest.fixture
async def ladder_site(tmp_path: Path) -> AsyncIterator[tuple[Served, Pages]]:
    database = str(tmp_path / "arena.db")
    added(database, "Grimli")
    rated(
        database,
        [
            ("g1", ("Grimli", "Ugluk"), 0),
            ("g2", ("Grimli", "Ugluk"), 0),
            ("g3", ("Ugluk", "Grimli"), None),
        ],
    )
    async with (
        serving_visor(test_config(), database) as served,
        chromium_pages(served.url) as pages,
    ):
        yield served, pages


async def test_the_ladder_and_a_bot_s_rating_chart_on_a_desktop_and_a_phone(
    ladder_site: tuple[Served, Pages],
) -> None:
    _, pages = ladder_site
    for width, height in ((1280, 860), (390, 844)):
        page = await pages.open("/ladder?game=thud", width, height, connected=False)
        rows = page.locator("#ladder-body tr")
        await expect(rows).to_have_count(2)
        await expect(rows.first).to_have_attribute("data-bot", "Grimli")
        await expect(rows.first.locator("td").nth(4)).to_have_text("2–1–0")
        await expect(page.locator("#summary")).to_have_text("Season 1: 2 bots rated.")
        await rows.first.locator("a").first.click()
        await expect(page).to_have_url(f"{pages.base_url}/bots/Grimli")
        await expect(page.locator("#name")).to_have_text("Grimli")
        await expect(page.locator("#summary")).to_have_text("3 rated games; offline.")
        await expect(page.locator("#games-body tr")).to_have_count(3)
        line = page.locator('#chart polyline[data-game="thud"]')
        points = (await line.get_attribute("points") or "").split()
        assert len(points) == 3
        heights = [float(point.split(",")[1]) for point in points]
        assert heights[1] < heights[0]  # a second win: higher on the chart (smaller y)
        box = await page.locator("#chart svg").bounding_box()
        assert box is not None and box["width"] <= width
        assert await page.evaluate("document.documentElement.scrollWidth") <= width
        await page.close()


# --- a person seeks on /play/thud ----------------------------------------------------------------


@pytest.fixture
async def pages(served: Served) -> AsyncIterator[Pages]:
    async with chromium_pages(served.url) as opened:
        yield opened


async def guest_seeking(port: int, nick: str, paired: asyncio.Future[JsonObject]) -> JsonObject:
    """A Thud bot over TCP that seeks an unrated game as a guest, then plays random legal
    moves: ``paired`` gets what answered its seek (game-info); returns its game's end."""
    async with await ArenaClient.connect("127.0.0.1", port) as bot:
        await bot.send({"type": "seek", "game": "thud", "nick": nick, "rated": False})
        paired.set_result(await bot.receive())
        chance = random.Random(nick)

        def random_move(turn: JsonObject) -> JsonObject:
            move = chance.choice(turn["state"]["moves"])
            return {"type": "player-turn", "move": {"from": move["from"], "to": move["to"]}}

        return await bot.play(random_move)


async def seek_from_the_page(page: Page, nick: str) -> None:
    await page.fill("#nick", nick)
    await page.click("#seek")
    await expect(page.locator("#seek-status")).to_have_text("Waiting for an opponent…")
    await expect(page.locator("#start")).to_be_disabled()


async def test_a_person_finds_a_seeking_bot_and_plays_it(served: Served, pages: Pages) -> None:
    page = await pages.open("/play/thud")
    await seek_from_the_page(page, "Ann")  # in the pool now: the page was told so
    paired: asyncio.Future[JsonObject] = asyncio.get_running_loop().create_future()
    bot = asyncio.create_task(guest_seeking(served.tcp_port, "robo", paired))
    try:
        info = await asyncio.wait_for(paired, 10)
        # Neither had the first seat last time: the longest-waiting seeker (the page) takes it.
        assert (info["type"], info["side"]) == ("game-info", "troll")
        await expect(page.locator("#turn-status")).to_have_text("Your move (dwarfs).")
        await expect(page.locator("#seeking")).to_be_hidden()
        await expect(page.locator("#players .seat-dwarf .nick")).to_have_text("Ann")
        await expect(page.locator("#players .seat-troll .nick")).to_have_text("robo")
        await expect(page.locator("#sim-id")).to_have_text(info["simulationId"])
        simulation = served.arena.matches[info["simulationId"]]
        assert not simulation.options.rated
        # A move by clicking, as after "play"; the bot's reply reaches the page.
        await click_square(page, 6, 0)
        await click_square(page, 6, 1)
        await expect(page.locator("#ply")).to_have_text("2 of 500")
        await expect(page.locator("#turn-status")).to_have_text("Your move (dwarfs).")
        assert simulation.turn_count == 2
        sent = pages.messages_sent(page, "seek")
        assert sent == [{"type": "seek", "game": "thud", "nick": "Ann"}]
    finally:
        bot.cancel()


async def test_a_cancelled_seek_is_not_paired(served: Served, pages: Pages) -> None:
    page = await pages.open("/play/thud")
    await seek_from_the_page(page, "Ann")
    await page.click("#cancel-seek")
    await expect(page.locator("#seeking")).to_be_hidden()
    await expect(page.locator("#seek")).to_be_enabled()
    # Two bots seek after the cancel: had the page's seek stayed, the first would have met the
    # page (the longest-waiting seeker) and the second would still wait; they meet each other.
    loop = asyncio.get_running_loop()
    first: asyncio.Future[JsonObject] = loop.create_future()
    second: asyncio.Future[JsonObject] = loop.create_future()
    bots = [
        asyncio.create_task(guest_seeking(served.tcp_port, "robo", first)),
        asyncio.create_task(guest_seeking(served.tcp_port, "robot", second)),
    ]
    try:
        infos = await asyncio.wait_for(asyncio.gather(first, second), 10)
        assert [info["type"] for info in infos] == ["game-info", "game-info"]
        assert infos[0]["simulationId"] == infos[1]["simulationId"]
        await expect(page.locator("#setup")).to_be_visible()
        await expect(page.locator("#game")).to_be_hidden()
        assert pages.messages_sent(page, "cancel-seek") == [{"type": "cancel-seek"}]
    finally:
        for bot in bots:
            bot.cancel()
