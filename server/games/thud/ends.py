"""Why a game of Thud ends: the engine's four reasons, in the order it checks them, then the
arena's names for the two ways the engine simply stopped and scored the position as it stood:
the side on move had no legal move, or its client made none."""

from __future__ import annotations

from server.games.base import EndReason


class ThudEnd(EndReason):
    TIMEOUT = "Timeout"  # the engine's last ply was played
    NO_MORE_DWARFS = "No more dwarfs"
    NO_MORE_TROLLS = "No more trolls"
    AGREED = "Players agreed to finish"
    NO_LEGAL_MOVES = "No legal moves"
    NO_MOVE = "No move"
