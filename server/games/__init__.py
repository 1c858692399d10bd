"""The games the arena hosts, registered by name: each a ``Game`` around its codec and rules."""

from __future__ import annotations

from server.games.base import Game
from server.games.tavern.game import TAVERN
from server.games.thud.game import THUD

GAMES: dict[str, Game] = {game.name: game for game in (TAVERN, THUD)}
DEFAULT_GAME = TAVERN.name
