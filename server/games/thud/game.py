"""Thud as the arena knows it: its settings section, house players, league, picture, its side
of the pages (``web/``: its board view, rules page, the /play/thud and /clients pages) and the
Node.js adapter that plays the king-of-the-hill challenge's client files (``web/thud-client.js``,
beside the controller the /clients page loads too)."""

from __future__ import annotations

from pathlib import Path

from server.games.base import Game, JsonObject, LeagueRules
from server.games.settings import TURN_LIMITS, Section
from server.games.thud import house, rules
from server.games.thud.codec import ThudCodec
from server.games.thud.picture import ThudPicture
from server.games.thud.pieces import MAX_PLIES
from server.games.web import Page, WebSide

WEB = Path(__file__).resolve().parent / "web"
# The challenge's controller (thud-controller.js) is one file for the Node adapter and the
# /clients page, whose sandbox worker evaluates a person's client.
WEB_SIDE = WebSide(
    WEB,
    title="Thud",
    play="play.html",
    pages={"/clients": Page("clients.html", "Clients")},
    sandboxed=frozenset({"clients-worker.js"}),
)


class ThudGame(Game):
    codec = ThudCodec
    top_level_keys = frozenset({"turnLimit"})  # the arena's own, once every game's
    house_players = house.PLAYERS
    # As the challenge: a dwarf table and a troll table, each dwarf bot against each troll bot.
    league = LeagueRules(table_per_seat=True, both_ways=False)
    picture = ThudPicture()
    client_adapter = WEB / "thud-client.js"
    web = WEB_SIDE

    def settings(self, section: Section) -> JsonObject:
        """One board and one set of rules: only ``turnLimit`` ends a game sooner than the
        engine's 500 plies (a longer one is the engine's)."""
        section.unknown(self.top_level_keys)
        limit = section.integer("turnLimit", MAX_PLIES, *TURN_LIMITS)
        return ThudCodec(rules.ThudRules(limit)).settings()

    def house_join(self, seat_name: str | None) -> JsonObject:
        return {} if seat_name is None else {"side": seat_name}


THUD = ThudGame()
