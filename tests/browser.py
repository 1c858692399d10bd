"""Headless Chromium for the visor's tests: pages that record anything that goes wrong on them.

Playwright drives Debian's Chromium (it cannot download its own browser here). A test fails,
never skips, when Chromium is missing: `make test` installs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
import pytest_asyncio
from playwright.async_api import (
    Browser,
    ConsoleMessage,
    Dialog,
    Page,
    Playwright,
    WebSocketRoute,
    async_playwright,
    expect,
)
from playwright.async_api import Error as PlaywrightError

from tests.conftest import Served, serving_visor, test_config

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
WAIT_MS = 10_000  # Playwright's bound on every wait and action
REPO = Path(__file__).resolve().parent.parent
HTTP_ERROR = re.compile(
    r"Failed to load resource: the server responded with a status of (40[349]|503)"
)


@dataclass
class Pages:
    """Pages of the served visor in one browser; anything that goes wrong on them is kept."""

    browser: Browser
    base_url: str
    problems: list[str] = field(default_factory=list)
    http_errors_expected: bool = False  # a test that asks for missing records on purpose
    # What each page sent on its websockets, frame by frame.
    sent: dict[Page, list[str | bytes]] = field(default_factory=dict)

    async def open(
        self,
        path: str,
        width: int = 1280,
        height: int = 860,
        scale: float = 1,
        *,
        connected: bool = True,
        websockets: Callable[[WebSocketRoute], None] | None = None,
    ) -> Page:
        """A new page at ``path``; with ``connected``, once its websocket is up. With
        ``websockets``, each websocket the page opens to the visor is handed to it (which
        connects it to the server, and may cut it)."""
        page = await self.browser.new_page(
            viewport={"width": width, "height": height}, device_scale_factor=scale
        )
        page.set_default_timeout(WAIT_MS)
        page.on("dialog", self._on_dialog)
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on("console", self._on_console)
        frames: list[str | bytes] = []
        self.sent[page] = frames

        def keep(frame: str | bytes) -> None:  # Playwright calls Python functions, not builtins
            frames.append(frame)

        page.on("websocket", lambda socket: socket.on("framesent", keep))
        if websockets is not None:
            await page.route_web_socket(re.compile(r"/ws$"), websockets)
        await page.goto(self.base_url + path)
        if connected:
            # Every page with a websocket shows its state in #connection.
            await expect(page.locator("#connection")).to_have_attribute("data-status", "open")
        return page

    def messages_sent(self, page: Page, kind: str) -> list[dict[str, Any]]:
        """The messages of type ``kind`` that ``page`` sent on its websockets, in order."""
        messages = [orjson.loads(frame) for frame in self.sent[page]]
        return [message for message in messages if message.get("type") == kind]

    def _on_dialog(self, dialog: Dialog) -> None:
        # A dialog would mean a nick ran as script: fail the test, and unblock the page.
        self.problems.append(f"dialog: {dialog.message}")
        asyncio.get_running_loop().create_task(dialog.dismiss())

    def _on_console(self, message: ConsoleMessage) -> None:
        # CSP violations (an inline style or script, an eval in the page) are console errors.
        if message.type != "error":
            return
        if self.http_errors_expected and HTTP_ERROR.search(message.text):
            return
        self.problems.append(f"console: {message.text}")


async def _launch(playwright: Playwright) -> Browser:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"Chromium is missing at {CHROMIUM}: `make test` installs it")
    try:
        return await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    except PlaywrightError as error:
        pytest.fail(f"Chromium at {CHROMIUM} does not start ({error}): `make test` installs it")


@contextlib.asynccontextmanager
async def chromium_pages(base_url: str, browser: Browser | None = None) -> AsyncIterator[Pages]:
    """Pages for one test, in ``browser`` (the module's, see ``module_chromium``) or in a
    browser of the test's own; at the end every page of the test is closed, and no page may
    have had a problem."""
    if browser is not None:
        pages = Pages(browser, base_url)
        try:
            yield pages
        finally:
            # Each page has a context of its own: closing them all leaves the next test a
            # browser with nothing open (no page of a stopped server still reconnecting).
            for context in browser.contexts:
                await context.close()
        assert pages.problems == []
        return
    async with async_playwright() as playwright:
        own = await _launch(playwright)
        try:
            async with chromium_pages(base_url, own) as pages:
                yield pages
        finally:
            await own.close()


# The browser modules' tests share one Chromium, started once per module (per xdist worker):
# starting Playwright's driver and Chromium took 2-3 s of a two-core machine for every test.
# Playwright's objects belong to the event loop they were made in, so such a module runs its
# tests and their async fixtures on the module's loop:
#
#     pytestmark = pytest.mark.asyncio(loop_scope="module")
#     chromium = module_chromium
#     served = module_served
#     pages = module_pages  # under whatever name its tests ask for
#
# and its own async fixtures take ``@pytest_asyncio.fixture(loop_scope="module")``.
@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_chromium() -> AsyncIterator[Browser]:
    """One headless Chromium for the tests of a module."""
    async with async_playwright() as playwright:
        browser = await _launch(playwright)
        try:
            yield browser
        finally:
            await browser.close()


@pytest_asyncio.fixture(loop_scope="module")
async def module_served(tmp_path: Path) -> AsyncIterator[Served]:
    """The ``served`` fixture (a test's own arena and visor) on the module's event loop."""
    async with serving_visor(test_config(), tmp_path / "arena.db") as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module")
async def module_pages(served: Served, chromium: Browser) -> AsyncIterator[Pages]:
    """A test's pages (``chromium_pages``) in the module's Chromium, of the test's arena: the
    module's ``chromium`` and ``served`` fixtures, as named above."""
    async with chromium_pages(served.url, chromium) as pages:
        yield pages


async def canvas_pixels(page: Page) -> str:
    """The board canvas as an image: two calls differ when anything on it changed."""
    pixels: str = await page.evaluate("document.getElementById('board').toDataURL()")
    return pixels


async def square_point(page: Page, x: int, y: int) -> tuple[float, float]:
    """The page coordinates of the centre of board square (x, y), from the canvas's data-."""
    box: dict[str, float] = await page.evaluate(
        """() => {
            const canvas = document.getElementById('board');
            const rect = canvas.getBoundingClientRect();
            const data = canvas.dataset;
            return {left: rect.left, top: rect.top, cell: Number(data.cellSize),
                    x: Number(data.originX), y: Number(data.originY)};
        }"""
    )
    cell = box["cell"]
    return box["left"] + box["x"] + (x + 0.5) * cell, box["top"] + box["y"] + (y + 0.5) * cell
