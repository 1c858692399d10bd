"""Dwarven Tavern over real sockets on 127.0.0.1: the original's protocol, made robust."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from bots import tavern_dummy
from bots.sdk import ArenaClient
from server.tcp_rounds import WRITE_BATCH_S
from tests.conftest import RawClient, Running, serving, test_config

NAMES = ["Ann", "Bo", "Cy", "Di", "Ed"]
ID_PATTERN = re.compile(r"^[0-8][0-9a-r]{6}$")


@dataclass
class Game:
    simulation_id: str
    one: RawClient
    two: RawClient
    first_turn: dict[str, Any]


def join_request(simulation_id: str | None, nick: str = "n") -> dict[str, Any]:
    return {"type": "join-simulation", "nick": nick, "names": NAMES, "simulationId": simulation_id}


def pass_all(team: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "player-turn", "actions": [{"botId": d["id"], "type": "PASS"} for d in team]}


async def start_game(connect: Any, seed: int | None = None) -> Game:
    """Two raw clients in one new simulation, up to team1's first turn."""
    one, two = await connect(), await connect()
    create: dict[str, Any] = {"type": "create-simulation"}
    if seed is not None:
        create["seed"] = seed
    await one.send(create)
    simulation_id = (await one.expect("ready"))["simulationId"]
    for client in (one, two):
        await client.send(join_request(simulation_id))
        await client.expect("game-info")
    return Game(simulation_id, one, two, await one.expect("turn"))


# --- sessions ------------------------------------------------------------------------------------
async def test_create_simulation_replies_ready_with_an_id_and_a_seed(connect: Any) -> None:
    client = await connect()
    await client.send_raw(b'{"type": "create-simulation"}')  # bare, as the original's bot sent
    line = await client.receive_line()
    ready = orjson.loads(line)
    assert list(ready) == ["type", "simulationId", "game", "seed"]
    assert ready["type"] == "ready"
    assert ID_PATTERN.match(ready["simulationId"])
    assert line.endswith(b"}\n")
    await client.send({"type": "create-simulation", "seed": 1234})
    assert (await client.expect("ready"))["seed"] == 1234


async def test_join_by_id_gives_game_info_then_team1_moves_first(connect: Any) -> None:
    one, two = await connect(), await connect()
    await one.send({"type": "create-simulation", "seed": 77})
    simulation_id = (await one.expect("ready"))["simulationId"]
    await one.send(join_request(simulation_id, "A"))
    info = await one.expect("game-info")
    assert isinstance(info.pop("token"), str)
    assert info == {
        "type": "game-info",
        "simulationId": simulation_id,
        "team": "team1",
        "width": 21,
        "height": 21,
        "game": "tavern",
        "seed": 77,
        "pointsToWin": 3,
        "turnLimit": 1000,
        "turnTimeoutMs": 10_000,
        "firstTurnTimeoutMs": 30_000,
        "maxConsecutiveTimeouts": 3,
        "reconnectGraceMs": 0,
    }
    await two.send(join_request(simulation_id, "B"))
    assert (await two.expect("game-info"))["team"] == "team2"
    turn = await one.expect("turn")
    assert (turn["turn"], turn["score"], turn["timeoutMs"]) == (
        1,
        {"team1": 0, "team2": 0},
        30_000,  # the first reply's start-up allowance
    )
    state = turn["state"]
    assert list(state) == ["barrels", "team1", "team2"]
    assert state["barrels"]["team1"] == {"team": "team1", "coords": {"x": 8, "y": 10}}
    assert [d["id"] for d in state["team1"]] == [1, 2, 3, 4, 5]
    assert [d["id"] for d in state["team2"]] == [6, 7, 8, 9, 10]
    assert state["team1"][0] == {"id": 1, "name": "Ann", "coords": {"x": 4, "y": 18}}


async def test_unknown_id_is_wrong_simulation_id_and_the_connection_stays_usable(
    connect: Any,
) -> None:
    client = await connect()
    await client.send(join_request("zzzzzzz"))
    assert await client.receive() == {"type": "error", "message": "Wrong simulation ID"}
    await client.send({"type": "create-simulation"})
    await client.expect("ready")


async def test_a_full_simulation_refuses_a_third_player(connect: Any) -> None:
    game = await start_game(connect)
    third = await connect()
    await third.send(join_request(game.simulation_id))
    error = await third.expect_error("Simulation full")
    assert game.simulation_id in error["reason"]
    # The two players are untouched: team1 is still on move and can play.
    await game.one.send(pass_all(game.first_turn["state"]["team1"]))
    await game.two.expect("turn")


async def test_random_join_pairs_waiting_players(connect: Any) -> None:
    maker, one, two, three = await connect(), await connect(), await connect(), await connect()
    await maker.send({"type": "create-simulation"})
    empty_id = (await maker.expect("ready"))["simulationId"]
    await one.send({"type": "join-simulation", "nick": "one", "names": NAMES})
    assert (await one.expect("game-info"))["simulationId"] == empty_id
    await two.send(join_request(None, "two"))
    second = await two.expect("game-info")
    assert (second["simulationId"], second["team"]) == (empty_id, "team2")
    await three.send(join_request(None, "three"))
    third = await three.expect("game-info")
    assert third["simulationId"] != empty_id  # nothing was waiting: a new one, and no ready
    assert third["team"] == "team1"


async def test_random_join_prefers_a_waiting_player_to_an_empty_simulation(
    connect: Any,
) -> None:
    maker, one, two = await connect(), await connect(), await connect()
    await one.send(join_request(None, "one"))  # creates a simulation and waits in it
    waiting_id = (await one.expect("game-info"))["simulationId"]
    await maker.send({"type": "create-simulation"})
    await maker.expect("ready")
    await two.send(join_request(None, "two"))
    assert (await two.expect("game-info"))["simulationId"] == waiting_id
    await one.expect("turn")


async def test_one_game_per_connection(connect: Any) -> None:
    game = await start_game(connect)
    await game.one.send(join_request(None))
    await game.one.expect_error("Already in a game")


async def test_invalid_join_fields_get_a_clear_error(connect: Any) -> None:
    client = await connect()
    await client.send({"type": "join-simulation", "nick": 5})
    assert "nick" in (await client.expect_error("Invalid join"))["reason"]
    await client.send({"type": "join-simulation", "nick": "x", "names": "abc"})
    assert "names" in (await client.expect_error("Invalid join"))["reason"]
    await client.send({"type": "create-simulation", "seed": -1})
    await client.expect_error("Invalid seed")
    await client.send({"type": "create-simulation", "game": "chess"})
    await client.expect_error("Unknown game")


# --- framing over real sockets -------------------------------------------------------------------
async def test_framing_split_coalesced_and_bare(connect: Any) -> None:
    client = await connect()
    create = orjson.dumps({"type": "create-simulation"})
    await client.send_raw(create + create + b"\n" + create[:7])
    await client.expect("ready")
    await client.expect("ready")
    await asyncio.sleep(0.05)
    await client.send_raw(create[7:])
    await client.expect("ready")


async def test_invalid_json_keeps_the_connection_usable(connect: Any) -> None:
    client = await connect()
    await client.send_raw(b"this is not json\n")
    error = await client.expect_error("Invalid JSON")
    assert error["reason"]
    await client.send_raw(b'{"foo": 1}\n')
    await client.expect_error("Invalid JSON")
    await client.send({"type": "no-such-thing"})
    await client.expect_error("Unknown message type")
    await client.send({"type": "create-simulation"})
    await client.expect("ready")


async def test_an_over_long_line_gets_an_error_and_is_closed() -> None:
    async with serving(test_config(max_message_bytes=1024)) as arena:
        assert arena.tcp_port is not None
        client = await RawClient.connect(arena.tcp_port)
        await client.send_raw(b'{"type": "create-simulation", "pad": "' + b"x" * 5000)
        assert "1024" in (await client.expect_error("Message too long"))["reason"]
        assert await client.is_closed()
        await client.close()


# --- turns ---------------------------------------------------------------------------------------
async def test_turn_outside_any_game_and_before_the_start(connect: Any) -> None:
    client = await connect()
    turn = {"type": "player-turn", "actions": [{"botId": 1, "type": "PASS"}]}
    await client.send(turn)
    await client.expect_error("Not in a game")
    await client.send(join_request(None))
    await client.expect("game-info")
    await client.send(turn)
    await client.expect_error("Game not started")


async def test_only_the_player_on_move_and_only_its_own_dwarves(connect: Any) -> None:
    game = await start_game(connect)
    state = game.first_turn["state"]
    await game.two.send(pass_all(state["team2"]))
    await game.two.expect_error("Not your turn")
    move = {"type": "MOVE", "direction": "NORTH"}
    await game.one.send({"type": "player-turn", "actions": [{"botId": 6, **move}]})
    assert "6" in (await game.one.expect_error("Invalid turn"))["reason"]
    await game.one.send({"type": "player-turn", "actions": [{"botId": 1, **move}] * 2})
    await game.one.expect_error("Invalid turn")
    await game.one.send({"type": "player-turn", "actions": [{"botId": 1, "type": "JUMP"}]})
    await game.one.expect_error("Invalid turn")
    await game.one.send({"type": "player-turn", "actions": []})
    await game.one.expect_error("Invalid turn")
    # Nothing changed: a valid turn now moves dwarf 1 north from the starting layout.
    await game.one.send({"type": "player-turn", "actions": [{"botId": "1", **move}]})
    after = (await game.two.expect("turn"))["state"]
    assert after["team1"][0]["coords"] == {"x": 4, "y": 17}
    assert after["team1"][1:] == state["team1"][1:]
    assert after["team2"] == state["team2"]


async def test_a_disconnect_tells_the_opponent_and_the_leaver_loses(connect: Any) -> None:
    game = await start_game(connect)
    await game.one.send(pass_all(game.first_turn["state"]["team1"]))
    await game.two.expect("turn")
    await game.one.close()
    assert await game.two.receive() == {"type": "error", "message": "Player disconnected"}
    end = await game.two.expect("win-game")
    assert end["result"] == {
        "reason": "Player disconnected",
        "score": {"team1": 0, "team2": 0},
        "winner": "team2",
    }
    assert await game.two.is_closed()


async def test_a_reset_connection_affects_nothing_else(connect: Any) -> None:
    other = await start_game(connect)
    game = await start_game(connect)
    game.one.writer.transport.abort()  # RST instead of FIN
    await game.two.expect_error("Player disconnected")
    await game.two.expect("win-game")
    await other.one.send(pass_all(other.first_turn["state"]["team1"]))
    await other.two.expect("turn")


async def test_a_silent_bot_passes_on_timeout_then_forfeits() -> None:
    config = test_config(turn_timeout_ms=150, first_turn_timeout_ms=150, max_consecutive_timeouts=3)
    async with serving(config) as arena:
        assert arena.tcp_port is not None
        one, two = await RawClient.connect(arena.tcp_port), await RawClient.connect(arena.tcp_port)
        for client in (one, two):
            await client.send(join_request(None))
            await client.expect("game-info")
        first = await one.expect("turn")
        for _ in range(2):  # team1 says nothing: it passes, and team2 plays on
            timeout = await one.expect_error("Turn timeout")
            assert "passed" in timeout["reason"]
            turn = await two.expect("turn")
            assert turn["state"] == first["state"]
            await two.send(pass_all(turn["state"]["team2"]))
            await one.expect("turn")
        assert (await one.expect("loss-game"))["result"]["reason"] == "Too many timeouts"
        won = await two.expect("win-game")
        assert won["result"]["winner"] == "team2"
        for client in (one, two):
            await client.close()


async def test_turn_limit_ends_on_points_with_a_draw() -> None:
    async with serving(test_config().with_turn_limit("tavern", 6)) as arena:
        assert arena.tcp_port is not None
        one, two = await RawClient.connect(arena.tcp_port), await RawClient.connect(arena.tcp_port)
        for client in (one, two):
            await client.send(join_request(None))
            await client.expect("game-info")
        players = {"team1": one, "team2": two}
        for turn_number in range(6):
            team = "team1" if turn_number % 2 == 0 else "team2"
            turn = await players[team].expect("turn")
            await players[team].send(pass_all(turn["state"][team]))
        for client in (one, two):
            end = await client.expect("draw-game")
            assert end["result"] == {
                "reason": "Turn limit reached",
                "score": {"team1": 0, "team2": 0},
                "winner": None,
            }
            await client.close()


# --- whole games ---------------------------------------------------------------------------------
async def passive_bot(port: int, simulation_id: str | None) -> dict[str, Any]:
    """An SDK bot that never moves: it only passes."""
    async with await ArenaClient.connect("127.0.0.1", port) as client:
        info = await client.join(simulation_id, nick="passive", names=NAMES)
        team = info["team"]
        return await client.play(lambda message: pass_all(message["state"][team]))


async def test_a_full_game_between_two_sdk_bots_ends_in_win_and_loss(arena: Running) -> None:
    assert arena.tcp_port is not None
    winner = asyncio.create_task(
        tavern_dummy.play("127.0.0.1", arena.tcp_port, None, "dummy", seed=5)
    )
    await asyncio.sleep(0.05)
    loser = asyncio.create_task(passive_bot(arena.tcp_port, None))
    async with asyncio.timeout(60):
        won, lost = await winner, await loser
    assert won["type"] == "win-game"
    assert lost["type"] == "loss-game"
    assert won["result"]["reason"] == "Points to win reached"
    assert won["result"]["score"][won["result"]["winner"]] == 3
    assert won["state"] == lost["state"]


async def test_the_same_seed_and_moves_replay_the_same_game(arena: Running) -> None:
    assert arena.tcp_port is not None
    finals = []
    for seed in (99, 99, 100):
        first = asyncio.create_task(tavern_dummy.play("127.0.0.1", arena.tcp_port, None, "a", seed))
        await asyncio.sleep(0.02)
        second = asyncio.create_task(tavern_dummy.play("127.0.0.1", arena.tcp_port, None, "b"))
        finals.append(((await first)["state"], (await second)["result"]))
    assert finals[0] == finals[1]
    assert finals[0] != finals[2]


# With no wait, every write of a batch is made at once, from inside the send that adds it.
@pytest.mark.parametrize("write_batch_s", [WRITE_BATCH_S, 0.0])
async def test_fifty_simultaneous_games_all_finish(arena: Running, write_batch_s: float) -> None:
    assert arena.tcp_port is not None
    arena.tcp.write_batch.most_s = write_batch_s
    port = arena.tcp_port
    tasks = []
    for game in range(50):
        tasks.append(asyncio.create_task(tavern_dummy.play("127.0.0.1", port, None, f"a{game}")))
        await asyncio.sleep(0)
        tasks.append(asyncio.create_task(tavern_dummy.play("127.0.0.1", port, None, f"b{game}")))
    async with asyncio.timeout(240):
        finals = await asyncio.gather(*tasks)
    kinds = [final["type"] for final in finals]
    assert set(kinds) <= {"win-game", "loss-game", "draw-game"}
    assert kinds.count("win-game") == kinds.count("loss-game")
    assert not arena.matches  # every game finished and was cleaned up
