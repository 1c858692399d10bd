"""The games the arena hosts, registered by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from server.config import ArenaConfig
from server.games.base import Game, JsonObject
from server.games.tavern.game import TavernGame
from server.games.thud.game import ThudGame

GameFactory = Callable[[ArenaConfig], Game[Any, Any]]

GAMES: dict[str, GameFactory] = {
    TavernGame.name: TavernGame.from_config,
    ThudGame.name: lambda config: ThudGame(),
}
DEFAULT_GAME = TavernGame.name

GAMES_FROM_SETTINGS: dict[str, Callable[[JsonObject], Game[Any, Any]]] = {
    TavernGame.name: TavernGame.from_settings,
    ThudGame.name: lambda settings: ThudGame(),
}
"""Rebuild the game a record was played with, from the settings it stored."""

SEAT_NAMES: dict[str, tuple[str, ...]] = {
    TavernGame.name: TavernGame.seat_names,
    ThudGame.name: ThudGame.seat_names,
}
"""Each game's seats in order, for tools that need them without a game to play."""
