"""The earlier Python Thud server's HTTP API and matchmaking socket, served by a real arena."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from bench.common import tavern_serve
from server.debug import without_debug
from server.games.thud import rules
from server.games.thud.board import Square
from server.games.thud.movegen import legal_moves, moves_from
from server.games.thud.pieces import Action, Move, State, initial_state, state_from_position
from server.records import Records
from tests.conftest import Served, serving_visor, test_config
from tests.services import free_port

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 10.0
CLIENT_TIMEOUT = aiohttp.ClientTimeout(total=TIMEOUT_S)

# The start position drawn by hand (row y, column x): d a dwarf, T a troll, * the Thudstone,
# . an empty square, a space off the board.
START_PICTURE = (
    "     dd.dd     ",
    "    d.....d    ",
    "   d.......d   ",
    "  d.........d  ",
    " d...........d ",
    "d.............d",
    "d.....TTT.....d",
    "......T*T......",
    "d.....TTT.....d",
    "d.............d",
    " d...........d ",
    "  d.........d  ",
    "   d.......d   ",
    "    d.....d    ",
    "     dd.dd     ",
)


def expected_start_board() -> dict[str, list[dict[str, Any]]]:
    """Dwarfs numbered 1 to 32 and trolls 33 to 40 in order of x, then y."""
    next_id = {"d": 1, "T": 33}
    board: dict[str, list[dict[str, Any]]] = {}
    for x in range(15):
        column = []
        for y in range(15):
            mark = START_PICTURE[y][x]
            if mark in next_id:
                column.append({"id": next_id[mark], "type": "Dwarf" if mark == "d" else "Troll"})
                next_id[mark] += 1
            else:
                column.append({"id": "null", "type": "open" if mark == "." else "null"})
        board[str(x)] = column
    assert next_id == {"d": 33, "T": 41}
    return board


def cell(board: dict[str, Any], square: Square) -> dict[str, Any]:
    x, y = square
    found: dict[str, Any] = board[str(x)][y]
    return found


class Api:
    """A client of the HTTP API."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url

    async def raw(self, path: str, data: bytes) -> tuple[int, Any]:
        async with self.session.post(self.url + path, data=data) as response:
            assert response.content_type == "application/json"
            assert response.headers["Access-Control-Allow-Origin"] == "*"
            return response.status, orjson.loads(await response.read())

    async def call(self, path: str, body: dict[str, Any]) -> Any:
        status, answer = await self.raw(path, orjson.dumps(body))
        assert status == 200, answer
        return answer

    async def start(self, one: str = "Will", two: str = "Tom") -> dict[str, Any]:
        started: dict[str, Any] = await self.call(
            "/start", {"game": "begin", "player_one": one, "player_two": two}
        )
        return started

    async def move(self, game: dict[str, Any], seat: int, start: Square, end: Square) -> Any:
        return await self.call("/move", move_body(game, seat, start, end))

    async def validate(self, game: dict[str, Any], seat: int, start: Square, end: Square) -> Any:
        return await self.call("/move/validate", move_body(game, seat, start, end))

    async def board(self, game: dict[str, Any]) -> Any:
        return await self.call("/game", {"game": game["game"]})


def move_body(game: dict[str, Any], seat: int, start: Square, end: Square) -> dict[str, Any]:
    player = game["player_one" if seat == 0 else "player_two"]
    return {"game": game["game"], "player": player, "start": list(start), "destination": list(end)}


@contextlib.asynccontextmanager
async def api_client(url: str) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession(timeout=CLIENT_TIMEOUT) as session:
        yield Api(session, url)


@pytest.fixture
async def api(served: Served) -> AsyncIterator[Api]:
    async with api_client(served.url) as client:
        yield client


async def play(api: Api, game: dict[str, Any], moves: list[tuple[Square, Square]]) -> list[Any]:
    """Play moves from the start, dwarfs first, checking each answer against the rules."""
    state = initial_state()
    answers = []
    for number, (start, end) in enumerate(moves):
        (move,) = [m for m in moves_from(state, start) if m.end == end]
        expected = [list(square) for square in move.killed] or True
        assert await api.validate(game, number % 2, start, end) == expected
        answer = await api.move(game, number % 2, start, end)
        assert answer == expected
        answers.append(answer)
        state, _ = rules.apply(state, Action(move))
    return answers


# --- /start and /game ----------------------------------------------------------------------------
async def test_start_answers_three_tokens_and_the_exact_start_board(
    api: Api, served: Served
) -> None:
    started = await api.start()
    assert set(started) == {"game", "player_one", "player_two", "board", "simulationId"}
    tokens = [started["game"], started["player_one"], started["player_two"]]
    assert len(set(tokens)) == 3
    assert all(isinstance(t, str) and len(t) >= 32 for t in tokens)
    assert started["simulationId"] in served.arena.matches
    assert started["simulationId"] not in tokens
    board = started["board"]
    assert list(board) == [str(x) for x in range(15)]
    assert all(len(column) == 15 for column in board.values())
    assert board == expected_start_board()
    # Spot checks, in the API's own words: ids by x then y, the Thudstone and corners are null.
    assert cell(board, (0, 5)) == {"id": 1, "type": "Dwarf"}
    assert cell(board, (6, 0)) == {"id": 15, "type": "Dwarf"}
    assert cell(board, (14, 9)) == {"id": 32, "type": "Dwarf"}
    assert cell(board, (6, 6)) == {"id": 33, "type": "Troll"}
    assert cell(board, (8, 8)) == {"id": 40, "type": "Troll"}
    assert cell(board, (7, 7)) == {"id": "null", "type": "null"}
    assert cell(board, (0, 0)) == {"id": "null", "type": "null"}
    assert cell(board, (7, 0)) == {"id": "null", "type": "open"}
    assert await api.board(started) == board
    # A second game is another simulation with other tokens.
    other = await api.start("A", "B")
    assert {other["game"], other["player_one"], other["player_two"]}.isdisjoint(tokens)
    assert other["simulationId"] != started["simulationId"]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"{not json", "not valid JSON"),
        (b"", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b'"begin"', "JSON object"),
        (b'{"game": "begin", "player_one": "A"}', '"player_two"'),
        (b'{"game": "begin", "player_one": 7, "player_two": "B"}', '"player_one"'),
        (b'{"game": "begin", "player_one": "", "player_two": "B"}', '"player_one"'),
    ],
)
async def test_start_refuses_what_it_cannot_read_with_a_400(
    api: Api, body: bytes, problem: str
) -> None:
    status, answer = await api.raw("/start", body)
    assert status == 400
    assert problem in answer["error"]


@pytest.mark.parametrize("game", [None, "begin", "end", "", 7, [], {"x": 1}], ids=repr)
async def test_start_ignores_game_as_the_earlier_server_did(api: Api, game: object) -> None:
    """That server read only the two names: its clients' "game" may be anything, or missing."""
    body: dict[str, Any] = {"player_one": "A", "player_two": "B"}
    if game is not None:
        body["game"] = game
    started = await api.call("/start", body)
    assert started["board"] == expected_start_board()
    assert await api.move(started, 0, (6, 0), (6, 4)) is True


# --- turns and tokens ----------------------------------------------------------------------------
async def test_turn_order_tokens_pieces_and_legality(api: Api) -> None:
    game = await api.start()
    wrong_game = {**game, "game": "no-such-game"}
    wrong_player = {**game, "player_one": game["player_two"], "player_two": "nobody"}
    # Player one plays the dwarfs and moves first: the trolls may not.
    assert await api.move(game, 1, (6, 6), (6, 5)) is False
    assert await api.validate(game, 1, (6, 6), (6, 5)) is False
    assert await api.move(wrong_game, 0, (6, 0), (6, 4)) is False
    assert await api.move(wrong_player, 1, (6, 0), (6, 4)) is False  # player two's token, seat 0
    assert await api.move({**game, "player_one": "x"}, 0, (6, 0), (6, 4)) is False
    assert await api.move(game, 0, (6, 6), (6, 5)) is False  # not one of the dwarfs' pieces
    assert await api.move(game, 0, (7, 0), (7, 3)) is False  # an empty square
    assert await api.move(game, 0, (6, 0), (7, 2)) is False  # off the eight lines
    assert await api.move(game, 0, (6, 0), (6, 6)) is False  # a lone dwarf hurls one square only
    assert await api.move(game, 0, (0, 5), (-1, 5)) is False  # off the board
    assert await api.move(game, 0, (99, 99), (6, 4)) is False
    assert await api.board(game) == expected_start_board()  # nothing happened
    # Validation answers without moving.
    assert await api.validate(game, 0, (6, 0), (6, 4)) is True
    assert await api.board(game) == expected_start_board()
    assert await api.move(game, 0, (6, 0), (6, 4)) is True
    board = await api.board(game)  # /move answered after the move was applied
    assert cell(board, (6, 4)) == {"id": 15, "type": "Dwarf"}
    assert cell(board, (6, 0)) == {"id": "null", "type": "open"}
    # Now the trolls move, and only they.
    assert await api.move(game, 0, (5, 0), (5, 3)) is False
    assert await api.validate(game, 0, (5, 0), (5, 3)) is False
    assert await api.move(game, 1, (8, 8), (9, 9)) is True
    assert await api.move(game, 1, (9, 9), (8, 8)) is False
    assert await api.move(game, 0, (5, 0), (5, 3)) is True
    board = await api.board(game)
    assert cell(board, (9, 9)) == {"id": 40, "type": "Troll"}
    assert cell(board, (5, 3)) == {"id": 13, "type": "Dwarf"}


async def test_moves_of_one_player_at_once_are_applied_one_at_a_time(api: Api) -> None:
    game = await api.start()
    answers = await asyncio.gather(
        api.move(game, 0, (6, 0), (6, 4)),
        api.move(game, 0, (5, 0), (5, 3)),
        api.move(game, 0, (9, 0), (9, 3)),
    )
    assert sorted(answers, key=str) == [False, False, True]


@pytest.mark.parametrize("path", ["/move", "/move/validate"])
@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"game": None}, '"game"'),
        ({"player": 5}, '"player"'),
        ({"start": None}, '"start"'),
        ({"start": [6]}, '"start"'),
        ({"start": [6, 0, 1]}, '"start"'),
        ({"start": ["6", "0"]}, '"start"'),
        ({"start": [6.0, 0]}, '"start"'),
        ({"start": [True, 0]}, '"start"'),
        ({"destination": {"x": 6, "y": 4}}, '"destination"'),
    ],
)
async def test_a_move_that_cannot_be_read_gets_a_400(
    api: Api, path: str, change: dict[str, Any], problem: str
) -> None:
    game = await api.start()
    body = {**move_body(game, 0, (6, 0), (6, 4)), **change}
    body = {key: value for key, value in body.items() if value is not None}
    status, answer = await api.raw(path, orjson.dumps(body))
    assert status == 400
    assert problem in answer["error"]


async def test_no_request_gets_a_500(api: Api) -> None:
    bodies = [b"", b"null", b"{}", b"[]", b"1e999", b'{"game": {}}', b'{"game": "\\ud800"}']
    bodies += [b'{"game": "x", "player": "y", "start": [0, 0], "destination": [1, 1]}']
    bodies += [b"\xff\xfe", b'{"game": "begin", "player_one": "' + b"a" * 100 + b'", "x": 1}']
    for path in ("/start", "/move", "/move/validate", "/game", "/save", "/load"):
        for body in bodies:
            status, _ = await api.raw(path, body)
            assert status in (200, 400), (path, body)


async def test_unknown_tokens_answer_false_and_missing_ones_400(api: Api) -> None:
    for path in ("/game", "/save", "/load"):
        assert await api.call(path, {"game": "no-such-game"}) is False
        status, answer = await api.raw(path, b"{}")
        assert status == 400
        assert '"game"' in answer["error"]
    async with api.session.get(api.url + "/start") as response:
        assert response.status == 405
    async with api.session.options(api.url + "/move") as response:  # a browser's preflight
        assert response.status == 204
        assert response.headers["Access-Control-Allow-Origin"] == "*"
        assert "POST" in response.headers["Access-Control-Allow-Methods"]


# --- captures ------------------------------------------------------------------------------------
async def test_a_troll_walk_captures_every_dwarf_next_to_it(api: Api) -> None:
    game = await api.start()
    answers = await play(
        api, game, [((6, 0), (6, 4)), ((8, 8), (9, 9)), ((8, 0), (8, 4)), ((7, 6), (7, 5))]
    )
    assert answers[-1] == [[8, 4], [6, 4]]
    board = await api.board(game)
    assert cell(board, (7, 5)) == {"id": 36, "type": "Troll"}
    for square in ((6, 4), (8, 4), (7, 6)):
        assert cell(board, square) == {"id": "null", "type": "open"}
    dwarf_ids = {c["id"] for column in board.values() for c in column if c["type"] == "Dwarf"}
    assert dwarf_ids == set(range(1, 33)) - {15, 17}  # (6, 0) and (8, 0) were 15 and 17


async def test_a_dwarf_hurl_captures_the_troll_it_lands_on(api: Api) -> None:
    game = await api.start()
    hurl = ((6, 4), (6, 6))  # two dwarfs in a line: the front one flies two squares
    answers = await play(
        api, game, [((6, 0), (6, 4)), ((8, 8), (9, 9)), ((9, 0), (6, 3)), ((9, 9), (8, 8)), hurl]
    )
    assert answers == [True, True, True, True, [[6, 6]]]
    board = await api.board(game)
    assert cell(board, (6, 6)) == {"id": 15, "type": "Dwarf"}
    assert cell(board, (6, 3)) == {"id": 19, "type": "Dwarf"}  # (9, 0) was 19
    troll_ids = {c["id"] for column in board.values() for c in column if c["type"] == "Troll"}
    assert troll_ids == set(range(34, 41))


async def test_a_troll_shove_captures_next_to_where_it_lands(api: Api) -> None:
    game = await api.start()
    # Three trolls in a row: the end one is shoved three squares west, next to the dwarf.
    answers = await play(api, game, [((0, 6), (2, 6)), ((6, 6), (3, 6))])
    assert answers == [True, [[2, 6]]]
    board = await api.board(game)
    assert cell(board, (3, 6)) == {"id": 33, "type": "Troll"}
    assert cell(board, (2, 6)) == {"id": "null", "type": "open"}
    # A shove must capture, and must stay on its line: these are not moves.
    assert await api.validate(game, 0, (0, 5), (1, 5)) is True
    await api.move(game, 0, (14, 6), (13, 6))
    assert await api.validate(game, 1, (8, 6), (10, 6)) is False  # lands next to no dwarf
    assert await api.validate(game, 1, (8, 8), (10, 4)) is False  # not on a line


async def test_captures_do_not_wrap_around_the_board_edge(api: Api) -> None:
    """A troll landing on x = 0 does not see the dwarfs at x = 14 (the earlier server did)."""
    game = await api.start()
    wait = [((5, 0), (5, 1)), ((5, 1), (5, 0))] * 3  # the dwarfs mark time
    troll_walk = [((6, 7), (5, 7)), ((5, 7), (4, 7)), ((4, 7), (3, 7)), ((3, 7), (2, 7))]
    troll_walk += [((2, 7), (1, 7)), ((1, 7), (0, 7))]
    moves = [move for pair in zip(wait, troll_walk, strict=True) for move in pair]
    answers = await play(api, game, moves)
    assert answers[9] == [[0, 8], [0, 6]]  # (1, 7): the two dwarfs next to it on x = 0
    assert answers[11] is True  # (0, 7): nothing next to it; (14, 6) and (14, 8) are not
    board = await api.board(game)
    assert cell(board, (0, 7)) == {"id": 34, "type": "Troll"}
    for square in ((14, 6), (14, 8)):
        assert cell(board, square)["type"] == "Dwarf"


# --- the lobby, the records and /save ------------------------------------------------------------
async def test_api_games_are_in_the_lobby_watchable_and_recorded(api: Api, served: Served) -> None:
    game = await api.start("Ann", "Bo")
    simulation_id = game["simulationId"]
    async with api.session.ws_connect(f"{served.url}/ws") as lobby:
        await lobby.send_json({"type": "lobby"})
        async with asyncio.timeout(TIMEOUT_S):
            while True:
                message = await lobby.receive_json()
                if message["type"] != "lobby":
                    continue
                rows = [r for r in message["simulations"] if r["simulationId"] == simulation_id]
                if rows:
                    break
        (row,) = rows
        assert (row["game"], row["status"]) == ("thud", "playing")
        assert [(p["seat"], p["nick"], p["kind"]) for p in row["players"]] == [
            ("dwarf", "Ann", "http"),
            ("troll", "Bo", "http"),
        ]
        await lobby.send_json({"type": "watch", "simulationId": simulation_id})
        async with asyncio.timeout(TIMEOUT_S):
            while (snapshot := await lobby.receive_json())["type"] != "snapshot":
                pass
        assert snapshot["state"]["dwarfs"][0] == [5, 0]
        await play(api, game, [((6, 0), (6, 4))])
        async with asyncio.timeout(TIMEOUT_S):
            while (turn := await lobby.receive_json())["type"] != "turn":
                pass
        assert turn["action"] == {"move": {"from": [6, 0], "to": [6, 4]}}
    await play_on(api, game)
    assert await api.call("/save", {"game": game["game"]}) is True
    record = served.records.game(simulation_id)  # /save has flushed: no waiting here
    assert record is not None
    assert record["status"] == "playing"
    assert [(p["nick"], p["kind"]) for p in record["players"]] == [("Ann", "http"), ("Bo", "http")]
    assert [t["action"]["move"] for t in record["turns"]] == [
        {"from": [6, 0], "to": [6, 4]},
        {"from": [8, 8], "to": [9, 9]},
    ]
    # Only digests of the tokens are stored.
    with contextlib.closing(sqlite3.connect(served.records.path)) as db:
        rows = db.execute("SELECT * FROM thud_api_games").fetchall()
    assert len(rows) == 1
    dump = repr(rows)
    assert simulation_id in dump
    assert not any(game[key] in dump for key in ("game", "player_one", "player_two"))


async def play_on(api: Api, game: dict[str, Any]) -> None:
    assert await api.move(game, 1, (8, 8), (9, 9)) is True


async def test_api_seats_get_a_persons_turn_timeout(api: Api, served: Served) -> None:
    game = await api.start()
    simulation = served.arena.matches[game["simulationId"]]
    expected = served.arena.config.person_turn_timeout_ms / 1000
    assert [seat.turn_timeout_s for seat in simulation.seats if seat is not None] == [expected] * 2


# --- matchmaking ---------------------------------------------------------------------------------
class Player:
    """A matchmaking socket."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws

    async def send(self, message: object) -> None:
        await self.ws.send_str(orjson.dumps(message).decode())

    async def receive(self) -> Any:
        async with asyncio.timeout(TIMEOUT_S):
            message = await self.ws.receive()
        assert message.type is aiohttp.WSMsgType.TEXT, message
        return orjson.loads(message.data)

    async def request(self, message: object) -> Any:
        await self.send(message)
        return await self.receive()


@pytest.fixture
async def connect(served: Served) -> AsyncIterator[Any]:
    async with aiohttp.ClientSession(timeout=CLIENT_TIMEOUT) as session:

        async def open_player(name: str, url: str = served.url) -> Player:
            return Player(await session.ws_connect(f"{url}/match/{name}"))

        yield open_player


async def test_matchmaking_lists_refuses_duplicates_and_frees_names(
    connect: Any, served: Served
) -> None:
    ann = await connect("Ann")
    assert await ann.receive() == ["list", []]
    bo = await connect("Bo42")
    assert await bo.receive() == ["list", ["Ann"]]
    again = await connect("Ann")
    assert await again.receive() == "Duplicate player name."
    async with asyncio.timeout(TIMEOUT_S):
        assert (await again.ws.receive()).type is aiohttp.WSMsgType.CLOSE
    assert await ann.request(["list"]) == ["list", ["Bo42"]]
    assert await ann.request(["match", "Nobody"]) == ["list", ["Bo42"]]
    assert await ann.request(["match", "Ann"]) == ["list", ["Bo42"]]
    assert (await ann.request({"nonsense": 1}))[0] == "error"
    assert (await ann.request("match"))[0] == "error"
    assert (await ann.request(["move", {"game": "x"}]))[0] == "error"
    await bo.ws.close()
    assert await ann.request(["list"]) == ["list", []]
    bo = await connect("Bo42")
    assert await bo.receive() == ["list", ["Ann"]]
    async with aiohttp.ClientSession(timeout=CLIENT_TIMEOUT) as session:
        for bad in ("a-b", "Ann%20Bo", "x" * 65):
            async with session.get(f"{served.url}/match/{bad}") as response:
                assert response.status == 400
                assert "letters and digits" in (await response.json())["error"]


def greedy(state: State) -> Move:
    """Take the most; the trolls lose them all in 149 plies from the start."""
    return max(legal_moves(state), key=lambda move: len(move.killed))


async def test_two_matched_players_play_to_the_end_of_the_rules(
    connect: Any, served: Served, api: Api
) -> None:
    troll = await connect("Tom")
    assert await troll.receive() == ["list", []]
    dwarf = await connect("Will")
    assert await dwarf.receive() == ["list", ["Tom"]]
    await dwarf.send({"match": "Tom"})  # the one who asks plays the dwarfs and moves first
    started = [await dwarf.receive(), await troll.receive()]
    for (kind, info), race, key, opponent in zip(
        started, ("Dwarf", "Troll"), ("player_one", "player_two"), ("Tom", "Will"), strict=True
    ):
        assert kind == "start"
        assert (info["race"], info["opponent"], info[key]) == (race, opponent, info["player"])
        assert info["board"] == expected_start_board()
    game = {
        "game": started[0][1]["game"],
        "player_one": started[0][1]["player"],
        "player_two": started[1][1]["player"],
    }
    assert started[1][1]["game"] == game["game"]
    assert game["player_one"] != game["player_two"]
    assert "player_two" not in started[0][1]
    assert "player_one" not in started[1][1]
    # Another player finds neither of them free.
    third = await connect("Cy")
    assert await third.receive() == ["list", []]
    assert await third.request(["match", "Tom"]) == ["list", []]

    players = (dwarf, troll)
    state = initial_state()
    # "test" validates without moving, with or without the tokens.
    assert await troll.request(["test", {"start": [6, 6], "destination": [6, 5]}]) == [
        "test",
        False,
    ]
    test = ["test", {**move_body(game, 0, (6, 0), (6, 4))}]
    assert await dwarf.request(test) == ["test", True]
    plies = 0
    while state.end_reason is None:
        move = greedy(state)
        expected = [list(square) for square in move.killed] or True
        seat = plies % 2
        body = {"start": list(move.start), "destination": list(move.end)}
        if plies == 1:
            body = move_body(game, 1, move.start, move.end)  # tokens given: as /move takes them
        request = {"move": body} if plies % 3 else ["move", body]
        assert await players[seat].request(request) == ["move", expected]
        news = await players[1 - seat].receive()
        told = {"start": body["start"], "destination": body["destination"], "result": expected}
        assert news == ["opponent-move", told]
        state, _ = rules.apply(state, Action(move))
        plies += 1
    assert state.end_reason == "No more trolls"
    for player in players:
        kind, result = await player.receive()
        assert kind == "end"
        assert (result["reason"], result["winner"]) == ("No more trolls", "Dwarf")
        assert result["score"] == {"dwarfs": len(state.dwarfs), "trolls": 0}
    # The game is over: the HTTP API says so, and both players are free again.
    live = state_from_position(state.dwarfs, [], ply=1)  # as if the dwarfs could move
    move = legal_moves(live)[0]
    step = (move.start, move.end)
    assert await api.move(game, 0, *step) is False
    assert await api.validate(game, 0, *step) is False
    assert await dwarf.request(["move", move_body(game, 1, (7, 0), (7, 1))]) == ["move", False]
    assert await api.call("/load", {"game": game["game"]}) is False
    board = await api.board(game)
    assert board == result["board"]
    assert sum(c["type"] == "Dwarf" for column in board.values() for c in column) == len(
        state.dwarfs
    )
    assert await third.request(["list"]) == ["list", ["Tom", "Will"]]
    await served.records.flush()
    record = served.records.game(started[0][1]["simulationId"])
    assert record is not None
    assert (record["status"], record["turnCount"]) == ("finished", plies)
    assert record["result"]["reason"] == "No more trolls"
    assert [p["nick"] for p in record["players"]] == ["Will", "Tom"]


async def test_closing_the_socket_ends_the_game_as_a_disconnect(
    connect: Any, served: Served
) -> None:
    ann, bo = await connect("Ann"), await connect("Bo")
    await ann.receive()
    await bo.receive()
    await bo.send(["match", "Ann"])
    kind, info = await bo.receive()
    assert kind == "start"
    assert info["race"] == "Dwarf"
    await ann.receive()
    assert await bo.request(["move", {"start": [6, 0], "destination": [6, 4]}]) == ["move", True]
    assert (await ann.receive())[0] == "opponent-move"
    await bo.ws.close()
    kind, result = await ann.receive()
    assert kind == "end"
    assert (result["reason"], result["winner"]) == ("Player disconnected", "Troll")
    bo = await connect("Bo")  # the name is free again
    assert await bo.receive() == ["list", ["Ann"]]
    await served.records.flush()
    record = served.records.game(info["simulationId"])
    assert record is not None
    assert (record["status"], record["result"]["reason"]) == ("finished", "Player disconnected")


async def test_the_socket_wraps_game_save_and_load(connect: Any) -> None:
    ann, bo = await connect("Ann"), await connect("Bo")
    await ann.receive()
    await bo.receive()
    await ann.send(["match", "Bo"])
    (_, info), _ = await ann.receive(), await bo.receive()
    assert await ann.request(["game"]) == ["game", expected_start_board()]
    assert await bo.request(["game", {"game": info["game"]}]) == ["game", expected_start_board()]
    assert await ann.request(["save", {}]) == ["save", True]
    assert await ann.request(["load"]) == ["load", True]  # it is live
    assert await ann.request(["load", {"game": "nope"}]) == ["load", False]
    await ann.ws.send_bytes(orjson.dumps({"list": None}))  # binary frames are read too
    assert await ann.receive() == ["list", []]


# --- thudApiPort ---------------------------------------------------------------------------------
async def test_the_api_is_also_served_on_its_own_port(tmp_path: Path) -> None:
    api_port = free_port()
    async with (
        serving_visor(test_config(thud_api_port=api_port), tmp_path / "arena.db") as served,
        api_client(f"http://127.0.0.1:{api_port}") as own,
        api_client(f"http://127.0.0.1:{served.http_port}") as visor,
    ):
        game = await own.start()
        assert game["board"] == expected_start_board()
        assert await visor.move(game, 0, (6, 0), (6, 4)) is True  # the same games on both
        assert cell(await own.board(game), (6, 4))["id"] == 15
        async with own.session.get(own.url + "/") as response:
            assert response.status == 404  # only the API there, not the visor's pages
        async with (
            own.session.ws_connect(f"{own.url}/match/Ann") as ann,
            visor.session.ws_connect(f"{visor.url}/match/Bo") as bo,
        ):
            assert await ann.receive_json(timeout=TIMEOUT_S) == ["list", []]
            assert await bo.receive_json(timeout=TIMEOUT_S) == ["list", ["Ann"]]
            await bo.send_json(["match", "Ann"])
            assert (await ann.receive_json(timeout=TIMEOUT_S))[0] == "start"
            assert (await bo.receive_json(timeout=TIMEOUT_S))[0] == "start"


# --- /save and /load across a restart ------------------------------------------------------------
@contextlib.asynccontextmanager
async def server_process(config: Path) -> AsyncIterator[str]:
    """``python -m tavern_cli serve``; yields the visor's URL, and stops it with SIGTERM."""
    async with tavern_serve(config) as server:
        yield f"http://127.0.0.1:{server.http_port}"
        server.process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(server.process.wait(), 20) == 0


async def test_a_saved_game_loads_and_plays_on_after_a_restart(tmp_path: Path) -> None:
    database = tmp_path / "arena.db"
    config = tmp_path / "config.json"
    config.write_text(orjson.dumps({"port": 0, "httpPort": 0, "database": str(database)}).decode())
    opening = [((6, 0), (6, 4)), ((8, 8), (9, 9)), ((9, 0), (6, 3))]
    async with server_process(config) as url, api_client(url) as api:
        game = await api.start("Will", "Tom")
        await play(api, game, opening)
        saved_board = await api.board(game)
        assert await api.call("/save", {"game": game["game"]}) is True
    async with server_process(config) as url, api_client(url) as api:
        assert await api.move(game, 1, (9, 9), (8, 8)) is False  # not loaded yet
        assert await api.board(game) == saved_board  # the stored board, from the records
        assert await api.call("/load", {"game": "no-such-game"}) is False
        assert await api.call("/load", {"game": game["game"]}) is True
        assert await api.call("/load", {"game": game["game"]}) is True  # it is live already
        assert await api.board(game) == saved_board
        assert await api.move(game, 0, (5, 0), (5, 3)) is False  # still the trolls' turn
        assert await api.move({**game, "player_two": "x"}, 1, (9, 9), (8, 8)) is False
        assert await api.move(game, 1, (9, 9), (8, 8)) is True
        assert await api.move(game, 0, (6, 4), (6, 6)) == [[6, 6]]  # the hurl, as before
        board = await api.board(game)
        assert cell(board, (6, 6)) == {"id": 15, "type": "Dwarf"}
        assert await api.call("/save", {"game": game["game"]}) is True
    record = Records(database).game(game["simulationId"])
    assert record is not None
    assert [turn["number"] for turn in record["turns"]] == [1, 2, 3, 4, 5]
    last_move = without_debug(record["turns"][-1]["action"])  # its reply's timing aside
    assert last_move == {"move": {"from": [6, 4], "to": [6, 6]}}
    assert [(p["nick"], p["kind"]) for p in record["players"]] == [
        ("Will", "http"),
        ("Tom", "http"),
    ]


# --- a draining node -----------------------------------------------------------------------------
async def test_a_draining_node_opens_no_api_game_but_plays_on_those_it_has(
    api: Api, connect: Any, served: Served
) -> None:
    """While the node drains (``Arena.draining``, as SIGUSR1 sets it), /start, a matchmaking
    match and /load of a game not live here are refused with the API's 503 and a JSON error, as the
    arena's other fronts refuse new simulations; a game already live plays on."""
    live = await api.start()
    ann, bo = await connect("Ann"), await connect("Bo")
    assert (await ann.receive(), await bo.receive()) == (["list", []], ["list", ["Ann"]])
    served.arena.draining = True
    body = orjson.dumps({"player_one": "Will", "player_two": "Tom"})
    status, answer = await api.raw("/start", body)
    assert status == 503, answer
    assert answer["error"].startswith("Server draining: this node is finishing its games"), answer
    refused = await ann.request(["match", "Bo"])
    assert refused[0] == "error" and refused[1].startswith("Server draining"), refused
    status, answer = await api.raw("/load", orjson.dumps({"game": "not-live-here"}))
    assert (status, answer["error"][:15]) == (503, "Server draining")
    assert await api.move(live, 0, (6, 0), (6, 4)) is True  # the live game plays on
    served.arena.draining = False
    assert (await ann.request(["match", "Bo"]))[0] == "start"
