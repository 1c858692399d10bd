"""What is decided when a match is opened, never later: its clock's limits, its options (a
tournament's, a ladder's, a resumed game's), and what a player asks for when it takes a seat."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from server.config import ArenaConfig
from server.games.base import AnyCodec, JsonObject, TimeBank
from server.round_trip import RoundTrip


@dataclass(frozen=True, slots=True)
class MatchLimits:
    """The clock's rules for one match."""

    turn_timeout_s: float
    max_consecutive_timeouts: int
    first_turn_timeout_s: float = 0.0  # a seat's first reply may take this long (start-up)
    reconnect_grace_s: float = 0.0  # how long a seat that lost its connection can rejoin
    # A time bank per seat instead of the flat turn timeout (and its first-turn allowance and
    # passes): each reply spends the seat's bank, which gets the increment back, and a seat
    # whose bank runs out loses.
    bank: TimeBank | None = None
    # Charge each reply its think time only (``"clock": {"charge": "think"}``): its time less the
    # round trip of the bot's connection, up to ``network_credit_max_s``, and less the time the
    # arena itself was late (``server.match_clock.reply_timing``).
    charge_think: bool = False
    network_credit_max_s: float = 0.5


def limits_of(config: ArenaConfig, bank: TimeBank | None, charge_think: bool) -> MatchLimits:
    """The arena's clock rules (``config``), with ``bank`` a time bank per seat instead of the
    flat turn timeout, and ``charge_think`` each reply charged its think time only."""
    return MatchLimits(
        turn_timeout_s=config.turn_timeout_ms / 1000,
        max_consecutive_timeouts=config.max_consecutive_timeouts,
        first_turn_timeout_s=config.first_turn_timeout_ms / 1000,
        reconnect_grace_s=config.reconnect_grace_ms / 1000,
        bank=bank,
        charge_think=charge_think,
        network_credit_max_s=config.network_credit_max_ms / 1000,
    )


@dataclass(frozen=True, slots=True)
class Resume:
    """Where a recorded, unfinished game stopped: it plays on from there."""

    state: Any
    turn_count: int
    rng: random.Random
    origin: JsonObject | None = None  # a new game played on from another's turn: which
    # A new game played on from a recorded game's turn: that game's turns before it, which its
    # record begins with (``GameStarted.turns_before``).
    turns: tuple[JsonObject, ...] = ()


@dataclass(frozen=True, slots=True)
class MatchOptions:
    """Everything about a match that is decided when it is opened, never later."""

    seed: int | None = None  # None: a random one
    limits: MatchLimits | None = None  # None: the arena's
    # A tournament's seats belong to their bots: one that leaves before the start forfeits
    # instead of freeing its seat for someone else.
    hold_seats: bool = False
    tournament_id: str | None = None
    pairing: str | None = None  # the tournament's name for this game
    seat_bots: tuple[str | None, ...] = ()  # the entrant playing each seat
    creator: str | None = None  # the address that asked for it, for the per-address cap
    by_join: bool = False  # opened by a random join: dropped when its last player leaves
    resume: Resume | None = None
    # The game with settings of its own (one played on from a record keeps the record's board
    # and turn limit); None: the arena's.
    codec: AnyCodec | None = None
    match_id: str | None = None  # a restored game keeps its id
    rated: bool = False  # a ladder game between registered bots: it moves both ratings


@dataclass(frozen=True, slots=True)
class SeatRequest:
    """A player asking for a seat: the join message's fields, and what kind of player it is."""

    fields: JsonObject = field(default_factory=dict)
    # "bot" (TCP), "house", "person", "client" (a /clients page's), "http": for lobbies and records
    kind: str = "bot"
    turn_timeout_s: float | None = None  # None: the match's
    bot: str | None = None  # the registered bot it proved to be (server.identity), if any
    hosted: bool = False  # proved with a hosting key: a worker plays it (``Seat.hosted``)
    seat: int | None = None  # the seat matchmaking gave it (None: the codec chooses)
    round_trip: RoundTrip | None = None  # its connection's, where one is measured
