"""A game's side of the pages, kept in its own package: the files the visor serves for it.

Each game has a folder of web files (``web/`` in its package), served under
``/games/<name>/``: its JavaScript module ``game.js`` (the board view, the labels, the log's
words: what the shared pages ask of a game, loaded by name), its stylesheet ``game.css`` (its
seats' colours, its diagrams), its rules page (served at ``/rules/<name>``), and pages of its
own, which the pages' top bar links. The shared pages learn the games from
``/games/index.json`` (``to_wire``), so that a new game touches no shared file of the visor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MODULE = "game.js"  # the game's module, in its folder: what the shared pages import
RULES = "rules.html"  # the game's rules page, in its folder
STYLE = "game.css"  # the game's styles (its seats' colours...), in its folder: every page loads it


@dataclass(frozen=True, slots=True)
class Page:
    """A page of the game's own besides its rules and play pages: its file and the title the
    pages' top bar links it by."""

    file: str
    title: str


@dataclass(frozen=True, slots=True)
class WebSide:
    """Where a game's web files are and which pages it has besides its rules page."""

    folder: Path
    title: str  # the game's name as the pages write it
    play: str | None = None  # a page where a person plays a seat (at /play/<name>), if any
    pages: Mapping[str, Page] = field(default_factory=dict)  # other pages, by route
    sandboxed: frozenset[str] = frozenset()
    """Scripts that run people's code in a Web Worker: served with a policy that allows eval
    there and nothing else (no network, no nested workers)."""

    def page_routes(self, name: str) -> dict[str, Path]:
        """Every page of the game by its route: the rules, the play page, the others."""
        routes = {f"/rules/{name}": self.folder / RULES}
        if self.play is not None:
            routes[f"/play/{name}"] = self.folder / self.play
        routes.update({route: self.folder / page.file for route, page in self.pages.items()})
        return routes

    def to_wire(self, name: str) -> dict[str, Any]:
        """What the shared pages read of the game before they load its module."""
        return {
            "name": name,
            "title": self.title,
            "module": f"/games/{name}/{MODULE}",
            "rules": f"/rules/{name}",
            "play": None if self.play is None else f"/play/{name}",
            "style": f"/games/{name}/{STYLE}",
            "pages": [{"href": route, "title": page.title} for route, page in self.pages.items()],
        }
