"""The /league page shows each bot's crashes and timed-out turns, in a real browser."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import expect

from server.config import ArenaConfig
from server.league import tables
from server.tournament.runner import TournamentRunner
from server.tournament.spec import spec_from_mapping
from tests.browser import Pages, chromium_pages
from tests.conftest import Served
from tests.test_tournament import broken, house

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
async def pages(served: Served) -> AsyncIterator[Pages]:
    async with chromium_pages(served.url) as opened:
        yield opened


async def test_the_league_page_counts_crashes_and_timeouts(served: Served, pages: Pages) -> None:
    cup = {
        "name": "faults",
        "game": "thud",
        "seed": 4,
        "parallel": 2,
        "limits": {"turn_timeout_ms": 500, "startup_ms": 2000},
        "bots": [
            house("thud", "dwarf", "dwarf"),
            broken("crash", "dwarf"),
            broken("silent", "troll"),
        ],
    }
    spec = spec_from_mapping(cup, ROOT)
    async with asyncio.timeout(60):
        results = await TournamentRunner(spec, ArenaConfig(), served.records, io.StringIO()).run()
    dwarfs = tables(results)["dwarf"]
    assert [(s.bot, s.crashes) for s in dwarfs] == [("house dwarf", 0), ("crash", 1)]
    # A game the tournament's queue gave up on (as its organiser records it): the arena's.
    given_up = "stopped the 3 workers that took it: not played"
    served.records.tournament_fault(spec.id, "9:crash-silent", 9, given_up)
    await served.records.flush()

    page = await pages.open(f"/league?tournament={spec.id}", connected=False)
    await expect(page.locator("#not-played li")).to_have_text(
        f"Game 9 (9:crash-silent): {given_up}"
    )
    rows = page.locator('table[data-table="dwarf"] tbody tr')
    await expect(rows).to_have_count(2)
    await expect(rows.nth(1).locator('[data-col="bot"]')).to_have_text("crash")
    await expect(rows.nth(1).locator('[data-col="crashes"]')).to_have_text("1")
    silent = page.locator('table[data-table="troll"] tbody tr').first
    await expect(silent.locator('[data-col="timeouts"]')).to_have_text("1")
    await expect(page.locator("table.league-table").first.locator("thead")).to_contain_text(
        "CrashesTimeouts"
    )
    await rows.nth(1).locator(".bot-button").click()
    await expect(page.locator("#bot-summary")).to_have_text(
        "1 game: 0 wins, 1 loss, 0 draws, score 0; 1 crash, 0 timed-out turns."
    )

    # On a phone each table scrolls within its card, and its score column stays in view.
    phone = await pages.open(f"/league?tournament={spec.id}", 390, 844, connected=False)
    for table in ("dwarf", "troll"):
        wrap = phone.locator(f'.league-card[data-table="{table}"] .table-wrap')
        box = await wrap.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        scores = phone.locator(
            f'table[data-table="{table}"] :is(th:text-is("Score"), td[data-col="score"])'
        )
        await expect(scores).to_have_count(1 + len(tables(results)[table]))  # and the heading
        for score in await scores.all():
            cell = await score.bounding_box()
            assert cell is not None
            assert box["x"] <= cell["x"] and cell["x"] + cell["width"] <= box["x"] + box["width"]
    assert await phone.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )
