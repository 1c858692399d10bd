"""Thud as the arena knows it: its settings section, house players, league, picture, and the
Node.js adapter that plays the king-of-the-hill challenge's client files."""

from __future__ import annotations

from pathlib import Path

from server.games.base import Game, JsonObject, LeagueRules
from server.games.settings import TURN_LIMITS, Section
from server.games.thud import house, rules
from server.games.thud.codec import ThudCodec
from server.games.thud.picture import ThudPicture
from server.games.thud.pieces import MAX_PLIES

CLIENT_ADAPTER = Path(__file__).resolve().parents[3] / "bots" / "js" / "thud-client.js"


class ThudGame(Game):
    codec = ThudCodec
    top_level_keys = frozenset({"turnLimit"})  # the arena's own, once every game's
    house_players = house.PLAYERS
    # As the challenge: a dwarf table and a troll table, each dwarf bot against each troll bot.
    league = LeagueRules(table_per_seat=True, both_ways=False)
    picture = ThudPicture()
    client_adapter = CLIENT_ADAPTER

    def settings(self, section: Section) -> JsonObject:
        """One board and one set of rules: only ``turnLimit`` ends a game sooner than the
        engine's 500 plies (a longer one is the engine's)."""
        section.unknown(self.top_level_keys)
        limit = section.integer("turnLimit", MAX_PLIES, *TURN_LIMITS)
        return ThudCodec(rules.ThudRules(limit)).settings()

    def house_join(self, seat_name: str | None) -> JsonObject:
        return {} if seat_name is None else {"side": seat_name}


THUD = ThudGame()
