"""A bot's mind, after a delay (issue 34, item 5): the debug text a bot sends with a move
(``server.debug``) reaches the pages watching its game ``spectatorDebugDelayTurns`` turns
later, so that a spectator (or a bot watching its own game as one) learns a plan only once it
is old; the opponent never gets it, and replays show it at once. Kept per live game, bounded
by the delay (each game holds at most that many texts), dropped with the game."""

from __future__ import annotations

from collections import deque

from server.games.base import JsonObject
from server.match_views import TurnResult


class DelayedDebug:
    def __init__(self, delay_turns: int) -> None:
        self.delay_turns = delay_turns
        self._held: dict[str, deque[JsonObject]] = {}  # by game: its texts not yet shown

    def turn_played(self, result: TurnResult) -> list[JsonObject]:
        """Keep this turn's debug text (if any); the texts now ``delay_turns`` old, to show."""
        held = self._held.get(result.match_id)
        if result.debug is not None:
            if held is None:
                held = self._held[result.match_id] = deque()
            seat = result.codec.seat_names[result.seat]
            held.append({"turn": result.number, "seat": seat, "debug": result.debug})
        if not held:
            return []
        due: list[JsonObject] = []
        while held and held[0]["turn"] <= result.number - self.delay_turns:
            due.append(held.popleft())
        return due

    def ended(self, match_id: str) -> None:
        """The game is over: its texts are in its replay."""
        self._held.pop(match_id, None)
