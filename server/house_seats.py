"""The house players' seats, in-process: a house player (a game's ``HousePlayer``) thinking on
the rules' own position and answering through ``Match.submit``, as any seat does, so the same
rules and timeouts apply to it. The visor seats them against people and in "Run a game"
(``visor.house_games``); ``tavern test`` seats one against the bot it tests."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from server.errors import BotError
from server.games import GAMES
from server.games.base import HousePlayer, JsonObject
from server.match import Match
from server.match_options import SeatRequest
from server.seat_channel import SeatMessage

log = logging.getLogger(__name__)

HOUSE_CPU_SHARE = 0.25  # of one core, at most, for every house player's thinking together


class HouseThinking:
    """Where house players think: one at a time, in a thread of its own (off the event loop),
    and for at most ``share`` of the time. After each thought the thread rests (three times as
    long at a quarter), so however many games ask at once (a flood of pages playing the house),
    the thinking takes at most that share of one core, and of the interpreter, from the bots'
    games; a move then waits its turn. A thought that comes after a rest costs no wait."""

    def __init__(self, share: float) -> None:
        self._rest_per_second = 1 / share - 1  # of rest after a second of thinking
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="house-player")
        self._rested_at = 0.0  # when the thread may think again (only that thread uses it)

    async def reply(
        self, player: HousePlayer, state: Any, seat: int, rng: random.Random
    ) -> JsonObject:
        """``player``'s ``player-turn`` for the position, once the thread has thought of it."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._think, player, state, seat, rng)

    def _think(self, player: HousePlayer, state: Any, seat: int, rng: random.Random) -> JsonObject:
        time.sleep(max(0.0, self._rested_at - time.monotonic()))
        started = time.monotonic()
        try:
            return player.reply(state, seat, rng)
        finally:
            ended = time.monotonic()
            self._rested_at = ended + (ended - started) * self._rest_per_second


HOUSE_THINKING = HouseThinking(HOUSE_CPU_SHARE)


# What a house player may be told in an ordinary game: a turn it ran late on, its opponent gone.
QUIET_ERRORS = frozenset({BotError.TURN_TIMEOUT, BotError.STALE_TURN, BotError.PLAYER_DISCONNECTED})


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
        # Thinking can take a few milliseconds: off the event loop, within the house's share.
        reply = await HOUSE_THINKING.reply(self.player, state, self.seat, self.rng)
        # Named, the turn answered is never played as a later one if the thinking ran late.
        self.match.submit(self.seat, {**reply, "turn": turn}, self)

    def close(self) -> None:
        """Nothing to release: the match owns the thinking tasks."""


def seat_house(match: Match, player: HousePlayer, seat_name: str, delay_s: float) -> None:
    """Seat ``player`` in ``seat_name``, one of its sides (the match starts if that filled it);
    the caller checked what a client asked for (``visor.house_games``)."""
    if seat_name not in player.sides:
        raise ValueError(f"{player.name} cannot play the {seat_name} seat")
    house = HouseSeat(player, match, match.seed + match.turn_count, delay_s)
    fields = {"nick": f"house {player.name}", **GAMES[match.codec.name].house_join(seat_name)}
    # The seat asked for, even in a game whose seats go by join order (Tavern): seated first,
    # the house player would otherwise take the first seat, whichever it was meant to play.
    request = SeatRequest(fields, kind="house", seat=match.codec.seat_names.index(seat_name))
    # The first turn comes from the match's task, after this: the seat is known by then.
    house.seat = match.seat(house, request)
