"""Replays: a record's seed and turns, run through the pure rules, give back every position.

Nothing but the record is needed: the game is rebuilt from the settings it stored, the random
generator from its seed, and each turn is parsed and applied exactly as the match loop did.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from server.debug import CPU_KEY, DEBUG_KEY, STDERR_KEY, TIMING_KEY
from server.games import GAMES
from server.games.base import AnyCodec, JsonObject, Player

ORIGIN_KEY = "from"
"""In a record's settings, where the game began if not at the start: ``{"game", "turn",
"names"}`` for one played on from another's turn (its record holds that game's turns before it),
or ``{"position", "turn"}`` (and ``"game"``, the game it was taken from, if any) for one begun
at a given position after ``turn`` turns (its record holds only its own turns, numbered on)."""
CHARGE_KEY = "charge"  # in a record's settings: "think" if each reply was charged its thinking
CLOCK_KEY = "clock"  # in a record's settings: its time bank {"initialMs", "incrementMs"}, if any


class DamagedRecord(Exception):
    """A stored game that cannot be read back or replayed: a damaged file, a record written by
    other rules, or a token that points at a game of another kind. The message names the game."""


@dataclass(frozen=True, slots=True)
class Frame:
    """The position after ``turn`` turns (0 is the start), and the events of that turn."""

    turn: int
    seat: int | None
    state: Any
    events: Sequence[Any]


def game_of(record: JsonObject) -> AnyCodec:
    """The game a record was played with, rebuilt from the settings it stored."""
    try:
        return GAMES[record["game"]].codec_for(record["settings"])
    except Exception as error:  # whatever the stored settings hold
        raise DamagedRecord(
            f"game {record.get('id')}: its settings do not read: {error}"
        ) from error


def frames(record: JsonObject, rng: random.Random | None = None) -> Iterator[Frame]:
    """Every position of a recorded game, from the start to its last turn.

    ``rng``, if given, is the generator the turns draw from; it must be fresh from the record's
    seed, and afterwards it is exactly where the game left it (for resuming the game). Raises
    ``DamagedRecord`` at the first turn the rules cannot replay.
    """
    game = game_of(record)
    rules = game.rules
    seat_names = list(game.seat_names)
    number = 0
    try:
        origin = record["settings"].get(ORIGIN_KEY)
        if origin is not None and "position" in origin:
            state, played = game.position_from_wire(origin["position"])
        else:
            # A game played on from another's turn: its first turns are the other's, whose
            # players' names its position has.
            names = [p["names"] for p in record["players"]] if origin is None else origin["names"]
            players = [
                Player(p["nick"], tuple(dwarf_names))
                for p, dwarf_names in zip(record["players"], names, strict=True)
            ]
            state, played = rules.initial_state(players), 0
        rng = random.Random(record["seed"]) if rng is None else rng
        frame = Frame(played, None, state, [])
        turns = iter(record["turns"])
    except Exception as error:  # a stored record is data from outside: anything may be wrong
        raise DamagedRecord(
            f"game {record.get('id')}: its start does not replay: {error}"
        ) from error
    yield frame
    for turn in turns:
        try:
            number = turn["number"]
            seat = seat_names.index(turn["seat"])
            if turn["timedOut"]:
                action = rules.timeout_action(state, seat)
            else:
                message = {"type": "player-turn", **turn["action"]}
                action = rules.check(state, seat, game.candidate(message))
            state, events = rules.apply(state, seat, action, rng)
        except Exception as error:
            raise DamagedRecord(
                f"game {record.get('id')}: turn {number} does not replay: {error}"
            ) from error
        yield Frame(number, seat, state, events)


def replay_to_wire(record: JsonObject) -> JsonObject:
    """A record with every position, as the visor's replay page plays it back."""
    game = game_of(record)
    return {
        "id": record["id"],
        "game": record["game"],
        "players": record["players"],
        "seats": list(game.seat_names),
        "board": game.view.describe(),
        "result": record["result"],
        "status": record["status"],
        "seed": record["seed"],
        "startedAt": record["startedAt"],
        "finishedAt": record["finishedAt"],
        "turnCount": record["turnCount"],
        "tournament": record["tournament"],
        "pairing": record["pairing"],
        "from": origin_to_wire(record),
        "clock": record["settings"].get(CLOCK_KEY),  # its time bank, if it had one
        "frames": [
            {
                "turn": frame.turn,
                "seat": None if frame.seat is None else game.seat_names[frame.seat],
                "state": game.state_to_wire(frame.state),
                "events": game.events_to_wire(frame.events),
                "scores": game.scores(frame.state),
                "debug": turn_debug(record, frame.turn),
                "stderr": turn_stderr(record, frame.turn),
                "timing": turn_timing(record, frame.turn),
            }
            for frame in frames(record)
        ],
    }


def origin_to_wire(record: JsonObject) -> JsonObject | None:
    """The game and turn a record was played on from (``None``: it was played from the start;
    ``game`` ``None``: from a position given at its creation), and whether its record begins
    there (``given``) or holds the turns before it."""
    origin = record["settings"].get(ORIGIN_KEY)
    if origin is None:
        return None
    return {"game": origin.get("game"), "turn": origin["turn"], "given": "position" in origin}


def turns_before(record: JsonObject) -> int:
    """How many turns were played before a record's first: those before the position it was
    begun at (its turns are numbered on from there), else none."""
    origin = record["settings"].get(ORIGIN_KEY)
    return origin["turn"] if origin is not None and "position" in origin else 0


def turn_debug(record: JsonObject, number: int) -> str | None:
    """The debug text the bot sent with turn ``number`` of a record (None for the start)."""
    return _kept_with(record, number, DEBUG_KEY)


def turn_stderr(record: JsonObject, number: int) -> str | None:
    """What the bot's process wrote on stderr during turn ``number`` of a record."""
    return _kept_with(record, number, STDERR_KEY)


def turn_cpu_ms(record: JsonObject, number: int) -> int | None:
    """The CPU time the bot's processes used for turn ``number`` of a record, where counted."""
    index = number - turns_before(record) - 1
    action = record["turns"][index]["action"] if index >= 0 else None
    used = action.get(CPU_KEY) if isinstance(action, dict) else None
    return used if isinstance(used, int) and not isinstance(used, bool) else None


def turn_timing(record: JsonObject, number: int) -> list[int | None] | None:
    """How turn ``number``'s reply time split, in ms (``[reply, round trip, lateness,
    think]``: ``server.match_views.ReplyTiming``), where it was kept (not for a timeout)."""
    index = number - turns_before(record) - 1
    action = record["turns"][index]["action"] if index >= 0 else None
    timing = action.get(TIMING_KEY) if isinstance(action, dict) else None
    return timing if isinstance(timing, list) else None


def _kept_with(record: JsonObject, number: int, key: str) -> str | None:
    """The text kept under ``key`` with turn ``number``'s action (None for the start, and for
    the turns before the position a record was begun at)."""
    index = number - turns_before(record) - 1
    if index < 0:
        return None
    action = record["turns"][index]["action"]
    text = action.get(key) if isinstance(action, dict) else None
    return text if isinstance(text, str) else None


def turns_to_wire(record: JsonObject, first: int, last: int) -> list[JsonObject]:
    """Turns ``first`` to ``last`` of a record, as a live view's move list has them: each
    turn's seat, whether the arena played it for a seat that did not answer, and its events,
    as the live ``turn`` messages carry them (the positions are left out: the page has the
    current one). Every turn before ``first`` is replayed too, as a position needs them all."""
    game = game_of(record)
    positions = frames(record)
    next(positions)  # the start: no turn
    wire = []
    for turn, frame in zip(record["turns"], positions, strict=True):
        if frame.turn > last:
            break
        if frame.turn >= first:
            wire.append(
                {
                    "turn": frame.turn,
                    "seat": turn["seat"],
                    "timedOut": turn["timedOut"],
                    "events": game.events_to_wire(frame.events),
                }
            )
    return wire


@dataclass(frozen=True, slots=True)
class TurnRange:
    """The turns to show, both ends included (0 is the start position); ``last`` ``None``: to
    the end."""

    first: int = 0
    last: int | None = None

    @classmethod
    def parse(cls, text: str) -> TurnRange:
        """``A-B``, ``A-`` (to the end), ``-B`` (from the start) or ``N`` (one turn)."""
        first, dash, last = text.partition("-")
        try:
            start = int(first) if first.strip() else 0
            end = (int(last) if last.strip() else None) if dash else start
        except ValueError:
            raise ValueError(f"turns must be A-B, A-, -B or N, not {text!r}") from None
        if start < 0 or (end is not None and end < start):
            raise ValueError(f"turns {text!r}: need 0 <= A <= B")
        return cls(start, end)

    def __contains__(self, turn: int) -> bool:
        return self.first <= turn and (self.last is None or turn <= self.last)
