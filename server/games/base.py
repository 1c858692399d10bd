"""The contract between the arena core and a game.

A game is two layers. Its *rules* are pure: a state, the legal actions, ``apply`` that returns a
new state and the events it caused, and an outcome as data; no I/O, no clock, and every random
choice drawn from a ``RandomSource`` that the caller owns. Its *wire* layer (a ``Game``
subclass) turns TCP messages into actions and states into messages. The match loop, seats,
turn routing, timeouts and the protocol only ever talk to ``Game``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

JsonObject = dict[str, Any]


class RandomSource(Protocol):
    """What rules may ask of randomness; ``random.Random`` satisfies it, tests inject a script."""

    def randrange(self, stop: int, /) -> int: ...


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a game ended: the winning seat (``None`` for a draw) and why."""

    winner: int | None
    reason: str


@dataclass(frozen=True, slots=True)
class Player:
    """Who sits in a seat, as the rules and the records need it."""

    nick: str
    names: tuple[str, ...] = ()


class ActionRejected(Exception):
    """A seat sent something the game cannot accept; nothing changed and it may try again.

    ``message`` is the stable error text bots match on; ``reason`` explains this case.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(f"{message}: {reason}")
        self.message = message
        self.reason = reason


class JoinRejected(Exception):
    """A join request that cannot be honoured (for example, the wanted side is taken)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(f"{message}: {reason}")
        self.message = message
        self.reason = reason


StateT = TypeVar("StateT")
ActionT = TypeVar("ActionT")


class Game(ABC, Generic[StateT, ActionT]):
    """One game as the arena core sees it; one instance per simulation, holding its settings."""

    name: ClassVar[str]
    seat_names: ClassVar[tuple[str, ...]]

    # --- seats -------------------------------------------------------------------------------
    @abstractmethod
    def choose_seat(self, free_seats: Sequence[int], request: JsonObject) -> int:
        """Pick the seat a join request gets among the free ones, or raise ``JoinRejected``."""

    @abstractmethod
    def player_from_join(self, request: JsonObject) -> Player:
        """Validate a join request's player fields, or raise ``JoinRejected``."""

    # --- rules -------------------------------------------------------------------------------
    @abstractmethod
    def initial_state(self, players: Sequence[Player]) -> StateT:
        """The position before the first turn, once every seat is taken."""

    @abstractmethod
    def seat_to_move(self, state: StateT) -> int:
        """The seat whose turn it is."""

    @abstractmethod
    def apply(
        self, state: StateT, seat: int, action: ActionT, rng: RandomSource
    ) -> tuple[StateT, list[Any]]:
        """Play ``action`` for ``seat``; pure. Raises ``ActionRejected`` if it is not legal."""

    @abstractmethod
    def outcome(self, state: StateT) -> Outcome | None:
        """The result if the game is over by its own rules, else ``None``."""

    @abstractmethod
    def timeout_action(self, state: StateT, seat: int) -> ActionT | None:
        """What a seat does when its turn times out, or ``None`` if it cannot pass."""

    # --- wire --------------------------------------------------------------------------------
    @abstractmethod
    def parse_action(self, state: StateT, seat: int, message: JsonObject) -> ActionT:
        """Turn a ``player-turn`` message into an action, or raise ``ActionRejected``."""

    @abstractmethod
    def action_to_wire(self, action: ActionT) -> JsonObject:
        """The action as recorded and replayed (the inverse of ``parse_action``)."""

    @abstractmethod
    def ready_message(self, simulation_id: str, seed: int) -> JsonObject:
        """The reply to ``create-simulation``."""

    @abstractmethod
    def game_info_message(self, simulation_id: str, seat: int, seed: int) -> JsonObject:
        """The reply to a successful ``join-simulation``."""

    @abstractmethod
    def turn_message(self, state: StateT, seat: int) -> JsonObject:
        """What the seat on move receives."""

    @abstractmethod
    def after_turn_messages(
        self, before: StateT, after: StateT, events: Sequence[Any]
    ) -> list[tuple[int, JsonObject]]:
        """Messages (seat, message) announcing what a turn caused, sent before the next turn."""

    @abstractmethod
    def end_message(self, state: StateT, outcome: Outcome, seat: int) -> JsonObject:
        """The last message a seat receives: ``win-game``, ``loss-game`` or ``draw-game``."""

    @abstractmethod
    def state_to_wire(self, state: StateT) -> JsonObject:
        """The full position, as spectators and records see it."""

    @abstractmethod
    def events_to_wire(self, events: Sequence[Any]) -> list[JsonObject]:
        """A turn's events, as spectators and records see them."""

    @abstractmethod
    def scores(self, state: StateT) -> Mapping[str, int]:
        """The score by seat name, for lobbies and tables."""

    @abstractmethod
    def render_text(self, state: StateT) -> str:
        """The position as a few lines of text, for terminals."""

    @abstractmethod
    def settings(self) -> JsonObject:
        """Everything that, with the seed and the turns, replays a game of this instance."""

    @abstractmethod
    def describe(self) -> JsonObject:
        """What a viewer needs besides the position: board size, points to win, and so on."""
