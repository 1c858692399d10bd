"""Following the arena's games: every update a match hands its listeners becomes a write for the
records' writer, queued on the event loop (``server.records.writer``), so that no game waits."""

from __future__ import annotations

import orjson

from server.match_events import GameFinished, GameStarted, TurnPlayed, Update
from server.records.writer import Writer
from server.records.writes import finished, started


class Recorder:
    """Follows the arena's games and queues their records; never blocks a game."""

    def __init__(self, records: Writer) -> None:
        self.records = records

    def __call__(self, update: Update) -> None:
        if isinstance(update, TurnPlayed):
            result = update.result
            self.records.record_turn(
                result.match_id, result.number, result.seat, result.action_json, result.timed_out
            )
        elif isinstance(update, GameStarted):
            self.records.submit(started(update, self.records.owner))
            seat_names = update.view.codec.seat_names
            for turn in update.turns_before:  # a game played on from a recorded one's turn
                self.records.record_turn(
                    update.view.match_id,
                    turn["number"],
                    seat_names.index(turn["seat"]),
                    orjson.dumps(turn["action"]),
                    turn["timedOut"],
                )
        elif isinstance(update, GameFinished):
            self.records.submit(finished(update), urgent=True, turns_of=update.view.match_id)
