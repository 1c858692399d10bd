"""The visor's pages in a real browser: headless Chromium driven by Playwright.

Each test runs a real arena and visor on ephemeral ports (the ``served`` fixture) with real bots
over TCP. Every wait is bounded. Canvas checks compare pixels (``canvas.toDataURL()``), not only
the DOM. Squares are clicked through the mapping the board publishes on the canvas
(``data-cell-size``, ``data-origin-x``, ``data-origin-y``, in CSS pixels).

``test_screenshots`` renders every page and, with ``VISOR_SCREENSHOTS=1`` in the environment,
saves them under docs/screenshots/ for the README (otherwise into a temporary directory, so an
ordinary test run leaves the work tree alone).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from playwright.async_api import Page, WebSocketRoute, expect

from bots.sdk import ArenaClient, JsonObject
from bots.tavern_dummy import play as play_tavern_dummy
from server.games.tavern.house import choose_actions, view_of_wire
from server.games.thud.movegen import legal_moves
from server.match import Match
from server.match_events import TurnPlayed, Update
from tests.browser import (
    REPO,
    Pages,
    canvas_pixels,
    chromium_pages,
    module_chromium,
    module_pages,
    module_served,
    square_point,
)
from tests.conftest import RawClient, Served, TurnLog, serving_visor, test_config
from visor.house_games import run_house_game

# One Chromium for the module's tests, on the module's event loop (tests.browser).
pytestmark = pytest.mark.asyncio(loop_scope="module")
chromium = module_chromium
served = module_served
visor = module_pages

XSS = "<img src=x onerror=alert(1)>"
DWARF_NAMES = ["<b>Gimli</b>", "Durin", "Thorin", "Balin", "Dwalin"]
SIMULATION_ID = re.compile(r"^[0-9a-r]{7}$")
DIGIT = re.compile(r"^\d$")
SHORT_GAME_SEED = 33  # dummy against dummy with this seed ends 3-0 after 147 turns

T = TypeVar("T")


# --- helpers -------------------------------------------------------------------------------


async def click_square(page: Page, x: int, y: int) -> None:
    await page.mouse.click(*await square_point(page, x, y))


async def hover_square(page: Page, x: int, y: int) -> None:
    await page.mouse.move(*await square_point(page, x, y))


async def eventually(check: Callable[[], Awaitable[T | None]], timeout: float = 10) -> T:
    """Poll ``check`` until it returns something other than None (or False)."""
    async with asyncio.timeout(timeout):
        while True:
            value = await check()
            if value is not None and value is not False:
                return value
            await asyncio.sleep(0.05)


async def turns_played(simulation: Match, count: int, timeout: float = 30) -> None:
    """Once ``simulation`` has played ``count`` turns. The house players think in this process,
    beside the server and Playwright: on a busy machine (the suite runs on every core) three
    turns once took over 10 s."""

    async def enough() -> bool:
        return simulation.turn_count >= count

    await eventually(enough, timeout)


async def slow_tavern_bot(
    port: int, simulation_id: str, nick: str, delay_s: float, names: list[str]
) -> JsonObject:
    """The dummy Tavern bot over TCP, thinking ``delay_s`` per turn so a person can watch."""
    async with await ArenaClient.connect("127.0.0.1", port) as client:
        info = await client.join(simulation_id, nick=nick, names=names)
        team, width, height = info["team"], info["width"], info["height"]

        async def on_turn(message: JsonObject) -> JsonObject:
            await asyncio.sleep(delay_s)
            view = view_of_wire(message["state"], team, width, height)
            return {"type": "player-turn", "actions": choose_actions(view)}

        return await client.play(on_turn)


@contextlib.contextmanager
def background(*tasks: asyncio.Task[Any]) -> Iterator[None]:
    """Bots playing while the test looks; whatever is left is stopped at the end."""
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()


async def slow_tavern_game(served: Served, delay_s: float) -> tuple[str, list[asyncio.Task[Any]]]:
    """Two slowed dummy bots, one called XSS, playing a seeded game that ends in 147 turns."""
    async with await ArenaClient.connect("127.0.0.1", served.tcp_port) as creator:
        ready = await creator.create_simulation("tavern", SHORT_GAME_SEED)
    simulation_id: str = ready["simulationId"]
    first = asyncio.create_task(
        slow_tavern_bot(served.tcp_port, simulation_id, XSS, delay_s, DWARF_NAMES)
    )
    await turns_or_seated(served, simulation_id, 1)
    second = asyncio.create_task(
        slow_tavern_bot(served.tcp_port, simulation_id, "Bo", delay_s, DWARF_NAMES)
    )
    return simulation_id, [first, second]


async def turns_or_seated(served: Served, simulation_id: str, seated: int) -> None:
    """Wait until ``seated`` players sit in the simulation (Tavern seats go by join order)."""

    async def enough() -> bool:
        simulation = served.arena.matches[simulation_id]
        return sum(seat is not None for seat in simulation.seats) >= seated

    await eventually(enough, 5)


# --- the lobby -----------------------------------------------------------------------------


async def test_the_lobby_shows_a_new_simulation_within_a_second(
    served: Served, visor: Pages
) -> None:
    page = await visor.open("/")
    await expect(page.locator("#sims-empty")).to_be_visible()
    bot = await RawClient.connect(served.tcp_port)
    try:
        await bot.send({"type": "create-simulation", "game": "thud"})
        simulation_id = (await bot.expect("ready"))["simulationId"]
        row = page.locator(f'tr[data-simulation-id="{simulation_id}"]')
        await expect(row).to_be_visible(timeout=1000)
        await expect(row).to_contain_text("Thud")
        await expect(row).to_contain_text("waiting")
        # A bot joining shows at once too, with its nick.
        await bot.send(
            {
                "type": "join-simulation",
                "game": "thud",
                "simulationId": simulation_id,
                "nick": "Grag",
                "side": "troll",
            }
        )
        await bot.expect("game-info")
        await expect(row.locator(".seat-troll .nick")).to_have_text("Grag", timeout=1000)
    finally:
        await bot.close()

    # The page's own "New Tavern simulation" button: the id is shown big, and listed.
    await page.click("#create-tavern")
    created = page.locator("#created-id")
    await expect(created).to_have_text(SIMULATION_ID)
    new_id = await created.text_content()
    assert new_id in served.arena.matches
    await expect(page.locator(f'tr[data-simulation-id="{new_id}"]')).to_be_visible(timeout=1000)
    await expect(page.locator("#created-snippet")).to_contain_text(f'"simulationId":"{new_id}"')


EXPIRY_MS = 6000  # long enough to start a bot process, short enough to wait for


async def test_lobby_ages_filter_copy_a_join_command_and_expiry(tmp_path: Path) -> None:
    """The command the lobby offers to copy runs a house player into the simulation, from any
    folder, with nothing but the arena's installed ``tavern`` command (it was ``python -m
    bots...``, which fails outside the arena's environment); rows show their age and filter by
    game; a simulation nobody joins leaves the page when it expires."""
    async with (
        serving_visor(
            test_config(waiting_simulation_expiry_ms=EXPIRY_MS), tmp_path / "a.db"
        ) as served,
        chromium_pages(served.url) as pages,
    ):
        page = await pages.open("/")
        await page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        await page.click("#create-tavern")
        await expect(page.locator("#created-id")).to_have_text(SIMULATION_ID)
        tavern_id = await page.locator("#created-id").text_content()
        command = f"tavern house tavern pusher --simulation {tavern_id} --port {served.tcp_port}"
        await expect(page.locator("#created-command")).to_have_text(command)
        await expect(page.locator("#created-command-hint")).to_contain_text(
            "from any folder with the arena's tavern command (make run puts it in the "
            "checkout's .venv/bin; pip install puts it on the PATH)"
        )
        await page.click("#copy-command")
        await expect(page.locator("#copy-command")).to_have_text("Copied")
        assert await page.evaluate("navigator.clipboard.readText()") == command
        # The command, as copied, runs a house player into the simulation: the installed
        # tavern, in a folder that is not the checkout, with no PYTHONPATH.
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        words = shlex.split(command)
        bot = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).parent / words[0]),
            *words[1:],
            cwd=elsewhere,
            env=environ,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            tavern_row = page.locator(f'tr[data-simulation-id="{tavern_id}"]')
            await expect(tavern_row.locator(".seat-team1 .nick")).to_have_text("house pusher")
            await page.click("#create-thud")
            await expect(page.locator("#created-id")).not_to_have_text(tavern_id or "")
            thud_id = await page.locator("#created-id").text_content()
            await expect(page.locator("#created-command")).to_contain_text(
                f"tavern house thud troll --side troll --simulation {thud_id}"
            )
            thud_row = page.locator(f'tr[data-simulation-id="{thud_id}"]')
            # Each row's age, counting on between lobby updates.
            age = thud_row.locator('td[data-label="Age"]')
            await expect(age).to_have_text(re.compile(r"^\d s$"))
            first = await age.text_content()
            await expect(age).not_to_have_text(first or "")
            # The filter by game, kept in the address.
            await page.select_option("#sims-game", "thud")
            await expect(page).to_have_url(re.compile(r"/\?game=thud$"))
            await expect(page.locator("tr.sim")).to_have_count(1)
            await expect(thud_row).to_be_visible()
            await expect(page.locator("#sims-summary")).to_have_text(
                "Thud: 0 playing · 1 waiting · 0 finished"
            )
            await page.select_option("#sims-game", "tavern")
            await expect(page.locator("tr.sim")).to_have_count(1)
            await expect(tavern_row).to_be_visible()
            await page.select_option("#sims-game", "")
            await expect(page.locator("tr.sim")).to_have_count(2)
            # Nobody joined the Thud simulation: it expires and leaves the page; the Tavern
            # one, with its bot waiting in it, stays.
            await expect(thud_row).to_have_count(0, timeout=EXPIRY_MS + 5000)
            await expect(tavern_row).to_be_visible()
            assert thud_id not in served.arena.matches
            # On a phone the command wraps within its box, whole.
            phone = await pages.open("/", 390, 844)
            await phone.click("#create-thud")
            phone_id = await phone.locator("#created-id").text_content()
            await expect(phone.locator("#created-command")).to_contain_text(
                f"tavern house thud dwarf --side dwarf --simulation {phone_id}"
            )
            shown = phone.locator("#created-command")
            assert await shown.evaluate("(pre) => pre.scrollWidth <= pre.clientWidth")
            assert await fits_the_width(phone)
            await phone.close()
        finally:
            bot.kill()
            await bot.wait()


async def test_run_a_game_from_the_lobby_opens_its_live_view(served: Served, visor: Pages) -> None:
    page = await visor.open("/")
    await page.select_option("#run-game", "thud")
    # Only house players that can play a seat are offered for it.
    assert await page.locator("#run-seat0 option").all_text_contents() == ["dwarf", "random"]
    assert await page.locator("#run-seat1 option").all_text_contents() == ["troll", "random"]
    await page.select_option("#run-seat1", "random")
    await page.fill("#run-delay", "30")
    await page.click("#run")
    await page.wait_for_url("**/watch/*")
    simulation_id = page.url.rsplit("/", 1)[1]
    simulation = served.arena.matches[simulation_id]
    assert [seat.player.nick for seat in simulation.seats if seat] == [
        "house dwarf",
        "house random",
    ]
    await expect(page.locator("#game-title")).to_have_text("Thud")
    await expect(page.locator("#players .seat-troll .nick")).to_have_text("house random")
    first = await canvas_pixels(page)
    await expect(page.locator("#turn")).not_to_have_text("0 of 500")
    await expect(page.locator("#log li").first).to_be_visible()

    async def changed() -> bool:
        return await canvas_pixels(page) != first

    await eventually(changed, 5)


# --- watching ------------------------------------------------------------------------------


async def test_a_watcher_sees_turns_on_the_canvas_and_the_result(
    served: Served, visor: Pages
) -> None:
    simulation_id, bots = await slow_tavern_game(served, delay_s=0.02)
    with background(*bots):
        simulation = served.arena.matches[simulation_id]
        await turns_played(simulation, 10)
        page = await visor.open(f"/watch/{simulation_id}")
        # A late watcher sees names and scores at once.
        await expect(page.locator("#players .seat-team1 .nick")).to_have_text(XSS)
        await expect(page.locator("#players .seat-team2 .nick")).to_have_text("Bo")
        await expect(page.locator("#players .seat-team1 .seat-score")).to_have_text(DIGIT)
        # Each seat in its team's colour, from the game's own stylesheet (its game.css).
        for seat, colour in (("team1", "rgb(217, 87, 59)"), ("team2", "rgb(232, 182, 60)")):
            seat_row = page.locator(f"#players .seat-{seat}")
            await expect(seat_row).to_have_css("border-left-color", colour)
        await expect(page.locator("#turn")).to_have_text(re.compile(r"^\d+ of 1000$"))
        assert await page.locator("#players img").count() == 0
        # Whose turn it is, its clock, each side's last reply, the legend, the last turn drawn
        # as arrows and written in the move list.
        await expect(page.locator("#status")).to_have_text(re.compile(r"^Playing: .+ to move\.$"))
        await expect(page.locator("#clock")).to_contain_text(re.compile(r"s left of (10|30) s$"))
        await expect(page.locator("#players .seat-reply").first).to_have_text(
            re.compile(r"^last reply \d+ ms$")
        )
        await expect(page.locator("#legend")).to_contain_text(
            "Team 2's barrel (yellow hoops) onto row 20"
        )
        await expect(page.locator("#log li.log-move, #log li.log-hit").first).to_have_text(
            re.compile(r"^\d+.+: .*([↑↓←→]|blocked|passes)")
        )
        await expect(page.locator("#board")).to_have_attribute("data-arrows", re.compile(r"^[1-9]"))
        before = await canvas_pixels(page)

        async def changed() -> str | None:
            now = await canvas_pixels(page)
            return now if now != before else None

        await eventually(changed, 5)
        await expect(page.locator("#result")).to_contain_text(
            "Points to win reached", timeout=30_000
        )
        final = await asyncio.wait_for(bots[0], 10)
        await asyncio.wait_for(bots[1], 10)
    # Seed 33 ends 3-0 to the first team: the XSS nick, shown as text.
    assert final["result"]["winner"] == "team1"
    await expect(page.locator("#result")).to_contain_text(f"{XSS} (Team 1) won")
    await expect(page.locator("#players .seat-team1 .seat-score")).to_have_text("3")
    await expect(page.locator("#log")).to_contain_text(f"Point for {XSS} (Team 1)")
    await expect(page.locator("#status")).to_have_text("Finished.")
    await expect(page.locator("#clock-fact")).to_be_hidden()
    await expect(page.locator("#result a")).to_have_attribute("href", f"/replay/{simulation_id}")

    # A dwarf's name on hover: the final position stays on the board.
    dwarf = final["state"]["team1"][0]
    await hover_square(page, dwarf["coords"]["x"], dwarf["coords"]["y"])
    tooltip = page.locator("#tooltip")
    await expect(tooltip).to_be_visible()
    await expect(tooltip.locator("strong")).to_have_text(dwarf["name"])
    await expect(tooltip).to_contain_text(XSS)
    assert await tooltip.locator("b, img").count() == 0

    # Coming back later: the game is over, and the page says so with its result.
    await page.reload()
    await expect(page.locator("#missing-title")).to_have_text("This game has finished")
    await expect(page.locator("#missing-result")).to_contain_text("Points to win reached")


async def test_a_late_watcher_sees_every_turn_from_the_first(served: Served, visor: Pages) -> None:
    """A page that opens a game in its middle lists every turn from turn 1, each once and in
    order, the same list as a page that watched from the start; the turns played while it
    loads the earlier ones are in it too, with no gap."""
    simulation_id, bots = await slow_tavern_game(served, delay_s=0.04)
    with background(*bots):
        early = await visor.open(f"/watch/{simulation_id}")
        simulation = served.arena.matches[simulation_id]
        await turns_played(simulation, 30)
        late = await visor.open(f"/watch/{simulation_id}")
        await expect(late.locator("#status")).to_contain_text("Playing")
        arrived = simulation.turn_count
        await expect(early.locator("#result")).to_contain_text(
            "Points to win reached", timeout=30_000
        )
        await expect(late.locator("#result")).to_contain_text("Points to win reached")
    assert 30 <= arrived < simulation.turn_count
    # Each Tavern turn is one line (a point adds one more), newest first.
    summaries = late.locator("#log li.log-move .log-turn, #log li.log-hit .log-turn")
    await expect(summaries).to_have_count(simulation.turn_count)
    numbers = [int(text) for text in await summaries.all_text_contents()]
    assert numbers == list(range(simulation.turn_count, 0, -1))
    await expect(late.locator("#log li")).to_have_text(
        await early.locator("#log li").all_text_contents()
    )


async def test_a_watcher_that_reconnects_lists_the_turns_it_missed(
    served: Served, visor: Pages
) -> None:
    """The page's connection drops mid-game and comes back by itself: the turns played while
    it was away join the move list, which goes on from turn 1 with no gap."""
    simulation_id, bots = await slow_tavern_game(served, delay_s=0.04)
    connections: list[WebSocketRoute] = []

    def through_the_test(websocket: WebSocketRoute) -> None:
        connections.append(websocket)
        websocket.connect_to_server()

    with background(*bots):
        page = await visor.open(f"/watch/{simulation_id}", websockets=through_the_test)
        simulation = served.arena.matches[simulation_id]
        await turns_played(simulation, 20)
        await connections[0].close()
        dropped = simulation.turn_count

        async def reconnected() -> bool:
            return len(connections) == 2

        await eventually(reconnected)
        assert simulation.turn_count > dropped  # turns it was not there for
        await expect(page.locator("#result")).to_contain_text(
            "Points to win reached", timeout=30_000
        )
    summaries = page.locator("#log li.log-move .log-turn, #log li.log-hit .log-turn")
    await expect(summaries).to_have_count(simulation.turn_count)
    numbers = [int(text) for text in await summaries.all_text_contents()]
    assert numbers == list(range(simulation.turn_count, 0, -1))


async def test_pause_freezes_the_view_and_resume_jumps_to_the_latest(
    served: Served, visor: Pages
) -> None:
    simulation = run_house_game(served.arena, "thud", ["dwarf", "troll"], 40)
    page = await visor.open(f"/watch/{simulation.id}", scale=2)
    await turns_played(simulation, 2)
    # Crisp on a high-density screen: two device pixels per CSS pixel.
    size = await page.evaluate(
        "(() => { const c = document.getElementById('board');"
        " return [c.width, c.getBoundingClientRect().width]; })()"
    )
    assert size[0] == round(size[1] * 2)
    await page.click("#pause")
    await expect(page.locator("#pause")).to_have_attribute("aria-pressed", "true")
    await page.mouse.move(0, 0)  # no hover ring on the board
    await asyncio.sleep(0.1)
    frozen = await canvas_pixels(page)
    ply = await page.locator("#turn").text_content()
    played = simulation.turn_count
    await turns_played(simulation, played + 3)
    assert await canvas_pixels(page) == frozen
    assert await page.locator("#turn").text_content() == ply
    await page.click("#pause")
    await expect(page.locator("#turn")).not_to_have_text(ply or "")
    assert await canvas_pixels(page) != frozen


async def test_an_unknown_address_is_a_page_of_the_arena_with_the_ways_back(
    visor: Pages,
) -> None:
    """Not aiohttp's bare "404: Not Found": the arena's own page, which names the path (as
    text), and leads back to the lobby and the other pages."""
    visor.http_errors_expected = True  # the page itself is answered with a 404
    page = await visor.open("/no/such/<b>page</b>", width=390, height=844, connected=False)
    await expect(page).to_have_title("Page not found · Dwarven Tavern Arena")
    await expect(page.locator("h1")).to_have_text("No page here")
    await expect(page.locator("#missing-path")).to_have_text("/no/such/<b>page</b>")
    assert await page.locator("main b").count() == 0
    await expect(page.locator(".topnav a")).to_have_text(
        ["Lobby", "Play Thud", "Matches", "League", "Ladder", "TV", "Clients"]
    )
    # The arena's stylesheet: its buttons, and a phone's width.
    lobby = page.locator("#to-lobby")
    colour = await lobby.evaluate("node => getComputedStyle(node).backgroundColor")
    assert colour == "rgb(233, 169, 60)"  # --accent
    assert await fits_the_width(page)
    await lobby.click()
    await page.wait_for_url(visor.base_url + "/")
    await expect(page.locator("#connection")).to_have_attribute("data-status", "open")
    await expect(page.locator("#sims-empty")).to_be_visible()


async def test_an_unknown_id_shows_a_clear_message(visor: Pages) -> None:
    page = await visor.open("/watch/nope123")
    await expect(page.locator("#missing-title")).to_have_text("There is no simulation with this id")
    await expect(page.locator("#missing-detail")).to_contain_text("nope123")
    await expect(page.locator("#watch")).to_be_hidden()


async def test_nicks_are_shown_as_text_never_run(served: Served, visor: Pages) -> None:
    bot = await RawClient.connect(served.tcp_port)
    try:
        await bot.send({"type": "join-simulation", "game": "thud", "nick": XSS, "side": "dwarf"})
        simulation_id = (await bot.expect("game-info"))["simulationId"]
        lobby = await visor.open("/")
        nick = lobby.locator(f'tr[data-simulation-id="{simulation_id}"] .seat-dwarf .nick')
        await expect(nick).to_have_text(XSS)
        assert await lobby.locator("#sims img").count() == 0
        watch = await visor.open(f"/watch/{simulation_id}")
        await expect(watch.locator("#players .seat-dwarf .nick")).to_have_text(XSS)
        await expect(watch.locator("#status")).to_contain_text("Waiting for players: 1 of 2")
        await expect(watch.locator("#join-snippet")).to_contain_text('"side":"troll"')
        assert await watch.locator("#players img").count() == 0
        # A player leaving before the start frees the seat, live.
        await bot.close()
        await expect(watch.locator("#players .seat-dwarf .nick")).to_have_text("free seat")
    finally:
        await bot.close()
    # The fixture fails the test if any dialog opened.


# --- playing -------------------------------------------------------------------------------


async def test_a_person_plays_thud_by_clicking_and_makes_peace(
    served: Served, visor: Pages
) -> None:
    page = await visor.open("/play/thud")
    await page.fill("#nick", "Ann")
    # Dwarfs against the house troll (the default opponent for the dwarf side).
    await expect(page.locator("#opponent")).to_have_value("troll")
    await page.click("#start")
    await expect(page.locator("#turn-status")).to_have_text("Your move (dwarfs).")
    await expect(page.locator("#players .seat-dwarf .nick")).to_have_text("Ann")
    await expect(page.locator("#players .seat-troll .nick")).to_have_text("house troll")
    simulation_id = await page.locator("#sim-id").text_content()
    assert simulation_id is not None
    simulation = served.arena.matches[simulation_id]
    log = TurnLog(served.arena)

    # Hovering a dwarf shows its moves.
    await hover_square(page, 6, 0)
    await expect(page.locator("#move-info")).to_contain_text("on [6, 0]: 18 moves")
    await page.mouse.move(0, 0)
    await page.keyboard.press("Escape")
    untouched = await canvas_pixels(page)

    # An illegal click moves nothing: the server says why, and the position stays.
    await click_square(page, 6, 0)
    await click_square(page, 10, 10)
    await expect(page.locator("#play-error")).to_contain_text("Illegal move")
    await expect(page.locator("#turn-status")).to_have_text("Your move (dwarfs).")
    await page.keyboard.press("Escape")
    await page.mouse.move(0, 0)
    await asyncio.sleep(0.1)
    assert await canvas_pixels(page) == untouched
    assert simulation.turn_count == 0

    # Make Peace, then a move by clicking: a step no troll can punish, so the house troll is
    # not behind and accepts. Both sides declared: a draw.
    await page.click("#peace")
    await expect(page.locator("#peace")).to_have_attribute("aria-pressed", "true")
    await expect(page.locator("#peace-status")).to_contain_text("goes with your next move")
    await click_square(page, 6, 0)
    await click_square(page, 6, 1)
    await expect(page.locator("#result")).to_contain_text("Players agreed to finish")
    await expect(page.locator("#result")).to_contain_text("A draw.")
    await expect(page.locator("#result")).to_contain_text("32 – 32")
    await expect(page.locator("#turn-status")).to_have_text("Game over.")
    assert log.turns[simulation.id][0].action == {
        "move": {"from": [6, 0], "to": [6, 1]},
        "declare": True,
    }
    assert await canvas_pixels(page) != untouched
    # Both moves (the refused one and the one played) named the turn they answered.
    assert [move["turn"] for move in visor.messages_sent(page, "move")] == [1, 1]


async def test_the_top_bar_and_the_lobby_name_the_games_the_arena_lists(visor: Pages) -> None:
    """No shared page names a game: the top bar's links to each game's pages, the lobby's words
    about the games and its buttons to play come from /games/index.json, at a desk's width and a
    phone's; and the side to choose on a game's own page has that game's colour."""
    nav = ["Lobby", "Play Thud", "Matches", "League", "Ladder", "TV", "Clients"]
    for width, height in ((1280, 860), (390, 844)):
        page = await visor.open("/", width=width, height=height)
        await expect(page.locator(".topnav a")).to_have_text(nav)
        await expect(page.locator(".topnav a[aria-current=page]")).to_have_text(["Lobby"])
        await expect(page.locator(".topnav a", has_text="Play Thud")).to_have_attribute(
            "href", "/play/thud"
        )
        await expect(page.locator(".topnav a", has_text="Clients")).to_have_attribute(
            "href", "/clients"
        )
        await expect(page.locator("#games-intro")).to_have_text(
            "Bots in any language play Dwarven Tavern and Thud over TCP."
        )
        play = page.locator(".hero a.button-primary")
        await expect(play).to_have_text(["Play Thud"])
        assert await fits_the_width(page)
        await play.click()
        await page.wait_for_url(visor.base_url + "/play/thud")
        await expect(page.locator(".topnav a[aria-current=page]")).to_have_text(["Play Thud"])
        # The chosen side is edged in the arena's accent; the other in its own colour.
        green, blue = "rgb(90, 168, 69)", "rgb(74, 134, 224)"
        await expect(page.locator(".side-troll")).to_have_css("border-left-color", green)
        await page.check("input[value=troll]")
        await expect(page.locator(".side-dwarf")).to_have_css("border-left-color", blue)


async def test_the_set_up_fits_a_phone(visor: Pages) -> None:
    """Every part of the set-up is within a 390 px wide screen, whichever side is chosen: the
    opponents' options are short, and what the chosen one does wraps under them."""
    page = await visor.open("/play/thud", width=390, height=844)
    for side, opponent, does in (
        ("dwarf", "troll", "kills the most dwarfs"),
        ("troll", "dwarf", "hurls at trolls"),
    ):
        await page.check(f"input[value={side}]")
        await expect(page.locator("#opponent")).to_have_value(opponent)
        outside = []
        for element in await page.locator("#setup, #setup *").all():
            box = await element.bounding_box()
            if box is not None and (box["x"] < 0 or box["x"] + box["width"] > 390):
                outside.append((await element.evaluate("e => e.outerHTML.slice(0, 60)"), box))
        assert outside == []
        assert await fits_the_width(page)
        await expect(page.locator("#opponent-about")).to_contain_text(does)
    await page.select_option("#opponent", "")
    await expect(page.locator("#opponent-about")).to_contain_text("the id it joins with")


async def test_waiting_for_a_bot_shows_the_id_it_joins(served: Served, visor: Pages) -> None:
    page = await visor.open("/play/thud")
    await page.fill("#nick", "Ann")
    await page.check("input[value=troll]")
    await page.select_option("#opponent", "")
    await page.click("#start")
    await expect(page.locator("#wait-bot")).to_be_visible()
    simulation_id = await page.locator("#wait-id").text_content()
    assert simulation_id is not None and simulation_id in served.arena.matches
    await expect(page.locator("#wait-snippet")).to_contain_text('"side":"dwarf"')
    # A TCP bot joins by that id; the game starts and the person's side waits its turn.
    async with await ArenaClient.connect("127.0.0.1", served.tcp_port) as bot:
        await bot.join(simulation_id, nick="tcp dwarf", game="thud", side="dwarf")
        watcher = await visor.open(f"/watch/{simulation_id}")
        await expect(page.locator("#wait-bot")).to_be_hidden()
        await expect(page.locator("#players .seat-dwarf .nick")).to_have_text("tcp dwarf")
        turn = await asyncio.wait_for(bot.receive(), 10)
        # The watcher sees the bot's clock run down while it thinks (a first turn: 30 s).
        clock = watcher.locator("#clock")
        await expect(clock).to_contain_text("tcp dwarf (Dwarfs): ")
        await expect(clock).to_contain_text("left of 30 s")
        await expect(watcher.locator("#status")).to_have_text(
            "Playing: tcp dwarf (Dwarfs) to move."
        )
        shown = await clock.text_content()
        await expect(clock).not_to_have_text(shown or "")
        assert seconds_left(await clock.text_content()) < seconds_left(shown)
        first = turn["state"]["moves"][0]
        await bot.send({"type": "player-turn", "move": {"from": first["from"], "to": first["to"]}})
        await expect(page.locator("#turn-status")).to_have_text("Your move (trolls).")
        await expect(clock).to_contain_text("Ann (Trolls): ")
        await expect(watcher.locator("#players .seat-dwarf .seat-reply")).to_be_visible()
    # The bot left: it forfeits, and the person wins; a spectator is told.
    await expect(page.locator("#result")).to_contain_text("You won!")
    await expect(page.locator("#result")).to_contain_text("Player disconnected")
    await expect(watcher.locator("#notice")).to_have_text(
        "tcp dwarf (Dwarfs) left the game and forfeits it."
    )
    await expect(watcher.locator("#result")).to_contain_text(
        "Ann (Trolls) won · Player disconnected"
    )


def seconds_left(clock: str | None) -> float:
    """The time left in the clock's text: "Bo (Team 2): 8.4 s left of 10 s" gives 8.4."""
    found = re.search(r": ([\d.]+) (ms|s) left", clock or "")
    assert found, clock
    return float(found[1]) / (1000 if found[2] == "ms" else 1)


# --- screenshots for the README --------------------------------------------------------------


async def test_screenshots(served: Served, visor: Pages, tmp_path: Path) -> None:
    """Every page, rendered with games going on; saved for the README with VISOR_SCREENSHOTS=1."""
    out = REPO / "docs" / "screenshots" if os.environ.get("VISOR_SCREENSHOTS") else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    arena = served.arena
    tavern = run_house_game(arena, "tavern", ["pusher", "wanderer"], 60)
    tavern_positions: dict[int, object] = {}

    def keep_tavern_position(update: Update) -> None:
        if isinstance(update, TurnPlayed) and update.result.match_id == tavern.id:
            tavern_positions[update.result.number] = update.result.state

    arena.listeners.append(keep_tavern_position)
    thud = run_house_game(arena, "thud", ["dwarf", "troll"], 80)
    finished = asyncio.create_task(
        play_tavern_dummy("127.0.0.1", served.tcp_port, None, "Rhun's bot", SHORT_GAME_SEED)
    )
    await asyncio.sleep(0.05)
    finished_too = asyncio.create_task(
        play_tavern_dummy("127.0.0.1", served.tcp_port, None, "Anwas", SHORT_GAME_SEED)
    )
    await asyncio.wait_for(asyncio.gather(finished, finished_too), 20)
    # Watching from the start, so that the logs have something in them (and a busy machine
    # cannot end a game before its page opens).
    watch_tavern = await visor.open(f"/watch/{tavern.id}")
    watch_thud = await visor.open(f"/watch/{thud.id}")
    phone_watch = await visor.open(f"/watch/{thud.id}", width=390, height=844)
    waiting = await RawClient.connect(served.tcp_port)
    try:
        await waiting.send(
            {"type": "join-simulation", "game": "thud", "nick": "Grag", "side": "troll"}
        )
        await waiting.expect("game-info")

        # Thud while both sides still have most of their pieces.
        await turns_played(thud, 16)
        await expect(watch_thud.locator("#log li").first).to_be_visible()
        await watch_thud.screenshot(path=out / "watch-thud.png")
        await expect(phone_watch.locator("#log li").first).to_be_visible()
        await phone_watch.screenshot(path=out / "phone-watch.png", full_page=True)
        assert await fits_the_width(phone_watch)

        await turns_played(tavern, 40)

        # Live rows change height as they update: a tall viewport rather than a full page.
        lobby = await visor.open("/", height=1000)
        await lobby.click("#create-thud")
        await expect(lobby.locator("#created-id")).to_be_visible()
        await expect(lobby.locator("tr.sim-new")).to_be_visible()
        await expect(lobby.locator("tr.sim-finished").first).to_be_visible()
        await lobby.screenshot(path=out / "lobby.png")
        phone_lobby = await visor.open("/", width=390, height=844)
        await expect(phone_lobby.locator("tr.sim")).to_have_count(5)
        await phone_lobby.screenshot(path=out / "phone-lobby.png", full_page=True)
        assert await fits_the_width(phone_lobby)

        await expect(watch_tavern.locator("#log li").first).to_be_visible()
        await watch_tavern.click("#pause")
        await hover_a_dwarf(watch_tavern, tavern, tavern_positions)
        await watch_tavern.screenshot(path=out / "watch-tavern.png")

        # The trolls against the house dwarf, until a troll can kill: select it, point at
        # its destination, so the picture shows moves with their kill counts.
        play = await visor.open("/play/thud")
        await play.fill("#nick", "Ann")
        await play.check("input[value=troll]")
        await play.click("#start")
        await expect(play.locator("#sim-id")).to_have_text(SIMULATION_ID)
        played = arena.matches[await play.locator("#sim-id").inner_text()]
        for _ in range(6):
            await expect(play.locator("#turn-status")).to_have_text("Your move (trolls).")
            moves = legal_moves(played.state)
            killing = [m for m in moves if m.killed]
            if killing:
                break
            await click_square(play, *moves[0].start)
            await click_square(play, *moves[0].end)
        move = max(killing or moves, key=lambda m: len(m.killed))
        await play.click("#peace")
        await click_square(play, *move.start)
        await hover_square(play, *move.end)
        await play.screenshot(path=out / "play-thud.png")
    finally:
        await waiting.close()
    for name in ("lobby", "phone-lobby", "watch-tavern", "watch-thud", "phone-watch", "play-thud"):
        assert (out / f"{name}.png").stat().st_size > 10_000


async def fits_the_width(page: Page) -> bool:
    """Nothing sticks out sideways (no horizontal scrolling on a phone)."""
    fits: bool = await page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )
    return fits


async def hover_a_dwarf(page: Page, simulation: Match, positions: dict[int, object]) -> None:
    """Hover one of the paused view's dwarves, where they stand at the turn the page shows
    (``positions``: the game's position after each turn; the game goes on meanwhile)."""
    shown = int((await page.locator("#turn").inner_text()).split(" of ")[0])
    state = simulation.codec.state_to_wire(positions[shown])
    for dwarf in state["team1"] + state["team2"]:
        await hover_square(page, dwarf["coords"]["x"], dwarf["coords"]["y"])
        if await page.locator("#tooltip").is_visible():
            return
    pytest.fail("no dwarf under the pointer")
