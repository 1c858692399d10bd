"""What a game is to the arena: pure rules, and a codec that puts them on the wire.

A game's *rules* are pure: the position before the first turn, whose turn it is, checking a
candidate action against a position, applying a checked action (without checking it again),
and the outcome as data; no I/O, no clock, and every random choice drawn from a
``RandomSource`` that the match owns. Its *codec* turns messages into candidate actions and
positions and results into messages; what both games say alike (``ready``, ``game-info``,
``turn``, the end of a game) is written once, in ``Codec``. The match, seats, timeouts and the
transports only ever talk to a codec and its rules.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from server.config import ArenaConfig

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


@dataclass(frozen=True, slots=True)
class SeatClock:
    """A seat's time limits, as its bot is told them in ``game-info`` (milliseconds)."""

    turn_timeout_ms: int
    first_turn_timeout_ms: int  # its very first reply (start-up included)
    max_consecutive_timeouts: int
    reconnect_grace_ms: int


INVALID_TURN = "Invalid turn"  # a player-turn the game cannot take (each game says why)


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
CandidateT = TypeVar("CandidateT")  # an action read from a message, not yet checked
ActionT = TypeVar("ActionT")  # an action checked against a position


class Rules(ABC, Generic[StateT, CandidateT, ActionT]):
    """A game's pure rules, for one set of settings."""

    @abstractmethod
    def initial_state(self, players: Sequence[Player]) -> StateT:
        """The position before the first turn, once every seat is taken."""

    @abstractmethod
    def to_move(self, state: StateT) -> int:
        """The seat whose turn it is."""

    @abstractmethod
    def check(self, state: StateT, seat: int, candidate: CandidateT) -> ActionT:
        """The candidate as an action ``seat`` may play now; raises ``ActionRejected``."""

    @abstractmethod
    def apply(
        self, state: StateT, seat: int, action: ActionT, rng: RandomSource
    ) -> tuple[StateT, Sequence[Any]]:
        """Play a checked action (or a timeout action); the new position and the events."""

    @abstractmethod
    def outcome(self, state: StateT) -> Outcome | None:
        """The result if the game is over by its own rules, else ``None``."""

    @abstractmethod
    def timeout_action(self, state: StateT, seat: int) -> ActionT | None:
        """What a seat plays when its turn times out, or ``None`` if it cannot pass."""

    @abstractmethod
    def scores(self, state: StateT) -> tuple[int, ...]:
        """The score of each seat."""


class Codec(ABC, Generic[StateT, CandidateT, ActionT]):
    """One game on the wire, for one set of settings; ``rules`` are its pure rules."""

    name: ClassVar[str]
    seat_names: ClassVar[tuple[str, ...]]
    seat_field: ClassVar[str]  # how ``game-info`` names the seat ("team", "side")
    score_names: ClassVar[tuple[str, ...]]  # each seat's score's name in a scores object
    tags_messages: ClassVar[bool]  # whether every game message carries ``"game"`` after its type
    passes_on_timeout: ClassVar[bool]  # a timed-out seat passes (else it loses at once)

    def __init__(self, rules: Rules[StateT, CandidateT, ActionT]) -> None:
        self.rules = rules

    @classmethod
    @abstractmethod
    def from_config(cls, config: ArenaConfig) -> Codec[StateT, CandidateT, ActionT]:
        """The game as the arena's settings define it."""

    @classmethod
    @abstractmethod
    def from_settings(cls, settings: JsonObject) -> Codec[StateT, CandidateT, ActionT]:
        """The game a record was played with (the inverse of ``settings``)."""

    # --- seats -----------------------------------------------------------------------------------
    def wanted_seats(self, request: JsonObject) -> tuple[int, ...]:
        """The seats a join request may take, in the order it takes them when free; raises
        ``JoinRejected`` for a request that names no seat of this game. By default: any."""
        return tuple(range(len(self.seat_names)))

    @abstractmethod
    def choose_seat(self, free_seats: Sequence[int], request: JsonObject) -> int:
        """Pick the seat a join request gets among the free ones, or raise ``JoinRejected``."""

    @abstractmethod
    def player_from_join(self, request: JsonObject) -> Player:
        """Validate a join request's player fields, or raise ``JoinRejected``."""

    # --- messages in -----------------------------------------------------------------------------
    @abstractmethod
    def candidate(self, message: JsonObject) -> CandidateT:
        """Read a ``player-turn`` message as an action to check; raises ``ActionRejected``."""

    @abstractmethod
    def action_to_wire(self, action: ActionT) -> JsonObject:
        """A played action as records keep it: ``candidate`` reads it back."""

    # --- messages out ----------------------------------------------------------------------------
    def header(self, kind: str) -> JsonObject:
        """The start of a game message: its type, and for some games the game's name."""
        return {"type": kind, "game": self.name} if self.tags_messages else {"type": kind}

    def ready_message(self, simulation_id: str, seed: int) -> JsonObject:
        """The reply to ``create-simulation``."""
        return {"type": "ready", "simulationId": simulation_id, "game": self.name, "seed": seed}

    def game_info_message(
        self, simulation_id: str, seat: int, seed: int, token: str, clock: SeatClock
    ) -> JsonObject:
        """The reply to a successful ``join-simulation``: which seat, on what board, under which
        rules and clock (the arena's additions come after the original's fields)."""
        info = self.header("game-info")
        info["simulationId"] = simulation_id
        info[self.seat_field] = self.seat_names[seat]
        info["width"], info["height"] = self.board_size()
        info.setdefault("game", self.name)
        info["seed"] = seed
        info["token"] = token
        info.update(self.counting_rules())
        info["turnTimeoutMs"] = clock.turn_timeout_ms
        info["firstTurnTimeoutMs"] = clock.first_turn_timeout_ms
        if self.passes_on_timeout:
            info["maxConsecutiveTimeouts"] = clock.max_consecutive_timeouts
        info["reconnectGraceMs"] = clock.reconnect_grace_ms
        return info

    def turn_message(self, state: StateT, seat: int, turn: int, timeout_ms: int) -> JsonObject:
        """What the seat on move receives: the position, then the turn's number (from 1), the
        scores, and how long its reply may take."""
        message = self.header("turn")
        message["state"] = self.bot_state(state)
        message["turn"] = turn
        message["score"] = self.scores(state)
        message["timeoutMs"] = timeout_ms
        return message

    def opponent_gone_message(self, seconds: int) -> JsonObject:
        """To a seat whose opponent's connection dropped: it wins in ``seconds`` unless the
        opponent rejoins (as lichess's ``opponentGone``)."""
        message = self.header("opponent-gone")
        message["seconds"] = seconds
        return message

    def opponent_back_message(self) -> JsonObject:
        """To a seat whose opponent rejoined after ``opponent-gone``."""
        return self.header("opponent-back")

    def end_message(self, state: StateT, outcome: Outcome, seat: int) -> JsonObject:
        """The last message a seat receives: ``win-game``, ``loss-game`` or ``draw-game``."""
        if outcome.winner is None:
            kind = "draw-game"
        else:
            kind = "win-game" if outcome.winner == seat else "loss-game"
        message = self.header(kind)
        message["state"] = self.bot_state(state)
        message["result"] = self.result_to_wire(state, outcome)
        return message

    def result_to_wire(self, state: StateT | None, outcome: Outcome) -> JsonObject:
        """How a game ended, as bots, pages and records see it."""
        return {
            "reason": outcome.reason,
            "score": None if state is None else self.scores(state),
            "winner": None if outcome.winner is None else self.seat_names[outcome.winner],
        }

    def scores(self, state: StateT) -> JsonObject:
        """The score by seat name, for bots, lobbies and tables."""
        return dict(zip(self.score_names, self.rules.scores(state), strict=True))

    @abstractmethod
    def after_turn_messages(
        self, before: StateT, after: StateT, events: Sequence[Any]
    ) -> list[tuple[int, JsonObject]]:
        """Messages (seat, message) announcing what a turn caused, sent before the next turn."""

    @abstractmethod
    def bot_state(self, state: StateT) -> JsonObject:
        """The position as a bot receives it in its turns and at the end."""

    @abstractmethod
    def state_to_wire(self, state: StateT) -> JsonObject:
        """The full position, as spectators and records see it."""

    @abstractmethod
    def events_to_wire(self, events: Sequence[Any]) -> list[JsonObject]:
        """A turn's events, as spectators and records see them."""

    @abstractmethod
    def board_size(self) -> tuple[int, int]:
        """Width and height of the board."""

    @abstractmethod
    def counting_rules(self) -> JsonObject:
        """The settings a bot counts with (``turnLimit``, ``pointsToWin``...), for ``game-info``."""

    @abstractmethod
    def render_text(self, state: StateT) -> str:
        """The position as a few lines of text, for terminals."""

    @abstractmethod
    def legend_text(self, state: StateT) -> list[str]:
        """What the letters of ``render_text`` stand for, a line each."""

    @abstractmethod
    def events_text(self, events: Sequence[Any]) -> list[str]:
        """A turn's events in words, a line each, squares as ``x,y``."""

    @abstractmethod
    def settings(self) -> JsonObject:
        """Everything that, with the seed and the turns, replays a game of these settings."""

    @abstractmethod
    def describe(self) -> JsonObject:
        """What a viewer needs besides the position: board size, points to win, and so on."""


AnyCodec = Codec[Any, Any, Any]
