"""Verify and time Thud move generation on games recorded from the AJFaraday/Thud engine.

    python bench/thud_movegen.py [traces.jsonl.gz]

The default is the copy in tests/data (six games of the 30-game sample recorded from the
AJFaraday/Thud engine, tests/data/README.md); pass the whole sample's file
(``traces-sample.jsonl.gz``, not in this repository) to measure over all of it. Every game is
replayed from the start by its recorded moves; each position's legal moves (kind, kills,
in_danger) and each game's end are compared with the record, then ``legal_moves`` plus the
``in_danger`` flag of every move, ``legal_moves`` alone, and the JSON list of the legal moves a
turn message carries are timed over all positions, and ``check`` plus ``apply`` over the
recorded moves. Last, a whole turn as the server plays it: the recorded move as a bot sends it
(``player-turn``) made an action by the codec, checked and applied by the rules, and the next
turn message built and encoded (position, every legal move as JSON).

Times are CPU seconds of this process, the best of several rounds, so that other work on the
machine barely moves them.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

# Run as a script, so the repository root is not on the path by itself.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from server.games.thud.board import Square
from server.games.thud.codec import ThudCodec, moves_wire
from server.games.thud.danger import danger_squares
from server.games.thud.movegen import legal_moves
from server.games.thud.pieces import Action, State, initial_state, score, side_to_move
from server.games.thud.rules import ThudRules, apply, check
from server.protocol import encode

DEFAULT_TRACES = Path(__file__).resolve().parent.parent / "tests" / "data" / "thud_traces.jsonl.gz"
KIND_CODES = {"walk": "w", "hurl": "h", "shove": "s"}
MIN_SECONDS = 2.0

Play = tuple[Square, Square]


def load_games(path: Path) -> dict[int, list[dict[str, Any]]]:
    games: dict[int, list[dict[str, Any]]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            games.setdefault(record["g"], []).append(record)
    return games


def move_rows(state: State) -> list[tuple[Any, ...]]:
    danger = danger_squares(state, side_to_move(state))
    return sorted(
        (*m.start, *m.end, KIND_CODES[m.kind], sorted(m.killed), int(m.end in danger))
        for m in legal_moves(state)
    )


def recorded_rows(record: dict[str, Any]) -> list[tuple[Any, ...]]:
    return sorted(
        (fx, fy, tx, ty, kind, sorted((x, y) for x, y in killed), danger)
        for fx, fy, tx, ty, kind, killed, danger in record["moves"]
    )


def end_summary(state: State) -> tuple[Any, ...]:
    final = score(state)
    winning = final.winning[0] if final.winning else "?"
    return (
        state.ply - 1,
        state.end_reason,
        side_to_move(state)[0],
        final.dwarfs,
        final.trolls,
        winning,
    )


def replay(games: dict[int, list[dict[str, Any]]]) -> tuple[list[State], list[Play], int]:
    """Every position before a recorded move, the moves, and how many mismatches were found."""
    states: list[State] = []
    plays: list[Play] = []
    mismatches = 0
    for game, records in sorted(games.items()):
        state = initial_state()
        for record in records:
            if record["t"] == "pos":
                position = [list(s) for s in state.dwarfs], [list(s) for s in state.trolls]
                if position != (record["dwarfs"], record["trolls"]) or state.ply != record["ply"]:
                    print(f"game {game} ply {record['ply']}: position differs")
                    mismatches += 1
                    break
                if move_rows(state) != recorded_rows(record):
                    print(f"game {game} ply {record['ply']}: legal moves differ")
                    mismatches += 1
                fx, fy, tx, ty = record["play"]
                play = (fx, fy), (tx, ty)
                states.append(state)
                plays.append(play)
                state, _ = apply(state, check(state, Action(play)))
            elif record["t"] == "end":
                expected = record["score"]
                wanted = (
                    record["plies"],
                    record["reason"],
                    record["side_to_move"],
                    expected["dwarfs"],
                    expected["trolls"],
                    expected["winning"],
                )
                if end_summary(state) != wanted:
                    print(f"game {game}: end {end_summary(state)} != recorded {wanted}")
                    mismatches += 1
    return states, plays, mismatches


def best_round(work: Callable[[], None]) -> float:
    """The fewest CPU seconds of several rounds of ``work``, run for at least MIN_SECONDS."""
    best = float("inf")
    started = time.process_time()
    while time.process_time() - started < MIN_SECONDS:
        t0 = time.process_time()
        work()
        best = min(best, time.process_time() - t0)
    return best


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_TRACES
    games = load_games(path)
    states, plays, mismatches = replay(games)
    actions = [Action(play) for play in plays]
    total_moves = sum(len(legal_moves(s)) for s in states)
    print(f"{path}: {len(games)} games, {len(states)} positions, {total_moves} legal moves")
    print(f"verification against the engine's records: {mismatches} mismatches")

    def generate() -> None:
        for state in states:
            danger = danger_squares(state, side_to_move(state))
            [move.end in danger for move in legal_moves(state)]

    def generate_only() -> None:
        for state in states:
            legal_moves(state)

    def encode_moves() -> None:
        for state in states:
            orjson.dumps(moves_wire(state))

    def play() -> None:
        for state, action in zip(states, actions, strict=True):
            apply(state, check(state, action))

    codec = ThudCodec(ThudRules())
    rules = codec.rules
    messages = [
        {"type": "player-turn", "move": {"from": [fx, fy], "to": [tx, ty]}}
        for (fx, fy), (tx, ty) in plays
    ]
    seats = [rules.to_move(state) for state in states]
    rng = random.Random(0)  # Thud draws none

    def turn() -> None:
        for state, seat, message in zip(states, seats, messages, strict=True):
            action = rules.check(state, seat, codec.candidate(message))
            after, _ = rules.apply(state, seat, action, rng)
            encode(codec.turn_message(after, 1 - seat, after.ply, 10_000))

    for label, work in [
        ("legal_moves + in_danger", generate),
        ("legal_moves alone", generate_only),
        ("legal moves as JSON", encode_moves),
    ]:
        seconds = best_round(work)
        print(
            f"{label:>24}: {len(states) / seconds:9.0f} positions/s, "
            f"{total_moves / seconds:10.0f} moves/s, "
            f"{seconds / len(states) * 1e6:7.1f} us/position"
        )
    for label, work in [("check + apply", play), ("turn, as the server", turn)]:
        seconds = best_round(work)
        per_move = seconds / len(actions) * 1e6
        print(f"{label:>24}: {len(actions) / seconds:9.0f} moves/s, {per_move:7.1f} us/move")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
