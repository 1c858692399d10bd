"""Why a game of the Dwarven Tavern ends, in the original server's words."""

from __future__ import annotations

from server.games.base import EndReason


class TavernEnd(EndReason):
    POINTS_TO_WIN_BY_BOTH = "Points to win reached by both"  # a draw: both scored the last point
    POINTS_TO_WIN = "Points to win reached"
    TURN_LIMIT = "Turn limit reached"  # the leader wins; level scores draw
