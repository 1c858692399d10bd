"""A hosted bot's move costs its CPU time, not the wall time it took (issue 33, item 4). In memory
on a hand-wound clock: a seat a worker plays is charged the CPU its worker reports beside the
move, and keeps the stderr reported with it (a connected bot's claims are ignored); a
tournament's isolated bot is charged the CPU its group counted; waiting costs neither, up to a
wall-clock guard; a move over its CPU time is a timeout, and with a time bank its flag falls."""

from __future__ import annotations

from typing import Any

from server.commands import read
from server.debug import MAX_STDERR_BYTES, MOST_CPU_MS, reported_cpu_ms, reported_stderr
from server.match import Match, MatchEnd, Phase
from server.match_clock import CPU_TURN_WALL_EXTRA_S, CPU_TURN_WALL_FACTOR
from server.match_events import TurnPlayed, Update
from server.match_options import SeatRequest
from tests.test_match import TURN_S, Inbox, Table, settle, table, tavern_pass
from tests.test_session import client
from tests.test_time_bank import BANK, thud_move


async def hosted_dwarf(tables: Table) -> tuple[Match, Inbox, Inbox]:
    """A Thud game with a time bank whose dwarf seat a worker plays (a hosting key proved it)."""
    maker, made = client(tables)
    maker.handle(read({"type": "create-simulation", "game": "thud", "clock": BANK}))
    match = tables.arena.get(made.last("ready")["simulationId"])
    assert match is not None
    dwarf, troll = Inbox(), Inbox()
    match.seat(dwarf, SeatRequest({"nick": "hosted"}, bot="hosted", hosted=True))
    match.seat(troll, SeatRequest({"nick": "connected"}))
    await settle()
    assert match.phase is Phase.PLAYING
    return match, dwarf, troll


class Counted:
    """A tournament's isolated bot process as the match sees it: the CPU its group counted."""

    counts_cpu = True

    def __init__(self) -> None:
        self.cpu_ms = 0

    def turn_opened(self) -> None:
        self.cpu_ms = 0

    def turn_closed(self) -> str | None:
        return None

    def turn_cpu_ms(self) -> int | None:
        return self.cpu_ms


def played(tables: Table) -> list[Any]:
    results: list[Any] = []

    def keep(update: Update) -> None:
        if isinstance(update, TurnPlayed):
            results.append(update.result)

    tables.arena.listeners.append(keep)
    return results


async def test_a_hosted_seat_spends_the_cpu_its_worker_reports_from_its_bank() -> None:
    async with table() as tables:
        results = played(tables)
        match, dwarf, troll = await hosted_dwarf(tables)
        assert match.limits.bank is not None
        tables.clock.advance(2.5)  # slow on the wall clock, 100 ms of CPU
        reported = {"cpuMs": 100, "stderr": "thinking\n"}
        match.submit(0, {**thud_move(dwarf.last("turn")), **reported}, dwarf)
        assert match.timer.banks[0] == 3.0 - 0.1 + 0.5
        tables.clock.advance(1.0)  # a connected bot's claim of its CPU is ignored
        match.submit(1, {**thud_move(troll.last("turn")), "cpuMs": 5, "stderr": "x"}, troll)
        assert match.timer.banks[1] == 3.0 - 1.0 + 0.5
        assert [(result.cpu_ms, result.stderr) for result in results] == [
            (100, "thinking\n"),
            (None, None),
        ]

        # Waiting costs it nothing up to the wall-clock guard, then its flag falls.
        guard_s = match.timer.banks[0] * CPU_TURN_WALL_FACTOR + CPU_TURN_WALL_EXTRA_S
        tables.clock.advance(guard_s - 0.1)
        await settle()
        assert match.phase is Phase.PLAYING
        tables.clock.advance(0.2)
        await settle()
        assert match.outcome is not None and match.outcome.reason is MatchEnd.OUT_OF_TIME
        assert match.outcome.winner == 1


async def test_a_hosted_move_over_its_bank_in_cpu_loses_on_time_whatever_its_wall_time() -> None:
    async with table() as tables:
        match, dwarf, _ = await hosted_dwarf(tables)
        match.submit(0, {**thud_move(dwarf.last("turn")), "cpuMs": 3100}, dwarf)
        assert match.outcome is not None and match.outcome.reason is MatchEnd.OUT_OF_TIME
        assert match.turn_count == 0


async def test_a_hosted_move_without_its_cpu_is_charged_its_wall_time() -> None:
    async with table() as tables:
        match, dwarf, _ = await hosted_dwarf(tables)
        tables.clock.advance(0.75)
        assert match.submit(0, thud_move(dwarf.last("turn")), dwarf) is not None
        assert match.timer.banks[0] == 3.0 - 0.75 + 0.5


def test_a_reported_stderr_is_text_and_bounded() -> None:
    assert reported_stderr({"stderr": "a line\n"}) == "a line\n"
    for wrong in (None, "", 7, ["text"]):
        assert reported_stderr({"stderr": wrong}) is None
    long = reported_stderr({"stderr": "x" * 10_000})
    assert long is not None and long.startswith("x" * MAX_STDERR_BYTES) and "[cut: " in long
    assert len(long) < MAX_STDERR_BYTES + 100


def test_only_a_whole_number_of_ms_within_a_day_reads_as_a_reported_cpu_time() -> None:
    for value, read_as in ((0, 0), (120, 120), (MOST_CPU_MS, MOST_CPU_MS)):
        assert reported_cpu_ms({"cpuMs": value}) == read_as
    for wrong in ("100", -1, True, 1.5, None, MOST_CPU_MS + 1):
        assert reported_cpu_ms({"cpuMs": wrong}) is None
    assert reported_cpu_ms({}) is None


async def test_an_isolated_bot_is_charged_its_groups_cpu_and_times_out_past_it() -> None:
    async with table(max_consecutive_timeouts=3) as tables:
        results = played(tables)
        match = tables.arena.open("tavern")
        counted = Counted()
        match.outputs[0] = counted
        first, second = Inbox(), Inbox()
        match.seat(first, SeatRequest({"nick": "isolated"}))
        match.seat(second, SeatRequest({"nick": "connected"}))
        await settle()
        first_turn_s = first.last("turn")["timeoutMs"] / 1000
        tables.clock.advance(first_turn_s + 1.0)  # past its time on the wall clock, in its CPU
        counted.cpu_ms = 300
        assert match.submit(0, tavern_pass(first.last("turn"), "team1"), first) is not None
        match.submit(1, tavern_pass(second.last("turn"), "team2"), second)
        counted.cpu_ms = round(TURN_S * 1000) + 50  # over its time in CPU: a timeout, it passes
        assert match.submit(0, tavern_pass(first.last("turn"), "team1"), first) is None
        assert first.last("error")["message"] == "Turn timeout"
        assert [(result.cpu_ms, result.timed_out) for result in results] == [
            (300, False),
            (None, False),
            (round(TURN_S * 1000) + 50, True),
        ]
        # The connected seat keeps the wall clock.
        tables.clock.advance(TURN_S)
        await settle()
        assert [result.timed_out for result in results][-1] is True
        assert results[-1].seat == 1
