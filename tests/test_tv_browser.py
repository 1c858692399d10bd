"""/tv in Chromium (issue 22, item 5): with nothing played it says so, and shows a game as soon
as one starts; of two live games between registered bots it shows the higher-rated pair, and
when that game ends, its result, then the other game; on a phone without sideways scrolling."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from playwright.async_api import Page, expect

from server.records.identities import roster_kept
from tests.browser import chromium_pages
from tests.conftest import RawClient, serving_visor, test_config
from tests.test_identity import added
from tests.test_ladder import rated
from tests.test_visor_browser import fits_the_width

BOTS = ("Azog", "Grimli", "Bolg", "Ugluk")


async def pair(
    port: int, keys: dict[str, str], clients: list[RawClient], dwarf: str, troll: str
) -> tuple[str, RawClient]:
    """A Thud game between two registered bots, being played (the dwarfs to move): its id, and
    the dwarf bot's connection (closing it forfeits the game); both are added to ``clients``."""
    clients.extend([await RawClient.connect(port) for _ in range(2)])
    dwarf_client, troll_client = clients[-2:]
    join = {"type": "join-simulation", "game": "thud"}
    await dwarf_client.send({**join, "bot": dwarf, "key": keys[dwarf], "side": "dwarf"})
    simulation_id = (await dwarf_client.expect("game-info"))["simulationId"]
    troll_join = {**join, "bot": troll, "key": keys[troll], "simulationId": simulation_id}
    await troll_client.send(troll_join)
    await troll_client.expect("game-info")
    return simulation_id, dwarf_client


async def shows(page: Page, simulation_id: str, dwarf: str, troll: str) -> None:
    tv = page.locator("#tv")
    await expect(tv).to_have_attribute("data-simulation", simulation_id)
    await expect(tv).to_have_attribute("data-state", "playing")
    await expect(page.locator("#seat-0 .tv-name")).to_have_text(dwarf)
    await expect(page.locator("#seat-1 .tv-name")).to_have_text(troll)
    await expect(page.locator("#score")).to_have_text("32 – 32")  # the points at the start


async def test_tv_shows_the_strongest_pair_then_the_next_then_nothing(tmp_path: Path) -> None:
    database = str(tmp_path / "arena.db")
    keys = {name: added(database, name) for name in BOTS}
    # Azog and Grimli won their rated games, Bolg and Ugluk lost theirs.
    rated(database, [("g1", ("Azog", "Bolg"), 0), ("g2", ("Grimli", "Ugluk"), 0)])
    config = test_config(first_turn_timeout_ms=60_000)
    clients: list[RawClient] = []
    async with (
        serving_visor(config, database) as served,
        roster_kept(served.records.roster_changes, served.records, served.arena.roster),
        chromium_pages(served.url) as pages,
    ):
        phone = await pages.open("/tv", 390, 844)
        await expect(phone.locator("#tv")).to_have_attribute("data-state", "idle")
        await expect(phone.locator("#idle h1")).to_have_text("No game is being played")
        assert await fits_the_width(phone)

        strong, azog = await pair(served.tcp_port, keys, clients, "Azog", "Grimli")
        weak, bolg = await pair(served.tcp_port, keys, clients, "Bolg", "Ugluk")
        await shows(phone, strong, "Azog", "Grimli")  # the idle page saw a game start
        assert await fits_the_width(phone)
        desk = await pages.open("/tv", 1280, 860)
        await shows(desk, strong, "Azog", "Grimli")
        azog_rating = served.arena.roster.rating("thud", "Azog")
        assert azog_rating is not None and azog_rating > 25
        await expect(desk.locator("#seat-0 .tv-rating")).to_have_text(
            f"Dwarfs · rating {azog_rating:.1f}"
        )
        await expect(desk.locator("#why")).to_have_text(
            "The strongest pair on the ladder playing now"
        )
        box = await desk.locator("#board").bounding_box()
        assert box is not None and box["height"] > 860 / 2  # the board fills the screen

        await azog.close()  # Azog leaves: Grimli wins by forfeit
        for page in (desk, phone):
            await expect(page.locator("#tv")).to_have_attribute("data-state", "result")
            await expect(page.locator("#banner")).to_contain_text("Grimli (Trolls) won")
            await expect(page.locator("#why")).to_have_text(
                "Game over: the next game follows in a few seconds"
            )
        for page in (desk, phone):
            await shows(page, weak, "Bolg", "Ugluk")

        await bolg.close()
        for page in (desk, phone):
            await expect(page.locator("#banner")).to_contain_text("Ugluk (Trolls) won")
            await expect(page.locator("#tv")).to_have_attribute("data-state", "idle")
        assert await fits_the_width(phone)
        for client in clients:
            await client.close()


async def test_a_game_between_registered_bots_not_rated_yet_is_said_so(tmp_path: Path) -> None:
    """Two registered bots before their first rated game of the season: /api/tv says they are
    not both rated (``bothRated``, once ``rated``, read as "not a rated game"), and the page
    says what it chose and why, on a desktop and a phone."""
    database = str(tmp_path / "arena.db")
    keys = {name: added(database, name) for name in ("Azog", "Nobody")}
    rated(database, [("g1", ("Azog", "Bolg"), 0)])  # Azog is rated this season; Nobody is not
    clients: list[RawClient] = []
    async with (
        serving_visor(test_config(first_turn_timeout_ms=60_000), database) as served,
        roster_kept(served.records.roster_changes, served.records, served.arena.roster),
        chromium_pages(served.url) as pages,
    ):
        simulation_id, _ = await pair(served.tcp_port, keys, clients, "Azog", "Nobody")
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{served.url}/api/tv") as response,
        ):
            chosen = (await response.json())["simulation"]
        assert (chosen["simulationId"], chosen["bothRated"]) == (simulation_id, False)
        assert "rated" not in chosen
        assert [player["bot"] for player in chosen["players"]] == ["Azog", "Nobody"]
        for width, height in ((1280, 860), (390, 844)):
            page = await pages.open("/tv", width, height)
            await shows(page, simulation_id, "Azog", "Nobody")
            await expect(page.locator("#seat-1 .tv-rating")).to_have_text("Trolls · not rated yet")
            await expect(page.locator("#why")).to_have_text(
                "The most watched game now: no game between two bots rated this season is being "
                "played"
            )
            assert await fits_the_width(page)
            await page.close()
        for client in clients:
            await client.close()
