"""Seats that are not TCP bots: a person in a browser page, and the house players in-process.

Both are seats like any other: they take their seats with ``Match.seat``, receive the same
messages a bot would, and answer through ``Match.submit``, so the same rules and timeouts apply
to them.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from server.arena import Arena
from server.errors import BotError, Rejected
from server.games import GAMES
from server.games.base import HousePlayer, JsonObject
from server.match import Match, Phase
from server.match_options import SeatRequest
from server.seat_channel import SeatMessage
from visor.errors import PageError

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
    # The seat asked for, even in a game whose seats go by join order (Tavern): seated first,
    # the house player would otherwise take the first seat, whichever it was meant to play.
    request = SeatRequest(fields, kind="house", seat=match.codec.seat_names.index(seat_name))
    # The first turn comes from the match's task, after this: the seat is known by then.
    house.seat = match.seat(house, request)


class HouseGames:
    """The games house players play, against the arena's caps: between two house players ("Run
    a game"), and of a person (or a /clients page) against one, by the address that started it.
    They are counted here, not found among every match: a flood of refused requests must not
    each cost a look at thousands of waiting simulations."""

    def __init__(self, arena: Arena) -> None:
        self.arena = arena
        self._between: list[Match] = []
        self._against: list[tuple[Match, str]] = []  # and the address that started it

    def _prune(self) -> None:
        self._between = [match for match in self._between if match.phase is not Phase.FINISHED]
        self._against = [(m, a) for m, a in self._against if m.phase is not Phase.FINISHED]

    def check_against(self, address: str) -> None:
        """Raises ``Rejected`` unless ``address`` may start a game against a house player:
        few enough going, in all and from that address."""
        self._prune()
        most = self.arena.config.max_person_house_games_per_address
        if sum(started_by == address for _, started_by in self._against) >= most:
            raise Rejected(
                PageError.TOO_MANY_HOUSE_GAMES,
                f"at most {most} at once against house players from one address: finish one first",
            )
        most = self.arena.config.max_person_house_games
        if len(self._against) >= most:
            raise Rejected(
                PageError.TOO_MANY_HOUSE_GAMES,
                f"the arena plays at most {most} at once against house players: try again later",
            )

    def started_against(self, match: Match, address: str) -> None:
        """``address`` started ``match`` against a house player (``check_against`` allowed it)."""
        self._against.append((match, address))

    def run(self, game: str, names: list[str], delay_ms: int) -> Match:
        """The visor's "Run a game", if the arena runs few enough such games."""
        self._prune()
        self.arena.check_open()
        most = self.arena.config.max_house_games
        if len(self._between) >= most:
            raise Rejected(PageError.TOO_MANY_HOUSE_GAMES, f"the arena runs at most {most} at once")
        match = run_house_game(self.arena, game, names, delay_ms)
        self._between.append(match)
        return match


def run_house_game(arena: Arena, game: str, names: list[str], delay_ms: int) -> Match:
    """Two house players, a turn delay, a new match."""
    if game not in arena.games:
        raise Rejected(BotError.UNKNOWN_GAME, f"game must be one of: {', '.join(arena.games)}")
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
