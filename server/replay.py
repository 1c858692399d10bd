"""Replays: a record's seed and turns, run through the pure rules, give back every position.

Nothing but the record is needed: the game is rebuilt from the settings it stored, the random
generator from its seed, and each turn is parsed and applied exactly as the match loop did.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from server.games import GAMES
from server.games.base import AnyCodec, JsonObject, Player


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
        return GAMES[record["game"]].from_settings(record["settings"])
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
        players = [Player(p["nick"], tuple(p["names"])) for p in record["players"]]
        state = rules.initial_state(players)
        rng = random.Random(record["seed"]) if rng is None else rng
        frame = Frame(0, None, state, [])
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
        "board": game.describe(),
        "result": record["result"],
        "status": record["status"],
        "seed": record["seed"],
        "startedAt": record["startedAt"],
        "finishedAt": record["finishedAt"],
        "turnCount": record["turnCount"],
        "tournament": record["tournament"],
        "pairing": record["pairing"],
        "frames": [
            {
                "turn": frame.turn,
                "seat": None if frame.seat is None else game.seat_names[frame.seat],
                "state": game.state_to_wire(frame.state),
                "events": game.events_to_wire(frame.events),
                "scores": game.scores(frame.state),
            }
            for frame in frames(record)
        ],
    }


def replay_text(record: JsonObject) -> Iterator[str]:
    """The game turn by turn as text: a header, then each turn's action and board."""
    game = game_of(record)
    players = ", ".join(f"{p['seat']}: {p['nick']}" for p in record["players"])
    yield f"{record['game']} {record['id']} (seed {record['seed']}) {players}"
    for frame in frames(record):
        scores = " ".join(f"{name} {value}" for name, value in game.scores(frame.state).items())
        if frame.seat is None:
            yield f"\nstart  [{scores}]"
        else:
            action = record["turns"][frame.turn - 1]
            timed_out = " (timed out)" if action["timedOut"] else ""
            yield f"\nturn {frame.turn}: {game.seat_names[frame.seat]}{timed_out}  [{scores}]"
            for event in game.events_to_wire(frame.events):
                yield f"  {_event_text(event)}"
        yield game.render_text(frame.state)
    result = record["result"]
    if result is None:
        yield f"\n{record['status']}: no result"
    else:
        yield f"\n{result['winner'] or 'draw'}: {result['reason']} {result['score']}"


def _event_text(event: JsonObject) -> str:
    if "message" in event:
        return str(event["message"])
    return " ".join(f"{key}={value}" for key, value in event.items())
