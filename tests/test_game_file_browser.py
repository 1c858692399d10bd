"""Game files on the replay page, in a real browser: a file opened or dropped shows exactly what
the replay of the recorded game shows (the same positions), and a file
that does not read says which line."""

from __future__ import annotations

import aiohttp
import orjson
import pytest
from playwright.async_api import FilePayload, Page, expect

from tests.browser import Pages, module_chromium, module_pages, module_served
from tests.conftest import Served
from tests.test_visor_records_browser import (
    TAVERN_SEED,
    THUD_SEED,
    board_matches_frame,
    get_json,
    house_game,
    seek,
)

# One Chromium for the module's tests, on the module's event loop (tests.browser).
pytestmark = pytest.mark.asyncio(loop_scope="module")
chromium = module_chromium
served = module_served
pages = module_pages


async def opened_for_a_file(page: Page) -> None:
    """The page offers to open a file once its script is ready for one: as a person, a test
    chooses the file only then (the games' modules load before the page's script runs)."""
    await expect(page.locator("#open-file")).to_be_visible()


async def game_file(served: Served, game_id: str) -> bytes:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{served.url}/api/games/{game_id}/game.jsonl") as response,
    ):
        assert response.status == 200, await response.text()
        assert response.content_type == "application/jsonl"
        return await response.read()


async def test_a_game_file_opened_or_dropped_replays_as_its_record(
    served: Served, pages: Pages
) -> None:
    thud = await house_game(served, "thud", ["dwarf", "troll"], THUD_SEED)
    recorded = await get_json(served, f"/api/games/{thud.id}/replay")
    lines = await game_file(served, thud.id)
    # The file has every position the replay has: the first on its game line.
    first, *turns, result = [orjson.loads(line) for line in lines.splitlines()]
    assert [first["state"], *(turn["state"] for turn in turns)] == [
        frame["state"] for frame in recorded["frames"]
    ]
    assert [turn["events"] for turn in turns] == [f["events"] for f in recorded["frames"][1:]]
    assert result["result"] == recorded["result"]

    page = await pages.open("/replay", connected=False)
    await opened_for_a_file(page)
    await page.set_input_files(
        "#file-input",
        files=FilePayload(name="thud.jsonl", mimeType="application/jsonl", buffer=lines),
    )
    await expect(page.locator("#game-title")).to_have_text("Thud replay")
    await expect(page.locator("#game-id")).to_have_text("thud.jsonl")
    last = len(recorded["frames"]) - 1
    await board_matches_frame(page, recorded, 0)
    await seek(page, last // 2)
    await board_matches_frame(page, recorded, last // 2)
    await page.click("#last")
    await expect(page.locator("#result")).to_contain_text(recorded["result"]["reason"])

    # Another game's file, dropped on the page, takes the place of the one shown.
    tavern = await house_game(served, "tavern", ["pusher", "wanderer"], TAVERN_SEED)
    tavern_replay = await get_json(served, f"/api/games/{tavern.id}/replay")
    # A turn's debug text and its bot's stderr are shown with the turn, each labelled.
    assert b'"debug"' not in lines
    first_line, turn_line, *rest = lines.splitlines()
    said = orjson.dumps(
        {**orjson.loads(turn_line), "debug": "hold the line\nthen charge", "stderr": "depth 3\n"}
    )
    await page.evaluate(
        """(text) => {
            const data = new DataTransfer();
            data.items.add(new File([text], "thud-debug.jsonl"));
            document.dispatchEvent(new DragEvent("drop", {dataTransfer: data, cancelable: true}));
        }""",
        b"\n".join([first_line, said, *rest]).decode(),
    )
    await expect(page.locator("#game-id")).to_have_text("thud-debug.jsonl")
    await board_matches_frame(page, recorded, 0)
    await expect(page.locator("#from-link")).to_have_count(0)
    await page.click("#forward")
    await board_matches_frame(page, recorded, 1)
    await expect(page.locator("#events .debug-text")).to_have_text("hold the line\nthen charge")
    await expect(page.locator("#events .stderr-text")).to_have_text("depth 3\n")
    await expect(page.locator("#events .log-debug .stat-label").nth(1)).to_contain_text("stderr")
    await page.click("#forward")
    await expect(page.locator("#events .debug-text")).to_have_count(0)
    await expect(page.locator("#events .stderr-text")).to_have_count(0)

    # A game played on from another's turn opens at that turn, and links to it.
    header = orjson.loads(first_line)
    header["settings"]["from"] = {"game": "abc1234", "turn": 5, "names": [[], []]}
    await page.evaluate(
        """(text) => {
            const data = new DataTransfer();
            data.items.add(new File([text], "from.jsonl"));
            document.dispatchEvent(new DragEvent("drop", {dataTransfer: data, cancelable: true}));
        }""",
        b"\n".join([orjson.dumps(header), turn_line, *rest]).decode(),
    )
    await expect(page.locator("#game-id")).to_have_text("from.jsonl")
    await board_matches_frame(page, recorded, 5)
    await expect(page.locator("#from-link")).to_have_text("game abc1234, turn 5")
    await expect(page.locator("#from-link")).to_have_attribute("href", "/replay/abc1234?turn=5")

    await page.evaluate(
        """(text) => {
            const data = new DataTransfer();
            data.items.add(new File([text], "tavern.jsonl"));
            document.dispatchEvent(new DragEvent("drop", {dataTransfer: data, cancelable: true}));
        }""",
        (await game_file(served, tavern.id)).decode(),
    )
    await expect(page.locator("#game-title")).to_have_text("Dwarven Tavern replay")
    await board_matches_frame(page, tavern_replay, 0)
    tavern_last = len(tavern_replay["frames"]) - 1
    await expect(page.locator("#position")).to_have_text(f"0 / {tavern_last}")


async def test_a_game_file_that_does_not_read_says_which_line(served: Served, pages: Pages) -> None:
    thud = await house_game(served, "thud", ["dwarf", "troll"], THUD_SEED)
    first, second, *rest = (await game_file(served, thud.id)).splitlines()
    damaged = b"\n".join([first, second.replace(b'"turn":1', b'"turn":2'), *rest])
    page = await pages.open("/replay", connected=False)
    await opened_for_a_file(page)
    await page.set_input_files(
        "#file-input", files=FilePayload(name="bad.jsonl", mimeType="text/plain", buffer=damaged)
    )
    await expect(page.locator("#missing-title")).to_have_text("This file does not replay")
    await expect(page.locator("#missing-detail")).to_have_text(
        "bad.jsonl: line 2: turn 2 where turn 1 should be."
    )


SAID = (
    "kills the troll beside the stone first, then walks the shieldwall west so that no troll "
    "reaches the line; hurls only when three dwarfs stand behind"
)


@pytest.mark.parametrize("width", [1280, 390])
async def test_a_bot_s_debug_text_wraps_between_words(
    served: Served, pages: Pages, width: int
) -> None:
    """The replay's box of what a bot said of its move breaks its lines between words (it once
    broke them anywhere: "kill / s"); only a word longer than the box may be broken."""
    thud = await house_game(served, "thud", ["dwarf", "troll"], THUD_SEED)
    first_line, turn_line, *rest = (await game_file(served, thud.id)).splitlines()
    said = orjson.dumps({**orjson.loads(turn_line), "debug": SAID})
    page = await pages.open("/replay", width, connected=False)
    await opened_for_a_file(page)
    await page.set_input_files(
        "#file-input",
        files=FilePayload(
            name="said.jsonl",
            mimeType="application/jsonl",
            buffer=b"\n".join([first_line, said, *rest]),
        ),
    )
    await page.click("#forward")
    box = page.locator("#events .debug-text")
    await expect(box).to_have_text(SAID)
    split: list[str] = await box.evaluate(
        """(pre) => {
            const text = pre.firstChild;
            const split = [];
            for (const word of text.data.matchAll(/\\S+/g)) {
                const range = document.createRange();
                range.setStart(text, word.index);
                range.setEnd(text, word.index + word[0].length);
                if (range.getClientRects().length !== 1) split.push(word[0]);
            }
            return split;
        }"""
    )
    lines = await box.evaluate(
        "(pre) => Math.round(pre.getBoundingClientRect().height / parseFloat("
        "getComputedStyle(pre).lineHeight))"
    )
    assert lines >= 2  # it wraps at all: the check below has lines to look at
    assert split == []
    assert await box.evaluate("(pre) => pre.scrollWidth <= pre.clientWidth")
