"""What broke when the arena was tried as an attacker and as careless users would (issue 12).

Each test plays the failing case against a real server (real sockets on 127.0.0.1, real
processes where a process matters) with honest games around it where that is the point.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import signal
import socket
import sqlite3
import sys
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from bench.common import tavern_serve
from bots.tavern_dummy import play as play_tavern_dummy
from server.arena import Arena
from server.match_events import GameFinished, TurnPlayed, Update
from server.records import Records
from tests.conftest import RawClient, Running, Served, serving, serving_visor, test_config
from visor.hub import SpectatorHub

ROOT = Path(__file__).resolve().parent.parent
NAMES = ["A", "B", "C", "D", "E"]
TIMEOUT = aiohttp.ClientTimeout(total=10)


def serve(database: Path, **changes: Any) -> contextlib.AbstractAsyncContextManager[Served]:
    """An arena and its visor with records in ``database`` and the given settings."""
    return serving_visor(test_config(**changes), database)


def hub_of(arena: Arena | Running) -> SpectatorHub:
    for listener in arena.listeners:
        owner = getattr(listener, "__self__", None)
        if isinstance(owner, SpectatorHub):
            return owner
    raise LookupError("no spectator hub")


async def page_socket(
    session: aiohttp.ClientSession, served: Served
) -> aiohttp.ClientWebSocketResponse:
    return await session.ws_connect(f"{served.url}/ws")


async def receive(ws: aiohttp.ClientWebSocketResponse, kind: str) -> dict[str, Any]:
    async with asyncio.timeout(10):
        while True:
            message: dict[str, Any] = await ws.receive_json()
            if message["type"] == kind:
                return message


# --- bugs 2 and 3: values of the wrong type ------------------------------------------------------
@pytest.mark.parametrize("game", [[], {}, ["tavern"], {"name": "thud"}], ids=repr)
async def test_a_list_or_object_as_game_is_an_unknown_game(connect: Any, game: object) -> None:
    client: RawClient = await connect()
    await client.send({"type": "create-simulation", "game": game})
    assert "game must be one of" in (await client.expect_error("Unknown game"))["reason"]
    await client.send({"type": "join-simulation", "nick": "n", "game": game})
    await client.expect_error("Unknown game")
    await client.send({"type": "create-simulation"})  # the connection is still usable
    await client.expect("ready")


async def test_a_botid_of_thousands_of_digits_is_an_invalid_turn(connect: Any) -> None:
    one: RawClient = await connect()
    two: RawClient = await connect()
    await one.send({"type": "join-simulation", "nick": "one", "names": NAMES})
    info = await one.expect("game-info")
    await two.send({"type": "join-simulation", "nick": "two", "simulationId": info["simulationId"]})
    await two.expect("game-info")
    turn = await one.expect("turn")
    huge = "1" * 5000
    await one.send({"type": "player-turn", "actions": [{"botId": huge, "type": "PASS"}]})
    assert "botId" in (await one.expect_error("Invalid turn"))["reason"]
    dwarf = turn["state"]["team1"][0]["id"]
    await one.send({"type": "player-turn", "actions": [{"botId": dwarf, "type": "PASS"}]})
    await two.expect("turn")  # the seat was kept and its valid turn played


# --- bug 4: the page websocket -------------------------------------------------------------------
async def test_page_messages_of_the_wrong_type_get_an_error_not_a_closed_socket(
    served: Served,
) -> None:
    async with aiohttp.ClientSession(timeout=TIMEOUT) as session:
        ws = await page_socket(session, served)
        kinds: list[object] = [[], {}, 7, None]
        for kind in kinds:
            await ws.send_json({"type": kind})
            assert (await receive(ws, "error"))["message"] == "Unknown message type"
        await ws.send_json({"type": "play", "game": "thud", "side": "dwarf", "opponent": []})
        assert (await receive(ws, "error"))["message"] == "Unknown player"
        await ws.send_json({"type": "create", "game": ["thud"]})
        assert (await receive(ws, "error"))["message"] == "Unknown game"
        # A person's Tavern seat: a move with a botId of 5,000 digits is an invalid turn.
        await ws.send_json(
            {"type": "play", "game": "tavern", "side": "team1", "opponent": "pusher"}
        )
        await receive(ws, "seated")
        async with asyncio.timeout(10):
            while (await receive(ws, "seat"))["message"]["type"] != "turn":
                pass
        await ws.send_json(
            {
                "type": "move",
                "actions": [{"botId": "9" * 5000, "type": "MOVE", "direction": "EAST"}],
            }
        )
        rejected = await receive(ws, "seat")
        assert rejected["message"]["message"] == "Invalid turn"
        await ws.send_json({"type": "move", "actions": [{"botId": 1, "type": "PASS"}]})
        async with asyncio.timeout(10):  # still seated: the next turn comes back to the page
            while (await receive(ws, "seat"))["message"]["type"] != "turn":
                pass
        assert not ws.closed
        await ws.close()


def websocket_frame(text: bytes) -> bytes:
    """One masked text frame, as a browser sends it."""
    mask = os.urandom(4)
    if len(text) < 126:
        header = bytes([0x81, 0x80 | len(text)])
    else:
        header = bytes([0x81, 0x80 | 126]) + len(text).to_bytes(2, "big")
    return header + mask + bytes(byte ^ mask[i % 4] for i, byte in enumerate(text))


async def test_a_page_that_never_reads_is_closed_at_its_backlog(served: Served) -> None:
    """It sends bad requests as fast as it can and reads none of the errors: the server stops
    queueing for it at its backlog bound and cuts it off (before, it grew by ~155 bytes a
    message, without end)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", served.http_port))
    reader, writer = await asyncio.open_connection(sock=sock)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    assert b" 101 " in head
    hub = hub_of(served.arena)
    frames = websocket_frame(b'{"type": "no such request"}') * 100
    cut_off = False
    try:
        async with asyncio.timeout(30):
            for _ in range(2_000):  # 200,000 bad requests at most
                writer.write(frames)
                await writer.drain()
                if not hub.pages:
                    break
            await asyncio.sleep(0.5)
            writer.write(frames)
            await writer.drain()
    except (ConnectionError, OSError):
        cut_off = True
    finally:
        writer.transport.abort()
    assert cut_off or not hub.pages
    assert not hub.pages  # and the server holds nothing more for it


# --- bug 5: the games API ------------------------------------------------------------------------
@pytest.mark.parametrize("page", ["99999999999999999999", str(2**63 - 1), "0", "-3"])
async def test_an_out_of_range_page_is_a_400(served: Served, page: str) -> None:
    async with (
        aiohttp.ClientSession(timeout=TIMEOUT) as session,
        session.get(f"{served.url}/api/games", params={"page": page}) as response,
    ):
        assert response.status == 400
        assert "page must be" in (await response.json())["error"]


async def start_thud_api_game(session: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    async with session.post(f"{url}/start", json={"player_one": "A", "player_two": "B"}) as got:
        game: dict[str, Any] = await got.json()
    for start, end in (((6, 0), (6, 4)), ((8, 8), (9, 9))):
        player = game["player_one" if start == (6, 0) else "player_two"]
        body = {"game": game["game"], "player": player, "start": start, "destination": end}
        async with session.post(f"{url}/move", json=body) as moved:
            assert await moved.json() is True
    return game


SEAT, ACTION = 0, 1  # a recorded turn is [seat, action, timed out] in its chunk
TURN_CHUNK = (
    "FROM turn_chunks WHERE game_id = ? AND ? BETWEEN first_number AND first_number + count - 1"
)


def set_turn(db: sqlite3.Connection, game_id: str, number: int, field: int, value: str) -> None:
    """Overwrite one field of a recorded turn with a JSON value, as a damaged file might."""
    db.execute(
        "UPDATE turn_chunks SET turns = "
        f"json_replace(turns, printf('$[%d][{field}]', ? - first_number), json(?)) "
        f"WHERE rowid = (SELECT rowid {TURN_CHUNK})",
        (number, value, game_id, number),
    )


async def test_damaged_records_give_a_clear_409_naming_the_game(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = tmp_path / "arena.db"
    async with serve(database) as served, aiohttp.ClientSession(timeout=TIMEOUT) as session:
        thud = await start_thud_api_game(session, served.url)
        other = await start_thud_api_game(session, served.url)
        tavern = asyncio.create_task(play_tavern_dummy("127.0.0.1", served.tcp_port, None, "one"))
        await asyncio.sleep(0.05)
        await play_tavern_dummy("127.0.0.1", served.tcp_port, None, "two")
        await tavern
    db = sqlite3.connect(database)
    with contextlib.closing(db), db:
        (tavern_id,) = db.execute("SELECT id FROM games WHERE game = 'tavern'").fetchone()
        set_turn(db, thud["simulationId"], 1, ACTION, '"x"')
        set_turn(db, other["simulationId"], 2, ACTION, "null")
        (seat,) = db.execute(
            f"SELECT json_extract(turns, printf('$[%d][{SEAT}]', ? - first_number)) {TURN_CHUNK}",
            (3, tavern_id, 3),
        ).fetchone()
        set_turn(db, tavern_id, 3, SEAT, "7")
    caplog.set_level(logging.WARNING)
    async with serve(database) as served, aiohttp.ClientSession(timeout=TIMEOUT) as session:
        url = served.url
        for game_id in (thud["simulationId"], other["simulationId"]):
            async with session.get(f"{url}/api/games/{game_id}/replay") as response:
                assert response.status == 409
                assert game_id in (await response.json())["error"]
        for token in (thud["game"], other["game"]):
            for path in ("/game", "/load"):
                async with session.post(url + path, json={"game": token}) as response:
                    assert response.status == 409, path
        async with session.get(f"{url}/api/games/{tavern_id}") as response:
            assert response.status == 409
            assert tavern_id in (await response.json())["error"]
        async with session.get(f"{url}/api/games") as response:
            listed = {game["id"]: game for game in (await response.json())["games"]}
            assert "damaged" not in listed[tavern_id]  # a bad turn does not spoil the list
        # A Thud API token whose game is a (sound) Tavern game.
        db = sqlite3.connect(database)
        with contextlib.closing(db), db:
            set_turn(db, tavern_id, 3, SEAT, str(seat))
            db.execute("UPDATE thud_api_games SET game_id = ?", (tavern_id,))
        for path in ("/game", "/load"):
            async with session.post(url + path, json={"game": other["game"]}) as response:
                assert response.status == 409, path
                assert "not a Thud game" in (await response.json())["error"]
    logged = caplog.text
    for game_id in (thud["simulationId"], other["simulationId"], tavern_id):
        assert game_id in logged


# --- weaknesses: connections -------------------------------------------------------------------
async def test_a_trickle_of_bytes_does_not_keep_an_unjoined_connection_open() -> None:
    """The deadline runs from the connection to the join; before, each byte reset it."""
    async with serving(test_config(idle_timeout_ms=600)) as arena:
        assert arena.tcp_port is not None
        client = await RawClient.connect(arena.tcp_port)

        async def trickle() -> None:
            with contextlib.suppress(ConnectionError, OSError):
                for _ in range(200):  # 20 s of a byte every 100 ms, unless cut off
                    await client.send_raw(b" ")
                    await asyncio.sleep(0.1)

        trickling = asyncio.create_task(trickle())
        try:
            refusal = await client.receive(timeout=5)
            assert refusal["message"] == "Idle timeout", refusal
            assert await client.is_closed()
        finally:
            trickling.cancel()
            await client.close()


async def test_errors_to_garbage_are_not_paced_and_never_delay_a_real_reply(
    connect: Any,
) -> None:
    """Before, each error waited the 50 ms message gap: 100 broken lines delayed the next
    real answer by 5 s. (Within the error budget, maxErrorsPerSecond's burst: past it, a peer is
    read more slowly, which test_flood.py shows.)"""
    client: RawClient = await connect()
    loop = asyncio.get_running_loop()
    started = loop.time()
    await client.send_raw(b"garbage\n" * 30 + orjson.dumps({"type": "create-simulation"}) + b"\n")
    for _ in range(30):
        await client.expect_error("Invalid JSON")
    await client.expect("ready")
    assert loop.time() - started < 1.0


# --- weaknesses: caps and expiry ---------------------------------------------------------------
async def test_waiting_simulations_are_capped_per_address_across_connections(
    tmp_path: Path,
) -> None:
    async with (
        serve(tmp_path / "arena.db", max_waiting_simulations_per_address=3) as served,
        aiohttp.ClientSession(timeout=TIMEOUT) as session,
    ):
        made = 0
        creators = []  # each still connected: what a creator left behind no longer counts
        for _ in range(3):  # a new connection each time: the per-connection cap does not help
            creators.append(client := await RawClient.connect(served.tcp_port))
            await client.send({"type": "create-simulation"})
            reply = await client.receive()
            made += reply["type"] == "ready"
        assert made == 3
        client = await RawClient.connect(served.tcp_port)
        await client.send({"type": "create-simulation", "game": "thud"})
        assert "one address" in (await client.expect_error("Too many simulations"))["reason"]
        # A random join that finds nothing waiting creates one: also refused.
        await client.send({"type": "join-simulation", "nick": "n", "game": "thud"})
        await client.expect_error("Too many simulations")
        ws = await page_socket(session, served)
        await ws.send_json({"type": "create", "game": "tavern"})
        assert (await receive(ws, "error"))["message"] == "Too many simulations"
        # Joining one frees a place: it is no longer waiting once full.
        waiting = next(iter(served.arena.matches))
        for nick in ("a", "b"):
            joiner = await RawClient.connect(served.tcp_port)
            await joiner.send({"type": "join-simulation", "nick": nick, "simulationId": waiting})
            await joiner.expect("game-info")
        await client.send({"type": "create-simulation"})
        await client.expect("ready")
        await ws.close()
        for creator in creators:
            await creator.close()


async def test_a_simulation_nobody_joins_expires_and_leaves_the_lobby(tmp_path: Path) -> None:
    async with (
        serve(tmp_path / "arena.db", waiting_simulation_expiry_ms=300) as served,
        aiohttp.ClientSession(timeout=TIMEOUT) as session,
    ):
        ws = await page_socket(session, served)
        await ws.send_json({"type": "lobby"})
        await receive(ws, "lobby")
        client = await RawClient.connect(served.tcp_port)
        await client.send({"type": "create-simulation"})
        created = (await client.expect("ready"))["simulationId"]
        seen, gone = False, False
        async with asyncio.timeout(5):
            while not gone:
                rows = [row["simulationId"] for row in (await receive(ws, "lobby"))["simulations"]]
                seen = seen or created in rows
                gone = seen and created not in rows
        await client.send({"type": "join-simulation", "nick": "n", "simulationId": created})
        await client.expect_error("Wrong simulation ID")
        await ws.close()


async def test_house_games_are_capped_per_page_and_in_total_and_bots_play_on(
    tmp_path: Path,
) -> None:
    finished: list[GameFinished] = []
    timed_out: set[str] = set()  # the games with a turn that timed out

    def on_update(update: Update) -> None:
        if isinstance(update, TurnPlayed) and update.result.timed_out:
            timed_out.add(update.result.match_id)
        if isinstance(update, GameFinished):
            first = update.view.players[0]
            if first is not None and first.kind == "bot":
                finished.append(update)

    async with (
        serve(
            tmp_path / "arena.db",
            max_house_games=3,
            max_house_games_per_page=2,
            turn_timeout_ms=1000,
        ) as served,
        aiohttp.ClientSession(timeout=TIMEOUT) as session,
    ):
        served.arena.listeners.append(on_update)
        bots = [
            asyncio.create_task(play_tavern_dummy("127.0.0.1", served.tcp_port, None, f"bot{i}"))
            for i in range(4)
        ]
        pages = [await page_socket(session, served) for _ in range(2)]
        request = {"type": "run-game", "game": "thud", "players": ["dwarf", "troll"], "delayMs": 0}
        answers: list[str] = []
        for ws in pages:
            for _ in range(150):
                await ws.send_json(request)
            for _ in range(150):
                async with asyncio.timeout(10):
                    while True:
                        message = await ws.receive_json()
                        if message["type"] in ("created", "error"):
                            break
                answers.append(
                    message["type"] if message["type"] == "created" else message["message"]
                )
        assert answers[:150].count("created") == 2  # the first page's share
        assert answers[150:].count("created") == 1  # the arena's total of three
        assert set(answers) == {"created", "Too many house games"}
        results = await asyncio.wait_for(asyncio.gather(*bots), 120)
        for ws in pages:
            await ws.close()
    assert len(results) == 4
    assert len(finished) == 2
    for game in finished:  # the bots' games ended by their own rules, not on time
        assert game.outcome.reason not in ("Too many timeouts", "Turn timeout"), game.view.match_id
        assert game.view.match_id not in timed_out


async def test_thud_api_games_are_capped_per_address(tmp_path: Path) -> None:
    async with (
        serve(
            tmp_path / "arena.db",
            max_thud_api_games_per_address=3,
            person_turn_timeout_ms=400,
            first_turn_timeout_ms=400,
        ) as served,
        aiohttp.ClientSession(timeout=TIMEOUT) as session,
    ):
        body = {"game": "begin", "player_one": "A", "player_two": "B"}
        for _ in range(3):
            async with session.post(f"{served.url}/start", json=body) as response:
                assert response.status == 200
        async with session.post(f"{served.url}/start", json=body) as response:
            assert response.status == 429
            assert "one address" in (await response.json())["error"]
        await asyncio.sleep(1.0)  # the three games forfeit on time: the address may start more
        async with session.post(f"{served.url}/start", json=body) as response:
            assert response.status == 200


async def test_an_acknowledged_thud_api_move_survives_kill_9(tmp_path: Path) -> None:
    database = tmp_path / "arena.db"
    config = tmp_path / "config.json"
    config.write_text(orjson.dumps({"port": 0, "httpPort": 0, "database": str(database)}).decode())
    async with (
        tavern_serve(config) as server,
        aiohttp.ClientSession(timeout=TIMEOUT) as session,
    ):
        url = f"http://127.0.0.1:{server.http_port}"
        async with session.post(f"{url}/start", json={"player_one": "A", "player_two": "B"}) as r:
            game = await r.json()
        body = {"game": game["game"], "player": game["player_one"]}
        async with session.post(
            f"{url}/move", json={**body, "start": [6, 0], "destination": [6, 4]}
        ) as response:
            assert await response.json() is True
        server.process.send_signal(signal.SIGKILL)  # at once: within the old 50 ms batch
        await asyncio.wait_for(server.process.wait(), 10)
    db = sqlite3.connect(database)
    with contextlib.closing(db):
        tokens = db.execute("SELECT COUNT(*) FROM thud_api_games").fetchone()[0]
    assert tokens == 1
    record = Records(database).game(game["simulationId"])
    assert record is not None
    assert [(turn["number"], turn["action"]) for turn in record["turns"]] == [
        (1, {"move": {"from": [6, 0], "to": [6, 4]}})
    ]


# --- bugs 7 and 9: processes and ports ---------------------------------------------------------
def busy_port() -> socket.socket:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    return holder


@pytest.mark.parametrize(("flag", "names"), [("--port", "bots"), ("--http-port", "the visor")])
async def test_a_busy_port_is_named_with_the_flag_to_change_it(
    tmp_path: Path, flag: str, names: str
) -> None:
    config = tmp_path / "config.json"
    config.write_text(orjson.dumps({"database": str(tmp_path / "arena.db")}).decode())
    with busy_port() as holder:
        port = holder.getsockname()[1]
        other = "--http-port" if flag == "--port" else "--port"
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "tavern_cli", "serve", "--config", str(config)),
            *(flag, str(port), other, "0"),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, stderr = await asyncio.wait_for(process.communicate(), 30)
    text = stderr.decode()
    assert process.returncode == 2
    assert "Traceback" not in text
    assert f"cannot listen for {names} on 127.0.0.1:{port}" in text
    assert flag in text


async def playing_games(database: Path) -> dict[str, str]:
    db = sqlite3.connect(database)
    with contextlib.closing(db):
        return dict(db.execute("SELECT id, status FROM games").fetchall())


async def test_a_second_process_on_the_records_file_leaves_the_first_ones_games_alone(
    tmp_path: Path,
) -> None:
    database = tmp_path / "arena.db"
    config = tmp_path / "config.json"
    settings = {"port": 0, "httpPort": 0, "database": str(database), "turnTimeoutMs": 600_000}
    config.write_text(orjson.dumps(settings).decode())
    async with tavern_serve(config) as first:
        one = await RawClient.connect(first.tcp_port)
        two = await RawClient.connect(first.tcp_port)
        await one.send({"type": "join-simulation", "nick": "one", "game": "thud"})
        info = await one.expect("game-info")
        await two.send({"type": "join-simulation", "nick": "two", "game": "thud"})
        await two.expect("game-info")
        await one.expect("turn")  # the game is on, and nobody moves
        game_id = info["simulationId"]
        async with asyncio.timeout(10):
            while (await playing_games(database)).get(game_id) != "playing":
                await asyncio.sleep(0.05)
        # A second server on the same file, which then fails on the first one's port.
        busy = tmp_path / "busy.json"
        busy.write_text(orjson.dumps({**settings, "port": first.tcp_port}).decode())
        second = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "tavern_cli", "serve", "--config", str(busy)),
            cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, stderr = await asyncio.wait_for(second.communicate(), 30)
        assert second.returncode == 2, stderr.decode()
        # A tournament on the same file.
        cup = tmp_path / "cup.json"
        house = "{python} -m bots.house_bot thud %s --simulation {simulation} --side {side} "
        house += "--port {port} --seed {seed}"
        cup.write_text(
            orjson.dumps(
                {
                    "name": "same file",
                    "game": "thud",
                    "bots": [
                        {"name": "d", "side": "dwarf", "command": house % "dwarf"},
                        {"name": "t", "side": "troll", "command": house % "troll"},
                    ],
                }
            ).decode()
        )
        tournament = await asyncio.create_subprocess_exec(
            *(
                sys.executable,
                "-m",
                "tavern_cli",
                "tournament",
                str(cup),
                "--database",
                str(database),
            ),
            cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        assert await asyncio.wait_for(tournament.wait(), 120) == 0
        statuses = await playing_games(database)
        assert statuses[game_id] == "playing"  # still the first server's, still being played
        assert sorted(statuses.values()) == ["finished", "playing"]
        await one.close()
        await two.close()
        first.process.send_signal(signal.SIGKILL)
        await asyncio.wait_for(first.process.wait(), 10)
    # Once its owner is gone, the next process to open the file marks it unfinished.
    records = Records(database)
    records.open()
    records.close()
    assert (await playing_games(database))[game_id] == "unfinished"
