"""Where a session reaches its client (``SessionChannel``), who the client is (``Client``), and
a seat of a match played here (``LocalSeat``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from server.arena import Arena
from server.games.base import JsonObject
from server.match import Match, Phase
from server.match_views import TurnResult
from server.round_trip import RoundTrip
from server.seat_channel import SeatMessage


class SessionChannel(Protocol):
    """Where a session reaches its client: what each front end implements. What the session
    says becomes calls of it (``server.session.effects.perform``); the match of the client's
    seat writes to it directly (``send``, ``close``: the game's hot path)."""

    def send(self, message: SeatMessage) -> None:
        """A message for the client: its seat's, as the match sends them."""

    def send_data(self, data: bytes) -> None:
        """A message for the client's seat, already encoded by the node that plays it."""

    def error(self, message: str, reason: str | None) -> None:
        """A command was refused; nothing changed and the client may go on."""

    def refuse(self, message: str, reason: str) -> None:
        """A limit was reached: say which, then close the client."""

    def seated(self) -> None:
        """The client has a seat now (at once, or once another node gave it one)."""

    def close(self) -> None:
        """The seat's channel was closed (the game is over, or the seat was rejoined)."""


@dataclass(frozen=True, slots=True)
class Client:
    """Who a session's client is, as the checks and the seats need it."""

    address: str  # where it connects from: the per-address caps count by it
    kind: str = "bot"  # SeatRequest.kind: "bot", "person", "client", "http"
    turn_timeout_s: float | None = None  # a person's time for a turn (None: the match's)
    routes: bool = True  # may reach other nodes (False: a seat another node asked for)
    # Its ``bot`` was proved by the node it connects through (a seat another node asked for,
    # which forwards the name and never the key).
    checked: bool = False
    noun: str = "connection"  # what one client is called in a refusal ("one game per ...")
    # Its connection's round trip, where its front end measures one (a TCP bot's): its seats'
    # replies are credited it (``server.match_clock``).
    round_trip: RoundTrip | None = None


class LocalSeat:
    """A seat of a match played here."""

    def __init__(self, arena: Arena, match: Match, seat: int, channel: SessionChannel) -> None:
        self.arena = arena
        self.match = match
        self.seat = seat
        self.channel = channel

    @property
    def playing(self) -> bool:
        return self.match.phase is not Phase.FINISHED  # Status.FINISHED, without a lookup

    def submit(self, message: JsonObject) -> TurnResult | None:
        return self.match.submit(self.seat, message, self.channel)

    def leave(self) -> None:
        """The client is gone: the seat is freed (before the start) or forfeited; a match a
        random join opened is dropped once nobody is left in it."""
        self.match.leave(self.seat, self.channel)
        if self.match.options.by_join:
            self.arena.drop_if_abandoned(self.match)
