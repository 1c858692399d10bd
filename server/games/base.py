"""What a game is to the arena: pure rules, a codec that puts them on the wire, and a ``Game``
that holds everything else the arena knows about it.

A game's *rules* are pure: the position before the first turn, whose turn it is, checking a
candidate action against a position, applying a checked action (without checking it again),
and the outcome as data; no I/O, no clock, and every random choice drawn from a
``RandomSource`` that the match owns. Its *codec* turns messages into candidate actions and
positions and results into messages; what both games say alike (``ready``, ``game-info``,
``turn``, the end of a game) is written once, in ``Codec``. The codec is the wire; its two other
parts are the game in words (``codec.text``, ``server.games.text.GameText``: terminals, game files,
commentary) and its board as viewers see it (``codec.view``, ``server.games.picture.BoardView``).
The match, seats, timeouts and the transports only ever talk to a codec and its rules.

A ``Game`` (one per game, registered by name in ``server.games``) is where the rest lives, as
python-chess keeps a variant's knowledge in its variant class: its settings section of
``config.json``, its house players, its league's rules, its replay picture. Nothing outside
``server/games/`` tests a game's name; it asks the game.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from server.errors import BotError, Rejected
from server.games.picture import BoardView, Picture
from server.games.settings import Section
from server.games.text import GameText
from server.games.web import WebSide

JsonObject = dict[str, Any]


class RandomSource(Protocol):
    """What rules may ask of randomness; ``random.Random`` satisfies it, tests inject a script."""

    def randrange(self, stop: int, /) -> int: ...


class EndReason(StrEnum):
    """Why a game ended; a member's value is the text records and the wire carry. Each game
    lists its own reasons in its package (an ``EndReason`` of its own, in ``ends.py``), the
    match the arena's (``server.match.MatchEnd``: a forfeit, a fallen flag, a server error)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a game ended: the winning seat (``None`` for a draw) and why."""

    winner: int | None
    reason: EndReason


@dataclass(frozen=True, slots=True)
class Player:
    """Who sits in a seat, as the rules and the records need it."""

    nick: str
    names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TimeBank:
    """A chess clock for each seat, chosen when the game is created: ``initial_ms`` to spend over
    the whole game, ``increment_ms`` more after each reply; a seat whose time runs out loses.
    Without one, each reply has the arena's flat turn timeout."""

    initial_ms: int
    increment_ms: int

    MAX_INITIAL_MS: ClassVar[int] = 24 * 3_600_000
    MAX_INCREMENT_MS: ClassVar[int] = 3_600_000

    @classmethod
    def from_wire(cls, value: object) -> TimeBank:
        """The ``clock`` of a ``create-simulation``; raises ``Rejected`` (``Invalid clock``)
        unless it is ``{"initialMs": 1 to 24 h, "incrementMs": 0 to 1 h}`` (in milliseconds),
        the increment optional (0)."""
        shape = (
            f'clock must be {{"initialMs": 1 to {cls.MAX_INITIAL_MS}, '
            f'"incrementMs": 0 to {cls.MAX_INCREMENT_MS}}}'
        )

        def number(found: object, low: int, high: int) -> int:
            if isinstance(found, bool) or not isinstance(found, int) or not low <= found <= high:
                raise Rejected(BotError.INVALID_CLOCK, shape)
            return found

        if not isinstance(value, dict) or not set(value) <= {"initialMs", "incrementMs"}:
            raise Rejected(BotError.INVALID_CLOCK, shape)
        return cls(
            number(value.get("initialMs"), 1, cls.MAX_INITIAL_MS),
            number(value.get("incrementMs", 0), 0, cls.MAX_INCREMENT_MS),
        )

    def to_wire(self) -> JsonObject:
        return {"initialMs": self.initial_ms, "incrementMs": self.increment_ms}


@dataclass(frozen=True, slots=True)
class SeatClock:
    """A seat's time limits, as its bot is told them in ``game-info`` (milliseconds)."""

    turn_timeout_ms: int
    first_turn_timeout_ms: int  # its very first reply (start-up included)
    max_consecutive_timeouts: int
    reconnect_grace_ms: int
    bank: TimeBank | None = None  # the game's clock, if it was created with one
    # Each reply charged its think time only (the network's share and the arena's lateness
    # credited: ``"clock": {"charge": "think"}``), up to this credit for the round trip.
    network_credit_max_ms: int | None = None


class ActionRejected(Rejected):
    """A seat sent something the game cannot accept; nothing changed and it may try again.

    ``message`` is the stable error text bots match on; ``reason`` explains this case.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message, reason)
        self.reason: str = reason


class PositionRejected(Rejected):
    """A position given from outside (``create-simulation``'s ``position``) that no game of
    these settings can reach, or that is already over; ``reason`` says what is wrong."""

    def __init__(self, reason: str) -> None:
        super().__init__(BotError.INVALID_POSITION, reason)
        self.reason: str = reason


class JoinRejected(Rejected):
    """A join request that cannot be honoured (for example, the wanted side is taken)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message, reason)
        self.reason: str = reason


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
    """One game on the wire, for one set of settings; ``rules`` are its pure rules, ``text`` the
    game in words (``server.games.text``), ``view`` its board as viewers see it
    (``server.games.picture``): the three parts a game implements besides its rules."""

    name: ClassVar[str]
    seat_names: ClassVar[tuple[str, ...]]
    seat_field: ClassVar[str]  # how ``game-info`` names the seat ("team", "side")
    score_names: ClassVar[tuple[str, ...]]  # each seat's score's name in a scores object
    tags_messages: ClassVar[bool]  # whether every game message carries ``"game"`` after its type
    passes_on_timeout: ClassVar[bool]  # a timed-out seat passes (else it loses at once)

    def __init__(
        self, rules: Rules[StateT, CandidateT, ActionT], text: GameText[StateT], view: BoardView
    ) -> None:
        self.rules = rules
        self.text = text
        self.view = view

    @classmethod
    @abstractmethod
    def from_settings(cls, settings: JsonObject) -> Codec[StateT, CandidateT, ActionT]:
        """The game of these settings: a record's, or the configured ones (``Game.settings``);
        the inverse of ``settings``."""

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
        info["width"], info["height"] = self.view.board_size()
        info.setdefault("game", self.name)
        info["seed"] = seed
        info["token"] = token
        info.update(self.counting_rules())
        info["turnTimeoutMs"] = clock.turn_timeout_ms
        info["firstTurnTimeoutMs"] = clock.first_turn_timeout_ms
        if self.passes_on_timeout:
            info["maxConsecutiveTimeouts"] = clock.max_consecutive_timeouts
        info["reconnectGraceMs"] = clock.reconnect_grace_ms
        if clock.bank is not None:
            info["clock"] = clock.bank.to_wire()
        if clock.network_credit_max_ms is not None:
            info["charge"] = "think"
            info["networkCreditMaxMs"] = clock.network_credit_max_ms
        return info

    def turn_message(
        self, state: StateT, seat: int, turn: int, timeout_ms: int, clock: JsonObject | None = None
    ) -> JsonObject:
        """What the seat on move receives: the position, then the turn's number (from 1), the
        scores, how long its reply may take and, in a game with a time bank, both clocks."""
        message = self.header("turn")
        message["state"] = self.bot_state(state)
        message["turn"] = turn
        message["score"] = self.scores(state)
        message["timeoutMs"] = timeout_ms
        if clock is not None:
            message["clock"] = clock
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
        """The score by seat name, for bots, lobbies and tables. Made every turn: ``zip(...,
        strict=True)`` cost more than the rest, so the counts are checked by a test instead
        (tests/test_game_knowledge.py: each game's rules give one score per name)."""
        return dict(zip(self.score_names, self.rules.scores(state), strict=False))

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
    def position_to_wire(self, state: StateT) -> JsonObject:
        """A position between turns as ``position_from_wire`` reads it: the fields of the turn
        message the seat on move gets (``state``, ``turn``, ``score``), and what else it takes
        to say who moves."""

    @abstractmethod
    def position_from_wire(self, wire: object) -> tuple[StateT, int]:
        """A position given in wire form (a turn message may be given as it is) as a position
        of the rules, and how many turns were played before it; raises ``PositionRejected``
        naming what makes it impossible (or over) in a game of these settings."""

    @abstractmethod
    def events_to_wire(self, events: Sequence[Any]) -> list[JsonObject]:
        """A turn's events, as spectators and records see them."""

    @abstractmethod
    def counting_rules(self) -> JsonObject:
        """The settings a bot counts with (``turnLimit``, ``pointsToWin``...), for ``game-info``."""

    @abstractmethod
    def settings(self) -> JsonObject:
        """Everything that, with the seed and the turns, replays a game of these settings."""


AnyCodec = Codec[Any, Any, Any]


@dataclass(frozen=True, slots=True)
class HousePlayer(ABC):
    """A built-in player of one game, playing real strategy (or a baseline), seeded so that
    games between house players replay from their seeds.

    In the arena's process it thinks on the rules' own position (``reply``); run as a bot
    process it reads the turn message instead (``reply_to_wire``). Either way it answers with a
    ``player-turn`` message, exactly as a remote bot would.
    """

    name: str
    description: str
    sides: tuple[str, ...]  # the seats it knows how to play

    @abstractmethod
    def reply(self, state: Any, seat: int, rng: random.Random) -> JsonObject:
        """The ``player-turn`` message for a position of the rules, ``seat`` on move."""

    @abstractmethod
    def reply_to_wire(
        self, message: JsonObject, info: JsonObject, rng: random.Random
    ) -> JsonObject:
        """The same for a ``turn`` message, given the seat's ``game-info``."""


@dataclass(frozen=True, slots=True)
class LeagueRules:
    """How a tournament of the game pairs its bots and how its league keeps them."""

    table_per_seat: bool  # a table per seat (each side's bots against their own kind), else one
    both_ways: bool  # every pair of bots meets once from each seat (else once, unless asked)


class Game(ABC):
    """Everything the arena knows about one game besides its rules and its wire: one instance
    per game, in ``server.games.GAMES``; a new game is one of these and its package."""

    codec: ClassVar[type[AnyCodec]]  # its wire, for one set of settings
    top_level_keys: ClassVar[frozenset[str]] = frozenset()
    """Keys of ``config.json``'s top level that also set this game (the original server's)."""
    house_players: ClassVar[Mapping[str, HousePlayer]]
    league: ClassVar[LeagueRules]
    picture: ClassVar[Picture]
    client_adapter: ClassVar[Path | None] = None
    """The Node.js program that plays the game's challenge clients (JavaScript files)."""
    web: ClassVar[WebSide]  # its side of the pages: its JavaScript module, rules page, pages

    @property
    def name(self) -> str:
        return self.codec.name

    @property
    def seat_names(self) -> tuple[str, ...]:
        return self.codec.seat_names

    @property
    def score_names(self) -> tuple[str, ...]:
        return self.codec.score_names

    @abstractmethod
    def settings(self, section: Section) -> JsonObject:
        """The game's settings from its section of ``config.json``, checked (raises
        ``SettingsError`` naming the key), as records keep them: ``codec.from_settings`` reads
        them."""

    def default_settings(self) -> JsonObject:
        """The settings of an empty section."""
        return self.settings(Section({}, {}))

    def codec_for(self, settings: JsonObject) -> AnyCodec:
        """The game on the wire, for these settings."""
        return self.codec.from_settings(settings)

    def with_turn_limit(self, settings: JsonObject, turns: int) -> JsonObject:
        """These settings, the game ending on points after ``turns`` turns (every game's
        settings read ``turnLimit``)."""
        return self.codec_for({**settings, "turnLimit": turns}).settings()

    @abstractmethod
    def house_join(self, seat_name: str | None) -> JsonObject:
        """A house player's join fields to take ``seat_name`` (``None``: the seat the game
        gives), its ``nick`` besides."""
