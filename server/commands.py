"""A client's commands as data, and the one parser that turns its messages into them.

Every front end (a bot on TCP, a page's websocket, the Thud HTTP API, a seat another node asks
for) builds these commands and hands them to its ``server.session.Session``: what a message
means, and whether its fields have the right shape and type, is decided here and nowhere else
(python-chess's way: check once, at the edge, with a typed error; the session then acts on
values it can trust). What needs the arena to judge (whether a simulation exists, a side is
free, a key is right) is the session's.

A command keeps the message's ``fields`` as sent: a seat is described by game-specific fields
(``nick``, ``side``, ``names``...) that the game's codec reads when the client sits down. They
hold a bot's key too, so a command's ``repr`` (in a log line, an error) leaves them out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, TypeGuard

from server.arena import MAX_SEED
from server.errors import BotError, Rejected
from server.games import DEFAULT_GAME, GAMES
from server.games.base import JsonObject, TimeBank
from server.played_on import StartingPoint

MAX_DECLINE_REASON: Final = 200  # characters of a decline's ``reason`` passed on


@dataclass(frozen=True, slots=True)
class Create:
    """``create-simulation``: a new, empty simulation the client does not sit in."""

    fields: JsonObject = field(repr=False)
    game: str
    seed: int | None
    clock: TimeBank | None  # a time bank per seat instead of the flat turn timeout
    position: object | None  # begun there (the game's codec judges it); None: the start
    # A recorded game's turn to play on from (the replay page's "Play from here"): never sent
    # by a client, built by the replay page's front end.
    played_on: StartingPoint | None = None
    # ``"clock": {"charge": "think"}``: each reply charged its think time, not its whole time.
    charge_think: bool = False


@dataclass(frozen=True, slots=True)
class Join:
    """``join-simulation`` with a ``simulationId``: a seat of that simulation."""

    fields: JsonObject = field(repr=False)
    simulation_id: str
    game: str | None  # the game the client expects it to be (``Wrong game`` if not)


@dataclass(frozen=True, slots=True)
class RandomJoin:
    """``join-simulation`` without a ``simulationId``: a seat of any simulation waiting."""

    fields: JsonObject = field(repr=False)
    game: str
    seed: int | None  # of the simulation, if a new one is opened for it


@dataclass(frozen=True, slots=True)
class Rejoin:
    """``rejoin``: a seat taken back with its token, after a lost connection."""

    fields: JsonObject = field(repr=False)
    simulation_id: str
    token: str


class Move:
    """``player-turn``: the client's turn, as its game's codec reads it.

    Made for every move read: a plain class with a ``Final`` attribute (immutable as far as the
    type checker goes) builds in a third of a frozen dataclass's time, as ``protocol.Message``.
    Compared, matched and shown as the other commands are (its ``repr`` without its fields)."""

    __slots__ = ("fields",)
    __match_args__ = ("fields",)

    def __init__(self, fields: JsonObject) -> None:
        self.fields: Final = fields

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Move) and other.fields == self.fields

    __hash__ = None  # type: ignore[assignment]  # it holds a dict: unhashable, as a dataclass

    def __repr__(self) -> str:
        return "Move()"


@dataclass(frozen=True, slots=True)
class Leave:
    """The client is gone (its connection closed, its page left): never sent, built by the
    front end that saw it go."""


@dataclass(frozen=True, slots=True)
class Seek:
    """``seek``: wait in the pool for an opponent of about the same rating."""

    fields: JsonObject = field(repr=False)
    game: str
    rated: bool


@dataclass(frozen=True, slots=True)
class Cancel:
    """Withdraw the seek waiting (a page's "Cancel")."""


@dataclass(frozen=True, slots=True)
class Challenge:
    """``challenge``: a registered bot challenges another by name."""

    fields: JsonObject = field(repr=False)
    game: str
    opponent: str
    rated: bool
    side: str | None  # the challenger's, one of the game's seat names (None: the first seat)


@dataclass(frozen=True, slots=True)
class Accept:
    """``accept``: a challenge sent to this client is taken."""

    fields: JsonObject = field(repr=False)
    challenge: str


@dataclass(frozen=True, slots=True)
class Decline:
    """``decline``: a challenge sent to this client is refused."""

    challenge: str
    reason: str  # passed on to the challenger (at most ``MAX_DECLINE_REASON`` characters)


@dataclass(frozen=True, slots=True)
class Pong:
    """``pong``: a bot's answer to the arena's ``ping``, which its front end reads to measure
    the connection's round trip (``server.round_trip``); a session has nothing to do with it."""

    ping_id: object  # the ping's ``id``, as sent back (a pong that answers no ping is ignored)


@dataclass(frozen=True, slots=True)
class Register:
    """``register``: a bot registers its name, where registration is open."""

    bot: object  # judged by the roster (``server.identity``), which words every refusal


Command = (
    (
        Create
        | Join
        | RandomJoin
        | Rejoin
        | Move
        | Leave
        | Seek
        | Cancel
        | Challenge
        | Accept
        | Decline
    )
    | Register
    | Pong
)
# The commands that may seat the client (at once, or once paired).
Seating = Join | RandomJoin | Rejoin | Seek | Challenge | Accept
# The commands whose ``bot`` and ``key`` are checked before they are carried out.
Identified = Create | Join | RandomJoin | Seek | Challenge
NO_CHALLENGE: Final = "no open challenge of that id for you"


def asks_pings(command: Command | Rejected) -> bool:
    """Does the client ask to be pinged (``"pings": true`` in a command that may seat it), and
    so answer the arena's pings with pongs (``server.round_trip``)? The original protocol's
    bots never do: they hang up on a message type they do not know."""
    return isinstance(command, Seating) and command.fields.get("pings") is True


def names_bot(command: Command) -> TypeGuard[Identified]:
    """Does the command name a registered bot (whose key the session checks first)?"""
    return isinstance(command, Identified) and "bot" in command.fields


def parse(message: JsonObject) -> Command:
    """The command a client's message gives; raises ``Rejected`` (its ``BotError``) if the
    message is not one, or a field has the wrong shape or type."""
    kind = message.get("type")
    parser = _PARSERS.get(kind) if isinstance(kind, str) else None
    if parser is None:
        raise Rejected(BotError.UNKNOWN_MESSAGE_TYPE, f"unknown type {kind!r}")
    return parser(message)


def read(message: JsonObject) -> Command | Rejected:
    """``parse``, for a front end that hands a refusal to its session as it would a command:
    the session answers it in its turn, after the commands that came before it."""
    try:
        return parse(message)
    except Rejected as rejected:
        return rejected


def game_of(fields: JsonObject) -> str:
    """The ``game`` a command names (the default one if none); raises ``Rejected``."""
    name = fields.get("game")
    if name is None:
        return DEFAULT_GAME
    if not isinstance(name, str) or name not in GAMES:
        raise Rejected(BotError.UNKNOWN_GAME, f"game must be one of: {', '.join(sorted(GAMES))}")
    return name


def seed_of(fields: JsonObject) -> int | None:
    """A command's ``seed``, if it gives one; raises ``Rejected``."""
    seed = fields.get("seed")
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED
    ):
        raise Rejected(BotError.INVALID_SEED, f"seed must be an integer from 0 to {MAX_SEED}")
    return seed


def _rated(fields: JsonObject, error: BotError) -> bool:
    rated = fields.get("rated", False)
    if not isinstance(rated, bool):
        raise Rejected(error, '"rated" must be true or false')
    return rated


def _create(message: JsonObject) -> Create:
    game, seed = game_of(message), seed_of(message)
    position = message.get("position")
    if "position" in message and position is None:
        raise Rejected(BotError.INVALID_POSITION, "position must be a position of the game")
    bank, charge_think = _clock(message.get("clock"))
    return Create(message, game, seed, bank, position, charge_think=charge_think)


CHARGES: Final = ("reply", "think")  # what a reply is charged: its whole time, or its thinking


def _clock(clock: object) -> tuple[TimeBank | None, bool]:
    """A create's ``clock``: its time bank (``initialMs``, ``incrementMs``), if any, and
    whether it charges think time (``"charge": "think"``; by default ``"reply"``)."""
    if clock is None:
        return None, False
    charge = "reply"
    if isinstance(clock, dict) and "charge" in clock:
        charge = clock["charge"]
        if charge not in CHARGES:
            raise Rejected(BotError.INVALID_CLOCK, '"charge" must be "reply" or "think"')
        clock = {key: value for key, value in clock.items() if key != "charge"}
        if not clock:
            return None, charge == "think"
    return TimeBank.from_wire(clock), charge == "think"


def _join(message: JsonObject) -> Join | RandomJoin:
    simulation_id = message.get("simulationId")
    if not simulation_id:  # none, or empty: any simulation waiting
        return RandomJoin(message, game_of(message), seed_of(message))
    if not isinstance(simulation_id, str):
        raise Rejected(BotError.WRONG_SIMULATION_ID)
    game = message.get("game")
    if game is not None and not isinstance(game, str):
        raise Rejected(BotError.WRONG_GAME, '"game" must be a game\'s name')
    return Join(message, simulation_id, game)


def _rejoin(message: JsonObject) -> Rejoin:
    simulation_id, token = message.get("simulationId"), message.get("token")
    if not isinstance(simulation_id, str) or not simulation_id:
        raise Rejected(BotError.WRONG_SIMULATION_ID)
    if not isinstance(token, str):
        raise Rejected(BotError.INVALID_TOKEN, "no seat of this simulation has that token")
    return Rejoin(message, simulation_id, token)


def _seek(message: JsonObject) -> Seek:
    return Seek(message, game_of(message), _rated(message, BotError.INVALID_SEEK))


def _challenge(message: JsonObject) -> Challenge:
    game = game_of(message)
    opponent, side = message.get("opponent"), message.get("side")
    if not isinstance(opponent, str):
        raise Rejected(BotError.INVALID_CHALLENGE, '"opponent" must name another bot')
    rated = _rated(message, BotError.INVALID_CHALLENGE)
    if side is not None and side not in GAMES[game].seat_names:
        sides = ", ".join(GAMES[game].seat_names)
        raise Rejected(BotError.INVALID_CHALLENGE, f'"side" must be one of: {sides}')
    return Challenge(message, game, opponent, rated, side)


def _challenge_id(message: JsonObject) -> str:
    challenge = message.get("challenge")
    if not isinstance(challenge, str):
        raise Rejected(BotError.UNKNOWN_CHALLENGE, NO_CHALLENGE)
    return challenge


def _accept(message: JsonObject) -> Accept:
    return Accept(message, _challenge_id(message))


def _decline(message: JsonObject) -> Decline:
    reason = message.get("reason")
    said = reason[:MAX_DECLINE_REASON] if isinstance(reason, str) and reason else "declined"
    return Decline(_challenge_id(message), said)


_PARSERS: dict[str, Callable[[JsonObject], Command]] = {
    "create-simulation": _create,
    "join-simulation": _join,
    "rejoin": _rejoin,
    "player-turn": Move,
    "seek": _seek,
    "challenge": _challenge,
    "accept": _accept,
    "decline": _decline,
    "register": lambda message: Register(message.get("bot")),
    "pong": lambda message: Pong(message.get("id")),
}
