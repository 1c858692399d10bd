"""The visor's HTTP routes and websocket protocol, with a real server and real bots."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from bots.tavern_dummy import play as play_tavern
from tests.conftest import Served


class PageSocket:
    """The websocket a page opens, driven from a test."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send_json(message)

    async def receive(self, kind: str | None = None, timeout: float = 10) -> dict[str, Any]:
        """The next message (of ``kind``, skipping others)."""
        async with asyncio.timeout(timeout):
            while True:
                message: dict[str, Any] = await self.ws.receive_json()
                if kind is None or message["type"] == kind:
                    return message


@pytest.fixture
async def page_socket(served: Served) -> AsyncIterator[Any]:
    sockets = []
    async with aiohttp.ClientSession() as session:

        async def open_socket() -> PageSocket:
            ws = await session.ws_connect(f"{served.url}/ws")
            sockets.append(ws)
            return PageSocket(ws)

        yield open_socket
        for ws in sockets:
            await ws.close()


async def test_pages_are_served_with_a_content_security_policy(served: Served) -> None:
    async with aiohttp.ClientSession() as session:
        for path in ("/", "/watch/abc1234", "/play/thud"):
            async with session.get(served.url + path) as response:
                assert response.status == 200
                assert "text/html" in response.headers["Content-Type"]
                assert "script-src 'self'" in response.headers["Content-Security-Policy"]
        async with session.get(served.url + "/nothing-here") as response:
            assert response.status == 404


async def test_an_unknown_path_is_a_page_of_the_arena_or_a_json_error(served: Served) -> None:
    """A page request for an unknown path gets the arena's own 404 page, under the same policy
    as every page, naming the path as text; the API, and any other method, a JSON error."""
    async with aiohttp.ClientSession() as session:
        async with session.get(served.url + "/no/such/%3Cscript%3Epage") as response:
            assert response.status == 404
            assert response.content_type == "text/html"
            assert "script-src 'self'" in response.headers["Content-Security-Policy"]
            page = await response.text()
        assert '<link rel="stylesheet" href="/static/css/visor.css">' in page
        assert "/no/such/&lt;script&gt;page" in page and "<script>" not in page
        assert '<a id="to-lobby" class="button button-primary" href="/">' in page
        for path, method in (("/api/no-such-thing", "GET"), ("/no/such/page", "POST")):
            async with session.request(method, served.url + path) as response:
                assert response.status == 404
                assert response.content_type == "application/json"
                assert await response.json() == {"error": f"no such path: {path}"}


async def test_the_turns_of_a_live_game_are_every_turn_its_watchers_were_sent(
    served: Served, page_socket: Any
) -> None:
    """/api/games/{id}/turns on a game still going on holds every turn up to the one a page
    arriving then is shown (the records' latest turns are written out before it answers),
    each as the live turn messages carried it: a late page's move list, from turn 1."""
    early = await page_socket()
    await early.send(
        {"type": "run-game", "game": "thud", "players": ["dwarf", "troll"], "delayMs": 5}
    )
    simulation_id = (await early.receive("created"))["simulationId"]
    await early.send({"type": "watch", "simulationId": simulation_id})
    await early.receive("snapshot")
    seen = [await early.receive("turn") for _ in range(20)]
    late = await page_socket()
    await late.send({"type": "watch", "simulationId": simulation_id})
    arrived = (await late.receive("snapshot"))["turn"]
    url = f"{served.url}/api/games/{simulation_id}/turns"
    async with aiohttp.ClientSession() as session:
        async with session.get(url, params={"from": "1", "to": str(arrived)}) as response:
            assert response.status == 200
            turns = (await response.json())["turns"]
        seen += [await early.receive("turn") for _ in range(arrived - len(seen))]
        fields = ("turn", "seat", "timedOut", "events")
        assert turns == [{field: turn[field] for field in fields} for turn in seen[:arrived]]
        async with session.get(url, params={"from": "0"}) as response:
            assert response.status == 400
        async with session.get(f"{served.url}/api/games/nope123/turns") as response:
            assert response.status == 404
            assert await response.json() == {"error": "no recorded game with this id"}


async def test_the_lobby_shows_a_new_simulation(page_socket: Any) -> None:
    lobby, creator = await page_socket(), await page_socket()
    await lobby.send({"type": "lobby"})
    assert (await lobby.receive("lobby"))["simulations"] == []
    await creator.send({"type": "create", "game": "thud"})
    created = await creator.receive("created")
    async with asyncio.timeout(2):
        while True:
            rows = (await lobby.receive("lobby"))["simulations"]
            if rows:
                break
    assert rows[0]["simulationId"] == created["simulationId"]
    assert (rows[0]["game"], rows[0]["status"]) == ("thud", "waiting")


async def test_a_late_watcher_gets_names_scores_and_every_turn(
    served: Served, page_socket: Any
) -> None:
    first = asyncio.create_task(play_tavern("127.0.0.1", served.tcp_port, None, "<b>Ann</b>"))
    await asyncio.sleep(0.05)
    second = asyncio.create_task(play_tavern("127.0.0.1", served.tcp_port, None, "Bo"))
    async with asyncio.timeout(5):
        while not any(sim.turn_count for sim in served.arena.matches.values()):
            await asyncio.sleep(0.01)
    (simulation_id,) = served.arena.matches
    watcher = await page_socket()
    await watcher.send({"type": "watch", "simulationId": simulation_id})
    snapshot = await watcher.receive("snapshot")
    assert snapshot["status"] == "playing"
    assert [p["nick"] for p in snapshot["players"]] == ["<b>Ann</b>", "Bo"]
    assert snapshot["state"]["barrels"]["team1"]["team"] == "team1"
    assert snapshot["board"]["width"] == 21
    # The clock of the seat on move, started a moment ago, and each seat's last reply time.
    clock = snapshot["clock"]
    assert clock["seat"] in ("team1", "team2")
    config = served.arena.config
    timeouts = {config.turn_timeout_ms, config.first_turn_timeout_ms}  # a first turn has more
    assert clock["timeoutMs"] in timeouts
    assert 0 <= clock["elapsedMs"] < clock["timeoutMs"]
    assert set(snapshot["replyMs"]) <= {"team1", "team2"} and snapshot["replyMs"]
    turn = await watcher.receive("turn")
    assert turn["turn"] > snapshot["turn"] - 1
    assert set(turn) >= {"events", "state", "scores", "seat", "action"}
    assert 0 <= turn["replyMs"] < config.turn_timeout_ms
    other = "team2" if turn["seat"] == "team1" else "team1"
    if turn["events"] and turn["events"][-1]["kind"] == "reset":  # a point: the scorer's rival
        assert turn["clock"]["seat"] in ("team1", "team2")
    else:
        assert turn["clock"]["seat"] == other and turn["clock"]["timeoutMs"] in timeouts
    while turn["clock"] is not None:
        turn = await watcher.receive("turn", timeout=60)
    end = await watcher.receive("end", timeout=60)
    assert end["result"]["reason"] == "Points to win reached"
    await first
    await second
    await watcher.send({"type": "watch", "simulationId": simulation_id})
    finished = await watcher.receive("error")
    assert finished["message"] == "This game has finished"


async def test_unknown_ids_and_bad_requests_get_clear_errors(page_socket: Any) -> None:
    page = await page_socket()
    await page.send({"type": "watch", "simulationId": "nope123"})
    assert (await page.receive("error"))["message"] == "There is no simulation with this id"
    await page.ws.send_str("not json")
    assert (await page.receive("error"))["message"] == "Invalid JSON"
    await page.send({"type": "fly"})
    assert (await page.receive("error"))["message"] == "Unknown message type"
    await page.send({"type": "run-game", "game": "thud", "players": ["troll", "dwarf"]})
    assert (await page.receive("error"))["message"] == "Wrong side"
    await page.send({"type": "move", "move": {}})
    assert (await page.receive("error"))["message"] == "Not in a game"


async def test_run_a_game_between_house_players(page_socket: Any) -> None:
    page = await page_socket()
    await page.send(
        {"type": "run-game", "game": "thud", "players": ["dwarf", "troll"], "delayMs": 0}
    )
    created = await page.receive("created")
    await page.send({"type": "watch", "simulationId": created["simulationId"]})
    snapshot = await page.receive("snapshot")
    assert [p["kind"] for p in snapshot["players"]] == ["house", "house"]
    end = await page.receive("end", timeout=120)
    assert end["result"]["reason"]


async def test_a_person_plays_thud_and_both_declare(page_socket: Any) -> None:
    person = await page_socket()
    await person.send(
        {"type": "play", "game": "thud", "side": "dwarf", "opponent": "troll", "nick": "me"}
    )
    seated = await person.receive("seated")
    assert seated["side"] == "dwarf"
    turn = (await person.receive("seat"))["message"]
    while turn["type"] != "turn":
        turn = (await person.receive("seat"))["message"]
    first = turn["state"]["moves"][0]
    await person.send(
        {"type": "move", "move": {"from": first["from"], "to": first["to"]}, "declare": True}
    )
    end = await person.receive("end", timeout=30)
    assert end["result"] == {
        "reason": "Players agreed to finish",
        "winner": None,
        "score": {"dwarfs": 32, "trolls": 32},
    }


async def test_a_page_s_seek_is_checked_as_its_other_commands(
    served: Served, page_socket: Any
) -> None:
    """A page's seek (/play/thud's "Find an opponent") has its other commands' limits: a nick
    of at most 64 characters, a known game, one game per page; a refused seek waits nowhere."""
    page = await page_socket()
    await page.send({"type": "seek", "game": "thud", "nick": "x" * 65})
    assert (await page.receive("error"))["message"] == "Invalid join"
    await page.send({"type": "seek", "game": "chess", "nick": "me"})
    assert (await page.receive("error"))["message"] == "Unknown game"
    await page.send(
        {"type": "play", "game": "thud", "side": "dwarf", "opponent": "troll", "nick": "me"}
    )
    await page.receive("seated")
    await page.send({"type": "seek", "game": "thud", "nick": "me"})
    error = await page.receive("error")
    assert (error["message"], error["reason"]) == ("Already in a game", "one game per page")
    assert served.arena.seeks.seekers == {}
