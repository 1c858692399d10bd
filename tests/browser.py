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
from playwright.async_api import (
    Browser,
    ConsoleMessage,
    Dialog,
    Page,
    WebSocketRoute,
    async_playwright,
    expect,
)
from playwright.async_api import Error as PlaywrightError

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
    r"Failed to load resource: the server responded with a status of (40[49]|503)"
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


@contextlib.asynccontextmanager
async def chromium_pages(base_url: str) -> AsyncIterator[Pages]:
    """A browser for one test; at the end, no page may have had a problem."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"Chromium is missing at {CHROMIUM}: `make test` installs it")
    async with async_playwright() as playwright:
        try:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        except PlaywrightError as error:
            pytest.fail(f"Chromium at {CHROMIUM} does not start ({error}): `make test` installs it")
        try:
            pages = Pages(browser, base_url)
            yield pages
        finally:
            await browser.close()
    assert pages.problems == []


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
