"""Tournaments with real bot processes: scheduling, broken bots, stderr, resuming, validation."""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from playwright.async_api import expect

from server.config import ArenaConfig, config_from_mapping
from server.league import GameResult, format_tables, league_to_wire, tables
from server.match import MatchEnd
from server.records import GameFilter, Records, opened
from server.records.backends import backend_for, transaction
from server.records.ladder import current_season
from server.tournament import runner
from server.tournament.bots import quoted_stderr
from server.tournament.runner import TournamentRunner
from server.tournament.schedule import (
    arena_table,
    knockout_games,
    knockout_table,
    schedule,
    swiss_rounds,
    swiss_table,
)
from server.tournament.spec import TournamentError, changes, load_spec, spec_from_mapping
from server.validate import validate
from tests.browser import chromium_pages
from tests.conftest import Served, serving_visor, test_config

ROOT = Path(__file__).resolve().parent.parent
THUD_20 = {"thud": {"turnLimit": 20}}  # short games
BROKEN = str(Path(__file__).parent / "bots" / "broken.py")


def house(game: str, name: str, side: str = "both") -> dict[str, Any]:
    return {
        "name": f"house {name}",
        "side": side,
        "command": "{python} -m bots.house_bot {game} "
        + name
        + " --simulation {simulation} --side {side} --port {port} --seed {seed}",
    }


def broken(kind: str, side: str) -> dict[str, Any]:
    return {
        "name": kind,
        "side": side,
        "command": [
            "{python}",
            BROKEN,
            kind,
            "{game}",
            "--simulation",
            "{simulation}",
            "--port",
            "{port}",
            "--side",
            "{side}",
        ],
    }


TWO_BOTS = [{"name": "a", "command": "x"}, {"name": "b", "command": "y"}]


# --- the schedule --------------------------------------------------------------------------------
def test_every_dwarf_bot_meets_every_troll_bot_once() -> None:
    spec = spec_from_mapping(
        {
            "name": "cup",
            "game": "thud",
            "bots": [
                house("thud", "dwarf", "dwarf"),
                broken("crash", "dwarf"),
                house("thud", "troll", "troll"),
                broken("illegal", "troll"),
                broken("silent", "troll"),
            ],
        },
        ROOT,
    )
    keys = [pairing.key for pairing in schedule(spec)]
    assert len(keys) == 6
    assert "dwarf:house dwarf v troll:illegal" in keys
    assert len(set(keys)) == 6


def test_bots_playing_both_sides_meet_once_or_once_each_way() -> None:
    bots = [house("thud", "random"), {**house("thud", "random"), "name": "other"}]
    once = spec_from_mapping({"name": "a", "game": "thud", "bots": bots}, ROOT)
    assert [p.key for p in schedule(once)] == ["dwarf:house random v troll:other"]
    both = spec_from_mapping({"name": "a", "game": "thud", "bots": bots, "swap_sides": True}, ROOT)
    assert len(schedule(both)) == 2


def test_tavern_pairs_play_once_from_each_side() -> None:
    bots = [
        house("tavern", "pusher"),
        house("tavern", "wanderer"),
        {**house("tavern", "pusher"), "name": "c"},
    ]
    spec = spec_from_mapping({"name": "t", "game": "tavern", "bots": bots}, ROOT)
    assert len(schedule(spec)) == 6


def test_paired_games_share_a_seed_with_the_sides_swapped() -> None:
    raw = {"name": "m", "game": "thud", "seed": 3, "paired_games": 5, "bots": TWO_BOTS}
    pairings = schedule(spec_from_mapping(raw, ROOT))
    assert [(p.number, p.key, p.seed) for p in pairings] == [
        (1, "pair 1: dwarf:a v troll:b", 300_010),
        (2, "pair 1: dwarf:b v troll:a", 300_010),
        (3, "pair 2: dwarf:a v troll:b", 300_011),
        (4, "pair 2: dwarf:b v troll:a", 300_011),
        (5, "pair 3: dwarf:a v troll:b", 300_012),  # 5 games rounded up to 3 pairs
        (6, "pair 3: dwarf:b v troll:a", 300_012),
    ]
    # A round robin's seeds are what they were: one per game.
    robin = spec_from_mapping({**raw, "paired_games": 0, "swap_sides": True}, ROOT)
    assert [p.seed for p in schedule(robin)] == [300_010, 300_011]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"game": "thud", "bots": []}, "'name'"),
        (
            {"name": "x", "game": "thud", "paired_games": -1, "bots": TWO_BOTS},
            "key 'paired_games': must be 0 or more, got -1",
        ),
        (
            {
                "name": "x",
                "game": "thud",
                "paired_games": 2,
                "bots": [TWO_BOTS[0], {**TWO_BOTS[1], "side": "troll"}],
            },
            "key 'paired_games': needs two bots that both play either side",
        ),
        (
            {
                "name": "x",
                "game": "thud",
                "paired_games": 2,
                "bots": [*TWO_BOTS, {"name": "c", "command": "z"}],
            },
            "key 'paired_games': needs two bots that both play either side",
        ),
        ({"name": "x", "game": "chess", "bots": []}, "'game'"),
        ({"name": "x", "game": "thud", "bots": [{"name": "a", "command": "x"}]}, "'bots'"),
        (
            {"name": "x", "game": "thud", "bots": [{"name": "a"}, {"name": "b", "command": "y"}]},
            "'bots[0].command'",
        ),
        (
            {
                "name": "x",
                "game": "thud",
                "bots": [
                    {"name": "a", "command": "x", "side": "elf"},
                    {"name": "b", "command": "y"},
                ],
            },
            "'bots[0].side'",
        ),
        (
            {
                "name": "x",
                "game": "thud",
                "parallel": "2",
                "bots": [{"name": "a", "command": "x"}, {"name": "b", "command": "y"}],
            },
            "'parallel'",
        ),
        # A misspelled key is an error, naming it and the known ones, at every level.
        (
            {"name": "x", "game": "thud", "paralel": 2, "bots": []},
            "key 'paralel': unknown (the known keys are name, game, seed, parallel, swap_sides, "
            "paired_games, limits, bots, format, rounds, tie_breaks, duration_s, seeding)",
        ),
        (
            {"name": "x", "game": "thud", "limits": {"cpu_secnds": 3}, "bots": TWO_BOTS},
            "key 'limits.cpu_secnds': unknown (the known keys are cpu_seconds, memory_mb, "
            "startup_ms, turn_timeout_ms, clock)",
        ),
        (
            {"name": "x", "game": "thud", "bots": [TWO_BOTS[0], {"name": "b", "comand": "y"}]},
            "key 'bots[1].comand': unknown "
            "(the known keys are name, side, command, file, isolated, hosted)",
        ),
        (
            {
                "name": "x",
                "game": "thud",
                "bots": [TWO_BOTS[0], {"name": "b", "command": "y {prot}"}],
            },
            "key 'bots[1].command': unknown placeholder {prot} (the known ones are {host}, {port}, "
            "{simulation}, {side}, {seed}, {game}, {python})",
        ),
    ],
)
def test_bad_tournament_files_name_the_key(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(TournamentError, match=re.escape(message)):
        spec_from_mapping(raw, ROOT)


def test_a_file_changes_its_tournament_by_what_decides_its_games_only() -> None:
    """Writing a default out, a command as a string or as a list, and ``parallel`` change
    nothing; every other key that decides a game is named, old and new."""
    started: dict[str, Any] = {
        "name": "cup",
        "game": "thud",
        "bots": [{"name": "a", "command": "run a"}, {"name": "b", "command": ["run", "b"]}],
    }
    same = {
        **started,
        "seed": 1,
        "parallel": 4,
        "swap_sides": False,
        "limits": {"cpu_seconds": 300, "clock": None},
        "bots": [{"name": "a", "command": ["run", "a"], "side": "both"}, started["bots"][1]],
    }
    assert changes(started, same) == []
    other = {
        **started,
        "game": "tavern",
        "swap_sides": True,
        "limits": {"clock": {"initialMs": 1000, "incrementMs": 0}},
        "bots": [{"name": "b", "command": "run b", "side": "troll"}, {"name": "c", "command": "c"}],
    }
    assert changes(started, other) == [
        'game: "thud" -> "tavern"',
        "swap_sides: false -> true",
        'limits.clock: (none) -> {"initialMs":1000,"incrementMs":0}',
        "bots added: c",
        "bots removed: a",
        'bot b: side "both" -> "troll"',
    ]


def test_toml_and_json_files(tmp_path: Path) -> None:
    toml = tmp_path / "cup.toml"
    toml.write_text(
        'name = "Spring Cup"\ngame = "tavern"\nseed = 4\n'
        '[[bots]]\nname = "a"\ncommand = "run-a"\n[[bots]]\nname = "b"\ncommand = ["run", "b"]\n'
        "[limits]\ncpu_seconds = 30\n"
    )
    spec = load_spec(toml)
    assert (spec.id, spec.seed, spec.limits.cpu_seconds) == ("spring-cup", 4, 30)
    assert spec.entrants[1].command == ("run", "b")
    broken_json = tmp_path / "cup.json"
    broken_json.write_text("{")
    with pytest.raises(TournamentError, match="not valid JSON"):
        load_spec(broken_json)


# --- playing -------------------------------------------------------------------------------------
BROKEN_CUP: dict[str, Any] = {
    "name": "broken cup",
    "game": "thud",
    "seed": 3,
    "parallel": 2,
    "limits": {"turn_timeout_ms": 400, "startup_ms": 3000, "cpu_seconds": 60, "memory_mb": 1024},
    "bots": [
        house("thud", "dwarf", "dwarf"),
        broken("crash", "dwarf"),
        house("thud", "troll", "troll"),
        broken("illegal", "troll"),
        broken("silent", "troll"),
    ],
}


async def test_a_tournament_with_broken_bots_completes_with_the_right_table(tmp_path: Path) -> None:
    records = Records(tmp_path / "arena.db")
    await asyncio.to_thread(records.open)
    try:
        spec = spec_from_mapping(BROKEN_CUP, ROOT)
        out = io.StringIO()
        async with asyncio.timeout(180):
            results = await TournamentRunner(spec, ArenaConfig(), records, out).run()
        assert len(results) == 6
        assert "6/6 done, 0 running, 0 left" in out.getvalue()
        real = next(r for r in results if set(r.bots) == {"house dwarf", "house troll"})
        margin = abs(real.scores[0] - real.scores[1])
        real_dwarf = 0 if real.winner is None else (margin if real.winner == 0 else -margin)
        rows = {
            table: {s.bot: (s.played, s.wins, s.losses, s.draws, s.score) for s in standings}
            for table, standings in tables(results).items()
        }
        dwarf_won = int(real.winner == 0)
        troll_won = int(real.winner == 1)
        assert rows["dwarf"] == {
            # Forfeits come at 32 v 32 (before anyone could capture): wins worth 0.
            "house dwarf": (3, 2 + dwarf_won, troll_won, int(real.winner is None), real_dwarf),
            "crash": (3, 0, 3, 0, 0),
        }
        assert rows["troll"] == {
            "house troll": (2, 1 + troll_won, dwarf_won, int(real.winner is None), -real_dwarf),
            "illegal": (2, 1, 1, 0, 0),
            "silent": (2, 1, 1, 0, 0),
        }
        # The crashes and the turns that timed out (each forfeit by Turn timeout is one).
        faults = {
            table: {s.bot: (s.crashes, s.timeouts) for s in standings}
            for table, standings in tables(results).items()
        }
        assert faults == {
            "dwarf": {"house dwarf": (0, 0), "crash": (3, 0)},
            "troll": {"house troll": (0, 0), "illegal": (0, 1), "silent": (0, 1)},
        }
        assert [s.bot for s in tables(results)["dwarf"]][-1] == "crash"
        page = await asyncio.to_thread(records.games, GameFilter(tournament="broken-cup"))
        reasons = {
            tuple(p["bot"] for p in game["players"]): game["result"]["reason"]
            for game in page["games"]
        }
        assert reasons[("house dwarf", "illegal")] == "Turn timeout"
        assert reasons[("house dwarf", "silent")] == "Turn timeout"
        assert reasons[("crash", "house troll")] == "Player disconnected"
        crashed = next(g for g in page["games"] if g["players"][0]["bot"] == "crash")
        record = await asyncio.to_thread(records.game, crashed["id"])
        assert record is not None
        assert "this bot crashes on purpose" in record["players"][0]["stderr"]
        assert record["players"][0]["exit"] == "exited with code 1"
        assert record["players"][1]["exit"] == "stopped at the end of the game"
        illegal = next(
            g
            for g in page["games"]
            if [p["bot"] for p in g["players"]] == ["house dwarf", "illegal"]
        )
        assert illegal["players"][1]["errors"] > 0
        assert "Illegal move" in illegal["players"][1]["lastError"]
    finally:
        await asyncio.to_thread(records.close)


async def test_an_interrupted_tournament_resumes(tmp_path: Path) -> None:
    cup = {
        **BROKEN_CUP,
        "name": "resumed cup",
        "parallel": 1,
        "bots": [
            house("thud", "random", "dwarf"),
            broken("silent", "troll"),
            broken("illegal", "troll"),
            broken("crash", "troll"),
        ],
    }
    spec = spec_from_mapping(cup, ROOT)
    records = Records(tmp_path / "arena.db")
    await asyncio.to_thread(records.open)
    try:
        run = asyncio.create_task(
            TournamentRunner(spec, ArenaConfig(), records, io.StringIO()).run()
        )
        async with asyncio.timeout(60):
            while not await asyncio.to_thread(records.finished_pairings, spec.id):
                await asyncio.sleep(0.05)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        done_before = await asyncio.to_thread(records.finished_pairings, spec.id)
        assert 1 <= len(done_before) < 3
        out = io.StringIO()
        async with asyncio.timeout(120):
            results = await TournamentRunner(spec, ArenaConfig(), records, out).run()
        assert "resuming" in out.getvalue()
        assert sorted(r.bots[1] for r in results) == ["crash", "illegal", "silent"]
        assert await asyncio.to_thread(records.finished_pairings, spec.id) == {
            p.key for p in schedule(spec)
        }
    finally:
        await asyncio.to_thread(records.close)
    reopened = Records(tmp_path / "arena.db")
    reopened.open()
    reopened.close()
    tournament = reopened.tournament(spec.id)
    assert tournament is not None
    assert tournament["finishedAt"] is not None


async def test_a_game_the_arena_could_not_start_a_bot_for_is_voided_and_played_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33, item 6: the arena's failure to start a bot (its launcher did not start: out of
    processes, say) is not the bot's loss: the game is voided, its record says why, and it is
    played again; one that cannot be started again and again is left for the next run, a fault
    of the arena's on the league."""
    starts = 0
    failing = {1}  # the first start of the first try: the second plays
    real_start = asyncio.create_subprocess_exec

    async def launching(*command: Any, **options: Any) -> asyncio.subprocess.Process:
        nonlocal starts
        starts += 1
        if starts in failing:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return await real_start(*command, **options)

    monkeypatch.setattr(asyncio, "create_subprocess_exec", launching)
    monkeypatch.setattr(runner, "VOID_PAUSE_S", 0.0)
    cup = {**BROKEN_CUP, "name": "voided cup", "parallel": 1}
    cup["bots"] = [house("thud", "dwarf", "dwarf"), house("thud", "troll", "troll")]
    spec = spec_from_mapping(cup, ROOT)
    records = Records(tmp_path / "arena.db")
    await asyncio.to_thread(records.open)
    try:
        out = io.StringIO()
        async with asyncio.timeout(120):
            results = await TournamentRunner(spec, ArenaConfig(), records, out).run()
        assert len(results) == 1, out.getvalue()
        (result,) = results
        assert "voided (could not start: Resource temporarily unavailable): played again" in (
            out.getvalue()
        )
        page = await asyncio.to_thread(records.games, GameFilter(tournament=spec.id))
        assert page["total"] == 2
        voided = await asyncio.to_thread(records.game, page["games"][-1]["id"])
        assert voided is not None and voided["result"]["reason"] == "Game voided"
        assert (
            voided["players"][0]["exit"]
            == "did not join (could not start: Resource temporarily unavailable)"
        )
        assert result.game_id == page["games"][0]["id"]  # the game played again is the result
        assert result.reason != "Game voided"

        # Never started, three times: left unplayed, said on the league; the next run plays it.
        starts, failing = 0, {1, 3, 5}
        spec = spec_from_mapping({**cup, "name": "unlucky cup"}, ROOT)
        async with asyncio.timeout(120):
            assert await TournamentRunner(spec, ArenaConfig(), records, io.StringIO()).run() == []
        await records.flush()
        faults = await asyncio.to_thread(records.tournament_faults, spec.id)
        assert [(f["pairing"], f["number"]) for f in faults] == [(schedule(spec)[0].key, 3)]
        assert "could not start" in faults[0]["reason"]
        unfinished = await asyncio.to_thread(records.tournament, spec.id)
        assert unfinished is not None and unfinished["finishedAt"] is None
        starts, failing = 0, set()
        async with asyncio.timeout(120):
            (played,) = await TournamentRunner(spec, ArenaConfig(), records, io.StringIO()).run()
        assert played.reason != "Game voided"
        finished = await asyncio.to_thread(records.tournament, spec.id)
        assert finished is not None and finished["finishedAt"] is not None
    finally:
        await asyncio.to_thread(records.close)


async def test_a_bot_that_never_plays_ranks_below_every_bot_that_played(tmp_path: Path) -> None:
    """A bot that exits at once loses every game at 32 v 32, which costs it nothing: by score
    alone it would top the dwarf table. Its crashes rank it last."""
    cup = {
        "name": "quitters",
        "game": "thud",
        "seed": 5,
        "parallel": 2,
        # Room for the house players to start on a busy machine (they take about 0.6 s); the
        # quitter's seat waits as long for its first turn, then forfeits.
        "limits": {"turn_timeout_ms": 3000, "startup_ms": 3000},
        "bots": [
            broken("quit", "dwarf"),
            house("thud", "dwarf", "dwarf"),
            house("thud", "troll", "troll"),
            house("thud", "random", "troll"),
        ],
    }
    spec = spec_from_mapping(cup, ROOT)
    records = Records(tmp_path / "arena.db")
    await asyncio.to_thread(records.open)
    try:
        async with asyncio.timeout(60):
            results = await TournamentRunner(spec, ArenaConfig(), records, io.StringIO()).run()
        page = await asyncio.to_thread(records.games, GameFilter(player="quit"))
    finally:
        await asyncio.to_thread(records.close)
    dwarfs = tables(results)["dwarf"]
    assert [(s.bot, s.played, s.crashes, s.timeouts) for s in dwarfs][-1] == ("quit", 2, 2, 2)
    assert dwarfs[0].bot == "house dwarf"
    assert dwarfs[0].crashes == 0
    assert {game["players"][0]["exit"] for game in page["games"]} == {
        "did not join (exited with code 3)"
    }
    text = format_tables(results)
    assert "crashes timeouts" in text
    assert re.search(r"\n  quit +2 +0 +2 +0 +0 +2 +2\n", text), text
    wire = league_to_wire(results)["tables"]["dwarf"]
    assert (wire[-1]["bot"], wire[-1]["crashes"], wire[-1]["timeouts"]) == ("quit", 2, 2)


def test_timeouts_count_the_turns_played_for_a_late_bot_and_its_forfeit() -> None:
    seats = ("team1", "team2")
    late = GameResult(
        "tavern",
        ("A", "B"),
        seats,
        0,
        (3, 0),
        "g1",
        MatchEnd.TOO_MANY_TIMEOUTS,
        timed_out_turns=(1, 4),
    )
    assert (late.timeouts(0), late.timeouts(1)) == (1, 5)
    (table,) = tables([late]).values()
    assert [(s.bot, s.timeouts, s.crashes) for s in table] == [("A", 1, 0), ("B", 5, 0)]


async def test_a_missing_program_stops_the_tournament_before_its_first_game(tmp_path: Path) -> None:
    dwarf = house("thud", "dwarf", "dwarf")
    typo = {"name": "typo", "side": "troll", "command": "pyhton3 my_troll.py --port {port}"}
    cup = {"name": "typo", "game": "thud", "bots": [dwarf, typo]}
    records = Records(tmp_path / "arena.db")
    await asyncio.to_thread(records.open)
    try:
        runner = TournamentRunner(
            spec_from_mapping(cup, ROOT), ArenaConfig(), records, io.StringIO()
        )
        with pytest.raises(
            TournamentError, match=r"^bot 'typo': the program pyhton3 is not on the PATH$"
        ):
            await runner.run()
        assert (await asyncio.to_thread(records.games, GameFilter()))["total"] == 0
        missing = {**cup, "bots": [dwarf, {**typo, "command": "./nope.sh"}]}
        runner = TournamentRunner(
            spec_from_mapping(missing, ROOT), ArenaConfig(), records, io.StringIO()
        )
        with pytest.raises(TournamentError, match=r"there is no program ./nope.sh \(in "):
            await runner.run()
    finally:
        await asyncio.to_thread(records.close)


def test_the_tournament_command_prints_the_league(tmp_path: Path) -> None:
    spec = {
        "name": "tavern pair",
        "game": "tavern",
        "limits": {"turn_timeout_ms": 2000},
        "bots": [house("tavern", "pusher"), house("tavern", "wanderer")],
    }
    path = tmp_path / "cup.json"
    path.write_text(json.dumps(spec))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tavern_cli",
            "tournament",
            str(path),
            "--database",
            str(tmp_path / "a.db"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "tavern pair: 2 games" in result.stdout
    assert "tavern table" in result.stdout
    assert "house pusher" in result.stdout
    assert "2/2 done" in result.stderr


# --- validation ----------------------------------------------------------------------------------
async def test_validate_accepts_a_legal_bot_and_explains_a_broken_one() -> None:
    good = await validate(
        "thud",
        "troll",
        [
            sys.executable,
            "-m",
            "bots.house_bot",
            "thud",
            "random",
            "--simulation",
            "{simulation}",
            "--side",
            "{side}",
            "--port",
            "{port}",
        ],
        games=1,
        turn_timeout_ms=2000,
    )
    assert [verdict.opponent for verdict in good] == ["house dwarf", "house random"]
    assert all(verdict.ok for verdict in good), good
    bad = await validate(
        "thud",
        "dwarf",
        [
            sys.executable,
            BROKEN,
            "illegal",
            "thud",
            "--simulation",
            "{simulation}",
            "--port",
            "{port}",
            "--side",
            "{side}",
        ],
        games=1,
        turn_timeout_ms=300,
        startup_ms=2000,
    )
    assert bad
    assert not any(verdict.ok for verdict in bad)
    assert "Illegal move" in bad[0].summary
    assert "wins: dwarf (broken illegal) did not answer in time (the score was " in bad[0].summary
    assert bad[0].summary.endswith("; lost by forfeit")


async def test_the_league_api_serves_a_tournament(served: Served) -> None:
    spec = spec_from_mapping(
        {**BROKEN_CUP, "name": "api cup", "bots": BROKEN_CUP["bots"][:1] + BROKEN_CUP["bots"][3:]},
        ROOT,
    )
    async with asyncio.timeout(60):
        await TournamentRunner(spec, ArenaConfig(), served.records, io.StringIO()).run()
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{served.url}/api/tournaments") as response:
            tournaments = await response.json()
        assert [t["id"] for t in tournaments] == ["api-cup"]
        async with session.get(f"{served.url}/api/league?tournament=api-cup") as response:
            league = await response.json()
        assert league["tournament"]["name"] == "api cup"
        assert league["games"] == 2
        assert [row["bot"] for row in league["tables"]["dwarf"]] == ["house dwarf"]
        assert league["tables"]["dwarf"][0]["wins"] == 2
        assert {
            (row["bot"], row["crashes"], row["timeouts"]) for row in league["tables"]["troll"]
        } == {("illegal", 0, 1), ("silent", 0, 1)}
        assert {rating["bot"] for rating in league["ratings"]} == {
            "house dwarf",
            "illegal",
            "silent",
        }
        async with session.get(f"{served.url}/api/league?tournament=nope") as response:
            assert response.status == 404
        async with session.get(
            f"{served.url}/api/games?tournament=api-cup&player=illegal"
        ) as response:
            assert (await response.json())["total"] == 1


def test_a_bot_s_stderr_is_quoted_to_its_last_lines_keeping_the_error_above_its_frames() -> None:
    def quoted(lines: list[str]) -> list[str]:
        return [line.removeprefix("  | ") for line in quoted_stderr("\n".join(lines)).splitlines()]

    short = ["Traceback (most recent call last):", '  File "bot.py", line 3', "ValueError: x"]
    assert quoted(short) == short  # all of it
    chatty = [f"line {n}" for n in range(100)]
    assert quoted(chatty) == ["... (60 earlier lines not shown)", *chatty[60:]]
    frames = [f"    at f{n} (bot.js:{n}:1)" for n in range(60)]
    node = ["turn 3:", "Error: gave up", *frames]
    assert quoted(node) == ["Error: gave up", "... (21 lines not shown)", *frames[20:]]
    wide = [f"{n:03} " + "x" * 296 for n in range(30)]  # 301 characters a line, with its newline
    assert quoted(wide) == ["... (17 earlier lines not shown)", *wide[17:]]
    (cut,) = quoted(["y" * 10_000])
    assert cut == "y" * 500 + " ..."


async def test_a_swiss_event_pairs_each_round_from_the_last_one_s_results(tmp_path: Path) -> None:
    """Issue 34, item 1: ``format = "swiss"``: round 1 pairs the top half against the bottom
    half of the bots as listed; round 2 from round 1's results (never a pair again), each
    round played once the one before it is over; then the standings with their tie-breaks."""
    bots = [{**house("thud", "random"), "name": name} for name in ("a", "b", "c", "d")]
    cup = {"name": "swiss cup", "game": "thud", "seed": 5, "parallel": 2, "format": "swiss",
           "rounds": 2, "limits": {"startup_ms": 10_000}, "bots": bots}  # fmt: skip
    spec = spec_from_mapping(cup, ROOT)
    assert [p.key for p in schedule(spec)] == [
        "round 1: dwarf:a v troll:c", "round 1: dwarf:b v troll:d",
    ]  # fmt: skip
    records = Records(tmp_path / "arena.db")
    await asyncio.to_thread(records.open)
    try:
        async with asyncio.timeout(120):
            results = await TournamentRunner(spec, config_from_mapping(THUD_20), records,
                                             io.StringIO()).run()  # fmt: skip
        tournament = await asyncio.to_thread(records.tournament, spec.id)
    finally:
        await asyncio.to_thread(records.close)
    assert len(results) == 4 and tournament is not None and tournament["finishedAt"]
    first, second = swiss_rounds(spec, results)
    assert [p.key for p in first] == [p.key for p in schedule(spec)]
    met = [frozenset(p.bots[0].name + p.bots[1].name) for p in (*first, *second)]
    assert len(set(met)) == 4  # no pair met twice
    # Round 2 pairs by round 1's points: its winners meet (a draw is half a point).
    points = dict.fromkeys("abcd", 0.0)
    for result in results[:2]:
        for seat, bot in enumerate(result.bots):
            points[bot] += 0.5 if result.winner is None else float(result.winner == seat)
    top = max(second, key=lambda p: points[p.bots[0].name] + points[p.bots[1].name])
    assert {points[top.bots[0].name], points[top.bots[1].name]} == {max(points.values())}
    table = swiss_table(spec, results).splitlines()
    assert table[0].split() == ["bot", "points", "Buchholz", "S-B"] and len(table) == 5
    # The league page shows the standings above the tables.
    async with (
        serving_visor(test_config(), tmp_path / "arena.db") as served,
        chromium_pages(served.url) as pages,
    ):
        async with aiohttp.ClientSession() as session:
            url = f"{served.url}/api/league?tournament={spec.id}"
            async with session.get(url) as answer:
                standings = (await answer.json())["standings"]
        assert standings["format"] == "swiss" and len(standings["rows"]) == 4
        assert [row["bot"] for row in standings["rows"]] == [line.split()[1] for line in table[1:]]
        page = await pages.open(f"/league?tournament={spec.id}", connected=False)
        await expect(page.locator("#standings-body tr")).to_have_count(4)
        first = standings["rows"][0]["bot"]
        await expect(page.locator("#standings-body tr").first).to_contain_text(first)


def test_a_gauntlet_and_the_formats_checks() -> None:
    bots = [{**house("thud", "random"), "name": name} for name in ("champ", "x", "y")]
    gauntlet = {"name": "g", "game": "thud", "format": "gauntlet", "bots": bots}
    spec = spec_from_mapping(gauntlet, ROOT)
    assert [p.key for p in schedule(spec)] == ["dwarf:champ v troll:x", "dwarf:champ v troll:y"]
    both = spec_from_mapping({**gauntlet, "swap_sides": True}, ROOT)
    assert len(schedule(both)) == 4
    for wrong, said in (
        (
            {"format": "ladder"},
            "key 'format': one of round-robin, gauntlet, swiss, knockout, arena",
        ),
        ({"format": "arena"}, "key 'duration_s': an arena lasts 1 to"),
        ({"tie_breaks": 1}, "key 'tie_breaks': only a knockout has tie-break games"),
        ({"format": "swiss", "rounds": 3}, "a Swiss event of 3 bots plays 1 to 2 rounds"),
        ({"rounds": 2}, "key 'rounds': only a Swiss event has rounds"),
    ):
        with pytest.raises(TournamentError, match=re.escape(said)):
            spec_from_mapping({"name": "g", "game": "thud", "bots": bots, **wrong}, ROOT)
    sided = [house("thud", "dwarf", "dwarf"), house("thud", "troll", "troll")]
    with pytest.raises(TournamentError, match="a swiss event's bots all play either side"):
        spec_from_mapping(
            {"name": "s", "game": "thud", "format": "swiss", "rounds": 1, "bots": sided}, ROOT
        )


def test_a_knockout_goes_on_from_its_results_with_tie_break_games() -> None:
    """Issue 34, item 1: ``format = "knockout"``: round 1 seeded as listed, a bye to the top
    seed; a drawn game is played again with the sides swapped (``tie_breaks``), then the
    higher seed goes through; each next round from the winners. Read from results as the
    records give them (no game played here: the runner plays them as a Swiss event's)."""
    bots = [{**house("thud", "random"), "name": name} for name in ("a", "b", "c")]
    cup = {"name": "ko", "game": "thud", "format": "knockout", "tie_breaks": 1, "bots": bots}
    spec = spec_from_mapping(cup, ROOT)
    results: list[GameResult] = []

    def next_keys() -> list[str]:
        return [pairing.key for pairing in knockout_games(spec, results)[0]]

    def played(key: str, winner: int | None) -> None:
        first, second = (part.split(":")[1] for part in key.split(": ", 1)[1].split(" v "))
        results.append(GameResult("thud", (first, second), ("dwarf", "troll"), winner, (0, 0),
                                   pairing=key))  # fmt: skip

    assert (
        next_keys()
        == [p.key for p in schedule(spec)]
        == ["round 1 match 2 game 1: dwarf:b v troll:c"]
    )  # a has the bye
    played(next_keys()[0], None)  # a draw: a tie-break game, the sides swapped
    assert next_keys() == ["round 1 match 2 game 2: dwarf:c v troll:b"]
    played(next_keys()[0], None)  # drawn again: b, the higher seed, goes through
    assert next_keys() == ["round 2 match 1 game 1: dwarf:a v troll:b"]
    played(next_keys()[0], 1)  # b wins the final
    assert next_keys() == []
    assert knockout_table(spec, results).splitlines() == [
        "round 1: a, b", "round 2: b", "winner: b",
    ]  # fmt: skip


async def test_a_knockout_seeded_by_the_ladder_keeps_the_seeds_of_its_first_run(
    tmp_path: Path,
) -> None:
    """``seeding = "ladder"``: the bots strongest first by their current ladder ratings (a
    bot without one after them, as listed), read at the first run and kept with the records'
    copy of the file: a resumed run, and the league's page, pair by the same seeds whatever the
    ratings have become."""
    database = tmp_path / "arena.db"
    bots = [{**house("thud", "random"), "name": name} for name in ("a", "b", "c", "d")]
    cup = {"name": "seeded", "game": "thud", "format": "knockout", "seeding": "ladder"}
    spec = spec_from_mapping({**cup, "bots": bots}, ROOT)

    def rate(ordinals: dict[str, float]) -> None:
        db = backend_for(str(database)).connect()
        try:
            with transaction(db):
                db.execute("DELETE FROM ratings")
                for bot, mu in ordinals.items():  # sigma 0: the ordinal is mu
                    db.execute(
                        "INSERT INTO ratings (game, season, bot, mu, sigma, games, wins, "
                        "losses, draws, last_game_id, last_played_at) "
                        "VALUES ('thud', ?, ?, ?, 0.0, 1, 1, 0, 0, 'x', 0)",
                        (current_season(db), bot, mu),
                    )
        finally:
            db.close()

    async with opened(database) as records:
        rate({"C": 30.0, "b": 20.0, "d": 25.0})  # a is not on the ladder; names in any case
        played = await runner.begin(records, spec)
        await records.flush()
        kept = records.tournament(spec.id)
        rate({"a": 50.0})  # the ratings move: the event keeps its seeds
        resumed = await runner.begin(records, spec)
    assert [entrant.name for entrant in played.entrants] == ["c", "d", "b", "a"]
    first = [
        "round 1 match 1 game 1: dwarf:c v troll:a",
        "round 1 match 2 game 1: dwarf:d v troll:b",
    ]
    assert [pairing.key for pairing in schedule(played)] == first
    assert kept is not None and kept["spec"]["seeded"] == ["c", "d", "b", "a"]
    assert [pairing.key for pairing in schedule(resumed)] == first
    assert [e.name for e in spec_from_mapping(kept["spec"], ROOT).entrants] == ["c", "d", "b", "a"]
    with pytest.raises(TournamentError, match="only a Swiss or knockout event is seeded"):
        spec_from_mapping({**cup, "format": "round-robin", "bots": bots}, ROOT)


async def test_an_arena_pairs_each_bot_again_as_soon_as_its_game_ends(tmp_path: Path) -> None:
    """Issue 34, item 1: ``format = "arena"``: for ``duration_s``, every bot paired as soon as
    it is free (never in two games at once), by points; its games scored as lichess's arena
    scores them; finished once its time is up and its last games are over."""
    bots = [{**house("thud", "random"), "name": name} for name in ("a", "b", "c", "d")]
    cup = {"name": "arena cup", "game": "thud", "seed": 3, "format": "arena",
           "duration_s": 3, "limits": {"startup_ms": 10_000}, "bots": bots}  # fmt: skip
    spec = spec_from_mapping(cup, ROOT)
    assert len(schedule(spec)) == 2  # its first games: every bot at once
    records = Records(tmp_path / "arena.db")
    await asyncio.to_thread(records.open)
    try:
        out = io.StringIO()
        async with asyncio.timeout(120):
            results = await TournamentRunner(spec, config_from_mapping(THUD_20), records, out).run()
        tournament = await asyncio.to_thread(records.tournament, spec.id)
        page = await asyncio.to_thread(records.games, GameFilter(tournament=spec.id))
    finally:
        await asyncio.to_thread(records.close)
    assert tournament is not None and tournament["finishedAt"] is not None
    assert len(results) >= 2 and all(r.pairing.startswith("arena game ") for r in results)
    # Never a bot in two games at once: each bot's games one after the other.
    spans: dict[str, list[tuple[float, float]]] = {name: [] for name in "abcd"}
    for game in page["games"]:
        for player in game["players"]:
            spans[player["bot"]].append((game["startedAt"], game["finishedAt"]))
    for name, games in spans.items():
        ordered = sorted(games)
        assert all(before[1] <= after[0] for before, after in itertools.pairwise(ordered)), name
    assert max(len(games) for games in spans.values()) >= 2  # paired again once free
    table = arena_table(spec, results).splitlines()
    assert table[0].split() == ["bot", "points", "games"] and len(table) == 5
