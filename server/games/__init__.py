"""The games the arena hosts, registered by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from server.config import ArenaConfig
from server.games.base import Game
from server.games.tavern.game import TavernGame
from server.games.thud.game import ThudGame

GameFactory = Callable[[ArenaConfig], Game[Any, Any]]

GAMES: dict[str, GameFactory] = {
    TavernGame.name: TavernGame.from_config,
    ThudGame.name: lambda config: ThudGame(),
}
DEFAULT_GAME = TavernGame.name
