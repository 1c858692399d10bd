"""The visor's record pages in a real browser: replays, the league and the matches list.

Headless Chromium (Playwright) against a real arena and visor (the ``served`` fixture): games are
played by house players and tournaments by real bot processes (house bots and a broken one),
recorded in ``served.records``, then looked at through the pages. Every wait is bounded.

The replay checks read the canvas itself: the board publishes its square mapping
(``data-cell-size``, ``data-origin-x``, ``data-origin-y``) and the frame it has finished drawing
(``data-frame``), and each piece is told by the colour of a pixel inside it, so "the board shows
turn N" means every piece of the recorded frame is where the frame says, and nothing else is.

With ``VISOR_SCREENSHOTS=1`` the tests save replay-tavern, replay-thud, league and matches
screenshots under docs/screenshots/ (otherwise into a temporary directory).
"""

from __future__ import annotations

import asyncio
import io
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from PIL import GifImagePlugin, Image
from playwright.async_api import Page, expect

from server.config import ArenaConfig
from server.games.picture import CELL, HEADER, MARGIN
from server.league import head_to_head, ratings, tables
from server.match import Match
from server.match_options import MatchOptions
from server.tournament.runner import TournamentRunner
from server.tournament.spec import spec_from_mapping
from tests.browser import (
    REPO,
    Pages,
    canvas_pixels,
    module_chromium,
    module_pages,
    module_served,
    square_point,
)
from tests.conftest import Served
from tests.test_tournament import broken, house
from visor.house_games import seat_house_player
from visor.replay_image import MAX_FRAMES

# One Chromium for the module's tests, on the module's event loop (tests.browser).
pytestmark = pytest.mark.asyncio(loop_scope="module")
chromium = module_chromium
served = module_served
pages = module_pages

GAME_TIMEOUT_S = 30
TAVERN_SEED = 5
THUD_SEED = 8
# Chrome reports an API answer of 404 or 409 as a console error; pages that expect one say so.

# The colours of the pieces on the canvas (each game's web/view.js COLOURS).
COLOURS = {
    "team1": (0xD9, 0x57, 0x3B),
    "team2": (0xE8, 0xB6, 0x3C),
    "dwarf": (0x4A, 0x86, 0xE0),
    "troll": (0x5A, 0xA8, 0x45),
}
COLOUR_TOLERANCE = 14
STEP_ARROW = (0xF7, 0xA4, 0x8F)  # team1's step (server/games/tavern/web/view.js ARROWS)
# Where, in cells from a square's centre, a pixel shows only the piece's own colour: beside the
# Tavern dwarf's helmet and beard, below the Thud dwarf's helmet (and clear of a kill's cross).
PIECE_PIXEL = {"tavern": (0.25, 0.0), "thud": (0.0, 0.15)}

THUD_CUP: dict[str, Any] = {
    "name": "web cup",
    "game": "thud",
    "seed": 11,
    "parallel": 4,
    "limits": {"turn_timeout_ms": 400, "startup_ms": 3000, "cpu_seconds": 60, "memory_mb": 1024},
    "bots": [
        house("thud", "dwarf", "dwarf"),
        broken("crash", "dwarf"),
        house("thud", "troll", "troll"),
        broken("silent", "troll"),
    ],
}
TAVERN_CUP: dict[str, Any] = {
    "name": "tavern cup",
    "game": "tavern",
    "seed": 2,
    "parallel": 2,
    "limits": {"turn_timeout_ms": 2000, "cpu_seconds": 60, "memory_mb": 1024},
    "bots": [house("tavern", "pusher"), house("tavern", "wanderer")],
}


# --- the browser ---------------------------------------------------------------------------


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """Where screenshots go: docs/screenshots with VISOR_SCREENSHOTS=1, else a scratch folder."""
    out = REPO / "docs" / "screenshots" if os.environ.get("VISOR_SCREENSHOTS") else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    return out


# --- games and records ---------------------------------------------------------------------


async def house_game(served: Served, game: str, players: list[str], seed: int) -> Match:
    """Two house players, as fast as they go, with a fixed seed; returns once it is recorded."""
    simulation = served.arena.open(game, MatchOptions(seed=seed))
    for name, seat_name in zip(players, simulation.codec.seat_names, strict=True):
        seat_house_player(simulation, name, seat_name, 0.0)
    async with asyncio.timeout(GAME_TIMEOUT_S):
        await simulation.done.wait()
    await served.records.flush()
    return simulation


async def get_json(served: Served, path: str) -> Any:
    async with (
        aiohttp.ClientSession() as session,
        session.get(served.url + path) as response,
    ):
        assert response.status == 200, await response.text()
        return await response.json()


async def get_bytes(served: Served, path: str, content_type: str) -> bytes:
    async with (
        aiohttp.ClientSession() as session,
        session.get(served.url + path) as response,
    ):
        assert response.status == 200, await response.text()
        assert response.content_type == content_type
        return await response.read()


async def tournament(served: Served, raw: dict[str, Any]) -> str:
    spec = spec_from_mapping(raw, REPO)
    async with asyncio.timeout(120):
        await TournamentRunner(spec, ArenaConfig(), served.records, io.StringIO()).run()
    return spec.id


# --- what the replay page shows ------------------------------------------------------------


async def shows_frame(page: Page, index: int) -> None:
    """Wait until the board has finished drawing frame ``index``."""
    await expect(page.locator("#board")).to_have_attribute("data-frame", str(index))


async def pixel_colours(
    page: Page, points: list[tuple[float, float]]
) -> list[tuple[int, int, int]]:
    """The canvas's colour at each point, given in cells from the grid's top-left corner."""
    colours: list[list[int]] = await page.evaluate(
        """(points) => {
            const canvas = document.getElementById('board');
            const ctx = canvas.getContext('2d');
            const data = canvas.dataset;
            const cell = Number(data.cellSize);
            const ratio = canvas.width / canvas.getBoundingClientRect().width;
            return points.map(([x, y]) => {
                const px = Math.round((Number(data.originX) + x * cell) * ratio);
                const py = Math.round((Number(data.originY) + y * cell) * ratio);
                return Array.from(ctx.getImageData(px, py, 1, 1).data.slice(0, 3));
            });
        }""",
        points,
    )
    return [(c[0], c[1], c[2]) for c in colours]


def piece_of(colour: tuple[int, int, int]) -> str | None:
    for name, reference in COLOURS.items():
        if all(abs(a - b) <= COLOUR_TOLERANCE for a, b in zip(colour, reference, strict=True)):
            return name
    return None


async def pieces_on_the_board(
    page: Page, replay: dict[str, Any]
) -> dict[str, set[tuple[int, int]]]:
    """Every square whose pixel has a piece's colour, by piece (team1/team2, dwarf/troll)."""
    board = replay["board"]
    if replay["game"] == "thud":
        squares = [(x, y) for x, y in board["squares"]]
    else:
        squares = [(x, y) for y in range(board["height"]) for x in range(board["width"])]
    dx, dy = PIECE_PIXEL[replay["game"]]
    colours = await pixel_colours(page, [(x + 0.5 + dx, y + 0.5 + dy) for x, y in squares])
    found: dict[str, set[tuple[int, int]]] = {name: set() for name in COLOURS}
    for square, colour in zip(squares, colours, strict=True):
        piece = piece_of(colour)
        if piece is not None:
            found[piece].add(square)
    return {name: where for name, where in found.items() if where or name in replay["seats"]}


def pieces_in_frame(replay: dict[str, Any], index: int) -> dict[str, set[tuple[int, int]]]:
    state = replay["frames"][index]["state"]
    if replay["game"] == "thud":
        return {
            "dwarf": {(x, y) for x, y in state["dwarfs"]},
            "troll": {(x, y) for x, y in state["trolls"]},
        }
    return {
        team: {(d["coords"]["x"], d["coords"]["y"]) for d in state[team]}
        for team in ("team1", "team2")
    }


async def board_matches_frame(page: Page, replay: dict[str, Any], index: int) -> None:
    await shows_frame(page, index)
    await page.mouse.move(0, 0)  # no hover ring or tooltip over the pieces
    assert await pieces_on_the_board(page, replay) == pieces_in_frame(replay, index)


async def seek(page: Page, index: int) -> None:
    await page.locator("#seek").fill(str(index))
    await shows_frame(page, index)


# --- replays -------------------------------------------------------------------------------


async def test_the_replay_of_a_tavern_game_steps_seeks_and_ends_with_the_result(
    served: Served, pages: Pages, shots: Path
) -> None:
    simulation = await house_game(served, "tavern", ["pusher", "wanderer"], TAVERN_SEED)
    replay = await get_json(served, f"/api/games/{simulation.id}/replay")
    frames = replay["frames"]
    last = len(frames) - 1
    assert replay["status"] == "finished" and last == simulation.turn_count

    # The lobby's finished row links to the replay.
    lobby = await pages.open("/")
    row = lobby.locator(f'tr[data-simulation-id="{simulation.id}"]')
    await expect(row.locator(".row-action a")).to_have_text("Replay")
    await expect(row.locator(".row-action a")).to_have_attribute("href", f"/replay/{simulation.id}")
    await row.locator(".row-action a").click()
    await lobby.wait_for_url(f"**/replay/{simulation.id}")
    page = lobby

    await expect(page.locator("#game-title")).to_have_text("Dwarven Tavern replay")
    await expect(page.locator("#players .seat-team1 .nick")).to_have_text("house pusher")
    await expect(page.locator("#players .seat-team2 .nick")).to_have_text("house wanderer")
    await board_matches_frame(page, replay, 0)
    await expect(page.locator("#result")).to_be_hidden()
    start = await canvas_pixels(page)

    # A step forward: the pieces move, and the panel follows.
    await page.click("#forward")
    await board_matches_frame(page, replay, 1)
    assert await canvas_pixels(page) != start
    await expect(page.locator("#turn")).to_have_text(f"1 of {last}")
    await expect(page.locator("#events")).to_contain_text("house pusher (Team 1) played")
    await expect(page.locator("#events")).to_contain_text("moves north")
    # The turn drawn as arrows under the pieces: a step in a light tint of the team's colour.
    step = next(e for e in frames[1]["events"] if e.get("kind") == "move" and e["from"] != e["to"])
    await expect(page.locator("#board")).to_have_attribute("data-arrows", re.compile(r"^[1-9]"))
    middle = (
        (step["from"]["x"] + step["to"]["x"]) / 2 + 0.5,
        (step["from"]["y"] + step["to"]["y"]) / 2 + 0.5,
    )
    (arrow,) = await pixel_colours(page, [middle])
    assert all(abs(a - b) <= 30 for a, b in zip(arrow, STEP_ARROW, strict=True)), arrow
    await expect(page).to_have_url(re.compile(r"\?turn=1$"))
    await expect(page.locator("#turn-link")).to_have_attribute(
        "href", f"/replay/{simulation.id}?turn=1"
    )

    # Every turn listed, the one shown marked; points marked on the seek bar.
    moves = page.locator("#moves li")
    await expect(moves).to_have_count(last + 1)
    await expect(moves.nth(1).locator("button")).to_have_attribute("aria-current", "step")
    await expect(moves.nth(1)).to_contain_text("house pusher (Team 1): ")
    points = [i for i, f in enumerate(frames) if any(e.get("kind") == "point" for e in f["events"])]
    marks = page.locator("#seek-marks .seek-mark")
    await expect(marks).to_have_count(len(points))
    await expect(marks.first).to_have_attribute(
        "title", re.compile(rf"^Point for .+, turn {points[0]}$")
    )
    await marks.first.click()
    await board_matches_frame(page, replay, points[0])
    await moves.nth(2).locator("button").click()
    await board_matches_frame(page, replay, 2)
    await expect(page.locator("#position")).to_have_text(f"2 / {last}")
    await page.evaluate("window.scrollTo(0, 0)")  # the click scrolled the list into view

    # Seeking to the turn of the first point: the score and the board are that frame's.
    scored = next(i for i, f in enumerate(frames) if sum(f["scores"].values()) > 0)
    before = await canvas_pixels(page)
    await seek(page, scored)
    assert await canvas_pixels(page) != before
    await board_matches_frame(page, replay, scored)
    for team in ("team1", "team2"):
        await expect(page.locator(f"#players .seat-{team} .seat-score")).to_have_text(
            str(frames[scored]["scores"][team])
        )
    await expect(page.locator("#events")).to_contain_text("Point for")
    # Back one turn with the keyboard: the point is not scored yet.
    await page.keyboard.press("ArrowLeft")
    await board_matches_frame(page, replay, scored - 1)
    await expect(page.locator("#position")).to_have_text(f"{scored - 1} / {last}")
    await page.locator("#seek").blur()
    dwarf = frames[scored - 1]["state"]["team1"][0]
    await page.mouse.move(*await square_point(page, dwarf["coords"]["x"], dwarf["coords"]["y"]))
    await expect(page.locator("#tooltip strong")).to_have_text(dwarf["name"])
    await page.screenshot(path=shots / "replay-tavern.png")

    # Playing runs through the turns at the chosen speed, and pausing stops it.
    await page.locator("#speed").fill("5")
    await expect(page.locator("#speed-value")).to_have_text("16 turns/s")
    await page.click("#play")
    await expect(page.locator("#play")).to_have_attribute("aria-pressed", "true")
    await expect(page.locator("#board")).not_to_have_attribute("data-frame", str(scored - 1))
    await page.click("#play")
    await expect(page.locator("#play")).to_have_attribute("aria-pressed", "false")
    paused = int(await page.locator("#seek").input_value())
    assert scored - 1 < paused < last
    await board_matches_frame(page, replay, paused)
    await asyncio.sleep(0.2)
    assert await page.locator("#board").get_attribute("data-frame") == str(paused)

    # The slider reaches the last turn: the result and its reason.
    assert await page.locator("#seek").get_attribute("max") == str(last)
    await seek(page, last)
    await board_matches_frame(page, replay, last)
    result = page.locator("#result")
    await expect(result).to_contain_text("house pusher (Team 1) won · Points to win reached")
    score = replay["result"]["score"]
    await expect(result).to_contain_text(f"Final score {score['team1']} – {score['team2']}")
    await expect(page.locator("#banner")).to_contain_text("Points to win reached")
    await expect(page.locator("#forward")).to_be_disabled()

    # The record, as a download, and the game as an animated GIF of every position.
    download = page.locator("#download")
    await expect(download).to_have_attribute("href", f"/api/games/{simulation.id}")
    record = await get_json(served, f"/api/games/{simulation.id}")
    assert len(record["turns"]) == last
    gif_path = f"/api/games/{simulation.id}/replay.gif"
    await expect(page.locator("#download-gif")).to_have_attribute("href", gif_path)
    gif = await get_bytes(served, gif_path, "image/gif")
    with Image.open(io.BytesIO(gif)) as image:
        assert isinstance(image, GifImagePlugin.GifImageFile)
        assert image.n_frames == last + 1 <= MAX_FRAMES
        image.seek(last)  # the final position: each dwarf on its square, in its team's colour
        rgb = image.convert("RGB")
        for team in ("team1", "team2"):
            for dwarf in frames[last]["state"][team]:
                x, y = dwarf["coords"]["x"], dwarf["coords"]["y"]
                centre = (MARGIN + x * CELL + CELL // 2, HEADER + y * CELL + CELL // 2)
                assert rgb.getpixel(centre) == COLOURS[team]
    assert await get_bytes(served, gif_path, "image/gif") == gif  # drawn once, then kept
    # The turn shown is in the address (?turn=N): a reload comes back to it, and a link to a
    # turn opens there.
    await page.keyboard.press("Home")
    await page.keyboard.press("ArrowRight")
    await shows_frame(page, 1)
    await page.reload()
    await board_matches_frame(page, replay, 1)
    await page.goto(f"{served.url}/replay/{simulation.id}?turn={scored}")
    await board_matches_frame(page, replay, scored)


async def test_the_replay_of_a_thud_game_shows_each_recorded_position(
    served: Served, pages: Pages, shots: Path
) -> None:
    simulation = await house_game(served, "thud", ["dwarf", "troll"], THUD_SEED)
    replay = await get_json(served, f"/api/games/{simulation.id}/replay")
    frames = replay["frames"]
    last = len(frames) - 1
    page = await pages.open(f"/replay/{simulation.id}", connected=False)
    await expect(page.locator("#game-title")).to_have_text("Thud replay")
    await board_matches_frame(page, replay, 0)
    await expect(page.locator("#pieces")).to_have_text("32 dwarfs · 8 trolls")
    start = await canvas_pixels(page)

    await page.click("#forward")
    await board_matches_frame(page, replay, 1)
    assert await canvas_pixels(page) != start
    move = frames[1]["state"]["previousMove"]
    await expect(page.locator("#events")).to_contain_text(
        f"Dwarfs: [{move['from'][0]}, {move['from'][1]}] → [{move['to'][0]}, {move['to'][1]}]"
    )

    # The first kill: the piece counts and the scores are the recorded frame's.
    kill = next(
        i
        for i, f in enumerate(frames)
        if f["state"]["previousMove"] and f["state"]["previousMove"]["killed"]
    )
    before = await canvas_pixels(page)
    await seek(page, kill)
    assert await canvas_pixels(page) != before
    await board_matches_frame(page, replay, kill)
    state = frames[kill]["state"]
    await expect(page.locator("#pieces")).to_have_text(
        f"{len(state['dwarfs'])} dwarfs · {len(state['trolls'])} trolls"
    )
    for seat, key in (("dwarf", "dwarfs"), ("troll", "trolls")):
        await expect(page.locator(f"#players .seat-{seat} .seat-score")).to_have_text(
            str(frames[kill]["scores"][key])
        )
    await expect(page.locator("#events")).to_contain_text("kills")
    kills = [
        i
        for i, f in enumerate(frames)
        if f["state"]["previousMove"] and f["state"]["previousMove"]["killed"]
    ]
    await expect(page.locator("#seek-marks .seek-mark")).to_have_count(len(kills))
    await expect(page.locator("#moves-title")).to_have_text("Every ply")
    await expect(page.locator("#moves li").nth(kill)).to_contain_text(" kills ")
    await page.mouse.move(*await square_point(page, *state["trolls"][0]))
    await expect(page.locator("#tooltip")).to_contain_text("Troll")
    await page.screenshot(path=shots / "replay-thud.png")

    # Each side's think time per turn, drawn from the records' timing (issue 34, item 4).
    await expect(page.locator("#think-chart")).to_be_visible()
    for seat in ("dwarf", "troll"):
        timed = [f for f in frames if f["seat"] == seat and f["timing"] is not None]
        assert timed and all(f["timing"][3] <= f["timing"][0] for f in timed)  # think, reply
        line = page.locator(f"#think-svg .seat-{seat} polyline")
        await expect(line).to_have_attribute("data-points", str(len(timed)))
        await expect(page.locator(f"#think-legend .seat-{seat}")).to_contain_text("mean")

    await page.click("#last")
    await board_matches_frame(page, replay, last)
    await expect(page.locator("#position")).to_have_text(f"{last} / {last}")
    await expect(page.locator("#result")).to_contain_text(replay["result"]["reason"])
    await page.click("#back")
    await board_matches_frame(page, replay, last - 1)
    await expect(page.locator("#result")).to_be_hidden()


async def test_an_unknown_id_or_a_record_that_does_not_replay_shows_why(
    served: Served, pages: Pages
) -> None:
    pages.http_errors_expected = True
    page = await pages.open("/replay/nope123", connected=False)
    await expect(page.locator("#missing-title")).to_have_text("No recorded game with this id")
    await expect(page.locator("#missing-detail")).to_contain_text("nope123")
    await expect(page.locator("#replay")).to_be_hidden()

    # A record whose first move the rules reject (off the board) cannot be replayed.
    simulation = await house_game(served, "thud", ["dwarf", "troll"], THUD_SEED)
    bad = '{"move": {"from": [0, 0], "to": [0, 1]}, "declare": false}'
    await served.records.flush()
    with sqlite3.connect(served.records.path) as db:
        db.execute(
            "UPDATE turn_chunks SET turns = json_replace(turns, '$[0][1]', json(?)) "
            "WHERE game_id = ? AND first_number = 1",
            (bad, simulation.id),
        )
    await page.goto(f"{served.url}/replay/{simulation.id}")
    await expect(page.locator("#missing-title")).to_have_text("This record does not replay")
    await expect(page.locator("#missing-record")).to_have_attribute(
        "href", f"/api/games/{simulation.id}"
    )
    # The animated image says the same, as JSON errors.
    async with aiohttp.ClientSession() as session:
        for game_id, status in (("nope123", 404), (simulation.id, 409)):
            async with session.get(f"{served.url}/api/games/{game_id}/replay.gif") as response:
                assert response.status == status
                assert "error" in await response.json()


# --- tournaments: the league and the matches ------------------------------------------------


async def test_the_league_and_the_matches_of_tournaments(
    served: Served, pages: Pages, shots: Path
) -> None:
    thud_id, tavern_id = await asyncio.gather(
        tournament(served, THUD_CUP), tournament(served, TAVERN_CUP)
    )
    records = served.records
    newest = (await asyncio.to_thread(records.tournaments))[0]["id"]
    thud_results = await asyncio.to_thread(records.results, thud_id)
    expected = tables(thud_results)
    assert set(expected) == {"dwarf", "troll"}

    page = await pages.open("/league", connected=False)
    await expect(page.locator("#tournament")).to_have_value(newest)
    await page.select_option("#tournament", thud_id)
    await expect(page).to_have_url(re.compile(rf"/league\?tournament={thud_id}$"))
    await expect(page.locator("#tables")).to_have_attribute("data-count", "2")
    for table, standings in expected.items():
        rows = page.locator(f'table[data-table="{table}"] tbody tr')
        await expect(rows).to_have_count(len(standings))
        for index, standing in enumerate(standings):
            row = rows.nth(index)
            await expect(row.locator('[data-col="bot"]')).to_have_text(standing.bot)
            for column in ("played", "wins", "losses", "draws", "score", "crashes", "timeouts"):
                await expect(row.locator(f'[data-col="{column}"]')).to_have_text(
                    str(getattr(standing, column))
                )
    # The crashing bot's crashes and the silent one's timed-out turns are counted.
    assert any(s.crashes for s in expected["dwarf"]) and any(s.timeouts for s in expected["troll"])
    # Head to head: each pair's record, from each side.
    meetings = head_to_head(thud_results)
    assert meetings
    for meeting in meetings:
        (a, b), (wins_a, wins_b) = meeting.bots, meeting.wins
        for bot, other, record in (
            (a, b, f"{wins_a}–{meeting.draws}–{wins_b}"),
            (b, a, f"{wins_b}–{meeting.draws}–{wins_a}"),
        ):
            cell = page.locator(f'#h2h-body tr[data-bot="{bot}"] td[data-against="{other}"]')
            await expect(cell).to_have_text(record)
    rated = ratings(thud_results)
    rating_rows = page.locator("#ratings-body tr")
    await expect(rating_rows).to_have_count(len(rated))
    for index, rating in enumerate(rated):
        await expect(rating_rows.nth(index).locator(".bot-button")).to_have_text(rating.bot)
        await expect(rating_rows.nth(index).locator('[data-col="rating"]')).to_have_text(
            f"{rating.mu:.2f} ± {rating.sigma:.2f}"
        )

    # A bot's games: a list of replays, and the way to the matches list.
    dwarf = next(standing for standing in expected["dwarf"] if standing.bot == "house dwarf")
    await page.locator(f'table[data-table="dwarf"] tr[data-bot="{dwarf.bot}"] .bot-button').click()
    panel = page.locator("#bot-games")
    await expect(panel.locator("#bot-title")).to_have_text(f"{dwarf.bot} as dwarfs")
    links = panel.locator("#bot-list a")
    await expect(links).to_have_count(len(dwarf.games))
    assert [await link.get_attribute("href") for link in await links.all()] == [
        f"/replay/{game_id}" for game_id in dwarf.games
    ]
    await expect(links.first).to_contain_text("vs")
    await page.screenshot(path=shots / "league.png", full_page=True)

    # Dwarven Tavern keeps a single table; every game between named bots shows all three.
    await page.select_option("#tournament", tavern_id)
    await expect(page.locator("#tables")).to_have_attribute("data-count", "1")
    tavern_table = tables(await asyncio.to_thread(records.results, tavern_id))["tavern"]
    tavern_rows = page.locator('table[data-table="tavern"] tbody tr')
    await expect(tavern_rows).to_have_count(len(tavern_table))
    for index, standing in enumerate(tavern_table):
        await expect(tavern_rows.nth(index).locator('[data-col="score"]')).to_have_text(
            str(standing.score)
        )
    await page.select_option("#tournament", "")
    await expect(page.locator("#tables")).to_have_attribute("data-count", "3")

    # The matches list, from the bot's panel: that bot's games, its name marked.
    await page.select_option("#tournament", thud_id)
    await page.locator(f'table[data-table="dwarf"] tr[data-bot="{dwarf.bot}"] .bot-button').click()
    await page.click("#bot-matches")
    await page.wait_for_url("**/matches?*")
    await expect(page.locator("#bot")).to_have_value(dwarf.bot)
    rows = page.locator("#matches-body tr")
    await expect(rows).to_have_count(len(dwarf.games))
    await expect(rows.locator(".highlighted .nick")).to_have_text([dwarf.bot] * len(dwarf.games))

    # Every game of the tournament, then one bot's, chosen in the filter.
    await page.select_option("#bot", "")
    await expect(rows).to_have_count(len(thud_results))
    summaries = await get_json(served, f"/api/games?tournament={thud_id}")
    assert [await row.get_attribute("data-game-id") for row in await rows.all()] == [
        game["id"] for game in summaries["games"]
    ]
    await page.select_option("#bot", "crash")
    crashed = [g for g in summaries["games"] if any(p["bot"] == "crash" for p in g["players"])]
    await expect(rows).to_have_count(len(crashed))
    await expect(rows.locator(".outcome")).to_have_text(["lost"] * len(crashed))
    await expect(rows.first.locator('[data-col="reason"]')).to_have_text(
        crashed[0]["result"]["reason"]
    )
    await page.select_option("#bot", "house troll")
    await expect(rows.locator(".highlighted .nick")).to_have_text(["house troll"] * 2)
    await page.screenshot(path=shots / "matches.png", full_page=True)
    await page.select_option("#bot", "crash")
    await expect(rows).to_have_count(len(crashed))

    # Paging, when a page holds fewer games than the tournament has.
    paged = await pages.open(f"/matches?tournament={thud_id}&perPage=3", connected=False)
    await expect(paged.locator("#matches-body tr")).to_have_count(3)
    await expect(paged.locator("#page-info")).to_have_text("Page 1 of 2")
    await paged.click("#older")
    await expect(paged.locator("#matches-body tr")).to_have_count(len(thud_results) - 3)
    await expect(paged.locator("#page-info")).to_have_text("Page 2 of 2")

    # Clicking a game opens its replay.
    game_id = crashed[0]["id"]
    await rows.first.locator('[data-col="reason"]').click()
    await page.wait_for_url(f"**/replay/{game_id}")
    await shows_frame(page, 0)
    await expect(page.locator("#players .seat-dwarf .nick")).to_have_text("crash")
    await page.keyboard.press("End")  # the crash may come before its first move: no turns
    await expect(page.locator("#result")).to_contain_text(crashed[0]["result"]["reason"])
    await expect(page.locator(".seat-details")).to_contain_text("this bot crashes on purpose")
