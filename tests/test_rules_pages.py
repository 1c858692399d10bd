"""The rules pages in a real browser: /rules/tavern, /rules/thud, and the links to them.

Headless Chromium (Playwright) against a real arena and visor (the ``served`` fixture). Any
console error on a page, CSP violations included, fails the test (``tests.browser``). The pages'
diagrams are inline SVG styled by /static/css/rules.css and the game's own rules.css (in its
package), so a style the policy blocked, or a file not loaded, would show as a colour that is
not the board's.

With ``VISOR_SCREENSHOTS=1`` the screenshots test saves rules-tavern, rules-thud and their phone
versions under docs/screenshots/ (otherwise into a temporary directory).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from server.match_options import MatchOptions
from tests.browser import REPO, Pages, module_chromium, module_pages, module_served
from tests.conftest import Served
from visor.house_games import run_house_game, seat_house_player

# One Chromium for the module's tests, on the module's event loop (tests.browser).
pytestmark = pytest.mark.asyncio(loop_scope="module")
chromium = module_chromium
served = module_served
visor = module_pages

TITLES = {"tavern": "Dwarven Tavern", "thud": "Thud"}
# Each page's sections, in order: the id its table of contents links to, and its heading.
SECTIONS = {
    "tavern": [
        ("glance", "At a glance"),
        ("board", "The board"),
        ("teams", "The teams"),
        ("turn", "A turn"),
        ("step", "Stepping"),
        ("barrel", "Pushing a barrel"),
        ("throw", "Throwing a dwarf"),
        ("edges", "The edges"),
        ("scoring", "Scoring"),
        ("after-point", "After a point"),
        ("end", "The end of a game"),
        ("bots", "For bot authors"),
    ],
    "thud": [
        ("glance", "At a glance"),
        ("board", "The board"),
        ("turns", "Turns"),
        ("dwarfs", "The dwarfs' moves"),
        ("trolls", "The trolls' moves"),
        ("peace", "Peace"),
        ("end", "The end of a game"),
        ("scoring", "Scoring"),
        ("published", "How this differs from the published game"),
    ],
}
# Sentences the pages must say, in the words of the rules modules' behaviour.
KEY_FACTS = {
    "tavern": [
        ("#scoring", "team 1 scores a point if barrel 2 is on row 20"),
        ("#scoring", "team 2 scores a point if barrel 1 is on row 0"),
        ("#throw", "pulled back inside rows 0 to 19 and columns 1 to 19"),
        ("#after-point", "The team that did not score moves next"),
        ("#end", "Turn limit reached"),
        ("#end", "Too many timeouts"),
    ],
    "thud": [
        ("#scoring", "worth 1 point and each troll 4"),
        ("#trolls", "every dwarf next to its new square is killed"),
        ("#dwarfs", "onto a troll"),
        ("#end", "Players agreed to finish"),
        ("#end", "Turn timeout"),
    ],
}
DIAGRAMS = {"tavern": 10, "thud": 4}
# Colours the stylesheet gives the diagrams (the live boards' colours): proof it applied.
STYLED = {
    "tavern": {".home.team1": "rgb(217, 87, 59)", ".dwarf.team2 circle": "rgb(232, 182, 60)"},
    "thud": {".thud-dwarf circle": "rgb(74, 134, 224)", ".troll polygon": "rgb(90, 168, 69)"},
}
PHONE_WIDTH, PHONE_HEIGHT = 390, 844


async def fits_the_width(page: Page) -> bool:
    """Nothing sticks out sideways (no horizontal scrolling on a phone)."""
    fits: bool = await page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )
    return fits


async def follow(page: Page, link_selector: str, game: str) -> None:
    """Click the link to a game's rules: the rules page opens and says which game."""
    link = page.locator(link_selector)
    await expect(link).to_be_visible()
    await expect(link).to_have_attribute("href", f"/rules/{game}")
    await link.click()
    await page.wait_for_url(f"**/rules/{game}")
    await expect(page.locator("h1")).to_have_text(TITLES[game])


# --- the pages themselves ------------------------------------------------------------------


@pytest.mark.parametrize("game", ["tavern", "thud"])
async def test_a_rules_page_shows_every_section_and_its_diagrams(visor: Pages, game: str) -> None:
    page = await visor.open(f"/rules/{game}", connected=False)
    await expect(page).to_have_title(f"Rules of {TITLES[game]} · Dwarven Tavern Arena")
    await expect(page.locator("h1")).to_have_text(TITLES[game])
    sections = SECTIONS[game]
    assert await page.locator("main > section h2").all_text_contents() == [
        heading for _, heading in sections
    ]
    toc = await page.locator(".rules-toc a").evaluate_all(
        "links => links.map(link => link.getAttribute('href'))"
    )
    assert toc == [f"#{section}" for section, _ in sections]
    for section, text in KEY_FACTS[game]:
        await expect(page.locator(section)).to_contain_text(text)

    # Every diagram is drawn at a size one can read, and names its caption.
    diagrams = page.locator("svg.diagram")
    assert await diagrams.count() == DIAGRAMS[game]
    for index in range(DIAGRAMS[game]):
        diagram = diagrams.nth(index)
        await expect(diagram).to_be_visible()
        box = await diagram.bounding_box()
        assert box is not None and box["width"] >= 120 and box["height"] >= 18
        caption = await diagram.get_attribute("aria-labelledby")
        await expect(page.locator(f"figcaption#{caption}")).not_to_be_empty()
    for selector, colour in STYLED[game].items():
        fill = await page.locator(f".diagram {selector}").first.evaluate(
            "node => getComputedStyle(node).fill"
        )
        assert fill == colour, selector

    # The table of contents jumps to its section.
    await page.locator(".rules-toc a[href='#end']").click()
    await expect(page.locator("#end h2")).to_be_in_viewport()

    # The other game's rules are one click away.
    other = "thud" if game == "tavern" else "tavern"
    await follow(page, f".rules-head a[href='/rules/{other}']", other)


async def test_the_rules_pages_fit_a_phone(visor: Pages) -> None:
    for game in ("tavern", "thud"):
        page = await visor.open(f"/rules/{game}", PHONE_WIDTH, PHONE_HEIGHT, connected=False)
        await expect(page.locator("#board svg.diagram")).to_be_visible()
        assert await fits_the_width(page), game
        board = await page.locator("#board svg.diagram").bounding_box()
        assert board is not None and board["width"] >= 300  # the board gets the whole width


# --- links from every page of a game --------------------------------------------------------


async def test_watching_a_game_links_to_its_rules(served: Served, visor: Pages) -> None:
    tavern = run_house_game(served.arena, "tavern", ["pusher", "wanderer"], 200)
    thud = run_house_game(served.arena, "thud", ["dwarf", "troll"], 200)
    watch_tavern = await visor.open(f"/watch/{tavern.id}")
    await expect(watch_tavern.locator("#rules-link")).to_have_text("The rules of Dwarven Tavern")
    watch_thud = await visor.open(f"/watch/{thud.id}")
    await expect(watch_thud.locator("#rules-link")).to_have_text("The rules of Thud")
    await follow(watch_tavern, "#rules-link", "tavern")
    await follow(watch_thud, "#rules-link", "thud")


async def test_a_waiting_simulation_links_to_its_rules_too(served: Served, visor: Pages) -> None:
    simulation = served.arena.open("thud")
    page = await visor.open(f"/watch/{simulation.id}")
    await expect(page.locator("#join-hint")).to_be_visible()
    await expect(page.locator("#rules-link")).to_have_attribute("href", "/rules/thud")


async def test_a_replay_links_to_its_rules(served: Served, visor: Pages) -> None:
    simulation = served.arena.open("tavern", MatchOptions(seed=5))
    for player, seat in zip(["pusher", "wanderer"], simulation.codec.seat_names, strict=True):
        seat_house_player(simulation, player, seat, 0.0)
    async with asyncio.timeout(30):
        await simulation.done.wait()
    await served.records.flush()
    page = await visor.open(f"/replay/{simulation.id}", connected=False)
    await expect(page.locator("#game-title")).to_have_text("Dwarven Tavern replay")
    await follow(page, "#rules-link", "tavern")


async def test_play_thud_and_clients_link_to_the_rules_of_thud(visor: Pages) -> None:
    play = await visor.open("/play/thud")
    await follow(play, "#rules-link", "thud")
    clients = await visor.open("/clients")
    await follow(clients, "#rules-link", "thud")


async def test_the_lobby_links_to_both_rules(visor: Pages) -> None:
    lobby = await visor.open("/")
    await expect(lobby.locator("#rules-thud-link")).to_have_attribute("href", "/rules/thud")
    await follow(lobby, "#rules-tavern-link", "tavern")


# --- screenshots for the README --------------------------------------------------------------


async def test_screenshots_of_the_rules(visor: Pages, tmp_path: Path) -> None:
    """Both rules pages on a desktop and on a phone; saved with VISOR_SCREENSHOTS=1."""
    out = REPO / "docs" / "screenshots" if os.environ.get("VISOR_SCREENSHOTS") else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    for game in ("tavern", "thud"):
        page = await visor.open(f"/rules/{game}", height=1400, connected=False)
        await expect(page.locator("#board svg.diagram")).to_be_visible()
        await page.screenshot(path=out / f"rules-{game}.png")
        # The moves, with their diagrams: what a new player looks for.
        moves = "#throw" if game == "tavern" else "#trolls"
        await page.locator(moves).screenshot(path=out / f"rules-{game}-moves.png")
        phone = await visor.open(f"/rules/{game}", PHONE_WIDTH, PHONE_HEIGHT, connected=False)
        await phone.locator("#board figure").evaluate(
            "node => node.scrollIntoView({block: 'center'})"
        )
        await phone.screenshot(path=out / f"phone-rules-{game}.png")
    for name in ("rules-tavern", "rules-thud"):
        for shot in (name, f"{name}-moves", f"phone-{name}"):
            assert (out / f"{shot}.png").stat().st_size > 10_000
