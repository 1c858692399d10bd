"""Seats that are not TCP bots: a person in a browser page, and the house players in-process.

Both are seats like any other: they take their seats with ``Match.seat``, receive the same
messages a bot would, and answer through ``Match.submit``, so the same rules and timeouts apply
to them.
"""

from __future__ import annotations

import asyncio
import logging
import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from server.arena import Arena
from server.errors import BotError, Rejected
from server.games import GAMES
from server.games.base import HousePlayer
from server.match import (
    PLAYER_DISCONNECTED,
    STALE_TURN,
    TURN_TIMEOUT,
    Match,
    SeatMessage,
    SeatRequest,
)
from visor.errors import PageError

log = logging.getLogger(__name__)

HOUSE_THINKING = ThreadPoolExecutor(max_workers=1, thread_name_prefix="house-player")
"""House players think one at a time, off the event loop: however many house games run, they
take at most one thread's share of the interpreter from the bots' games."""


# What a house player may be told in an ordinary game: a turn it ran late on, its opponent gone.
QUIET_ERRORS = frozenset({TURN_TIMEOUT, STALE_TURN, PLAYER_DISCONNECTED})


class HouseSeat:
    """A house player thinking in-process on the rules' own position, in a task owned by the
    match, and answering through ``Match.submit`` as any seat does."""

    def __init__(self, player: HousePlayer, match: Match, seed: int, delay_s: float) -> None:
        self.player = player
        self.match = match
        self.rng = random.Random(seed)
        self.delay_s = delay_s
        self.seat = -1

    def send(self, message: SeatMessage) -> None:
        kind = message.kind
        if kind == "turn":
            self.match.spawn(self._answer(message.state, message.body["turn"]))
        elif kind == "error" and message.body["message"] not in QUIET_ERRORS:
            log.warning("house player %s was told: %s", self.player.name, message.body)

    async def _answer(self, state: Any, turn: int) -> None:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        # Thinking can take a few milliseconds: keep it off the event loop.
        reply = await asyncio.get_running_loop().run_in_executor(
            HOUSE_THINKING, self.player.reply, state, self.seat, self.rng
        )
        # Named, the turn answered is never played as a later one if the thinking ran late.
        self.match.submit(self.seat, {**reply, "turn": turn}, self)

    def close(self) -> None:
        """Nothing to release: the match owns the thinking tasks."""


def house_player(game: str, name: str) -> HousePlayer:
    players = GAMES[game].house_players
    try:
        return players[name]
    except KeyError:
        known = ", ".join(players)
        raise Rejected(PageError.UNKNOWN_PLAYER, f"{game} house players are: {known}") from None


def seat_house_player(match: Match, name: str, seat_name: str, delay_s: float) -> None:
    """Seat a house player in ``seat_name`` (the match starts if that filled it)."""
    player = house_player(match.codec.name, name)
    if seat_name not in player.sides:
        raise Rejected(PageError.WRONG_SIDE, f"{name} cannot play the {seat_name} seat")
    house = HouseSeat(player, match, match.seed + match.turn_count, delay_s)
    fields = {"nick": f"house {name}", **GAMES[match.codec.name].house_join(seat_name)}
    # The first turn comes from the match's task, after this: the seat is known by then.
    house.seat = match.seat(house, SeatRequest(fields, kind="house"))


def house_games(arena: Arena) -> int:
    """Matches between house players only."""
    return sum(
        1
        for match in arena.matches.values()
        if all(seat is not None and seat.kind == "house" for seat in match.seats)
    )


def run_house_game(arena: Arena, game: str, names: list[str], delay_ms: int) -> Match:
    """The visor's "Run a game": two house players, a turn delay, a new match."""
    if game not in arena.games:
        raise Rejected(BotError.UNKNOWN_GAME, f"game must be one of: {', '.join(arena.games)}")
    most = arena.config.max_house_games
    if house_games(arena) >= most:
        raise Rejected(PageError.TOO_MANY_HOUSE_GAMES, f"the arena runs at most {most} at once")
    seat_names = arena.codec(game).seat_names
    if len(names) != len(seat_names):
        raise Rejected(PageError.INVALID_PLAYERS, f"pick {len(seat_names)} players")
    players = [house_player(game, name) for name in names]
    for player, seat_name in zip(players, seat_names, strict=True):
        if seat_name not in player.sides:
            raise Rejected(PageError.WRONG_SIDE, f"{player.name} cannot play the {seat_name} seat")
    match = arena.open(game)
    for name, seat_name in zip(names, seat_names, strict=True):
        seat_house_player(match, name, seat_name, delay_ms / 1000)
    return match
