"""A bot's debug text: what a move's ``"debug"`` field says about it, kept with the turn.

It is bounded (``MAX_DEBUG_CHARS``; longer text is cut, with a marker saying how much was cut),
stored in the records with the turn's action, shown by ``tavern replay`` and the replay page,
and never sent to the opponent nor to spectators while the game is played (docs/protocol.md).
"""

from __future__ import annotations

from typing import Any

MAX_DEBUG_CHARS = 2048
DEBUG_KEY = "debug"


def debug_text(message: dict[str, Any]) -> str | None:
    """A move's debug text, bounded; ``None`` if it has none (or a value that is not text)."""
    text = message.get(DEBUG_KEY)
    if not isinstance(text, str) or not text:
        return None
    if len(text) <= MAX_DEBUG_CHARS:
        return text
    return f"{text[:MAX_DEBUG_CHARS]}… [cut: {len(text) - MAX_DEBUG_CHARS} more characters]"


def without_debug(action: dict[str, Any]) -> dict[str, Any]:
    """A recorded action as the bot's move was, its debug text taken out."""
    if DEBUG_KEY not in action:
        return action
    return {key: value for key, value in action.items() if key != DEBUG_KEY}
