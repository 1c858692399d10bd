"""Late replies over real sockets: a ``player-turn`` that names an earlier turn than the one being
played is refused with ``Stale turn`` and changes nothing, so a bot that thought too long never
has its old orders played as its next move. A reply that names no turn answers the current one,
as with the original server's bots."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from server.match_options import MatchOptions
from tests.conftest import RawClient, Running, TurnLog, serving, test_config
from visor.house_games import seat_house_player

TURN_TIMEOUT_MS = 500
NAMES = ["Ann", "Bo", "Cy", "Di", "Ed"]


@dataclass
class Table:
    arena: Running
    log: TurnLog
    clients: list[RawClient]

    async def client(self) -> RawClient:
        client = await RawClient.connect(self.arena.tcp_port)
        self.clients.append(client)
        return client


@pytest.fixture
async def table() -> AsyncIterator[Table]:
    """An arena whose turns time out quickly, first turns included."""
    config = test_config(turn_timeout_ms=TURN_TIMEOUT_MS, first_turn_timeout_ms=TURN_TIMEOUT_MS)
    async with serving(config) as arena:
        table = Table(arena, TurnLog(arena), [])
        yield table
        for client in table.clients:
            await client.close()


async def tavern_game(table: Table) -> tuple[RawClient, RawClient, dict[str, Any]]:
    """Team1 and team2 in a new Dwarven Tavern simulation, up to team1's first turn."""
    one, two = await table.client(), await table.client()
    await one.send({"type": "create-simulation", "seed": 1})
    simulation_id = (await one.expect("ready"))["simulationId"]
    for client in (one, two):
        await client.send(
            {"type": "join-simulation", "nick": "n", "names": NAMES, "simulationId": simulation_id}
        )
        await client.expect("game-info")
    return one, two, await one.expect("turn")


def orders(*actions: tuple[int, str], **fields: Any) -> dict[str, Any]:
    """A Tavern ``player-turn``: each (botId, direction) moves that dwarf."""
    moves = [{"botId": bot_id, "type": "MOVE", "direction": way} for bot_id, way in actions]
    return {"type": "player-turn", "actions": moves, **fields}


def passes(team: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    actions = [{"botId": dwarf["id"], "type": "PASS"} for dwarf in team]
    return {"type": "player-turn", "actions": actions, **fields}


def where(state: dict[str, Any], team: str, bot_id: int) -> tuple[int, int]:
    (dwarf,) = [d for d in state[team] if d["id"] == bot_id]
    return dwarf["coords"]["x"], dwarf["coords"]["y"]


async def test_a_reply_to_an_earlier_turn_is_refused_and_the_current_one_is_played(
    table: Table,
) -> None:
    one, two, first = await tavern_game(table)
    assert first["turn"] == 1
    start = where(first["state"], "team1", 1)
    await one.expect_error("Turn timeout")  # team1 thought too long: it passed
    second = await two.expect("turn")
    await two.send(passes(second["state"]["team2"], turn=2))
    third = await one.expect("turn")
    assert third["turn"] == 3
    # The answer to turn 1 arrives now, after turn 3 was sent: it must not be played as turn 3.
    await one.send(orders((1, "NORTH"), turn=1))
    stale = await one.expect_error("Stale turn")
    assert stale["reason"] == "this reply answers turn 1; turn 3 is being played"
    await one.send(orders((2, "NORTH"), turn=3))  # still on move: its real answer is played
    fourth = await two.expect("turn")
    assert where(fourth["state"], "team1", 1) == start
    assert where(fourth["state"], "team1", 2)[1] == where(first["state"], "team1", 2)[1] - 1
    (turns,) = table.log.turns.values()
    assert [(t.number, t.timed_out) for t in turns] == [(1, True), (2, False), (3, False)]
    assert turns[2].action == {"actions": orders((2, "NORTH"))["actions"]}


async def test_a_late_reply_while_the_opponent_is_on_move_is_stale(table: Table) -> None:
    one, two, first = await tavern_game(table)
    await one.expect_error("Turn timeout")
    second = await two.expect("turn")
    await one.send(orders((1, "NORTH"), turn=1))  # team2 is on move with turn 2
    assert (await one.expect_error("Stale turn"))["reason"] == (
        "this reply answers turn 1; turn 2 is being played"
    )
    await two.send(passes(second["state"]["team2"], turn=2))
    third = await one.expect("turn")
    assert where(third["state"], "team1", 1) == where(first["state"], "team1", 1)


async def test_a_turn_that_is_not_an_earlier_or_the_current_one_is_invalid(table: Table) -> None:
    one, two, first = await tavern_game(table)
    for turn, reason in (
        (2, "turn 2 has not been sent yet; turn 1 is being played"),
        ("1", '"turn" must be the number of the turn this reply answers'),
        (True, '"turn" must be the number of the turn this reply answers'),
        (1.0, '"turn" must be the number of the turn this reply answers'),
        (None, '"turn" must be the number of the turn this reply answers'),
    ):
        await one.send(orders((1, "NORTH"), turn=turn))
        assert (await one.expect_error("Invalid turn"))["reason"] == reason
    await one.send(orders((1, "NORTH"), turn=1))  # still on move, in the same position
    second = await two.expect("turn")
    assert where(second["state"], "team1", 1)[1] == where(first["state"], "team1", 1)[1] - 1


async def test_a_reply_without_a_turn_answers_the_current_turn_as_with_the_original(
    table: Table,
) -> None:
    one, two, first = await tavern_game(table)
    await one.expect_error("Turn timeout")
    second = await two.expect("turn")
    await two.send(passes(second["state"]["team2"]))  # as the original's bots send it
    await one.expect("turn")
    # Documented: a late reply that names no turn cannot be told from an answer to the current
    # turn, so team1's answer to turn 1 is played as turn 3 (sending "turn" avoids that).
    await one.send(orders((1, "NORTH")))
    fourth = await two.expect("turn")
    assert where(fourth["state"], "team1", 1)[1] == where(first["state"], "team1", 1)[1] - 1
    (turns,) = table.log.turns.values()
    assert [(t.number, t.timed_out) for t in turns] == [(1, True), (2, False), (3, False)]


async def test_a_house_player_that_thinks_too_long_has_no_late_reply_played(
    table: Table, caplog: pytest.LogCaptureFixture
) -> None:
    """The visor's house players answer through ``Match.submit`` too: one that takes longer than
    its turn (0.75 s for 0.5 s) times out on every turn, and none of its late replies is played
    as a later turn: it loses on timeouts. Being told so is no cause for a warning."""
    match = table.arena.arena.open("tavern", MatchOptions(seed=3))
    seat_house_player(match, "pusher", "team1", 0.75)
    two = await table.client()
    join = {"type": "join-simulation", "nick": "n", "names": NAMES, "simulationId": match.id}
    await two.send(join)
    await two.expect("game-info")
    for _ in range(2):  # team2 answers at once; the house's third timeout ends the game
        turn = await two.expect("turn")
        await two.send(passes(turn["state"]["team2"], turn=turn["turn"]))
    assert (await two.expect("win-game"))["result"]["reason"] == "Too many timeouts"
    house_turns = [t for t in table.log.turns[match.id] if t.seat == 0]
    # Its third timeout, on turn 5, ends the game instead of passing.
    assert [(t.number, t.timed_out) for t in house_turns] == [(1, True), (3, True)]
    house = match.seats[0]
    assert house is not None and house.errors == 2  # its replies to turns 1 and 3
    assert house.last_error == "Stale turn: this reply answers turn 3; turn 5 is being played"
    assert "was told" not in caplog.text


# --- Thud --------------------------------------------------------------------------------------
async def thud_game(table: Table) -> tuple[RawClient, RawClient, dict[str, Any]]:
    """A dwarf and a troll in a new Thud simulation, up to the dwarfs' first ply."""
    dwarf, troll = await table.client(), await table.client()
    for client, side in ((dwarf, "dwarf"), (troll, "troll")):
        await client.send({"type": "join-simulation", "game": "thud", "nick": side, "side": side})
        await client.expect("game-info")
    return dwarf, troll, await dwarf.expect("turn")


def thud_move(move: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"type": "player-turn", "move": {"from": move["from"], "to": move["to"]}, **fields}


async def test_a_thud_reply_to_an_earlier_ply_is_stale(table: Table) -> None:
    dwarf, troll, first = await thud_game(table)
    assert (first["turn"], first["state"]["ply"]) == (1, 1)
    opening = first["state"]["moves"][0]
    await dwarf.send(thud_move(opening, turn=1))
    await dwarf.send(thud_move(opening, turn=1))  # sent twice: the troll is on move now
    assert (await dwarf.expect_error("Stale turn"))["reason"] == (
        "this reply answers turn 1; turn 2 is being played"
    )
    second = await troll.expect("turn")
    await troll.send(thud_move(second["state"]["moves"][0], turn=2))
    third = await dwarf.expect("turn")
    assert third["turn"] == third["state"]["ply"] == 3
    # An answer to ply 1 that is also a legal move now: it must not be played as ply 3.
    legal_now = third["state"]["moves"][-1]
    await dwarf.send(thud_move(legal_now, turn=1))
    assert (await dwarf.expect_error("Stale turn"))["reason"] == (
        "this reply answers turn 1; turn 3 is being played"
    )
    await dwarf.send(thud_move(third["state"]["moves"][0], turn=3))
    fourth = await troll.expect("turn")
    assert fourth["state"]["previousMove"]["to"] == third["state"]["moves"][0]["to"]
    (turns,) = table.log.turns.values()
    assert [t.number for t in turns] == [1, 2, 3]
