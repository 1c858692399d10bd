"""What a match looks like from outside, never the live match: the view lobbies, pages and
records read, a seat's statistics, the clock spectators count down, and one played turn
(``TurnResult``) with its wire forms built once for every listener."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, NamedTuple

import orjson

from server.debug import CPU_KEY, DEBUG_KEY, STDERR_KEY, TIMING_KEY
from server.games.base import AnyCodec, JsonObject, Outcome, TimeBank
from server.match_options import MatchLimits


class ReplyTiming(NamedTuple):
    """How a reply's time splits (seconds): the whole of it, the round trip of the bot's
    connection (``None`` where nothing measures it), the arena's own lateness meanwhile, and
    the bot's thinking (the rest, with the network's credit capped)."""

    reply_s: float
    round_trip_s: float | None
    late_s: float
    think_s: float

    def to_wire(self) -> list[int | None]:
        """As the records keep it with every turn, in whole milliseconds: ``[reply, round
        trip, lateness, think]`` (a list: four numbers a turn, not four keys)."""
        round_trip_s = self.round_trip_s
        return [
            round(1000 * self.reply_s),
            None if round_trip_s is None else round(1000 * round_trip_s),
            round(1000 * self.late_s),
            round(1000 * self.think_s),
        ]


class Status(StrEnum):
    WAITING = "waiting"
    PLAYING = "playing"
    FINISHED = "finished"


@dataclass(frozen=True, slots=True)
class SeatView:
    """Who sits in a seat, as lobbies and records show it."""

    seat: str
    nick: str
    names: tuple[str, ...]
    kind: str
    bot: str | None

    def to_wire(self) -> JsonObject:
        return {"seat": self.seat, "nick": self.nick, "names": list(self.names), "kind": self.kind}

    def lobby_wire(self) -> JsonObject:
        """As a lobby row lists it: with the registered bot it proved to be, if any, so that
        every node's /tv can rate the pair (a guest's seat is as ``to_wire``)."""
        wire = self.to_wire()
        if self.bot is not None:
            wire["bot"] = self.bot
        return wire


@dataclass(frozen=True, slots=True)
class SeatStats:
    """How a seat played: its replies' times and the errors it was sent."""

    replies: int
    reply_mean_ms: float | None
    reply_worst_ms: float | None
    errors: int
    last_error: str | None


class TurnClock:
    """The seat on move and how long its reply may take: spectators count it down. In a game
    with a time bank, also every seat's time left as the turn began, and the bank's rules.

    Made every turn: a plain class with ``Final`` attributes, as ``SeatMessage``."""

    __slots__ = ("bank", "remaining_s", "seat", "timeout_s")

    def __init__(
        self,
        seat: int,
        timeout_s: float,
        remaining_s: tuple[float, ...] = (),
        bank: TimeBank | None = None,
    ) -> None:
        self.seat: Final = seat
        self.timeout_s: Final = timeout_s
        self.remaining_s: Final = remaining_s
        self.bank: Final = bank

    def __repr__(self) -> str:
        return f"TurnClock({self.seat}, {self.timeout_s}, {self.remaining_s}, {self.bank})"


@dataclass(frozen=True, slots=True)
class MatchView:
    """A match at one moment, as lobbies, pages and records see it."""

    match_id: str
    codec: AnyCodec
    seed: int
    status: Status
    players: tuple[SeatView | None, ...]
    turn: int
    state: Any  # None before the start
    outcome: Outcome | None
    tournament_id: str | None
    pairing: str | None
    limits: MatchLimits
    clock: TurnClock | None = None  # while the game is on: the seat awaited next
    origin: JsonObject | None = None  # the game and turn it was played on from, if it was
    rated: bool = False

    @property
    def game(self) -> str:
        return self.codec.name

    def scores(self) -> JsonObject | None:
        return None if self.state is None else self.codec.scores(self.state)

    def result(self) -> JsonObject | None:
        if self.outcome is None:
            return None
        return self.codec.result_to_wire(self.state, self.outcome)

    def lobby_row(self, spectators: int) -> JsonObject:
        """The match as one row of a lobby (a node's own, or the directory every node reads)."""
        row: JsonObject = {
            "simulationId": self.match_id,
            "game": self.game,
            "status": self.status.value,
            "players": [None if p is None else p.lobby_wire() for p in self.players],
            "scores": self.scores(),
            "turn": self.turn,
            "spectators": spectators,
        }
        if self.outcome is not None:
            row["result"] = self.result()
        return row


def clock_to_wire(codec: AnyCodec, clock: TurnClock | None) -> JsonObject | None:
    """The clock as pages show it, and in a game with a time bank as the seat on move is sent
    it too: whose reply is awaited and the milliseconds it may take; with a bank, each seat's
    milliseconds left (by seat name) and the increment."""
    if clock is None:
        return None
    wire: JsonObject = {
        "seat": codec.seat_names[clock.seat],
        "timeoutMs": round(clock.timeout_s * 1000),
    }
    if clock.bank is not None:
        wire["remainingMs"] = {
            name: round(left * 1000)
            for name, left in zip(codec.seat_names, clock.remaining_s, strict=True)
        }
        wire["incrementMs"] = clock.bank.increment_ms
    return wire


class TurnResult:
    """One turn as played, immutable: the position after it and everything it caused, with its
    wire forms built once, when first asked for, for every listener."""

    __slots__ = (
        "_action_json",
        "_scores",
        "_spectator_json",
        "action",
        "clock",
        "codec",
        "cpu_ms",
        "debug",
        "events",
        "match_id",
        "number",
        "outcome",
        "played_at",
        "reply_ms",
        "seat",
        "state",
        "stderr",
        "timed_out",
        "timing",
    )

    def __init__(
        self,
        match_id: str,
        codec: AnyCodec,
        number: int,
        seat: int,
        action: JsonObject,
        timed_out: bool,
        events: Sequence[Any],
        state: Any,
        outcome: Outcome | None,
        reply_ms: int = 0,
        clock: TurnClock | None = None,
        *,
        played_at: float,
        debug: str | None = None,
        stderr: str | None = None,
        cpu_ms: int | None = None,
        timing: ReplyTiming | None = None,
    ) -> None:
        self.match_id = match_id
        self.codec = codec
        self.number = number
        self.seat = seat
        self.action = action  # as the records keep it
        self.timed_out = timed_out
        self.events = tuple(events)
        self.state = state  # the position after the turn
        self.outcome = outcome  # set if the turn ended the game
        self.reply_ms = reply_ms  # how long the seat took (its whole time if it timed out)
        self.clock = clock  # the seat awaited next, unless the game is over
        self.played_at = played_at  # the match's clock time: the next seat's clock runs from it
        self.debug = debug  # the bot's debug text: in the records only, never sent while played
        self.stderr = stderr  # what its process wrote on stderr during the turn: the same
        self.cpu_ms = cpu_ms  # the CPU its processes used for the turn, where counted
        self.timing = timing  # how its reply's time split (None: no reply, it timed out)
        self._scores: JsonObject | None = None
        self._action_json: bytes | None = None
        self._spectator_json: bytes | None = None

    @property
    def scores(self) -> JsonObject:
        if self._scores is None:
            self._scores = self.codec.scores(self.state)
        return self._scores

    @property
    def action_json(self) -> bytes:
        """The action as JSON, for the records (with the bot's debug text, stderr, CPU time and
        reply's timing, if any)."""
        if self._action_json is None:
            kept = self.action
            if self.debug is not None:
                kept = {**kept, DEBUG_KEY: self.debug}
            if self.stderr is not None:
                kept = {**kept, STDERR_KEY: self.stderr}
            if self.cpu_ms is not None:
                kept = {**kept, CPU_KEY: self.cpu_ms}
            if self.timing is not None:
                kept = {**kept, TIMING_KEY: self.timing.to_wire()}
            self._action_json = bytes(memoryview(orjson.dumps(kept)))
        return self._action_json

    def spectator_json(self) -> bytes:
        """The turn as pages watching it receive it, without its closing brace, so that the
        spectator count (which only the visor knows) can follow."""
        if self._spectator_json is None:
            codec = self.codec
            message = {
                "type": "turn",
                "simulationId": self.match_id,
                "turn": self.number,
                "seat": codec.seat_names[self.seat],
                "action": self.action,
                "timedOut": self.timed_out,
                "events": codec.events_to_wire(self.events),
                "state": codec.state_to_wire(self.state),
                "scores": self.scores,
                "replyMs": self.reply_ms,
                "clock": clock_to_wire(codec, self.clock),
            }
            self._spectator_json = orjson.dumps(message)[:-1]
        return self._spectator_json
