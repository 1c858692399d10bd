"""The /clients page in a real browser: Thud challenge clients validated and played from a tab.

Headless Chromium (Playwright) on a real arena and visor (the ``served`` fixture). The clients'
code runs in the page's Web Worker and plays through the arena's websocket, like a person's
seat; TCP bots and a spectator page watch the same games. Every wait is bounded.

``test_screenshot`` saves docs/screenshots/clients.png with ``VISOR_SCREENSHOTS=1`` in the
environment (otherwise into a temporary directory).
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from bots.house import play_house, replies
from bots.sdk import ArenaClient, JsonObject
from server.games.thud.game import THUD
from tests.browser import REPO, Pages, module_chromium, module_pages, module_served
from tests.conftest import Served

# One Chromium for the module's tests, on the module's event loop (tests.browser).
pytestmark = pytest.mark.asyncio(loop_scope="module")
chromium = module_chromium
served = module_served
browsing = module_pages

GAMES_MS = 45_000  # validation plays a whole game against each house player of the other side

# First killing move, else the first move of the first piece that can move.
KILLER = """module.exports = class {
  constructor(controller, utils) {
    this.controller = controller;
  }

  turn() {
    const kills = this.controller.killing_moves();
    if (kills.length > 0) {
      this.controller.select_space(kills[0].from.x, kills[0].from.y);
      this.controller.move(kills[0].to.x, kills[0].to.y);
      return;
    }
    for (const piece of this.controller.pieces()) {
      const space = this.controller.check_space(piece.x, piece.y);
      if (space && space.moves.length > 0) {
        this.controller.select_space(piece.x, piece.y);
        this.controller.move(space.moves[0].x, space.moves[0].y);
        return;
      }
    }
  }

  end_turn() {
  }
};
"""

DICE = KILLER.replace(
    "    const kills = this.controller.killing_moves();\n",
    "    const kills = this.controller.killing_moves();\n    if (Math.random() < 0) return;\n",
)

# A bare class, as entries were pasted into the challenge's editor; it throws on line 7.
THROWER = """class Thrower {
  constructor(controller) {
    this.controller = controller;
  }

  turn() {
    throw new Error('no idea what to do on ply ' + this.controller.turn());
  }

  end_turn() {
  }
}
"""

NO_END_TURN = """module.exports = class {
  constructor(controller) {
    this.controller = controller;
  }

  turn() {
  }
};
"""

IDLE = NO_END_TURN.replace("  turn() {\n  }\n", "  turn() {\n  }\n\n  end_turn() {\n  }\n")

ENDLESS = IDLE.replace("  turn() {\n  }\n", "  turn() {\n    while (true) {}\n  }\n")


# --- the browser ---------------------------------------------------------------------------


def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


async def set_source(page: Page, source: str) -> None:
    """Replace the editor's text, as a paste would (through CodeMirror's own API)."""
    await page.locator(".CodeMirror").evaluate(
        "(node, text) => node.CodeMirror.setValue(text)", source
    )
    await expect(page.locator("#source")).to_have_value(source)  # the editor keeps it saved


async def new_client(page: Page, name: str, source: str, side: str = "dwarf") -> None:
    """Add a client to the shelf and make it the one in the editor."""
    await page.click("#new-client")
    await page.fill("#client-name", name)
    await page.check(f"input[name=side][value={side}]")
    await set_source(page, source)
    await expect(page.locator("#client-list [aria-current=true]")).to_contain_text(name)


async def validate(page: Page, verdict: str) -> None:
    await page.click("#validate")
    await expect(page.locator("#verdict")).to_have_attribute(
        "data-verdict", verdict, timeout=GAMES_MS
    )


def check(name: str) -> tuple[str, str]:
    """Selectors of a check's item and its detail."""
    item = f'#checks > li[data-check="{name}"]'
    return item, f"{item} .check-detail"


async def expect_check(page: Page, name: str, state: str, detail: str | None = None) -> None:
    item, details = check(name)
    await expect(page.locator(item)).to_have_attribute("data-state", state)
    if detail is not None:
        await expect(page.locator(details)).to_contain_text(detail)


# --- validation ----------------------------------------------------------------------------


async def test_a_good_client_passes_every_check(browsing: Pages) -> None:
    page = await browsing.open("/clients")
    await new_client(page, "first_killer", KILLER)
    await page.click("#validate")
    # Progress while the games are played, then every check passes.
    await expect(page.locator("#progress-text")).to_contain_text("Playing 2 games: ply ")
    await expect(page.locator("#verdict")).to_have_attribute(
        "data-verdict", "pass", timeout=GAMES_MS
    )
    await expect(page.locator("#verdict")).to_have_text(
        "first_killer is valid: it passes every check."
    )
    for name in ("evaluates", "klass", "methods", "terms", "games"):
        await expect_check(page, name, "pass")
    await expect_check(page, "klass", "pass", "Constructed an anonymous class with the controller.")
    # One whole game against each house player that plays the trolls.
    games = page.locator("#games > li")
    await expect(games).to_have_count(2)
    assert await games.evaluate_all("items => items.map(i => i.dataset.opponent)") == [
        "troll",
        "random",
    ]
    for index in range(2):
        game = games.nth(index)
        await expect(game).to_have_attribute("data-state", "pass")
        await expect(game.locator(".game-verdict")).to_have_text(
            re.compile(r"^(won|lost|drew) \d+ – \d+ after \d+ plies \(.+\)$")
        )
        await expect(game.locator("a.game-watch")).to_have_attribute(
            "href", re.compile(r"^/watch/[0-9a-r]{7}$")
        )
    await expect(page.locator("#client-list [aria-current=true] .badge")).to_have_text("valid")
    await expect(page.locator("#save-status")).to_contain_text("This version passed validation.")
    # The board showed the last game.
    await expect(page.locator("#game-card")).to_be_visible()
    await expect(page.locator("#turn-status")).to_have_text("Game over.")

    # The trolls' side is validated against the house players that play the dwarfs.
    await page.check("input[name=side][value=troll]")
    assert await page.locator("#opponent option").evaluate_all(
        "options => options.map(o => o.value)"
    ) == ["dwarf", "random", ""]
    await expect(page.locator("#save-status")).to_contain_text(
        "Not validated since the last change"
    )


async def test_bad_clients_fail_and_say_why(browsing: Pages) -> None:
    page = await browsing.open("/clients")
    await new_client(page, "dice", DICE)
    await validate(page, "fail")
    await expect_check(page, "terms", "fail", "Math.random (line 8)")
    await expect_check(page, "evaluates", "pass")
    await expect_check(page, "games", "skip", "must pass the checks above first")
    await expect(page.locator("#client-list [aria-current=true] .badge")).to_have_text("fails")

    # An exception in turn(): the game fails, with the exception and its stack.
    await new_client(page, "thrower", THROWER)
    await validate(page, "fail")
    await expect_check(page, "klass", "pass", "Constructed class Thrower with the controller.")
    for name in ("evaluates", "methods", "terms"):
        await expect_check(page, name, "pass")
    await expect_check(page, "games", "fail")
    first = page.locator("#games > li").first
    await expect(first).to_have_attribute("data-state", "fail")
    await expect(first.locator(".game-verdict")).to_have_text(
        "thrower threw on ply 1: Error: no idea what to do on ply 1"
    )
    await expect(first.locator(".stack")).to_contain_text("at Thrower.turn (thrower.js:7:")
    # Only the client's frames: not those of the worker that called it.
    await expect(first.locator(".stack")).not_to_contain_text("clients-worker.js")
    await expect(page.locator("#result")).to_contain_text("It left the game")

    # No end_turn: the class check passes, the methods check says what is missing.
    await new_client(page, "forgetful", NO_END_TURN)
    await validate(page, "fail")
    await expect_check(page, "klass", "pass")
    await expect_check(page, "methods", "fail", "Instances have no end_turn method.")
    await expect_check(page, "games", "skip")

    # A syntax error: the evaluation fails with the exception.
    await set_source(page, "module.exports = class {")
    await validate(page, "fail")
    await expect_check(page, "evaluates", "fail", "SyntaxError")
    await expect_check(page, "klass", "skip")

    # A client that makes no move, and one that never returns (stopped after the time limit).
    await new_client(page, "idle", IDLE)
    await validate(page, "fail")
    await expect(page.locator("#games > li").first.locator(".game-verdict")).to_contain_text(
        "On ply 1, turn() returned without a move: the game stopped there"
    )
    await new_client(page, "endless", ENDLESS)
    await page.fill("#think-limit", "1")
    await validate(page, "fail")
    await expect(page.locator("#games > li").first.locator(".game-verdict")).to_have_text(
        "On ply 1, endless ran longer than 1 s (an endless loop?), so it was stopped."
    )


# --- the editor ----------------------------------------------------------------------------


async def test_the_editor_highlights_numbers_lines_and_scrolls_long_ones(
    browsing: Pages,
) -> None:
    """CodeMirror, served by the visor with its licence; nothing comes from elsewhere."""
    requested: list[str] = []
    page = await browsing.browser.new_page(viewport={"width": 1440, "height": 1000})
    page.on("request", lambda request: requested.append(request.url))
    page.on("pageerror", lambda error: browsing.problems.append(f"page error: {error}"))
    await page.goto(browsing.base_url + "/clients")
    editor = page.locator(".CodeMirror")
    await expect(editor).to_be_visible()
    # The starter, highlighted, with a number on every line (in the code shown, not in the
    # editor's hidden measuring copy of a line).
    code = editor.locator(".CodeMirror-code")
    await expect(code.locator(".cm-keyword").first).to_be_visible()
    await expect(code.locator(".cm-comment").first).to_contain_text("A Thud client")
    lines = await page.locator("#source").input_value()
    numbers = editor.locator(".CodeMirror-code .CodeMirror-linenumber")
    assert (await numbers.all_text_contents())[:5] == ["1", "2", "3", "4", "5"]
    # Typing: the client is saved as it changes; Tab indents by two spaces.
    await code.locator(".CodeMirror-line").first.click()
    await page.keyboard.press("Control+Home")
    await page.keyboard.press("Tab")
    await page.keyboard.type("// mine")
    await page.keyboard.press("Enter")
    await expect(page.locator("#source")).to_have_value("  // mine\n" + lines)
    await page.reload()
    await expect(page.locator("#source")).to_have_value("  // mine\n" + lines)
    # A long line scrolls inside the editor; the page keeps its width.
    await set_source(page, "const long = '" + "x" * 400 + "';\n")
    scroller = editor.locator(".CodeMirror-scroll")
    assert await scroller.evaluate("node => node.scrollWidth > node.clientWidth + 1000")
    assert await page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )
    # Escape leaves the editor (Tab indents inside it).
    await code.locator(".CodeMirror-line").first.click()
    await page.keyboard.press("Escape")
    await expect(page.locator("#validate")).to_be_focused()
    # The controller's API beside the editor, on its left.
    api = page.locator("#api")
    await expect(api).to_be_visible()
    for member in ("killing_moves()", "space_info(x, y)", "select_space(x, y)*", "move(x, y)*"):
        await expect(api.locator("dt", has_text=member).first).to_be_visible()
    editor_box, api_box = await editor.bounding_box(), await api.bounding_box()
    assert editor_box and api_box and api_box["x"] + api_box["width"] <= editor_box["x"]
    # Everything from the visor itself; the vendored editor's licence is served with it.
    assert requested and all(url.startswith(browsing.base_url) for url in requested)
    assert any(url.endswith("/static/vendor/codemirror/codemirror.js") for url in requested)
    licence = await page.request.get(browsing.base_url + "/static/vendor/codemirror/LICENSE")
    assert licence.ok and "MIT License" in await licence.text()


async def test_the_editor_takes_the_width_the_screen_has(browsing: Pages) -> None:
    """As in CodinGame's IDE, the code gets what the other columns leave: the middle of a
    1280 px screen, and nearly every pixel more of a wider one, past 1920 too."""
    boxes = {}
    for width, height in ((1280, 800), (1920, 1080), (2560, 1440)):
        page = await browsing.open("/clients", width, height)
        await expect(page.locator(".CodeMirror-code .cm-keyword").first).to_be_visible()
        boxes[width] = [
            await page.locator(selector).bounding_box()
            for selector in ("#api", ".CodeMirror", "#results")
        ]
        await page.close()
    widths = {width: editor["width"] for width, (_, editor, _) in boxes.items() if editor}
    assert widths[1280] >= 0.4 * 1280
    assert widths[1920] - widths[1280] >= 0.95 * (1920 - 1280)
    assert widths[2560] - widths[1920] >= 0.95 * (2560 - 1920)
    # The API on its left, the checks and games on its right, all on the screen.
    for width, (api, editor, results) in boxes.items():
        assert api and editor and results
        assert api["x"] >= 0 and api["x"] + api["width"] <= editor["x"]
        assert editor["x"] + editor["width"] <= results["x"]
        assert results["x"] + results["width"] <= width


# --- playing -------------------------------------------------------------------------------


async def test_the_starter_beats_the_house_random_player_to_the_last_ply(
    served: Served, browsing: Pages
) -> None:
    """The client every first visit gets plays a sensible game; the panel shows every ply,
    the last one included, and labels the seat as the client's."""
    page = await browsing.open("/clients")
    await expect(page.locator("#client-list li")).to_have_count(1)
    await page.select_option("#opponent", "random")
    await page.click("#run")
    await expect(page.locator("#players .seat-dwarf .badge").first).to_have_text("client")
    await expect(page.locator("#result")).to_contain_text(" won.", timeout=GAMES_MS)
    simulation_id = await page.locator("#sim-id").text_content()
    assert simulation_id
    await served.records.flush()
    record = await asyncio.to_thread(served.records.game, simulation_id)
    assert record is not None and record["result"]["winner"] == "dwarf"
    assert [p["kind"] for p in record["players"]] == ["client", "house"]
    plies = record["turnCount"]
    await expect(page.locator("#ply")).to_have_text(f"{plies} of 500")
    await expect(page.locator("#log li").first.locator(".log-turn")).to_have_text(str(plies))
    # Each of the client's moves named the ply it answered: the dwarfs', the odd ones.
    moves = browsing.messages_sent(page, "move")
    assert [move["turn"] for move in moves] == list(range(1, plies + 1, 2))


async def test_the_starter_as_the_dwarfs_holds_out_against_the_house_troll(
    served: Served, browsing: Pages
) -> None:
    """The starter's dwarfs look a move ahead: against the house troll (which beats the house
    dwarf 32 to 0) they keep dwarfs to the last ply and take trolls. Both players are
    deterministic, the troll by its seed (measured over more seeds: bench/clients_starter.py)."""
    page = await browsing.open("/clients")
    await expect(page.locator("#client-list li")).to_have_count(1)
    await page.select_option("#opponent", "")  # the house troll joins by id, over TCP
    await page.click("#run")
    await expect(page.locator("#wait-bot")).to_be_visible()
    simulation_id = await page.locator("#wait-id").text_content()
    assert simulation_id
    final = await asyncio.wait_for(
        play_house(
            THUD.name,
            THUD.house_players["troll"],
            "127.0.0.1",
            served.tcp_port,
            simulation_id,
            16,
            "troll",
        ),
        GAMES_MS / 1000,
    )
    result = final["result"]
    assert result["reason"] == "Timeout"  # the 500th ply, with dwarfs left
    assert result["score"]["dwarfs"] >= 10 and result["score"]["trolls"] < 32
    await expect(page.locator("#result")).to_contain_text(result["reason"])
    # The move list, newest first: the game's end on top, then the 500th ply, ... the first.
    entries = page.locator("#log li")
    await expect(entries.first).to_have_text("500Game over: Timeout")
    await expect(entries.nth(1)).to_have_text(re.compile(r"^500Trolls: \[\d+, \d+\] → "))
    turns = [int(turn) for turn in await page.locator("#log li .log-turn").all_text_contents()]
    assert turns == sorted(turns, reverse=True)
    assert set(turns) == set(range(1, 501))  # every ply, the first included


async def test_a_client_plays_a_seat_that_a_spectator_watches(
    served: Served, browsing: Pages
) -> None:
    page = await browsing.open("/clients")
    await new_client(page, "seat_killer", KILLER)
    await page.select_option("#opponent", "")  # wait for a bot to join by id
    await page.click("#run")
    await expect(page.locator("#wait-bot")).to_be_visible()
    simulation_id = await page.locator("#wait-id").text_content()
    assert simulation_id is not None and simulation_id in served.arena.matches
    await expect(page.locator("#wait-snippet")).to_contain_text('"side":"troll"')
    await expect(page.locator("#watch-link")).to_have_attribute("href", f"/watch/{simulation_id}")

    watcher = await browsing.open(f"/watch/{simulation_id}")
    await expect(watcher.locator("#players .seat-dwarf .nick")).to_have_text("seat_killer")
    # The house troll joins over TCP, as any bot would.
    final = await asyncio.wait_for(
        play_house(
            THUD.name,
            THUD.house_players["troll"],
            "127.0.0.1",
            served.tcp_port,
            simulation_id,
            5,
            "troll",
        ),
        GAMES_MS / 1000,
    )
    result = final["result"]
    score = f"{result['score']['dwarfs']} – {result['score']['trolls']}"
    word = {"win-game": "lost", "loss-game": "won", "draw-game": "drew"}[final["type"]]
    await expect(page.locator("#result")).to_contain_text(f"seat_killer {word}.")
    await expect(page.locator("#result")).to_contain_text(result["reason"])
    await expect(page.locator("#result")).to_contain_text(f"Dwarfs – trolls: {score}")
    await expect(page.locator("#turn-status")).to_have_text("Game over.")
    await expect(page.locator("#log li").first).to_be_visible()
    await expect(page.locator("#run")).to_be_enabled()
    # The spectator saw it to the end.
    await expect(watcher.locator("#result")).to_contain_text(result["reason"])
    await expect(watcher.locator("#log li").first).to_be_visible()


async def test_clients_are_kept_in_the_browser_and_download_as_files(
    browsing: Pages,
) -> None:
    page = await browsing.open("/clients")
    # A first visit offers the starter client.
    await expect(page.locator("#client-list li")).to_have_count(1)
    await expect(page.locator("#source")).to_have_value(re.compile(r"module\.exports = class"))
    source = "// kept in localStorage\n" + KILLER
    await new_client(page, "keeper", source, side="troll")
    await page.reload()
    await expect(page.locator("#client-list li")).to_have_count(2)
    await expect(page.locator("#client-list [aria-current=true]")).to_contain_text("keeper")
    await expect(page.locator("#client-name")).to_have_value("keeper")
    await expect(page.locator("#source")).to_have_value(source)
    await expect(page.locator("input[name=side][value=troll]")).to_be_checked()

    # Renaming keeps names unique; a download is the source, named after the client.
    first = page.locator("#client-list button").first
    await first.click()
    await page.fill("#client-name", "keeper")
    await expect(page.locator("#client-list button")).to_have_text(["keeper_2", "keeper"])
    await page.locator("#client-list button").nth(1).click()
    async with page.expect_download() as info:
        await page.click("#download-client")
    download = await info.value
    assert download.suggested_filename == "keeper.js"
    path = await download.path()
    assert read_text(path) == source

    # Delete asks for a second click, then the client is gone for good.
    await page.click("#delete-client")
    await expect(page.locator("#delete-client")).to_have_text("Delete? Click again")
    await page.click("#delete-client")
    await expect(page.locator("#client-list button")).to_have_text(["keeper_2"])
    await page.reload()
    await expect(page.locator("#client-list button")).to_have_text(["keeper_2"])


async def test_the_worker_runs_client_code_without_the_network(browsing: Pages) -> None:
    """The worker's own policy allows eval for the client, and no requests; the page's stays."""
    page = await browsing.open("/clients")
    probe = KILLER.replace(
        "    this.controller = controller;\n",
        "    this.controller = controller;\n"
        "    console.log('typeof document: ' + typeof document + ', postMessage: '"
        " + typeof postMessage);\n"
        "    fetch('/api/games').then(() => console.log('fetched'),"
        " () => console.log('no network'));\n",
    )
    await new_client(page, "probe", probe)
    await page.click("#run")  # against the house troll
    console = page.locator("#console")
    await expect(console).to_contain_text("typeof document: undefined, postMessage: undefined")
    await expect(console).to_contain_text("no network")
    await page.click("#stop")
    await expect(page.locator("#result")).to_contain_text("Stopped.")
    assert "fetched" not in (await console.text_content() or "")
    # Only the worker's script may evaluate code; the pages keep their policy.
    worker = await page.request.get(f"{browsing.base_url}/games/thud/clients-worker.js")
    worker_policy = worker.headers["content-security-policy"]
    assert "'unsafe-eval'" in worker_policy
    assert "connect-src 'none'" in worker_policy
    for path in ("/clients", "/games/thud/clients.js", "/games/thud/thud-controller.js"):
        response = await page.request.get(browsing.base_url + path)
        assert "'unsafe-eval'" not in response.headers["content-security-policy"]
        assert "script-src 'self';" in response.headers["content-security-policy"]


# --- the screenshot for the README ---------------------------------------------------------


async def slow_troll(port: int, simulation_id: str, delay_s: float) -> JsonObject:
    """The house troll over TCP, thinking ``delay_s`` per turn so the picture is mid-game."""
    player = THUD.house_players["troll"]
    async with await ArenaClient.connect("127.0.0.1", port) as client:
        info = await client.join(simulation_id, nick="Grag", game="thud", side="troll")
        reply = replies(player, info, 3)

        async def on_turn(message: JsonObject) -> JsonObject:
            await asyncio.sleep(delay_s)
            return reply(message)

        return await client.play(on_turn)


async def test_screenshot(served: Served, browsing: Pages, tmp_path: Path) -> None:
    out = REPO / "docs" / "screenshots" if os.environ.get("VISOR_SCREENSHOTS") else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    page = await browsing.open("/clients", width=1440, height=1000)
    await new_client(page, "hurler", KILLER)
    await validate(page, "pass")
    await page.select_option("#opponent", "")
    await page.click("#run")
    await expect(page.locator("#wait-bot")).to_be_visible()
    simulation_id = await page.locator("#wait-id").text_content()
    assert simulation_id is not None
    bot = asyncio.create_task(slow_troll(served.tcp_port, simulation_id, 0.12))
    try:
        await expect(page.locator("#ply")).to_have_text(re.compile(r"^(1[6-9]|[2-9]\d) of 500$"))
        await page.locator("#source").evaluate("node => node.scrollTo(0, 0)")
        await page.mouse.move(0, 0)
        await page.screenshot(path=out / "clients.png")
        await page.click("#stop")
        await expect(page.locator("#result")).to_contain_text("Stopped.")
    finally:
        bot.cancel()
    assert (out / "clients.png").stat().st_size > 10_000
