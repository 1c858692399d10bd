"""Games that begin elsewhere than at the start: at a position given in wire form (a bot's
``create-simulation`` with ``position``), or on from a turn of a recorded game (``tavern play
--from GAME --turn N`` and the replay page's "Play from here", the same for both).

A game played on from a recorded one is the recorded game's own continuation: played with the
recorded game's settings (its board and turn limit) and seed, its random draws going on from
where the recorded game's were after turn N, and its record beginning with the recorded game's
first N turns (written when it starts, ``GameStarted.turns_before``), so that it replays as one
game and, with the same moves, exactly as the recorded game went on. A recorded game that itself
began at a given position has no turns from the start to copy: one played on from it begins at
a given position too (its position after turn N), its draws from the seed afresh.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from server.games.base import AnyCodec, JsonObject
from server.match_options import Resume
from server.replay import frames, game_of, turns_before


class NoStartingPoint(Exception):
    """The recorded game has no such turn, or does not replay; the message says which."""


def resume_at(codec: AnyCodec, position: object, seed: int, taken_from: str | None) -> Resume:
    """A new game of ``codec`` begun at a position given in wire form, its random draws from
    ``seed``, as its record will replay it; ``taken_from`` names the recorded game the position
    is one of, if it is. Raises ``PositionRejected``."""
    state, played = codec.position_from_wire(position)
    return _begun_at(codec, state, played, seed, taken_from)


def _begun_at(
    codec: AnyCodec, state: Any, played: int, seed: int, taken_from: str | None
) -> Resume:
    """A new game begun at ``state`` after ``played`` turns, as its record keeps the start."""
    origin: JsonObject = {"position": codec.position_to_wire(state), "turn": played}
    if taken_from is not None:
        origin["game"] = taken_from
    return Resume(state, played, random.Random(seed), origin)


@dataclass(frozen=True, slots=True)
class StartingPoint:
    """A recorded game's position after some of its turns, for a new game to play on from."""

    codec: AnyCodec  # the recorded game's settings, which the new game keeps
    seed: int  # the recorded game's
    resume: Resume  # where the new game begins, its draws where the recorded game's were
    start: Any  # the first position of the new game's record (the recorded game's first)


def starting_point(record: JsonObject, turn: int) -> StartingPoint:
    """Where ``record`` stands after ``turn`` of its turns; raises ``NoStartingPoint`` if it
    has no such turn, ``DamagedRecord`` if it does not replay."""
    codec = game_of(record)  # first: a record whose settings do not read is damaged
    before = turns_before(record)
    played = before + len(record["turns"])
    if turn > played:
        raise NoStartingPoint(f"game {record['id']} has {played} turns; there is no turn {turn}")
    if turn < before:
        raise NoStartingPoint(
            f"game {record['id']} began at a position after turn {before}; "
            f"there is no turn {turn} in it"
        )
    if before:
        return _from_given_position(record, codec, turn)
    rng = random.Random(record["seed"])
    positions = frames(record, rng)
    start = state = next(positions).state
    for frame in positions if turn else ():
        state = frame.state
        if frame.turn == turn:
            break
    origin = {
        "game": record["id"],
        "turn": turn,
        "names": [player["names"] for player in record["players"]],
    }
    resume = Resume(state, turn, rng, origin, tuple(record["turns"][:turn]))
    return StartingPoint(codec, record["seed"], resume, start)


def _from_given_position(record: JsonObject, codec: AnyCodec, turn: int) -> StartingPoint:
    """Turn ``turn`` of a game that itself began at a given position: the new game begins at a
    given position too (its record cannot hold turns from the start)."""
    state = next(frame.state for frame in frames(record) if frame.turn == turn)
    resume = _begun_at(codec, state, turn, record["seed"], record["id"])
    return StartingPoint(codec, record["seed"], resume, state)
