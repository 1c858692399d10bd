"""A bot's debug text, and what its process writes on stderr during a turn: kept with the turn
in the records, bounded, never sent to the opponent nor to spectators while the game is played,
and shown turn by turn once it is over (``tavern replay``, the replay and the game file). A
match in memory on a hand-wound clock, recorded in a real SQLite file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson

from server.commentary import replay_result_text, replay_text
from server.debug import MAX_DEBUG_CHARS
from server.game_file import read_game_file, record_lines
from server.match_events import TurnPlayed, Update
from server.match_options import SeatRequest
from server.records import recording
from server.replay import replay_to_wire
from tests.test_match import TURN_S, Inbox, settle, table, tavern_pass

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


class Written:
    """A seat's bot process as the match sees its stderr: what it writes during each turn."""

    counts_cpu = False  # it is charged its replies' time

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.calls: list[str] = []

    def turn_opened(self) -> None:
        self.calls.append("opened")

    def turn_closed(self) -> str | None:
        self.calls.append("closed")
        return self.texts.pop(0)

    def turn_cpu_ms(self) -> int | None:
        return None  # not counted here


async def test_a_bots_stderr_is_kept_with_its_turns_like_its_debug_text(tmp_path: Path) -> None:
    async with (
        table(max_consecutive_timeouts=2) as tables,
        recording(tables.arena.listeners, tmp_path / "arena.db") as records,
    ):
        watched: list[bytes] = []

        def spectator(update: Update) -> None:
            if isinstance(update, TurnPlayed):
                watched.append(update.result.spectator_json())

        tables.arena.listeners.append(spectator)
        written = Written(["secret: look north\n", "still thinking"])
        match = tables.arena.open("tavern")
        match.outputs[0] = written  # team1's process; team2 is not one
        first, second = Inbox(), Inbox()
        match.seat(first, SeatRequest({"nick": "first"}))
        match.seat(second, SeatRequest({"nick": "second"}))
        await settle()
        assert written.calls == ["opened"]  # its turn 1 was sent
        match.submit(0, tavern_pass(first.last("turn"), "team1"), first)
        match.submit(1, tavern_pass(second.last("turn"), "team2"), second)
        tables.clock.advance(TURN_S)  # team1 does not answer turn 3: it passes
        await settle()
        assert match.turn_count == 3
        assert written.calls == ["opened", "closed", "opened", "closed"]
        assert b"secret" not in orjson.dumps(second.messages)
        assert all(b"secret" not in line and b"stderr" not in line for line in watched)
        await records.flush()
        live = await asyncio.to_thread(records.game, match.id)
        assert live is not None and live["status"] == "playing"
        assert all("stderr" not in turn["action"] for turn in live["turns"])
        for _ in range(2):  # team2 passes on time, then team1 times out once too often
            tables.clock.advance(TURN_S)
            await settle()
        await records.flush()
        record = await asyncio.to_thread(records.game, match.id)
    assert record is not None and record["status"] == "finished"
    kept = [turn["action"].get("stderr") for turn in record["turns"]]
    assert kept == ["secret: look north\n", None, "still thinking", None]
    assert record["turns"][2]["timedOut"]

    text = "\n".join(replay_text(record))
    assert "  stderr| secret: look north\n" in text
    assert "  stderr| still thinking\n" in text
    replay = replay_to_wire(record)
    assert [frame["stderr"] for frame in replay["frames"]] == [None, *kept]
    lines = list(record_lines(record, replay_result_text(record)))
    turn_one = orjson.loads(lines[1])
    assert (turn_one["stderr"], "stderr" in turn_one["action"]) == (kept[0], False)
    assert read_game_file(lines, "game.jsonl")["turns"] == record["turns"]
