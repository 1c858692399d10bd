"""Differential test: our Thud rules against games recorded from the AJFaraday/Thud engine.

Each record holds the position before a ply and the engine's complete legal move set with kinds,
kills and ``in_danger`` flags; the games are replayed from the start by the recorded moves.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from server.games.thud.danger import danger_squares
from server.games.thud.movegen import legal_moves
from server.games.thud.pieces import (
    Action,
    Move,
    State,
    ThudEvent,
    initial_state,
    outcome,
    score,
    side_to_move,
    state_from_position,
)
from server.games.thud.rules import apply, check

TRACES = Path(__file__).parent / "data" / "thud_traces.jsonl.gz"
KIND_CODES = {"walk": "w", "hurl": "h", "shove": "s"}
WINNER_CODES = {"d": 0, "t": 1, "?": None}

Record = dict[str, Any]
MoveRow = tuple[int, int, int, int, str, tuple[tuple[int, int], ...], int]


def play(state: State, action: Action) -> tuple[State, list[ThudEvent]]:
    """Check an action and apply it, as a match does."""
    return apply(state, check(state, action))


def _load_games() -> dict[int, list[Record]]:
    games: dict[int, list[Record]] = {}
    with gzip.open(TRACES, "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            games.setdefault(record["g"], []).append(record)
    return games


GAMES = _load_games()


def _our_rows(state: State) -> list[MoveRow]:
    """Our legal moves in the trace's row format, sorted like the trace."""
    danger = danger_squares(state, side_to_move(state))
    return sorted(
        (*m.start, *m.end, KIND_CODES[m.kind], tuple(sorted(m.killed)), int(m.end in danger))
        for m in legal_moves(state)
    )


def _recorded_rows(record: Record) -> list[MoveRow]:
    return sorted(
        (fx, fy, tx, ty, kind, tuple(sorted((x, y) for x, y in killed)), danger)
        for fx, fy, tx, ty, kind, killed, danger in record["moves"]
    )


def _pieces(record: Record, side: str) -> tuple[tuple[int, int], ...]:
    return tuple((x, y) for x, y in record[side])


@pytest.mark.parametrize("game", sorted(GAMES))
def test_recorded_game_replays_identically(game: int) -> None:
    start, *positions, end = GAMES[game]
    assert start["t"] == "start"
    assert end["t"] == "end"
    state = initial_state()
    for record in positions:
        ply = record["ply"]
        assert (state.ply, side_to_move(state)[0]) == (ply, record["side"])
        assert state.dwarfs == _pieces(record, "dwarfs"), f"ply {ply}"
        assert state.trolls == _pieces(record, "trolls"), f"ply {ply}"

        rebuilt = state_from_position(record["dwarfs"], record["trolls"], ply=ply)
        assert _our_rows(rebuilt) == _recorded_rows(record), f"game {game} ply {ply}"
        assert legal_moves(state) == legal_moves(rebuilt)

        fx, fy, tx, ty = record["play"]
        state, _ = play(state, Action(((fx, fy), (tx, ty))))

    assert state.ply - 1 == end["plies"]
    assert state.end_reason == end["reason"]
    assert side_to_move(state)[0] == end["side_to_move"]
    assert state.dwarfs == _pieces(end, "dwarfs")
    assert state.trolls == _pieces(end, "trolls")
    final = score(state)
    assert (final.dwarfs, final.trolls, final.difference) == (
        end["score"]["dwarfs"],
        end["score"]["trolls"],
        end["score"]["difference"],
    )
    result = outcome(state)
    assert result is not None
    assert result.winner == WINNER_CODES[end["score"]["winning"]]


def test_sample_covers_every_ending_and_kind_of_kill() -> None:
    """Guards the choice of recorded games: what the replay test above actually exercises."""
    reasons = {records[-1]["reason"] for records in GAMES.values()}
    assert reasons == {"Timeout", "No more dwarfs", "No more trolls"}
    kills: Counter[tuple[str, int]] = Counter()
    for records in GAMES.values():
        for record in records[1:-1]:
            for move in record["moves"]:
                kills[move[4], len(move[5])] += 1
    assert kills["h", 1] > 0
    assert all(kind == "w" or n == 1 for (kind, n) in kills if kind == "h")
    assert max(n for (kind, n) in kills if kind == "w") >= 3
    assert max(n for (kind, n) in kills if kind == "s") >= 3
    assert kills["s", 0] == 0


def test_moves_are_identified_by_their_squares() -> None:
    """The engine's clients pick moves by (from, to); that pair must never be ambiguous."""
    state = initial_state()
    for record in GAMES[min(GAMES)][1:-1]:
        moves: list[Move] = legal_moves(state)
        assert len({(m.start, m.end) for m in moves}) == len(moves)
        fx, fy, tx, ty = record["play"]
        state, _ = play(state, Action(((fx, fy), (tx, ty))))
