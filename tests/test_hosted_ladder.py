"""Hosted bots on the ladder (issue 33, item 2): a bot whose version was uploaded plays rated
games with nobody connected for it: ``tavern worker --hosted thud`` processes (two, side by
side) seek for it, each with a key of its own, and run its version isolated, relaying its stdin
and stdout; a bot its author connects meets it on the same ladder, another challenges it, and
every game is rated for both; each of its moves is charged the CPU it took, as its worker
stamps it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from server.bot_logs import bot_log
from server.bot_versions import version_of, zipped_folder
from server.identity import HOSTING_PREFIX
from server.ladder import REMATCH_AFTER_S
from server.records import Records
from server.records.backends import backend_for
from server.records.versions import store_version
from tests.conftest import RawClient, test_config
from tests.services import PostgresServer, RedisServer
from tests.test_cluster import nodes
from tests.test_identity import added, arena_on
from tests.test_jail import uploaded, uploaded_honest
from tests.test_tournament import ROOT

WAIT_S = 60.0
HOSTED_C = Path(__file__).resolve().parent / "bots" / "hosted_thud.c"
GAME_ENDS = ("win-game", "loss-game", "draw-game")


@contextlib.asynccontextmanager
async def hosted_worker(
    database: Path | str, port: int, cache: Path, *options: str
) -> AsyncIterator[tuple[Path, asyncio.subprocess.Process]]:
    """``tavern worker --hosted thud [OPTIONS]`` on the arena's TCP port, its log (beside
    ``cache``) and process; stopped (SIGTERM) at the end."""
    log = cache.parent / f"worker-{len(list(cache.parent.glob('worker-*')))}.log"
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tavern_cli", "worker", "--hosted", "thud",
            "--arena", f"127.0.0.1:{port}", "--database", str(database), *options,
            cwd=ROOT, stdout=out, stderr=out, env={**os.environ, "XDG_CACHE_HOME": str(cache)},
        )  # fmt: skip
        try:
            yield log, process
        finally:
            if process.returncode is None:
                process.terminate()
            async with asyncio.timeout(WAIT_S):
                await process.wait()


def plays(log: Path) -> set[str]:
    """The bots a worker said it plays (``tavern: worker plays NAME``)."""
    return set(re.findall(r"plays \w+", log.read_text()))


async def exit_recorded(database: Path, game_id: str, bot: str) -> dict[str, Any]:
    """The bot's seat in the game's record, once its worker has kept how it ended there."""
    records = Records(database)
    records.open_to_read()
    async with asyncio.timeout(WAIT_S):
        while True:
            record = await asyncio.to_thread(records.game, game_id)
            seats = [] if record is None else record["players"]
            found: list[dict[str, Any]] = [
                seat for seat in seats if seat.get("bot") == bot and seat.get("exit")
            ]
            if found:
                return found[0]
            await asyncio.sleep(0.2)


async def played_out(client: RawClient) -> dict[str, Any]:
    """Play the first legal move of every turn; the game's last message."""
    while True:
        message = await client.receive(WAIT_S)
        if message["type"] == "turn":
            move = message["state"]["moves"][0]
            reply = {"move": {"from": move["from"], "to": move["to"]}, "turn": message["turn"]}
            await client.send({"type": "player-turn", **reply})
        elif message["type"] in GAME_ENDS:
            return message


async def test_a_hosted_bot_plays_rated_games_on_the_ladder_with_nobody_connected(
    tmp_path: Path,
) -> None:
    database = tmp_path / "arena.db"
    added(str(database), "Grimli")
    ugluk_key = added(str(database), "Ugluk")
    third_key = added(str(database), "Third")
    uploaded_honest(tmp_path, database, "Grimli")
    limited = test_config().with_turn_limit("thud", 20).game_settings
    async with (
        arena_on(str(database), game_settings=limited) as (arena, port),
        hosted_worker(database, port, tmp_path / "cache") as (log, _),
        hosted_worker(database, port, tmp_path / "cache"),  # a second worker, beside the first
    ):
        ugluk = await RawClient.connect(port)
        # It waits in the pool until the worker seeks for Grimli (its key in the roster).
        seek = {"type": "seek", "game": "thud", "rated": True, "bot": "Ugluk", "key": ugluk_key}
        await ugluk.send(seek)
        info = await ugluk.expect("game-info", timeout=WAIT_S)
        # Meanwhile the other worker's connection for Grimli, present, takes a challenge to
        # Thud at once (and declines one to another game).
        third = await RawClient.connect(port)
        challenge = {"type": "challenge", "opponent": "Grimli", "rated": True}
        challenge |= {"bot": "Third", "key": third_key}
        async with asyncio.timeout(WAIT_S):  # until the other worker's connection is there
            while True:
                await third.send({**challenge, "game": "tavern"})
                assert (await third.expect("challenge-sent"))["opponent"] == "Grimli"
                declined = await third.expect("challenge-declined")
                if declined["reason"] != "Grimli is not connected":
                    break
                await asyncio.sleep(0.2)
        assert declined["reason"] == "Grimli is hosted to play thud only"
        await third.send({**challenge, "game": "thud"})
        await third.expect("challenge-sent", timeout=WAIT_S)
        await third.expect("game-info", timeout=WAIT_S)
        ends = await asyncio.gather(played_out(ugluk), played_out(third))
        assert all(end["type"] in ("win-game", "loss-game", "draw-game") for end in ends), ends
        for client in (ugluk, third):
            await client.close()
        assert arena.roster.get("Grimli") is not None
    # Rated for both: the hosted bot's game counts as any bot's.
    records = Records(database)
    records.open_to_read()
    table = records.ladder("thud", None)
    assert table is not None
    games = {row["bot"]: row["games"] for row in table["bots"]}
    assert games == {"Grimli": 2, "Ugluk": 1, "Third": 1}, games
    # Each of its moves is stamped by its worker with the CPU it took (its own claim of an
    # hour replaced), what its clock was charged, and with what it wrote on stderr meanwhile:
    # kept for its owner's log.
    logged = bot_log(records, "Grimli", 2)
    assert len(logged) == 2
    turns = [turn for game in logged for turn in game["turns"]]
    assert len(turns) == 20 and all(0 <= turn["cpuMs"] < 5_000 for turn in turns), turns
    assert all(turn["stderr"] == f"thinking about turn {turn['number']}\n" for turn in turns)
    assert info["type"] == "game-info"
    text = log.read_text()
    assert "worker plays Grimli" in text, text
    assert HOSTING_PREFIX not in text  # its key is never said


async def test_a_game_whose_worker_is_lost_is_voided_and_a_bot_that_crashes_loses(
    tmp_path: Path,
) -> None:
    """Issue 33, item 6: the worker killed mid-game (SIGKILL) is the arena's fault: the game is
    voided (its opponent told ``Game voided``), rated for neither, and played again at once. A
    hosted version that crashes is its own fault: its worker keeps the seat, and it loses on
    time, rated."""
    database = tmp_path / "arena.db"
    added(str(database), "Grimli")
    ugluk_key = added(str(database), "Ugluk")
    third_key = added(str(database), "Third")  # not Grimli's last opponent: paired at once
    uploaded_honest(tmp_path, database, "Grimli")
    limited = test_config().with_turn_limit("thud", 200).game_settings
    seek = {"type": "seek", "game": "thud", "rated": True, "bot": "Ugluk", "key": ugluk_key}
    timeouts = {"turn_timeout_ms": 1000, "first_turn_timeout_ms": 1000}
    async with arena_on(str(database), game_settings=limited, **timeouts) as (_, port):
        async with hosted_worker(database, port, tmp_path / "cache") as (_, worker):
            ugluk = await RawClient.connect(port)
            await ugluk.send(seek)
            await ugluk.expect("game-info", timeout=WAIT_S)
            while (await ugluk.receive(WAIT_S))["type"] != "turn":
                pass
            worker.kill()  # mid-game, as a machine lost
            await worker.wait()
            while (end := await ugluk.receive(WAIT_S))["type"] not in GAME_ENDS:
                pass
            assert (end["type"], end["result"]["reason"]) == ("draw-game", "Game voided"), end
            await ugluk.close()
        async with hosted_worker(database, port, tmp_path / "cache"):
            # Played again: the voided game is no last game, so the two meet again at once,
            # not after REMATCH_AFTER_S of waiting both; and rated once.
            ugluk = await RawClient.connect(port)
            await ugluk.send(seek)
            sought = time.monotonic()
            await ugluk.expect("game-info", timeout=WAIT_S)
            assert time.monotonic() - sought < REMATCH_AFTER_S
            assert (await played_out(ugluk))["type"] in GAME_ENDS
            await ugluk.close()
        uploaded(tmp_path, database, "socket")  # exits at once, its worker keeping its seat
        async with hosted_worker(database, port, tmp_path / "cache"):
            third = await RawClient.connect(port)
            await third.send({**seek, "bot": "Third", "key": third_key})
            info = await third.expect("game-info", timeout=WAIT_S)
            end = await played_out(third)
            assert (end["type"], end["result"]["reason"]) == ("win-game", "Turn timeout"), end
            await third.close()
            # Its worker keeps how it ended and what it wrote with the game's record.
            crashed = await exit_recorded(database, info["simulationId"], "Grimli")
    assert crashed["exit"] == "exited with code 1", crashed
    assert "Traceback" in crashed["stderr"], crashed  # its crash, as it wrote it
    records = Records(database)
    records.open_to_read()
    table = records.ladder("thud", None)
    assert table is not None
    # Its page says which of its games were voided, rated for nobody.
    page = records.ladder_bot("Grimli")
    assert page is not None
    assert [(game["game"], game["opponent"]) for game in page["voided"]] == [("thud", "Ugluk")]
    rows = {row["bot"]: row for row in table["bots"]}
    assert {bot: row["games"] for bot, row in rows.items()} == {"Grimli": 2, "Ugluk": 1, "Third": 1}
    assert rows["Third"]["wins"] == 1


async def test_two_hosted_bots_one_compiled_play_rated_games_on_two_workers_with_nobody(
    redis: RedisServer, postgres: PostgresServer, tmp_path: Path
) -> None:
    """Issue 33's first test, with the real things: a Python bot and a C bot, both uploaded,
    meet on the ladder of two nodes (a real redis-server, records in PostgreSQL) through two
    workers, one on each node, with nobody connected; their games are rated."""
    database = postgres.create_database("hosted_ladder")
    added(database, "Grimli")
    added(database, "Cragbeard")
    uploaded_honest(tmp_path, database, "Grimli")
    source = tmp_path / "cragbeard"
    source.mkdir()
    build = ["cc", "-O2", "-o", str(source / "bot"), str(HOSTED_C), "-ljansson"]
    await asyncio.to_thread(subprocess.run, build, check=True, timeout=60)
    compiled = version_of(zipped_folder(source), "./bot")
    assert store_version(backend_for(database), "Cragbeard", compiled, activate=True)
    records = Records(database)
    records.open_to_read()
    async with (
        nodes(redis, tmp_path, count=2, database=database, thud={"turnLimit": 20}) as (a, b),
        hosted_worker(database, a.tcp_port, tmp_path / "cache") as (first, _),
        hosted_worker(database, b.tcp_port, tmp_path / "cache") as (second, _),
        asyncio.timeout(WAIT_S),
    ):
        while True:  # until each has played a rated game
            table = records.ladder("thud", None)
            rows = {} if table is None else {row["bot"]: row for row in table["bots"]}
            if {"Grimli", "Cragbeard"} <= rows.keys():
                break
            await asyncio.sleep(0.2)
        (game_id, *_) = records.games_of_bot("Cragbeard", 5)  # their first game
        # Each worker plays both bots: the slower to start may not have said so yet.
        while not all({"plays Grimli", "plays Cragbeard"} <= plays(log) for log in (first, second)):
            await asyncio.sleep(0.2)
    assert rows["Grimli"]["games"] == rows["Cragbeard"]["games"] >= 1, rows
    record = records.game(game_id)
    assert record is not None and record["turnCount"] == 20, record
    assert {player["bot"] for player in record["players"]} == {"Grimli", "Cragbeard"}
