"""The error texts only pages get (for the requests only pages make); a page's seat gets the
bots' own (``server.errors.BotError``)."""

from __future__ import annotations

from enum import StrEnum


class PageError(StrEnum):
    INVALID_WATCH = "Invalid watch"
    INVALID_PLAYERS = "Invalid players"
    INVALID_DELAY = "Invalid delay"
    UNKNOWN_PLAYER = "Unknown player"
    WRONG_SIDE = "Wrong side"
    TOO_MANY_HOUSE_GAMES = "Too many house games"
    TOO_MANY_PAGES = "Too many pages"


# The HTTP API's answer (503) to a request that reads the records while their database is out
# of reach (``server.records.RecordsOutOfReach``).
RECORDS_UNAVAILABLE = "the records database is unavailable"
