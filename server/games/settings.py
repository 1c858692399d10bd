"""A game's section of ``config.json``, read by the game itself.

Each game names its keys, their defaults and their ranges; ``server.config`` hands it the
section (with, for a game the original server played, that server's top-level keys under it)
and turns a ``SettingsError`` into a ``ConfigError``. Every message names the key as the file
spells it, so a typo stops the server with the key to fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

TURN_LIMITS = (1, 1_000_000)
"""What a game's ``turnLimit`` may be, in a section or on the command line (``--turns``)."""


class SettingsError(ValueError):
    """A game's setting is missing, of the wrong type or out of range; says which key."""


def bounded_int(value: object, low: int, high: int) -> int:
    """``value`` if it is an integer from ``low`` to ``high``, else ``ValueError`` saying what
    is wrong, in the words the config file's checks and the command line's flags share."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be an integer, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"must be between {low} and {high}, got {value}")
    return value


@dataclass(frozen=True, slots=True)
class Section:
    """One game's settings as the file gives them: each key's value, and the name a message
    gives it (``'tavern.pointsToWin'`` in the game's section, ``'pointsToWin'`` at the top)."""

    values: Mapping[str, object]
    names: Mapping[str, str]

    def key(self, key: str) -> str:
        """How a message names ``key`` (or a part of one, ``positions.team1.barrel.x``): quoted,
        as the file spells it."""
        head = re.split(r"[.\[]", key, maxsplit=1)[0]
        return repr(self.names.get(head, head) + key[len(head) :])

    def integer(self, key: str, default: int, low: int, high: int) -> int:
        """An integer setting, ``default`` if absent."""
        return self.bounded(key, self.values.get(key, default), low, high)

    def bounded(self, key: str, value: object, low: int, high: int) -> int:
        """``value``, read under ``key`` (a key's part: ``positions.team1.barrel.x``)."""
        try:
            return bounded_int(value, low, high)
        except ValueError as error:
            raise SettingsError(f"key {self.key(key)}: {error}") from None

    def unknown(self, known: frozenset[str]) -> None:
        """Refuse a key the game does not read."""
        extra = sorted(set(self.values) - known)
        if extra:
            raise SettingsError(
                f"unknown key {self.key(extra[0])} (known keys: {', '.join(sorted(known))})"
            )
