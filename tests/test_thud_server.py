"""Thud over real sockets on 127.0.0.1: joining by side, turns, moves, errors and whole games."""

from __future__ import annotations

import asyncio
from typing import Any

from bots.house import play_house, run_games
from bots.sdk import ArenaClient
from bots.tavern_dummy import play as play_tavern
from bots.thud import ThudTurn, play_thud
from server.games.thud.ends import ThudEnd
from server.games.thud.game import THUD
from server.games.thud.movegen import legal_moves
from server.games.thud.pieces import initial_state
from tests.conftest import RawClient, Running, serving, test_config


async def thud_pair(connect: Any) -> tuple[RawClient, RawClient, dict[str, Any]]:
    """A dwarf and a troll in one new Thud simulation, up to the dwarfs' first turn."""
    dwarf, troll = await connect(), await connect()
    await dwarf.send({"type": "create-simulation", "game": "thud"})
    simulation_id = (await dwarf.expect("ready"))["simulationId"]
    join = {"type": "join-simulation", "game": "thud", "simulationId": simulation_id}
    await troll.send({**join, "nick": "T", "side": "troll"})
    assert (await troll.expect("game-info"))["side"] == "troll"
    await dwarf.send({**join, "nick": "D"})
    assert (await dwarf.expect("game-info"))["side"] == "dwarf"
    return dwarf, troll, await dwarf.expect("turn")


def move(start: list[int], end: list[int], **extra: Any) -> dict[str, Any]:
    return {"type": "player-turn", "move": {"from": start, "to": end}, **extra}


async def test_create_and_join_thud(connect: Any) -> None:
    client = await connect()
    await client.send({"type": "create-simulation", "game": "thud", "seed": 3})
    ready = await client.expect("ready")
    assert ready == {
        "type": "ready",
        "simulationId": ready["simulationId"],
        "game": "thud",
        "seed": 3,
    }
    await client.send(
        {
            "type": "join-simulation",
            "game": "thud",
            "nick": "N",
            "simulationId": ready["simulationId"],
        }
    )
    info = await client.expect("game-info")
    assert isinstance(info.pop("token"), str)
    assert info == {
        "type": "game-info",
        "game": "thud",
        "simulationId": ready["simulationId"],
        "side": "dwarf",
        "width": 15,
        "height": 15,
        "seed": 3,
        "turnLimit": 500,
        "turnTimeoutMs": 10_000,
        "firstTurnTimeoutMs": 30_000,
        "reconnectGraceMs": 0,
    }


async def test_the_first_turn_carries_the_whole_position_and_every_move(connect: Any) -> None:
    _, _, turn = await thud_pair(connect)
    assert turn["type"] == "turn"
    assert turn["game"] == "thud"
    state = turn["state"]
    assert list(state) == [
        "ply", "side", "dwarfs", "trolls", "score", "declared", "previousMove", "moves",
        "dwarfSlots", "trollSlots",
    ]  # fmt: skip
    assert (state["ply"], state["side"], state["previousMove"]) == (1, "dwarf", None)
    start = initial_state()
    assert state["dwarfs"] == [list(square) for square in start.dwarfs]
    assert state["trolls"] == [list(square) for square in start.trolls]
    assert state["score"] == {"dwarfs": 32, "trolls": 32}
    assert state["declared"] == {"dwarf": False, "troll": False}
    expected = [[list(m.start), list(m.end), m.kind, len(m.killed)] for m in legal_moves(start)]
    assert [[m["from"], m["to"], m["kind"], m["kills"]] for m in state["moves"]] == expected


async def test_illegal_malformed_and_out_of_turn_moves_change_nothing(connect: Any) -> None:
    dwarf, troll, turn = await thud_pair(connect)
    await troll.send(move([6, 6], [5, 5]))
    await troll.expect_error("Not your turn")
    await dwarf.send(move([6, 6], [5, 5]))  # a troll's square
    assert "no dwarf on [6, 6]" in (await dwarf.expect_error("Illegal move"))["reason"]
    await dwarf.send(move([5, 0], [6, 2]))  # not on a line
    assert "cannot move to [6, 2]" in (await dwarf.expect_error("Illegal move"))["reason"]
    await dwarf.send(move([7, 7], [7, 6]))
    assert "not a square" in (await dwarf.expect_error("Illegal move"))["reason"]
    await dwarf.send({"type": "player-turn", "move": {"from": "5,0", "to": [5, 1]}})
    await dwarf.expect_error("Invalid turn")
    await dwarf.send({"type": "player-turn"})
    await dwarf.expect_error("Invalid turn")
    await dwarf.send(move([5, 0], [5, 1], declare="yes"))
    await dwarf.expect_error("Invalid turn")
    # Still the dwarfs' turn, in the same position: a legal move is played.
    first = turn["state"]["moves"][0]
    await dwarf.send(move(first["from"], first["to"]))
    troll_turn = await troll.expect("turn")
    state = troll_turn["state"]
    assert (state["ply"], state["side"]) == (2, "troll")
    # The troll's first reply still has the start-up allowance; the dwarfs' second does not.
    assert (troll_turn["turn"], troll_turn["timeoutMs"]) == (2, 30_000)
    assert troll_turn["score"] == {"dwarfs": 32, "trolls": 32}
    reply = state["moves"][0]
    await troll.send(move(reply["from"], reply["to"]))
    dwarf_turn = await dwarf.expect("turn")
    assert (dwarf_turn["turn"], dwarf_turn["timeoutMs"]) == (3, 10_000)
    assert state["previousMove"] == {
        "from": first["from"],
        "to": first["to"],
        "kind": first["kind"],
        "killed": [],
    }


async def test_both_sides_declaring_ends_the_game_by_agreement(connect: Any) -> None:
    dwarf, troll, turn = await thud_pair(connect)
    first = turn["state"]["moves"][0]
    await dwarf.send(move(first["from"], first["to"], declare=True))
    state = (await troll.expect("turn"))["state"]
    assert state["declared"] == {"dwarf": True, "troll": False}
    reply = state["moves"][0]
    await troll.send(move(reply["from"], reply["to"], declare=True))
    for client, kind in ((dwarf, "draw-game"), (troll, "draw-game")):
        end = await client.expect(kind)
        assert end["game"] == "thud"
        assert end["result"] == {
            "reason": "Players agreed to finish",
            "score": {"dwarfs": 32, "trolls": 32},
            "winner": None,
        }
        assert end["state"]["declared"] == {"dwarf": True, "troll": True}


async def test_a_side_that_stops_ends_the_game_as_it_stands(connect: Any) -> None:
    dwarf, troll, turn = await thud_pair(connect)
    first = turn["state"]["moves"][0]
    await dwarf.send(move(first["from"], first["to"]))
    await troll.expect("turn")
    await troll.send({"type": "player-turn", "stop": True})
    for client in (dwarf, troll):
        end = await client.expect("draw-game")
        assert end["result"] == {
            "reason": "No move",
            "score": {"dwarfs": 32, "trolls": 32},
            "winner": None,
        }


async def test_side_taken_and_random_join_by_side(connect: Any) -> None:
    one, two, three, tavern = await connect(), await connect(), await connect(), await connect()
    await tavern.send({"type": "join-simulation", "nick": "tavern"})  # a waiting Tavern game
    await tavern.expect("game-info")
    await one.send({"type": "join-simulation", "game": "thud", "nick": "a", "side": "troll"})
    waiting = (await one.expect("game-info"))["simulationId"]
    await two.send({"type": "join-simulation", "game": "thud", "nick": "b", "side": "troll"})
    other = await two.expect("game-info")
    assert other["simulationId"] != waiting  # the troll seat there was taken
    late = await connect()
    await late.send(
        {
            "type": "join-simulation",
            "game": "thud",
            "nick": "d",
            "simulationId": waiting,
            "side": "troll",
        }
    )
    await late.expect_error("Side taken")
    await late.send(
        {"type": "join-simulation", "game": "tavern", "nick": "d", "simulationId": waiting}
    )
    await late.expect_error("Wrong game")
    await three.send({"type": "join-simulation", "game": "thud", "nick": "c", "side": "dwarf"})
    assert (await three.expect("game-info"))["simulationId"] in (waiting, other["simulationId"])


async def test_a_thud_bot_that_does_not_move_forfeits() -> None:
    async with serving(test_config(turn_timeout_ms=200, first_turn_timeout_ms=200)) as arena:
        assert arena.tcp_port is not None
        dwarf, troll = (
            await RawClient.connect(arena.tcp_port),
            await RawClient.connect(arena.tcp_port),
        )
        for client, side in ((dwarf, "dwarf"), (troll, "troll")):
            await client.send(
                {"type": "join-simulation", "game": "thud", "nick": side, "side": side}
            )
            await client.expect("game-info")
        await dwarf.expect("turn")
        lost = await dwarf.expect("loss-game")
        assert lost["result"]["reason"] == "Turn timeout"
        assert (await troll.expect("win-game"))["result"]["winner"] == "troll"
        for client in (dwarf, troll):
            await client.close()


async def test_house_players_play_whole_games_over_tcp(arena: Running) -> None:
    assert arena.tcp_port is not None
    finals = await run_games("thud", "dwarf", "troll", "127.0.0.1", arena.tcp_port, 2, seed=11)
    for final in finals:
        assert final["type"] in ("win-game", "loss-game", "draw-game")
        result = final["result"]
        assert result["reason"] in tuple(ThudEnd)
        state = final["state"]
        assert result["score"] == {
            "dwarfs": len(state["dwarfs"]),
            "trolls": 4 * len(state["trolls"]),
        }


async def test_a_sdk_bot_plays_thud(arena: Running) -> None:
    assert arena.tcp_port is not None

    def first_killing_move(turn: ThudTurn) -> dict[str, Any]:
        killing = turn.killing_moves()
        assert all(turn.kills(m.start, m.end) == m.kills for m in killing)
        return turn.reply(killing[0] if killing else turn.moves()[0])

    async def house_troll() -> dict[str, Any]:
        player = THUD.house_players["troll"]
        return await play_house(
            THUD.name, player, "127.0.0.1", arena.tcp_port or 0, simulation_id, 1, "troll"
        )

    async with asyncio.timeout(120):
        async with await ArenaClient.connect("127.0.0.1", arena.tcp_port) as creator:
            simulation_id = (await creator.create_simulation("thud"))["simulationId"]
        troll = asyncio.create_task(house_troll())
        final = await play_thud(
            "127.0.0.1", arena.tcp_port, simulation_id, "dwarf", "sdk", first_killing_move
        )
        assert (await troll)["type"] in ("win-game", "loss-game", "draw-game")
    assert final["type"] in ("win-game", "loss-game", "draw-game")


async def test_thud_and_tavern_side_by_side(arena: Running) -> None:
    assert arena.tcp_port is not None
    port = arena.tcp_port
    async with asyncio.timeout(120):
        thud = asyncio.create_task(run_games("thud", "random", "random", "127.0.0.1", port, 1, 5))
        tavern_one = asyncio.create_task(play_tavern("127.0.0.1", port, None, "one"))
        await asyncio.sleep(0.05)
        tavern_two = asyncio.create_task(play_tavern("127.0.0.1", port, None, "two"))
        (thud_final,) = await thud
        finals = [await tavern_one, await tavern_two]
    assert thud_final["game"] == "thud"
    assert sorted(final["type"] for final in finals) in (
        ["loss-game", "win-game"],
        ["draw-game", "draw-game"],
    )
