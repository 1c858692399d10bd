"""Clocks in Chromium: a person starts a Thud game with a time bank on /play/thud, a TCP bot
joins it by id, and both /play/thud and a spectator's /watch page show the two clocks, the side
on move's counting down and the increment added after its move; its replay names the clock."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Locator, Page, expect

from server.match_views import clock_to_wire
from tests.browser import chromium_pages
from tests.conftest import RawClient, serving_visor, test_config
from tests.test_time_bank import thud_move


def clock_of(page: Page, seat: str) -> Locator:
    return page.locator(f"#clock .bank-clock[data-seat={seat}]")


async def test_both_clocks_count_down_on_the_play_and_watch_pages(tmp_path: Path) -> None:
    async with (
        serving_visor(test_config(), tmp_path / "arena.db") as served,
        chromium_pages(served.url) as pages,
    ):
        page = await pages.open("/play/thud")
        await page.fill("#nick", "Ann")
        await page.check("input[value=troll]")
        await page.select_option("#opponent", "")
        await page.select_option("#clock-choice", "60000+1000")
        await page.click("#start")
        await expect(page.locator("#wait-bot")).to_be_visible()
        simulation_id = await page.locator("#wait-id").text_content()
        assert simulation_id is not None
        await expect(page.locator("#clock-fact")).to_be_hidden()  # nobody is on move yet
        bot = await RawClient.connect(served.tcp_port)
        try:
            join = {"type": "join-simulation", "game": "thud", "simulationId": simulation_id}
            await bot.send({**join, "nick": "tcp dwarf", "side": "dwarf"})
            info = await bot.expect("game-info")
            assert info["clock"] == {"initialMs": 60_000, "incrementMs": 1_000}
            turn = await bot.expect("turn")
            assert turn["clock"]["remainingMs"] == {"dwarf": 60_000, "troll": 60_000}
            watcher = await pages.open(f"/watch/{simulation_id}")
            for shown in (page, watcher):
                dwarf, troll = clock_of(shown, "dwarf"), clock_of(shown, "troll")
                await expect(troll).to_have_text("Ann (Trolls) 1:00")
                await expect(dwarf).to_have_class("bank-clock bank-clock-running")
                await expect(dwarf).to_contain_text("tcp dwarf (Dwarfs) 0:5")  # it runs down
                await expect(shown.locator("#clock")).to_contain_text("(+1.0 s a move)")
            await bot.send(thud_move(turn))
            # The dwarfs' clock stops where their move left it, a second richer; the trolls'
            # (the person's) runs.
            match = served.arena.get(simulation_id)
            assert match is not None
            await expect(page.locator("#turn-status")).to_have_text("Your move (trolls).")
            clock = clock_to_wire(match.codec, match.view().clock)
            assert clock is not None and clock["seat"] == "troll"
            left_s = clock["remainingMs"]["dwarf"] // 1000
            assert 50 < left_s <= 60  # 60 s, less the time the bot took, plus 1 s
            for shown in (page, watcher):
                await expect(clock_of(shown, "dwarf")).to_have_text(
                    f"tcp dwarf (Dwarfs) {left_s // 60}:{left_s % 60:02d}"
                )
                await expect(clock_of(shown, "troll")).to_have_class(
                    "bank-clock bank-clock-running"
                )
                await expect(clock_of(shown, "troll")).to_contain_text("Ann (Trolls) 0:5")
        finally:
            await bot.close()
        await expect(page.locator("#result")).to_contain_text("Player disconnected")
        await expect(page.locator("#clock-fact")).to_be_hidden()
        await expect(watcher.locator("#clock-fact")).to_be_hidden()
        # The replay says which clock the game was played with (the record's settings).
        await served.records.flush()
        replay = await pages.open(f"/replay/{simulation_id}", connected=False)
        await expect(replay.locator("#clock-setting")).to_have_text(
            " · clock 1:00 each, +1.0 s a move"
        )
