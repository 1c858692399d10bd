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


def board_text(game: AnyCodec, state: Any) -> str:
    """The board with its column numbers above and its row numbers on the left."""
    width, height = game.board_size()
    margin = " " * (len(str(height - 1)) + 1)
    lines = []
    if width > 10:
        lines.append(margin + "".join(str(x // 10) if x >= 10 else " " for x in range(width)))
    lines.append(margin + "".join(str(x % 10) for x in range(width)))
    for y, row in enumerate(game.render_text(state).split("\n")):
        lines.append(f"{y:>{len(margin) - 1}} {row}")
    return "\n".join(line.rstrip() for line in lines)


def turn_text(
    game: AnyCodec,
    number: int,
    seat: int,
    nick: str,
    timed_out: bool,
    events: Sequence[Any],
    state: Any,
) -> str:
    """One turn: who played it, the score after it, what happened, and the board."""
    scores = ", ".join(f"{name} {value}" for name, value in game.scores(state).items())
    heading = f"turn {number}: {game.seat_names[seat]} ({nick})"
    if timed_out:
        heading += ", timed out"
    lines = [f"{heading}   [{scores}]"]
    said = game.events_text(events)
    lines += [f"  {line}" for line in said] if said else ["  passes"]
    lines.append(board_text(game, state))
    return "\n".join(lines)


def result_text(game: AnyCodec, nicks: Sequence[str], result: JsonObject | None) -> str:
    """How the game ended, in words: ``team1 (Dummy) wins 3 to 1: Points to win reached``."""
    if result is None:
        return "unfinished: no result"
    score = result.get("score")
    values = list(score.values()) if isinstance(score, dict) else None
    winner = result.get("winner")
    if winner is None:
        at = f" at {values[0]} to {values[1]}" if values else ""
        return f"a draw{at}: {result['reason']}"
    seat = list(game.seat_names).index(winner)
    by = f" {values[seat]} to {values[1 - seat]}" if values else ""
    return f"{winner} ({nicks[seat]}) wins{by}: {result['reason']}"


def replay_text(record: JsonObject, turns: TurnRange | None = None) -> Iterator[str]:
    """The game turn by turn as text: a header and the legend, then each turn (of ``turns``,
    all by default) with its board, then the result in words."""
    game = game_of(record)
    turns = TurnRange() if turns is None else turns
    nicks = [p["nick"] for p in record["players"]]
    players = " against ".join(f"{p['seat']} ({p['nick']})" for p in record["players"])
    yield f"{record['game']} {record['id']}, seed {record['seed']}: {players}"
    for frame in frames(record):
        if frame.seat is None:
            yield "\n".join(game.legend_text(frame.state))
            if 0 in turns:
                yield f"\nstart\n{board_text(game, frame.state)}"
        elif frame.turn in turns:
            timed_out = record["turns"][frame.turn - 1]["timedOut"]
            text = turn_text(
                game,
                frame.turn,
                frame.seat,
                nicks[frame.seat],
                timed_out,
                frame.events,
                frame.state,
            )
            yield f"\n{text}"
        elif turns.last is not None and frame.turn > turns.last:
            break
    yield f"\n{result_text(game, nicks, record['result'])}"
