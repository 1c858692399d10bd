"""The ladder's pages in Chromium (issue 22, item 6): /ladder lists the season's table live,
/bots/NAME draws the rating over time as an SVG of its own, on a desktop and on a phone; and
(item 2) a person on /play/thud seeks an unrated game against a seeking bot, or cancels."""

from __future__ import annotations

import asyncio
import itertools
import random
import sqlite3
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Page, expect

from bots.sdk import ArenaClient, JsonObject
from tests.browser import Pages, chromium_pages, module_chromium, module_pages, module_served
from tests.conftest import Served, serving_visor, test_config
from tests.test_identity import added
from tests.test_ladder import rated
from tests.test_visor_browser import click_square

# One Chromium for the module's tests, on the module's event loop (tests.browser).
pytestmark = pytest.mark.asyncio(loop_scope="module")
chromium = module_chromium
served = module_served
pages = module_pages

# Each rated game on a day of its own (noon UTC: the same date in any time zone within 11 h).
RATED_AT = {"g1": 1_764_590_400, "g2": 1_765_368_000, "g3": 1_766_232_000}  # 2025-12-01, -10, -20
ROW_HEIGHT_PX = 48  # a ladder row is one line of text (once 80 px on a phone)


@pytest_asyncio.fixture(loop_scope="module")
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
    with sqlite3.connect(database) as db:
        for game_id, at in RATED_AT.items():
            db.execute("UPDATE rating_history SET rated_at = ? WHERE game_id = ?", (at, game_id))
        # And a game the arena broke, voided (a hosted bot's worker lost): rated for nobody.
        db.execute(
            "INSERT INTO games (id, game, seed, settings, status, started_at, finished_at, "
            "reason) VALUES ('v1', 'thud', 1, '{}', 'finished', ?, ?, 'Game voided')",
            (RATED_AT["g3"] + 3600, RATED_AT["g3"] + 3700),
        )
        for seat, (name, nick) in enumerate((("dwarf", "Grimli"), ("troll", "Ugluk"))):
            db.execute(
                "INSERT INTO seats (game_id, seat, seat_name, nick, names, kind, bot) "
                "VALUES ('v1', ?, ?, ?, '[]', 'bot', ?)",
                (seat, name, nick, nick),
            )
    async with (
        serving_visor(test_config(), database) as served,
        chromium_pages(served.url) as pages,
    ):
        yield served, pages


def day(seconds: int) -> str:
    """A date as the pages write it in Chromium's en-US: ``Dec 1``."""
    when = datetime.fromtimestamp(seconds)
    return f"{when:%b} {when.day}"


async def fits_its_box(page: Page, selector: str) -> bool:
    """The element scrolls nothing sideways: all of it is in view."""
    fits: bool = await page.evaluate(
        "(s) => { const e = document.querySelector(s); return e.scrollWidth <= e.clientWidth; }",
        selector,
    )
    return fits


async def test_the_ladder_and_a_bot_s_rating_chart_on_a_desktop_and_a_phone(
    ladder_site: tuple[Served, Pages],
) -> None:
    served, pages = ladder_site
    for width, height in ((1280, 860), (390, 844)):
        page = await pages.open("/ladder?game=thud", width, height, connected=False)
        rows = page.locator("#ladder-body tr")
        await expect(rows).to_have_count(2)
        await expect(rows.first).to_have_attribute("data-bot", "Grimli")
        await expect(rows.first.locator("td.wdl")).to_have_text("2–1–0")
        await expect(page.locator("#summary")).to_have_text("Season 1: 2 bots rated.")
        # Each row is one line, and its W-D-L all in view: on a phone, the games, online and
        # last-game columns give way (they are on the bot's page).
        wrap = await page.locator("#table-card .table-wrap").bounding_box()
        assert wrap is not None
        for index in range(2):
            row = await rows.nth(index).bounding_box()
            cell = await rows.nth(index).locator("td.wdl").bounding_box()
            assert row is not None and cell is not None
            assert row["height"] <= ROW_HEIGHT_PX, (width, row)
            assert wrap["x"] <= cell["x"] and cell["x"] + cell["width"] <= wrap["x"] + wrap["width"]
        assert await fits_its_box(page, "#table-card .table-wrap")
        for column in (".col-games", ".col-online", ".col-last"):
            header = page.locator(f"thead th{column}")
            if width > 560:
                await expect(header).to_be_visible()
            else:
                await expect(header).to_be_hidden()
        await rows.first.locator("a").first.click()
        await expect(page).to_have_url(f"{pages.base_url}/bots/Grimli")
        await expect(page.locator("#name")).to_have_text("Grimli")
        await expect(page.locator("#summary")).to_have_text("3 rated games; offline.")
        # "μ after" stays μ under the headers' capitals (it was "M AFTER": a capital mu).
        header = page.locator(".rated-games thead th").last
        assert await header.evaluate("(th) => th.innerText") == "μ AFTER"
        greek = header.locator(".greek")
        assert await greek.evaluate("(s) => getComputedStyle(s).textTransform") == "none"
        await expect(page.locator("#games-body tr")).to_have_count(3)
        voided = page.locator("#voided")
        await expect(voided).to_contain_text("Voided by the arena, rated for nobody (1): thud")
        await expect(voided.locator("a")).to_have_attribute("href", "/replay/v1")
        line = page.locator('#chart polyline[data-game="thud"]')
        points = (await line.get_attribute("points") or "").split()
        assert len(points) == 3
        heights = [float(point.split(",")[1]) for point in points]
        assert heights[1] < heights[0]  # a second win: higher on the chart (smaller y)
        await chart_has_its_axes(page, width)
        await games_have_dates_and_opponents_ratings(page, served)
        assert await fits_its_box(page, ".rated-games .table-wrap"), width
        assert await page.evaluate("document.documentElement.scrollWidth") <= width
        await page.close()


async def chart_has_its_axes(page: Page, width: int) -> None:
    """μ up the side (round values, labelled), the games' dates along the bottom, each label
    inside the chart and clear of the next."""
    chart = await page.locator("#chart svg").bounding_box()
    assert chart is not None and chart["width"] <= width
    y_labels = await page.locator("#chart .y-axis .tick").all_text_contents()
    assert len(y_labels) >= 3 and all(label.isdigit() for label in y_labels), y_labels
    assert await page.locator("#chart .y-axis .axis-title").text_content() == "μ"
    x_axis = page.locator("#chart .x-axis .tick")
    assert await x_axis.all_text_contents() == [day(RATED_AT[g]) for g in ("g1", "g2", "g3")]
    assert await page.locator("#chart .x-axis .axis-title").text_content() == (
        "Rated games, by date"
    )
    boxes = []
    for index in range(await x_axis.count()):
        box = await x_axis.nth(index).bounding_box()
        assert box is not None
        assert chart["x"] <= box["x"] and box["x"] + box["width"] <= chart["x"] + chart["width"]
        boxes.append(box)
    for before, after in itertools.pairwise(boxes):
        assert before["x"] + before["width"] < after["x"]
    # 12 px labels on a phone too: the chart is drawn at its card's width, not scaled down.
    size = await x_axis.first.evaluate("(t) => getComputedStyle(t).fontSize")
    assert size == "12px"
    assert 11 <= boxes[0]["height"] <= 18


async def games_have_dates_and_opponents_ratings(page: Page, served: Served) -> None:
    """Each rated game: its date (a link to its replay) and game, the opponent with its μ as
    the game began (from its own row of the game in the records)."""
    rows = page.locator("#games-body tr")
    this_year = datetime.now().year
    db = served.records.backend.connect()
    try:
        for index, game_id in enumerate(("g3", "g2", "g1")):  # newest first
            row = rows.nth(index)
            await expect(row).to_have_attribute("data-game", game_id)
            when = datetime.fromtimestamp(RATED_AT[game_id])
            date = day(RATED_AT[game_id]) + ("" if when.year == this_year else f", {when.year}")
            link = row.locator("td.played a")
            await expect(link).to_have_text(date)
            await expect(link).to_have_attribute("href", f"/replay/{game_id}")
            await expect(row.locator(".played-game")).to_have_text(f"thud, {when:%H:%M}")
            (before,) = db.execute(
                "SELECT mu_before FROM rating_history WHERE game_id = ? AND bot = 'Ugluk'",
                (game_id,),
            ).fetchone()
            await expect(row.locator(".opponent-mu")).to_have_text(f"μ {before:.1f}")
    finally:
        db.close()
    await expect(page.locator(".rated-games thead th").nth(1)).to_have_text(
        "Opponent, its μ before"
    )


async def test_an_empty_ladder_shows_no_table(tmp_path: Path) -> None:
    """A season without rated games says so, with no table header under it (there was one)."""
    async with (
        serving_visor(test_config(), str(tmp_path / "arena.db")) as served,
        chromium_pages(served.url) as pages,
    ):
        for width, height in ((1280, 860), (390, 844)):
            page = await pages.open("/ladder?game=thud", width, height, connected=False)
            await expect(page.locator("#summary")).to_have_text("Season 1: 0 bots rated.")
            await expect(page.locator("#empty")).to_have_text("No rated games in this season yet.")
            await expect(page.locator("#table-card")).to_be_hidden()
            await expect(page.locator("table")).to_be_hidden()
            await page.close()


# --- a person seeks on /play/thud ----------------------------------------------------------------


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
