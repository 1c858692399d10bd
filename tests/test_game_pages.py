"""Each game's pages and files, routed from the registered games (``visor.game_pages``): the
list the shared pages load the games' modules from, each game's module, rules page and own
pages, under the visor's policy, and nothing outside a game's web folder."""

from __future__ import annotations

import aiohttp

from server.games import GAMES
from tests.conftest import Served


async def test_every_registered_game_has_its_module_rules_and_pages_served(served: Served) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(served.url + "/games/index.json") as response:
            assert response.status == 200
            index = await response.json()
        listed = {game["name"]: game for game in index["games"]}
        assert list(listed) == list(GAMES)
        for name, game in GAMES.items():
            entry = listed[name]
            assert entry["seats"] == list(game.seat_names)
            assert entry["scores"] == list(game.score_names)
            assert {p["name"] for p in entry["house"]} == set(game.house_players)
            async with session.get(served.url + entry["module"]) as response:
                assert response.status == 200
                assert response.content_type == "text/javascript"
                assert "export default" in await response.text()
            for route in game.web.page_routes(name):
                async with session.get(served.url + route) as response:
                    assert response.status == 200, route
                    assert response.content_type == "text/html"
                    assert "script-src 'self';" in response.headers["Content-Security-Policy"]
            assert entry["rules"] == f"/rules/{name}"
            assert (entry["play"] is None) == (game.web.play is None)
            # Its stylesheet (its seats' colours), which every page loads, and its own pages,
            # which the top bar links by their titles.
            async with session.get(served.url + entry["style"]) as response:
                assert response.status == 200
                assert response.content_type == "text/css"
                assert "--seat-colour" in await response.text()
            assert entry["pages"] == [
                {"href": route, "title": page.title} for route, page in game.web.pages.items()
            ]
            for outside in ("..%2Fgame.py", ".hidden", "no-such-file.js"):
                async with session.get(f"{served.url}/games/{name}/{outside}") as response:
                    assert response.status == 404, outside
