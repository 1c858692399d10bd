"""The ladder's pages in Chromium (issue 22, item 6): /ladder lists the season's table live,
/bots/NAME draws the rating over time as an SVG of its own, on a desktop and on a phone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import expect

from tests.browser import Pages, chromium_pages
from tests.conftest import Served, serving_visor, test_config
from tests.test_identity import added
from tests.test_ladder import rated


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
