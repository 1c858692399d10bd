"""Records: every game kept, served over HTTP, replayed exactly, and surviving kill -9.

Every test that keeps records runs twice, on SQLite and on PostgreSQL (``records_database``).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from bench.common import tavern_serve
from bots import tavern_dummy
from bots.house import replies, run_games
from bots.sdk import ArenaClient
from bots.thud import ThudTurn, play_thud
from server.arena import Arena
from server.commentary import replay_text
from server.games.base import Player
from server.games.tavern.house import choose_actions, view_of_wire
from server.games.thud.codec import bot_state
from server.games.thud.game import THUD
from server.match_seat import Seat
from server.records import (
    SCHEMA_VERSION,
    GameFilter,
    Recorder,
    Records,
    backend_for,
    connect,
    migrate,
)
from server.records.backends import Connection
from server.records.writes import Write
from server.replay import DamagedRecord, frames, game_of
from server.tcp import TcpServer
from server.tournament.bots import AbsentSeat
from tavern_cli.cli import main as tavern_main
from tests.conftest import RawClient, Served, serving_visor, test_config
from tests.services import PostgresServer
from tests.test_thud_api import api_client

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
async def served(records_database: str) -> AsyncIterator[Served]:
    async with serving_visor(test_config(), records_database) as running:
        yield running


@contextlib.contextmanager
def connected(database: str) -> Iterator[Connection]:
    """A connection of the records' own backend, as the writer and the queries have."""
    connection = backend_for(database).connect()
    try:
        yield connection
    finally:
        connection.close()


def rows(db: Connection, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in db.execute(sql).fetchall()]


def schema_version(database: str) -> int:
    with connected(database) as db:
        if database.startswith("postgresql://"):
            version: int = db.execute("SELECT version FROM schema_version").fetchone()[0]
        else:
            version = db.execute("PRAGMA user_version").fetchone()[0]
    return version


def table_names(database: str) -> set[str]:
    with connected(database) as db:
        if database.startswith("postgresql://"):
            rows = db.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            ).fetchall()
        else:
            rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {row[0] for row in rows}


def at_version(database: str, version: int) -> Connection:
    """A database whose schema stops at ``version``, as an older server left it."""
    backend = backend_for(database)
    connection = backend.connect()
    backend.migrate(connection, version)
    return connection


# --- the schema ----------------------------------------------------------------------------------
def test_a_new_database_gets_the_current_schema(records_database: str) -> None:
    records = Records(records_database)
    records.open()
    records.close()
    assert schema_version(records_database) == SCHEMA_VERSION
    if not records_database.startswith("postgresql://"):
        connection = sqlite3.connect(records_database)
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_two_processes_opening_one_new_file_migrate_it_once(tmp_path: Path) -> None:
    """A worker and a tournament started together on a new file: the second to take the write
    lock finds the schema there and does nothing (it used to fail, "table games already
    exists", having read the version before the first one wrote)."""
    path = tmp_path / "arena.db"
    first, second = connect(path), connect(path)

    def first_migrates_meanwhile(statement: str) -> None:
        if statement == "BEGIN IMMEDIATE" and not table_names(str(path)):
            migrate(first)

    second.set_trace_callback(first_migrates_meanwhile)
    assert migrate(second) == 0
    assert second.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    first.close()
    second.close()


def test_a_newer_server_opens_an_older_database(records_database: str) -> None:
    old = at_version(records_database, 1)
    old.execute(
        "INSERT INTO games (id, game, seed, settings, status, started_at, reason, winner, score, "
        "turn_count) VALUES ('0abcdef', 'thud', 7, '{}', 'finished', 1.0, 'Timeout', NULL, "
        '\'{"dwarfs": 30, "trolls": 30}\', 0)'
    )
    old.execute(
        "INSERT INTO seats (game_id, seat, seat_name, nick, names, kind) "
        "VALUES ('0abcdef', 0, 'dwarf', 'old bot', '[]', 'bot')"
    )
    old.close()
    records = Records(records_database)
    records.open()
    records.close()
    record = records.game("0abcdef")
    assert record is not None
    assert record["result"] == {
        "reason": "Timeout",
        "winner": None,
        "score": {"dwarfs": 30, "trolls": 30},
    }
    assert record["players"][0]["nick"] == "old bot"
    assert record["players"][0]["bot"] is None  # a column the migration added
    assert record["tournament"] is None


def test_a_database_from_a_newer_server_is_refused(records_database: str) -> None:
    with contextlib.closing(at_version(records_database, SCHEMA_VERSION)) as connection:
        if records_database.startswith("postgresql://"):
            connection.execute("UPDATE schema_version SET version = version + 1")
        else:
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(RuntimeError, match="newer than this server"):
        Records(records_database).open_to_read()


# --- recording real games ------------------------------------------------------------------------
async def tavern_game(served: Served, seed: int) -> tuple[str, list[dict[str, Any]]]:
    """A whole Tavern game; returns its id and every state team1's bot was sent."""
    seen: list[dict[str, Any]] = []
    port = served.tcp_port

    async def watched_bot() -> dict[str, Any]:
        async with await ArenaClient.connect("127.0.0.1", port) as client:
            info = await client.join(
                None, nick="watched", names=["A", "B", "C", "D", "E"], seed=seed
            )
            seen.append({"simulationId": info["simulationId"]})

            def on_turn(message: dict[str, Any]) -> dict[str, Any]:
                seen.append(message["state"])
                view = view_of_wire(message["state"], info["team"], info["width"], info["height"])
                return {"type": "player-turn", "actions": choose_actions(view)}

            return await client.play(on_turn)

    first = asyncio.create_task(watched_bot())
    await asyncio.sleep(0.05)
    await tavern_dummy.play("127.0.0.1", port, None, "other")
    await first
    await served.records.flush()
    return seen[0]["simulationId"], seen[1:]


async def test_a_tavern_game_is_recorded_and_replays_exactly(served: Served) -> None:
    game_id, sent = await tavern_game(served, seed=31)
    record = served.records.game(game_id)
    assert record is not None
    assert record["status"] == "finished"
    assert record["seed"] == 31
    assert [p["nick"] for p in record["players"]] == ["watched", "other"]
    assert record["players"][0]["names"] == ["A", "B", "C", "D", "E"]
    assert record["players"][0]["replies"] > 0
    assert 0 <= record["players"][0]["replyMeanMs"] <= record["players"][0]["replyWorstMs"]
    assert record["settings"]["pointsToWin"] == 3
    assert record["result"]["reason"] == "Points to win reached"
    assert len(record["turns"]) == record["turnCount"] > 0
    # Every position team1 was sent is one of the recomputed ones, in order.
    game = game_of(record)
    recomputed = [game.state_to_wire(frame.state) for frame in frames(record)]
    positions = iter(recomputed)
    for state in sent:
        assert any(state == candidate for candidate in positions), (
            "a sent position was not replayed"
        )
    final = recomputed[-1]
    assert record["result"]["score"] == dict(game.scores(list(frames(record))[-1].state))
    assert final["barrels"]


async def test_a_thud_game_replays_exactly_what_the_bots_were_sent(served: Served) -> None:
    port = served.tcp_port
    sent: list[dict[str, Any]] = []
    async with await ArenaClient.connect("127.0.0.1", port) as creator:
        game_id = (await creator.create_simulation("thud", seed=5))["simulationId"]

    def dwarf(turn: ThudTurn) -> dict[str, Any]:
        sent.append(turn.state)
        killing = turn.killing_moves()
        return turn.reply(killing[0] if killing else turn.moves()[len(sent) % len(turn.moves())])

    house_troll = replies(THUD.house_players["troll"], {"side": "troll"}, seed=5)

    def troll(turn: ThudTurn) -> dict[str, Any]:
        sent.append(turn.state)
        return house_troll({"state": turn.state})

    async with asyncio.timeout(120):
        await asyncio.gather(
            play_thud("127.0.0.1", port, game_id, "dwarf", "d", dwarf),
            play_thud("127.0.0.1", port, game_id, "troll", "t", troll),
        )
    await served.records.flush()
    record = served.records.game(game_id)
    assert record is not None
    game = game_of(record)
    recomputed = [frame.state for frame in frames(record)]
    assert len(recomputed) == len(sent) + 1  # every ply was sent, then the final position
    # Compared as JSON: what the bots were sent is bytes, not Python objects.
    assert [orjson.loads(orjson.dumps(bot_state(state))) for state in recomputed[:-1]] == sent
    assert record["result"]["score"] == dict(game.scores(recomputed[-1]))


async def test_the_games_api_filters_and_pages(served: Served) -> None:
    await run_games("thud", "random", "random", "127.0.0.1", served.tcp_port, 2, seed=3)
    await tavern_game(served, seed=4)
    await served.records.flush()
    async with aiohttp.ClientSession() as session:

        async def get(path: str) -> tuple[int, Any]:
            async with session.get(served.url + path) as response:
                return response.status, await response.json()

        status, everything = await get("/api/games")
        assert status == 200
        assert everything["total"] == 3
        status, thud = await get("/api/games?game=thud&perPage=1&page=2")
        assert (thud["total"], thud["perPage"], thud["page"], len(thud["games"])) == (2, 1, 2, 1)
        assert thud["games"][0]["game"] == "thud"
        _, by_player = await get("/api/games?player=watched")
        assert by_player["total"] == 1
        _, wins = await get("/api/games?result=win")
        assert all(game["result"]["winner"] for game in wins["games"])
        status, _ = await get("/api/games?page=x")
        assert status == 400
        game_id = by_player["games"][0]["id"]
        status, record = await get(f"/api/games/{game_id}")
        assert status == 200
        assert record["turns"][0]["number"] == 1
        status, replay = await get(f"/api/games/{game_id}/replay")
        assert status == 200
        assert len(replay["frames"]) == len(record["turns"]) + 1
        assert replay["frames"][0]["turn"] == 0
        status, missing = await get("/api/games/nope123")
        assert (status, missing["error"]) == (404, "no recorded game with this id")


async def test_tavern_replay_prints_the_game(
    served: Served, records_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    game_id, _ = await tavern_game(served, seed=8)
    assert tavern_main(["replay", game_id, "--database", records_database]) == 0
    out = capsys.readouterr().out
    assert f"tavern {game_id}, seed 8: team1 (watched) against team2 (other)" in out
    assert "turn 1: team1 (watched)" in out
    assert " 0 ~~~~~~~~~~~~~~~~~~~~~" in out  # the home rows, numbered
    assert "wins" in out
    assert "Points to win reached" in out
    assert tavern_main(["replay", "nope123", "--database", records_database]) == 1


# --- kill -9 -------------------------------------------------------------------------------------
async def test_a_killed_server_keeps_every_finished_game(
    tmp_path: Path, records_database: str
) -> None:
    database = records_database
    config = tmp_path / "config.json"
    config.write_text(orjson.dumps({"port": 0, "httpPort": 0, "database": database}).decode())
    async with tavern_serve(config) as server:
        port = server.tcp_port
        finished = await run_games("thud", "dwarf", "troll", "127.0.0.1", port, 1, seed=2)
        assert finished[0]["result"]["reason"]
        # A second game, left hanging mid-way: both bots pass a few times, then the kill.
        async with (
            await ArenaClient.connect("127.0.0.1", port) as one,
            await ArenaClient.connect("127.0.0.1", port) as two,
        ):
            await one.join(None, nick="one", names=["A"])
            await two.join(None, nick="two", names=["B"])
            for _ in range(3):
                for client, team in ((one, "team1"), (two, "team2")):
                    turn = await client.receive()
                    dwarf = turn["state"][team][0]["id"]
                    await client.send(
                        {"type": "player-turn", "actions": [{"botId": dwarf, "type": "PASS"}]}
                    )
            await one.receive()
            await asyncio.sleep(0.3)  # let the writer commit the turns played so far
            server.process.send_signal(signal.SIGKILL)
            await asyncio.wait_for(server.process.wait(), 10)
    records = Records(database)
    records.open()  # what a restarted server does
    records.close()
    page = records.games(GameFilter())
    statuses = sorted((game["game"], game["status"]) for game in page["games"])
    assert statuses == [("tavern", "unfinished"), ("thud", "finished")]
    thud = next(game for game in page["games"] if game["game"] == "thud")
    full = records.game(thud["id"])
    assert full is not None
    assert len(full["turns"]) == full["turnCount"] > 0
    assert full["result"] is not None
    hanging = records.game(next(g["id"] for g in page["games"] if g["game"] == "tavern"))
    assert hanging is not None
    assert len(hanging["turns"]) == hanging["turnCount"] > 0


async def play_turns(clients: dict[str, RawClient], count: int) -> dict[str, Any]:
    """Play ``count`` turns with the Tavern bot's strategy; returns the last state sent."""
    state: dict[str, Any] = {}
    for number in range(count):
        team = "team1" if number % 2 == 0 else "team2"
        state = (await clients[team].expect("turn"))["state"]
        view = view_of_wire(state, team, 21, 21)
        await clients[team].send({"type": "player-turn", "actions": choose_actions(view)})
    return state


async def test_an_unfinished_game_resumes_from_its_record(records_database: str) -> None:
    """A game cut short by a stopped server is restored exactly and plays on to its end."""
    records = Records(records_database)
    await asyncio.to_thread(records.open)
    try:
        first = Arena(test_config())
        first.listeners.append(Recorder(records))
        async with first.running(), TcpServer(first).serving() as tcp:
            assert tcp.port is not None
            clients = {team: await RawClient.connect(tcp.port) for team in ("team1", "team2")}
            for client in clients.values():
                await client.send(
                    {"type": "join-simulation", "nick": "n", "names": ["A"], "seed": 12}
                )
                game_id = (await client.expect("game-info"))["simulationId"]
            await play_turns(clients, 30)
            await clients["team1"].expect("turn")  # team1 is on move when the server stops
        await records.flush()
        record = records.game(game_id)
        assert record is not None
        assert (record["status"], len(record["turns"]), record["turnCount"]) == ("playing", 30, 30)
        *_, cut = frames(record)
        second = Arena(test_config())
        second.listeners.append(Recorder(records))
        async with second.running(), TcpServer(second).serving() as tcp:
            assert tcp.port is not None
            restored = second.restore(record)
            assert restored.id == game_id
            clients = {team: await RawClient.connect(tcp.port) for team in ("team1", "team2")}
            for client in clients.values():
                await client.send({"type": "join-simulation", "nick": "n", "simulationId": game_id})
                await client.expect("game-info")
            first_turn = await clients["team1"].expect("turn")
            game = game_of(record)
            assert first_turn["state"] == game.state_to_wire(cut.state)  # exactly where it stopped
            view = view_of_wire(first_turn["state"], "team1", 21, 21)
            await clients["team1"].send({"type": "player-turn", "actions": choose_actions(view)})
            for number in range(2000):
                team = "team2" if number % 2 == 0 else "team1"
                message = await clients[team].receive()
                while message["type"] == "score":
                    message = await clients[team].receive()
                if message["type"] in ("win-game", "loss-game", "draw-game"):
                    final = message
                    break
                view = view_of_wire(message["state"], team, 21, 21)
                await clients[team].send({"type": "player-turn", "actions": choose_actions(view)})
        await records.flush()
        full = records.game(game_id)
        assert full is not None
        assert full["status"] == "finished"
        assert [turn["number"] for turn in full["turns"]] == list(range(1, len(full["turns"]) + 1))
        assert len(full["turns"]) > 30
        *_, last = frames(full)
        assert game.state_to_wire(last.state) == final["state"]
    finally:
        await asyncio.to_thread(records.close)


async def test_one_failing_write_does_not_lose_the_others_of_its_batch(
    records_database: str,
) -> None:
    records = Records(records_database)
    await asyncio.to_thread(records.open)
    try:
        records.submit(one_game("a"))
        await records.flush()
        records.tournament_started("cup", "Cup", "thud", {})
        records.record_turn("no-such-game", 1, 0, b"{}", False)  # breaks a foreign key
        records.record_turn("a", 1, 0, b'{"stop":true}', False)
        records.tournament_started("other", "Other", "tavern", {})
        await records.flush()
        assert {t["id"] for t in records.tournaments()} == {"cup", "other"}
        game = records.game("a")
        assert game is not None
        assert game["turns"] == [
            {"number": 1, "seat": "dwarf", "action": {"stop": True}, "timedOut": False}
        ]
    finally:
        await asyncio.to_thread(records.close)


def test_an_sqlite_too_old_for_the_records_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 31, 1))
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.31.1")
    with pytest.raises(RuntimeError, match=r"SQLite 3\.33\.0 or later, not 3\.31\.1"):
        connect(tmp_path / "arena.db")


def one_game(game_id: str, owner: str | None = None) -> Write:
    """The write of a playing Thud game and its seats, as the records keep them."""
    game_row = ("thud", 1, "{}", 0.0, None, None, owner, 0)
    seats = [(0, "dwarf", "n", "[]", "bot", None), (1, "troll", "n", "[]", "bot", None)]
    return Write("game-started", game_id, game_row, seats, about=game_id)


async def test_a_batch_of_turns_reads_back_as_written(records_database: str) -> None:
    """A batch's turns go to the database as one chunk per game in one statement: every field
    must come back as it was, and each game's turn count, timed-out turns included."""
    records = Records(records_database)
    await asyncio.to_thread(records.open)
    try:
        records.submit(one_game("a"))
        records.submit(one_game("b"))
        actions = [
            {"move": {"from": [6, 0], "to": [6, 1]}, "declare": True},
            {"stop": True},
            {"note": 'dwarf \u00e9\u2603 "quoted" \\ back', "n": -3},
        ]
        for number, action in enumerate(actions, start=1):
            records.record_turn("a", number, (number - 1) % 2, orjson.dumps(action), number == 2)
            records.record_turn("b", number, (number - 1) % 2, b"{}", False)
        records.record_turn("b", 7, 0, b"{}", False)  # numbers that jump start a chunk of their own
        await records.flush()
        records.record_turn("a", 4, 1, orjson.dumps({"stop": True}), True)  # the next batch
        await records.flush()
        game = records.game("a")
        assert game is not None
        assert game["turns"] == [
            {"number": 1, "seat": "dwarf", "action": actions[0], "timedOut": False},
            {"number": 2, "seat": "troll", "action": actions[1], "timedOut": True},
            {"number": 3, "seat": "dwarf", "action": actions[2], "timedOut": False},
            {"number": 4, "seat": "troll", "action": {"stop": True}, "timedOut": True},
        ]
        assert game["turnCount"] == 4
        other = records.game("b")
        assert other is not None and other["turnCount"] == 7
        assert [turn["number"] for turn in other["turns"]] == [1, 2, 3, 7]
        with connected(records_database) as db:
            chunks = rows(db, "SELECT game_id, first_number, count FROM turn_chunks ORDER BY 1, 2")
            late = rows(db, "SELECT game_id, seat, timed_out_turns FROM seats")
        assert chunks == [("a", 1, 3), ("a", 4, 1), ("b", 1, 3), ("b", 7, 1)]
        assert sorted(late) == [("a", 0, 0), ("a", 1, 2), ("b", 0, 0), ("b", 1, 0)]
    finally:
        await asyncio.to_thread(records.close)


async def test_a_finished_game_sends_only_its_own_turns_at_once(records_database: str) -> None:
    """A game's end is written at once with that game's last turns; the other games' turns wait
    for their batch, so a busy game still writes one row per batch however many games end."""
    records = Records(records_database)
    await asyncio.to_thread(records.open)
    try:
        records.submit(one_game("a"))
        records.submit(one_game("b"))
        await records.flush()
        for number in range(1, 4):
            records.record_turn("a", number, (number - 1) % 2, b"{}", False)
            records.record_turn("b", number, (number - 1) % 2, b"{}", False)
        records.submit(Write("seat-exit", "a", 0, "ended"), urgent=True, turns_of="a")  # an end's
        for number in range(4, 6):
            records.record_turn("b", number, (number - 1) % 2, b"{}", False)
        await records.flush()
        with connected(records_database) as db:
            chunks = rows(db, "SELECT game_id, first_number, count FROM turn_chunks ORDER BY 1, 2")
        assert chunks == [("a", 1, 3), ("b", 1, 5)]
    finally:
        await asyncio.to_thread(records.close)


async def test_games_cut_short_keep_their_turn_count(records_database: str) -> None:
    """A game's row is not written per turn: its count comes from its turns while it is played,
    and is written when it is marked unfinished, by its own process or by the next one."""
    path = records_database
    records = Records(path)
    await asyncio.to_thread(records.open)
    records.submit(one_game("mine", records.owner))
    records.submit(one_game("gone"))  # a game of a process that was killed
    for number in range(1, 4):
        records.record_turn("mine", number, (number - 1) % 2, b"{}", False)
        records.record_turn("gone", number, (number - 1) % 2, b"{}", False)
    await records.flush()
    playing = records.game("mine")
    assert playing is not None and (playing["status"], playing["turnCount"]) == ("playing", 3)
    records.record_turn("mine", 4, 1, b"{}", False)
    await asyncio.to_thread(records.close)  # the last turn is written before the game is closed
    after = Records(path)
    await asyncio.to_thread(after.open)
    await asyncio.to_thread(after.close)
    with connected(path) as db:
        games = rows(db, "SELECT id, status, turn_count FROM games ORDER BY id")
    assert games == [("gone", "unfinished", 3), ("mine", "unfinished", 4)]


async def test_a_chunk_that_does_not_read_is_a_damaged_record(records_database: str) -> None:
    records = Records(records_database)
    await asyncio.to_thread(records.open)
    chunks = [("a", 1, "[[0, {}]]"), ("b", 1, "{"), ("c", 2, "[]")]  # game, count, turns
    try:
        for game_id, _, _ in chunks:
            records.submit(one_game(game_id))
        await records.flush()
        with connected(records_database) as db:
            db.executemany(
                "INSERT INTO turn_chunks (game_id, first_number, count, turns) VALUES (?, 1, ?, ?)",
                chunks,
            )
        for game_id in ("a", "b", "c"):
            with pytest.raises(DamagedRecord, match=f"game {game_id}: its record does not read"):
                records.game(game_id)
    finally:
        await asyncio.to_thread(records.close)


def test_the_turns_of_a_version_4_database_become_chunks(records_database: str) -> None:
    """Runs of consecutive turns become one chunk each, and each seat counts its late turns."""
    path = records_database
    old = at_version(path, 4)
    old.execute(
        "INSERT INTO games (id, game, seed, settings, status, started_at) "
        "VALUES ('a', 'thud', 1, '{}', 'playing', 0)"
    )
    old.executemany(
        "INSERT INTO seats (game_id, seat, seat_name, nick, names, kind) "
        "VALUES ('a', ?, ?, 'n', '[]', 'bot')",
        [(0, "dwarf"), (1, "troll")],
    )
    turns = [
        ("a", number, (number - 1) % 2, orjson.dumps({"n": number, "s": "\u00e9"}).decode(), late)
        for number, late in ((1, 0), (2, 1), (3, 0), (4, 1), (6, 0), (7, 1))
    ]
    turns.append(("a", 5, 0, "not JSON", 0))
    turns.append(("a", 9, 0, "null", 0))
    old.executemany("INSERT INTO turns VALUES (?, ?, ?, ?, ?)", turns)
    old.close()
    records = Records(path)
    records.open()
    records.close()
    game = records.game("a")
    assert game is not None
    expected = {
        number: (seat, orjson.loads(action) if action != "not JSON" else action, late)
        for _, number, seat, action, late in turns
    }
    assert [(t["number"], t["seat"], t["action"], t["timedOut"]) for t in game["turns"]] == [
        (number, ("dwarf", "troll")[seat], action, bool(late))
        for number, (seat, action, late) in sorted(expected.items())
    ]
    with connected(path) as db:
        chunks = rows(db, "SELECT first_number, count FROM turn_chunks ORDER BY first_number")
        late = rows(db, "SELECT seat, timed_out_turns FROM seats ORDER BY seat")
    tables = table_names(path)
    assert chunks == [(1, 7), (9, 1)]
    assert late == [(0, 1), (1, 2)]
    assert "turns" not in tables


def test_a_seat_keeps_what_the_records_need_of_its_reply_times() -> None:
    seat = Seat(AbsentSeat(), Player("n"), turn_timeout_s=1.0, kind="bot", bot=None)
    for seconds in (0.25, 1.5, 0.75):
        seat.replied(seconds)
    assert (seat.replies, seat.reply_total_s, seat.reply_worst_s) == (3, 2.5, 1.5)
    stats = seat.stats()
    assert (stats.replies, stats.reply_mean_ms, stats.reply_worst_ms) == (3, 2500 / 3, 1500)


# --- copying between databases -------------------------------------------------------------------
async def test_records_copy_both_ways_keeps_every_record_and_replay(
    tmp_path: Path, postgres: PostgresServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """SQLite to PostgreSQL and back: every game, tournament and API token reads the same, and
    every game replays to the same positions."""
    source = tmp_path / "arena.db"
    async with serving_visor(test_config(), source) as served:
        await run_games("thud", "random", "random", "127.0.0.1", served.tcp_port, 1, seed=3)
        await tavern_game(served, seed=4)
        served.records.tournament_started("cup", "Cup", "thud", {"seed": 7})
        served.records.submit(one_game("hanging"))  # a game still playing when copied
        served.records.record_turn("hanging", 1, 0, b'{"note":"\\u00e9"}', True)
        served.records.thud_api_game_created("digest", "hanging", ("d1", "d2"), ("p1", "p2"))
        await served.records.flush()
    url = postgres.create_database("copy_round_trip")
    assert tavern_main(["records", "copy", str(source), url]) == 0
    assert "games: 3 rows" in capsys.readouterr().out
    back = tmp_path / "back.db"
    assert tavern_main(["records", "copy", url, str(back)]) == 0
    original = Records(source)
    everything = GameFilter(per_page=200)
    ids = [game["id"] for game in original.games(everything)["games"]]
    assert len(ids) == 3
    for database in (url, str(back)):
        copied = Records(database)
        assert copied.games(everything) == original.games(everything)
        assert copied.tournaments() == original.tournaments()
        assert copied.thud_api_game("digest") == original.thud_api_game("digest")
        for game_id in ids:
            record = copied.game(game_id)
            assert record == original.game(game_id)
            assert record is not None
            if game_id != "hanging":
                assert list(replay_text(record)) == list(replay_text(original.game(game_id) or {}))
    assert tavern_main(["records", "copy", url, url]) == 1  # the same database


async def test_the_nodes_that_remain_mark_only_a_killed_nodes_games_unfinished(
    tmp_path: Path, records_database: str
) -> None:
    """Two nodes on one database: while both run, neither touches the other's games; once one
    is killed with kill -9, the other marks that node's games unfinished, and only those."""
    config = tmp_path / "config.json"
    config.write_text(
        orjson.dumps({"port": 0, "httpPort": 0, "database": records_database}).decode()
    )
    remaining = Records(records_database, sweep_s=0.1)
    await asyncio.to_thread(remaining.open)
    try:
        remaining.submit(one_game("mine", remaining.owner))
        await remaining.flush()
        async with tavern_serve(config) as server:
            async with (
                await ArenaClient.connect("127.0.0.1", server.tcp_port) as one,
                await ArenaClient.connect("127.0.0.1", server.tcp_port) as two,
            ):
                theirs = (await one.join(None, nick="one", names=["A"]))["simulationId"]
                await two.join(None, nick="two", names=["B"])
                await one.receive()  # the first turn: the game is recorded as playing
                await asyncio.sleep(0.6)  # several sweeps of the remaining node
                statuses = {g["id"]: g["status"] for g in remaining.games(GameFilter())["games"]}
                assert statuses == {"mine": "playing", theirs: "playing"}
                server.process.send_signal(signal.SIGKILL)
                await asyncio.wait_for(server.process.wait(), 10)
            async with asyncio.timeout(10):
                while (remaining.game(theirs) or {}).get("status") != "unfinished":
                    await asyncio.sleep(0.05)
        mine = remaining.game("mine")
        assert mine is not None and mine["status"] == "playing"
        if records_database.startswith("postgresql://"):  # a shared database: ids name the node
            tag = theirs.partition("-")[2]
            assert tag and f"-{tag}" != remaining.id_tag
    finally:
        await asyncio.to_thread(remaining.close)


async def test_a_node_carries_on_when_postgresql_restarts(postgres: PostgresServer) -> None:
    """The database restarts under a node: its writer connects again (the batch that failed
    is written then), its reads too, and it takes its owner lock again, so that the other
    nodes still see it alive."""
    url = postgres.create_database("restarted")
    records = Records(url)
    await asyncio.to_thread(records.open)
    try:
        records.submit(one_game("a", records.owner))
        for number in (1, 2):
            records.record_turn("a", number, number - 1, b"{}", False)
        await records.flush()
        await asyncio.to_thread(postgres.stop)
        await asyncio.to_thread(postgres.start)
        records.record_turn("a", 3, 0, b'{"after":true}', False)
        await asyncio.wait_for(records.flush(), 30)
        game = records.game("a")
        assert game is not None and game["status"] == "playing"
        assert [turn["number"] for turn in game["turns"]] == [1, 2, 3]
        with connected(url) as other:  # another node's view of this one
            assert backend_for(url).owners().is_alive(records.owner, other)
    finally:
        await asyncio.to_thread(records.close)
    game = records.game("a")
    assert game is not None and game["status"] == "unfinished"


async def test_a_pairing_played_twice_counts_once(records_database: str) -> None:
    """Two workers that both finished one pairing's game (one was thought dead): the league
    counts the game that finished first, once."""
    records = Records(records_database)
    await asyncio.to_thread(records.open)

    def finished(game_id: str, pairing: str, at: float, winner: str) -> None:
        """A game of the pairing's, as a worker records it (a tournament game's id)."""
        with connected(records_database) as db:
            db.execute(
                "UPDATE games SET status = 'finished', finished_at = ?, winner = ?, "
                "reason = 'No more dwarfs', score = '{}', tournament_id = 'cup', pairing = ? "
                "WHERE id = ?",
                (at, winner, pairing, game_id),
            )
            db.execute("UPDATE seats SET bot = seat_name WHERE game_id = ?", (game_id,))

    try:
        records.tournament_started("cup", "Cup", "thud", {})
        for game_id in ("late", "first", "other"):
            records.submit(one_game(game_id))
        await records.flush()
        finished("late", "dwarf:a v troll:b", 20.0, "dwarf")
        finished("first", "dwarf:a v troll:b", 10.0, "troll")
        finished("other", "dwarf:c v troll:d", 15.0, "dwarf")
        results = records.results("cup")
        assert [(result.game_id, result.winner) for result in results] == [
            ("first", 1),
            ("other", 0),
        ]
        assert [result.game_id for result in records.results()] == ["first", "other"]
    finally:
        await asyncio.to_thread(records.close)


async def test_the_first_reads_after_a_postgresql_restart_answer_200(
    postgres: PostgresServer,
) -> None:
    """PostgreSQL restarts while a visor serves: the first request of each kind after it is
    back finds its reader's connection cut, and is answered from a fresh one, not with a 500:
    the games list, a game's record, and a Thud API game kept in the records (docs/thud-api.md:
    a request never gets a 500)."""
    database = postgres.create_database("reads_after_restart")
    async with serving_visor(test_config(), database) as served, api_client(served.url) as api:
        thud_game = await api.start()
        assert await api.move(thud_game, 0, (6, 0), (6, 4)) is True
    # The game's server stopped: its game is kept unfinished, and read back from the records.
    async with (
        serving_visor(test_config(), database) as served,
        aiohttp.ClientSession() as session,
    ):

        async def games_list() -> tuple[int, str]:
            async with session.get(f"{served.url}/api/games") as response:
                return response.status, await response.text()

        async def game_record() -> tuple[int, str]:
            url = f"{served.url}/api/games/{thud_game['simulationId']}"
            async with session.get(url) as response:
                return response.status, await response.text()

        async def thud_board() -> tuple[int, str]:
            body = orjson.dumps({"game": thud_game["game"]})
            async with session.post(f"{served.url}/game", data=body) as response:
                return response.status, await response.text()

        for ask in (games_list, game_record, thud_board):
            before = await ask()  # the visor's reader connects, then the database restarts
            assert before[0] == 200, before
            await asyncio.to_thread(postgres.stop)
            await asyncio.to_thread(postgres.start)
            assert await ask() == before
