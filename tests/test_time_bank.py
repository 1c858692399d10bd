"""Clocks: a time bank with an increment per seat, asked for at create (``"clock"``). In memory on
a hand-wound clock (the bank runs down, the increment comes back, the flag falls, the messages
carry both clocks, a game without one is unchanged), the create's checks, the wire shapes
against golden files, one game over real sockets, a page's create, and the commands and
tournaments that take a clock (``tavern play --clock`` as typed, ``limits.clock``,
``tavern match --clock``)."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from server.commands import read
from server.config import ArenaConfig
from server.errors import BotError
from server.game_file import recorded_settings
from server.games.base import JsonObject, Player, SeatClock, TimeBank
from server.games.tavern.codec import TavernCodec
from server.games.thud.codec import ThudCodec
from server.match import Match, Phase
from server.match_options import SeatRequest
from server.match_views import clock_to_wire
from server.protocol import encode
from server.records import Records
from server.tournament.runner import TournamentRunner
from server.tournament.spec import TournamentError, spec_from_mapping
from tavern_cli.match import MatchPlan, match_spec
from tests.conftest import Served
from tests.golden_files import check_golden
from tests.test_match import FIRST_TURN_S, TURN_S, Inbox, Table, settle, table, tavern_pass
from tests.test_play import HOUSE_THUD, read_lines, tavern
from tests.test_session import client
from tests.test_tournament import ROOT, broken, house
from tests.test_visor_ws import PageSocket

BANK = {"initialMs": 3000, "incrementMs": 500}


def thud_move(turn: JsonObject) -> JsonObject:
    """The first legal move of a Thud turn, answering it."""
    move = orjson.loads(encode(turn))["state"]["moves"][0]
    return {"type": "player-turn", "turn": turn["turn"], "move": move}


async def created(tables: Table, game: str, clock: Any = None) -> tuple[Match, Inbox, Inbox]:
    """A game made by a ``create-simulation`` (with ``clock`` if given), with two seats taken."""
    maker, made = client(tables)
    fields: JsonObject = {"type": "create-simulation", "game": game}
    if clock is not None:
        fields["clock"] = clock
    maker.handle(read(fields))
    match = tables.arena.get(made.last("ready")["simulationId"])
    assert match is not None
    first, second = Inbox(), Inbox()
    match.seat(first, SeatRequest({"nick": "first"}))
    match.seat(second, SeatRequest({"nick": "second"}))
    await settle()
    assert match.phase is Phase.PLAYING
    return match, first, second


async def test_each_reply_spends_its_seats_bank_and_gets_the_increment_back() -> None:
    async with table() as tables:
        match, dwarf, troll = await created(tables, "thud", BANK)
        info = dwarf.last("game-info")
        assert info["clock"] == BANK
        assert info["turnTimeoutMs"] == info["firstTurnTimeoutMs"] == 3000
        first = dwarf.last("turn")
        both = {"dwarf": 3000, "troll": 3000}
        assert first["timeoutMs"] == 3000  # the bank, not the first turn's start-up allowance
        assert first["clock"] == {
            "seat": "dwarf",
            "timeoutMs": 3000,
            "remainingMs": both,
            "incrementMs": 500,
        }
        tables.clock.advance(1.0)
        match.submit(0, thud_move(first), dwarf)
        # The dwarfs spent 1 s of 3 and got 0.5 s back; the trolls' clock runs now.
        turn = troll.last("turn")
        assert turn["timeoutMs"] == 3000
        assert turn["clock"]["seat"] == "troll"
        assert turn["clock"]["remainingMs"] == {"dwarf": 2500, "troll": 3000}
        tables.clock.advance(2.75)
        match.submit(1, thud_move(turn), troll)
        turn = dwarf.last("turn")
        assert turn["timeoutMs"] == 2500
        assert turn["clock"]["remainingMs"] == {"dwarf": 2500, "troll": 750}
        # A bank is not a flat timeout: longer than the flat timeout is still in time.
        tables.clock.advance(TURN_S + 0.4)
        assert match.submit(0, thud_move(turn), dwarf) is not None
        assert troll.last("turn")["clock"]["remainingMs"] == {"dwarf": 600, "troll": 750}
        # What spectators are sent with each turn: the same clock.
        spectated = clock_to_wire(match.codec, match.view().clock)
        assert spectated == {**troll.last("turn")["clock"], "timeoutMs": 750}
        match.stop()
        await settle()


async def test_a_seat_whose_bank_runs_out_loses_and_its_opponent_wins() -> None:
    async with table(max_consecutive_timeouts=5) as tables:
        match, first, second = await tables.start("tavern")  # no clock: the flat timeout
        tables.clock.advance(FIRST_TURN_S)
        assert first.errors() == ["Turn timeout"] and match.turn_count == 1  # it passed
        match.stop()
        await settle()
        # The Tavern, whose timed-out seats pass without a clock, loses at once on its clock.
        match, first, second = await created(tables, "tavern", {"initialMs": 1500})
        turn = first.last("turn")
        assert turn["clock"]["incrementMs"] == 0  # the increment may be left out
        tables.clock.advance(0.5)
        match.submit(0, tavern_pass(turn, "team1"), first)
        assert first.last("turn") is turn  # team2 is on move
        match.submit(1, tavern_pass(second.last("turn"), "team2"), second)
        assert first.last("turn")["timeoutMs"] == 1000
        tables.clock.advance(1.0 - 0.001)
        assert match.phase is Phase.PLAYING
        tables.clock.advance(0.001)
        await settle()
        finished = tables.finished[-1]
        assert (finished.outcome.reason, finished.outcome.winner) == ("Out of time", 1)
        assert first.kinds()[-1] == "loss-game" and second.kinds()[-1] == "win-game"
        assert first.last("loss-game")["result"]["reason"] == "Out of time"
        assert "Turn timeout" not in first.errors()  # no pass: the flag fell
        assert recorded_settings(finished.view)["clock"] == {"initialMs": 1500, "incrementMs": 0}


async def test_a_reply_handled_as_the_bank_runs_out_is_too_late() -> None:
    async with table() as tables:
        match, dwarf, troll = await created(tables, "thud", BANK)
        turn = dwarf.last("turn")
        tables.clock.time += 3.0  # the reply arrives with the timer, before it rings
        assert match.submit(0, thud_move(turn), dwarf) is None
        await settle()
        finished = tables.finished[-1]
        assert (finished.outcome.reason, finished.outcome.winner) == ("Out of time", 1)
        assert troll.kinds()[-1] == "win-game"


async def test_without_a_clock_nothing_changes() -> None:
    async with table() as tables:
        match, dwarf, _ = await created(tables, "thud")
        info = dwarf.last("game-info")
        assert "clock" not in info and "clock" not in dwarf.last("turn")
        assert dwarf.last("turn")["timeoutMs"] == FIRST_TURN_S * 1000
        view = match.view()
        assert view.clock is not None and view.clock.bank is None
        assert "clock" not in recorded_settings(view)
        match.stop()
        await settle()


@pytest.mark.parametrize(
    "clock",
    [
        5000,
        [5000, 0],
        {},
        {"incrementMs": 5},
        {"initialMs": 0},
        {"initialMs": 24 * 3_600_000 + 1},
        {"initialMs": 1.5},
        {"initialMs": True},
        {"initialMs": "60000"},
        {"initialMs": 60_000, "incrementMs": -1},
        {"initialMs": 60_000, "incrementMs": 3_600_001},
        {"initialMs": 60_000, "incrementMs": None},
        {"initialMs": 60_000, "byoyomiMs": 1000},
    ],
)
async def test_a_create_with_a_malformed_clock_is_refused(clock: Any) -> None:
    async with table() as tables:
        maker, made = client(tables)
        maker.handle(read({"type": "create-simulation", "game": "thud", "clock": clock}))
        assert made.messages == [
            {
                "type": "error",
                "message": BotError.INVALID_CLOCK,
                "reason": 'clock must be {"initialMs": 1 to 86400000, "incrementMs": 0 to 3600000}',
            }
        ]
        assert tables.arena.matches == {}
        # A clock of null is no clock, as a seed of null is no seed.
        maker.handle(read({"type": "create-simulation", "game": "thud", "clock": None}))
        assert made.kinds()[-1] == "ready"


def test_the_clock_on_the_wire() -> None:
    """game-info says the bank; a turn carries both clocks after the original's fields."""
    bank = TimeBank(60_000, 1_000)
    clock = SeatClock(60_000, 60_000, 3, 10_000, bank)
    thud = ThudCodec.from_settings({})
    info = thud.game_info_message("5k2aa0q", 1, 42, "kQ2xLr8uVt0aYc3nWm5e_p1s", clock)
    check_golden("thud/game-info-clock", info)
    tavern = TavernCodec.from_settings(ArenaConfig().game_settings["tavern"])
    state = tavern.rules.initial_state([Player("A"), Player("B")])
    remaining = {"team1": 58_500, "team2": 41_250}
    wire = {"seat": "team2", "timeoutMs": 41_250, "remainingMs": remaining, "incrementMs": 1_000}
    check_golden("tavern/turn-clock", tavern.turn_message(state, 1, 2, 41_250, wire))


async def test_over_tcp_a_game_created_with_a_clock_shows_both_clocks_in_its_turns(
    connect: Any,
) -> None:
    dwarf, troll = await connect(), await connect()
    clock = {"initialMs": 60_000, "incrementMs": 2_000}
    await dwarf.send({"type": "create-simulation", "game": "thud", "clock": clock})
    simulation_id = (await dwarf.expect("ready"))["simulationId"]
    join = {"type": "join-simulation", "game": "thud", "simulationId": simulation_id}
    await troll.send({**join, "nick": "T", "side": "troll"})
    assert (await troll.expect("game-info"))["clock"] == clock
    await dwarf.send({**join, "nick": "D"})
    assert (await dwarf.expect("game-info"))["clock"] == clock
    turn = await dwarf.expect("turn")
    full = {"dwarf": 60_000, "troll": 60_000}
    assert turn["clock"] == {
        "seat": "dwarf",
        "timeoutMs": 60_000,
        "remainingMs": full,
        "incrementMs": 2_000,
    }
    await dwarf.send(thud_move(turn))
    answered = (await troll.expect("turn"))["clock"]
    # The dwarfs' reply took a few milliseconds of their bank and earned the increment.
    assert answered["seat"] == "troll" and answered["timeoutMs"] == 60_000
    assert 60_000 < answered["remainingMs"]["dwarf"] <= 62_000
    assert answered["remainingMs"]["troll"] == 60_000
    await dwarf.send({"type": "create-simulation", "game": "thud", "clock": {"initialMs": -1}})
    error = await dwarf.expect("error")
    assert error["message"] == "Invalid clock"


def test_tavern_play_with_a_clock_writes_both_clocks_in_its_game_file(tmp_path: Path) -> None:
    output = tmp_path / "game.jsonl"
    bot = HOUSE_THUD % "random"
    run = tavern("thud", bot, bot, "--turns", "4", "--clock", "60000+500", "--output", str(output))
    assert run.returncode == 0, run.stderr
    first, *played, _ = read_lines(output)
    assert first["settings"]["clock"] == {"initialMs": 60_000, "incrementMs": 500}
    clocks = [turn["clock"] for turn in played[:-1]]  # the last turn ends the game: no clock
    assert [clock["seat"] for clock in clocks] == ["troll", "dwarf", "troll"]
    assert all(clock["incrementMs"] == 500 for clock in clocks)
    # Each side's bank is 60 s, less its moves' time, plus 0.5 s a move.
    assert 60_000 < clocks[0]["remainingMs"]["dwarf"] <= 60_500
    assert clocks[0]["remainingMs"]["troll"] == 60_000
    # The terminal says the clock, and each side's time left under every turn: what the next
    # turn's clock says, and after the last one, the mover's as the match spent it.
    assert "\nclock: 60 s each, +0.5 s a move\n" in run.stdout
    shown = re.findall(
        r"^turn (\d): \w+ .*\n  time left: dwarf ([\d.]+) s, troll ([\d.]+) s$",
        run.stdout,
        re.MULTILINE,
    )
    assert [int(turn) for turn, _, _ in shown] == [1, 2, 3, 4]
    # Tenths of a second, each read off the match's clock when the turn is shown: on a busy
    # machine a tenth from the file's, which reads it when the turn is written.
    for (_, dwarf, troll), clock in zip(shown, clocks, strict=False):
        for said, remaining_ms in (
            (dwarf, clock["remainingMs"]["dwarf"]),
            (troll, clock["remainingMs"]["troll"]),
        ):
            assert abs(float(said) - remaining_ms / 1000) <= 0.1 + 1e-9, (said, remaining_ms)
    last_dwarf, last_troll = (float(left) for left in shown[3][1:])
    assert last_dwarf == round(clocks[2]["remainingMs"]["dwarf"] / 1000, 1)
    assert 60.0 < last_troll <= 61.0  # two moves of its own, 0.5 s back for each
    replay = subprocess.run(
        [sys.executable, "-m", "tavern_cli", "replay", str(output)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert replay.returncode == 0, replay.stderr
    assert "\nclock: 60 s each, +0.5 s a move\n" in replay.stdout
    refused = tavern("thud", bot, bot, "--clock", "0+500")
    assert refused.returncode == 2
    assert 'clock must be {"initialMs": 1 to 86400000' in refused.stderr


async def test_a_tournament_with_a_clock_plays_its_games_on_time_banks(tmp_path: Path) -> None:
    """``limits.clock``: a bot that never answers loses on time, and its forfeit counts as a
    timeout in the league; a malformed clock names the key."""
    cup: dict[str, Any] = {
        "name": "blitz cup",
        "game": "thud",
        "limits": {"startup_ms": 3000, "clock": {"initialMs": 300, "incrementMs": 100}},
        # The silent bot moves first: the house troll never has to beat the short clock.
        "bots": [broken("silent", "dwarf"), house("thud", "troll", "troll")],
    }
    records = Records(tmp_path / "arena.db")
    await asyncio.to_thread(records.open)
    try:
        spec = spec_from_mapping(cup, ROOT)
        async with asyncio.timeout(60):
            (result,) = await TournamentRunner(spec, ArenaConfig(), records, io.StringIO()).run()
        assert (result.reason, result.winner) == ("Out of time", 1)
        assert result.timeouts(0) == 1
        record = await asyncio.to_thread(records.game, result.game_id)
        assert record is not None
        assert record["settings"]["clock"] == {"initialMs": 300, "incrementMs": 100}
    finally:
        await asyncio.to_thread(records.close)
    cup["limits"]["clock"] = {"initialMs": 300, "incrementMs": -1}
    with pytest.raises(TournamentError, match=r"key 'limits.clock': clock must be \{"):
        spec_from_mapping(cup, ROOT)


def test_tavern_match_with_a_clock_plays_its_games_on_time_banks() -> None:
    """``tavern match --clock`` is a tournament with ``limits.clock`` (played as above)."""
    pusher = "{python} -m bots.tavern_dummy --simulation {simulation} --port {port}"
    plan = MatchPlan("tavern", (pusher, pusher), 2, 1, 5, None, TimeBank(5_000, 50))
    spec = match_spec(plan, datetime(2026, 1, 2, tzinfo=UTC))
    assert spec.limits.clock == TimeBank(5_000, 50)
    plain = match_spec(dataclasses.replace(plan, clock=None), datetime(2026, 1, 2, tzinfo=UTC))
    assert plain.limits.clock is None


async def test_a_page_creates_a_game_with_a_clock_or_is_told_why_not(served: Served) -> None:
    async with aiohttp.ClientSession() as session, session.ws_connect(f"{served.url}/ws") as ws:
        page = PageSocket(ws)
        await page.send({"type": "create", "game": "tavern", "clock": {"initialMs": 90_000}})
        created = await page.receive("created")
        match = served.arena.get(created["simulationId"])
        assert match is not None and match.limits.bank == TimeBank(90_000, 0)
        await page.send({"type": "create", "game": "tavern", "clock": {"initialMs": "90 s"}})
        error = await page.receive("error")
        assert error["message"] == "Invalid clock"
