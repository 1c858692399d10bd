"""Seats that are not TCP bots: a person in a browser page, and the house players in-process.

Both are seats like any other: they receive the same messages a bot would, and answer through
``Simulation.submit``, so the same rules and timeouts apply to them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import orjson

from bots.house import HOUSE_PLAYERS, NAMES, HousePlayer
from server.arena import Arena
from server.games.base import JoinRejected, JsonObject
from server.protocol import encode
from server.simulation import Simulation
from visor.hub import Page

log = logging.getLogger(__name__)

HOUSE_THINKING = ThreadPoolExecutor(max_workers=1, thread_name_prefix="house-player")
"""House players think one at a time, off the event loop: however many house games run, they
take at most one thread's share of the interpreter from the bots' games."""


TOO_MANY_HOUSE_GAMES = "Too many house games"


class BrowserSeat:
    """A person's seat: game messages go to their page, wrapped as ``{"type": "seat", ...}``."""

    def __init__(self, page: Page) -> None:
        self.page = page

    def send(self, message: JsonObject) -> None:
        self.page.send({"type": "seat", "message": message})

    def close(self) -> None:
        """The page stays open after the game, to show the result."""


class HouseSeat:
    """A house player thinking in-process, in a task owned by the match."""

    def __init__(self, player: HousePlayer, seed: int, delay_s: float) -> None:
        self.player = player
        self.seed = seed
        self.delay_s = delay_s
        self.simulation: Simulation | None = None
        self.seat = -1
        self._reply: Callable[[JsonObject], JsonObject] | None = None

    def attach(self, simulation: Simulation, seat: int) -> None:
        self.simulation, self.seat = simulation, seat

    def send(self, message: JsonObject) -> None:
        kind = message["type"]
        if kind == "game-info":
            self._reply = self.player.start(message, self.seed)
        elif kind == "turn" and self.simulation is not None:
            # Read the turn as a bot over TCP would: parts of it may be JSON already.
            self.simulation.spawn(self._answer(orjson.loads(encode(message))))
        elif kind == "error" and message["message"] not in ("Turn timeout", "Player disconnected"):
            log.warning("house player %s was told: %s", self.player.name, message)

    async def _answer(self, message: JsonObject) -> None:
        assert self._reply is not None and self.simulation is not None
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        # Thinking can take a few milliseconds: keep it off the event loop.
        reply = await asyncio.get_running_loop().run_in_executor(
            HOUSE_THINKING, self._reply, message
        )
        self.simulation.submit(self.seat, reply, self)

    def close(self) -> None:
        """Nothing to release: the match owns the thinking tasks."""


def house_player(game: str, name: str) -> HousePlayer:
    try:
        return HOUSE_PLAYERS[game][name]
    except KeyError:
        known = ", ".join(HOUSE_PLAYERS.get(game, {}))
        raise JoinRejected("Unknown player", f"{game} house players are: {known}") from None


def seat_house_player(
    arena: Arena, simulation: Simulation, name: str, seat_name: str, delay_s: float
) -> None:
    """Seat a house player in ``seat_name`` and start the match if that filled it."""
    player = house_player(simulation.game.name, name)
    if seat_name not in player.sides:
        raise JoinRejected("Wrong side", f"{name} cannot play the {seat_name} seat")
    house = HouseSeat(player, simulation.seed + simulation.turn_count, delay_s)
    request: JsonObject = {"nick": f"house {name}", "side": seat_name}
    if simulation.game.name == "tavern":
        request = {"nick": f"house {name}", "names": NAMES}
    seat = simulation.join(house, request, kind="house")
    house.attach(simulation, seat)
    if simulation.is_full():
        arena.start_match(simulation)


def house_games(arena: Arena) -> int:
    """Games being played between house players only."""
    return sum(
        1
        for simulation in arena.simulations.values()
        if all(seat is not None and seat.kind == "house" for seat in simulation.seats)
    )


def run_house_game(arena: Arena, game: str, names: list[str], delay_ms: int) -> Simulation:
    """The visor's "Run a game": two house players, a turn delay, a new simulation."""
    if game not in arena.games:
        raise JoinRejected("Unknown game", f"game must be one of: {', '.join(arena.games)}")
    most = arena.config.max_house_games
    if house_games(arena) >= most:
        raise JoinRejected(TOO_MANY_HOUSE_GAMES, f"the arena runs at most {most} at once")
    seat_names = arena.game(game).seat_names
    if len(names) != len(seat_names):
        raise JoinRejected("Invalid players", f"pick {len(seat_names)} players")
    players = [house_player(game, name) for name in names]
    for player, seat_name in zip(players, seat_names, strict=True):
        if seat_name not in player.sides:
            raise JoinRejected("Wrong side", f"{player.name} cannot play the {seat_name} seat")
    simulation = arena.create_simulation(game)
    for name, seat_name in zip(names, seat_names, strict=True):
        seat_house_player(arena, simulation, name, seat_name, delay_ms / 1000)
    return simulation


def seat_person(
    arena: Arena, simulation: Simulation, channel: BrowserSeat, nick: str, side: str | None
) -> int:
    """Seat a person from a browser page, with the longer timeout people get."""
    request: JsonObject = {"nick": nick}
    if side is not None:
        request["side"] = side
    timeout_s = arena.config.person_turn_timeout_ms / 1000
    seat = simulation.join(channel, request, turn_timeout_s=timeout_s, kind="person")
    if simulation.is_full():
        arena.start_match(simulation)
    return seat
