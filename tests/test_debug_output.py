"""A bot's debug text: kept with its turn in the records, bounded, never sent to the opponent
nor to spectators while the game is played, and shown turn by turn once it is over (``tavern
replay``, the replay and the game file). A match in memory on a hand-wound clock, recorded in a
real SQLite file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson

from server.commentary import replay_result_text, replay_text
from server.debug import MAX_DEBUG_CHARS
from server.game_file import read_game_file, record_lines
from server.match import TurnPlayed, Update
from server.records import recording
from server.replay import replay_to_wire
from tests.test_match import TURN_S, settle, table, tavern_pass

PLAN = "line one\nsecret plan"


async def test_a_bots_debug_text_is_kept_and_shown_only_after_the_game(tmp_path: Path) -> None:
    async with (
        table(max_consecutive_timeouts=1) as tables,
        recording(tables.arena.listeners, tmp_path / "arena.db") as records,
    ):
        watched: list[bytes] = []

        def spectator(update: Update) -> None:
            if isinstance(update, TurnPlayed):
                watched.append(update.result.spectator_json())

        tables.arena.listeners.append(spectator)
        match, first, second = await tables.start("tavern")
        first_move = {**tavern_pass(first.last("turn"), "team1"), "debug": PLAN}
        match.submit(0, first_move, first)
        long = "x" * (MAX_DEBUG_CHARS + 952)
        match.submit(1, {**tavern_pass(second.last("turn"), "team2"), "debug": long}, second)
        match.submit(0, {**tavern_pass(first.last("turn"), "team1"), "debug": 7}, first)
        assert match.turn_count == 3
        # Never to the opponent, nor to the spectators, nor in the record while played.
        assert b"secret" not in orjson.dumps(second.messages)
        assert b"xxxx" not in orjson.dumps(first.messages)
        assert len(watched) == 3
        assert all(b"secret" not in line and b"debug" not in line for line in watched)
        await records.flush()
        live = await asyncio.to_thread(records.game, match.id)
        assert live is not None and live["status"] == "playing"
        assert all("debug" not in turn["action"] for turn in live["turns"])

        tables.clock.advance(TURN_S)  # team2 does not answer: it loses
        await settle()
        await records.flush()
        record = await asyncio.to_thread(records.game, match.id)
    assert record is not None and record["status"] == "finished"
    debugs = [turn["action"].get("debug") for turn in record["turns"]]
    assert debugs == [PLAN, "x" * MAX_DEBUG_CHARS + "… [cut: 952 more characters]", None]

    text = "\n".join(replay_text(record))
    assert "  debug| line one\n  debug| secret plan\n" in text
    assert text.count("debug|") == 3
    replay = replay_to_wire(record)
    assert [frame["debug"] for frame in replay["frames"]] == [None, *debugs]

    # The game file keeps it beside the move, and reads back as the record.
    lines = list(record_lines(record, replay_result_text(record)))
    turn_one = orjson.loads(lines[1])
    assert (turn_one["debug"], "debug" in turn_one["action"]) == (PLAN, False)
    again = read_game_file(lines, "game.jsonl")
    assert again["turns"] == record["turns"]
