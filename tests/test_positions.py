"""Play from any position (issue 23, item 1): each game's rules begin at a position given in
wire form, checked; ``create-simulation`` takes one; the record says where the game began and
replays from there. Pure and in memory, on a hand-wound clock."""

from __future__ import annotations

import copy
import random
from typing import Any

import orjson
import pytest

from server.commands import read as command_of
from server.commentary import replay_text
from server.errors import BotError
from server.game_file import read_game_file, record_lines
from server.games import GAMES
from server.games.base import AnyCodec, JsonObject, Player, PositionRejected
from server.games.thud.board import SQUARES
from server.match_events import GameFinished, GameStarted, TurnPlayed, Update
from server.played_on import NoStartingPoint, starting_point
from server.replay import frames, origin_to_wire, replay_to_wire
from tavern_cli.bot_test import positions_of
from tests.test_match import settle, table, tavern_pass
from tests.test_session import client

TURNS = 60


def codec_of(game: str) -> AnyCodec:
    return GAMES[game].codec_for(GAMES[game].default_settings())


RANDOM_PLAYER = {"tavern": "wanderer", "thud": "random"}


def played_positions(game: str, seed: int) -> list[Any]:
    """Every position of a game between two house players moving at random, as the rules
    keep them."""
    codec = codec_of(game)
    rules = codec.rules
    player = GAMES[game].house_players[RANDOM_PLAYER[game]]
    rng = random.Random(seed)
    state = rules.initial_state([Player("a", ("Ann", "Bo")), Player("b")])
    states = [state]
    while rules.outcome(state) is None and len(states) <= TURNS:
        seat = rules.to_move(state)
        action = rules.check(state, seat, codec.candidate(player.reply(state, seat, rng)))
        state, _ = rules.apply(state, seat, action, rng)
        states.append(state)
    return states


def turn_message(codec: AnyCodec, state: Any, turn: int) -> JsonObject:
    """A turn message as a bot reads it off the wire (of a game with a clock: a pasted one may
    carry it)."""
    seat = codec.rules.to_move(state)
    clock = {"seat": codec.seat_names[seat], "timeoutMs": 1000}
    message = codec.turn_message(state, seat, turn, 1000, clock)
    loaded: JsonObject = orjson.loads(orjson.dumps(message))
    return loaded


@pytest.mark.parametrize("game", ["tavern", "thud"])
def test_every_position_of_a_game_reads_back_from_its_turn_message(game: str) -> None:
    codec = codec_of(game)
    for played, state in enumerate(played_positions(game, 7)[:-1]):
        message = turn_message(codec, state, played + 1)
        if game == "tavern":  # who moves, when a point broke the turns' alternation
            message["team"] = codec.seat_names[codec.rules.to_move(state)]
        assert codec.position_from_wire(message) == (state, played)
        wire = orjson.loads(orjson.dumps(codec.position_to_wire(state)))
        assert codec.position_from_wire(wire) == (state, played)


def tavern_position() -> JsonObject:
    codec = codec_of("tavern")
    state = played_positions("tavern", 3)[9]
    position: JsonObject = orjson.loads(orjson.dumps(codec.position_to_wire(state)))
    return position


def changed(position: JsonObject, path: str, value: object) -> JsonObject:
    """The position with the value at ``path`` (keys and list indexes, dotted) replaced."""
    result = copy.deepcopy(position)
    *parents, last = path.split(".")
    target: Any = result
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return result


def test_impossible_tavern_positions_are_refused_with_their_reason() -> None:
    codec = codec_of("tavern")
    good = tavern_position()
    dwarf = good["state"]["team1"][0]
    other = good["state"]["team2"][0]
    sixth = {**dwarf, "id": 11}
    cases = [
        (changed(good, "state.team1.0.coords", {"x": 21, "y": 3}), "is off the 21x21 board"),
        (changed(good, "state.team1.0.coords", {"x": -1, "y": 3}), "is off the 21x21 board"),
        (changed(good, "state.team1.0.coords", other["coords"]), "two pieces on one square"),
        (
            changed(good, "state.team1.0.coords", good["state"]["barrels"]["team2"]["coords"]),
            "two pieces on one square",
        ),
        (changed(good, "state.team1", [*good["state"]["team1"], sixth]), "team1 has 6 dwarves"),
        (changed(good, "state.team2", good["state"]["team2"][:4]), "team2 has 4 dwarves"),
        (changed(good, "state.team1.1.id", 1), "ids 1 to 5, each once"),
        (changed(good, "state.team2.0.id", 3), "ids 6 to 10, each once"),
        (changed(good, "score.team1", -1), "team1's score must be from 0 to 2"),
        (changed(good, "score.team2", 3), "(pointsToWin 3 ends the game), not 3"),
        (changed(good, "turn", 0), "turn must be from 1 to the turn limit 1000"),
        (changed(good, "turn", 1001), "turn must be from 1 to the turn limit 1000"),
        (changed(good, "turn", "9"), "turn must be an integer"),
        (changed(good, "team", "team3"), 'team (who moves) must be "team1" or "team2"'),
        (changed(good, "state.barrels.team1.coords", {"x": 5, "y": 0}), "on an edge column"),
        (changed(good, "state.barrels.team2.coords", {"x": 0, "y": 5}), "on an edge column"),
        (changed(good, "state.team1.0.name", ""), "name must be 1 to 64 characters"),
        (changed(good, "moves", []), "unknown keys ['moves']"),
        ([good], "a position is an object"),
    ]
    for position, reason in cases:
        with pytest.raises(PositionRejected) as refused:
            codec.position_from_wire(position)
        assert refused.value.message == BotError.INVALID_POSITION
        assert reason in refused.value.reason, (reason, refused.value.reason)


def thud_position() -> JsonObject:
    codec = codec_of("thud")
    state = played_positions("thud", 3)[20]
    return turn_message(codec, state, state.ply)


def test_impossible_thud_positions_are_refused_with_their_reason() -> None:
    codec = codec_of("thud")
    good = thud_position()
    state = good["state"]
    dwarfs, trolls = state["dwarfs"], state["trolls"]
    free = [list(s) for s in SQUARES if list(s) not in dwarfs + trolls]
    cases = [
        (changed(good, "state.dwarfs.0", [0, 0]), "[0, 0] is off the board"),
        (changed(good, "state.dwarfs.0", [7, 7]), "is the Thudstone"),
        (changed(good, "state.trolls.0", dwarfs[1]), "two pieces on one square"),
        (changed(good, "state.dwarfs", dwarfs + free[: 33 - len(dwarfs)]), "33 dwarfs"),
        (changed(good, "state.trolls", trolls + free[:1]), "9 trolls: a game has 1 to 8"),
        (changed(good, "state.trolls", []), "0 trolls: a game has 1 to 8"),
        (changed(good, "state.ply", 0), "ply must be from 1"),
        (changed(good, "state.ply", 501), "ply must be from 1 to the game's last, 500"),
        (changed(good, "state.side", "troll"), 'side must be "dwarf" at ply 21'),
        (changed(good, "turn", 20), "turn (20) and ply (21) must be the same number"),
        (changed(good, "score", {"dwarfs": 32, "trolls": 32}), "score must be the pieces' worth"),
        (changed(good, "state.declared", {"dwarf": True, "troll": True}), "both sides declared"),
        (changed(good, "state.dwarfSlots", [0]), "slots for"),
    ]
    for position, reason in cases:
        with pytest.raises(PositionRejected) as refused:
            codec.position_from_wire(position)
        assert reason in refused.value.reason, (reason, refused.value.reason)
    # A side that cannot move has lost its game: no game is begun there.
    cornered = changed(good, "state.trolls", [[5, 0]])
    cornered = changed(cornered, "state.dwarfs", [[6, 0], [4, 1], [5, 1], [6, 1]])
    cornered = changed(cornered, "state.ply", 22)
    cornered = changed(cornered, "state.side", "troll")
    cornered = changed(cornered, "turn", 22)
    for key in ("score", "dwarfSlots", "trollSlots", "previousMove", "moves"):
        cornered["state"].pop(key)
    cornered.pop("score")
    with pytest.raises(PositionRejected, match="the trolls have no legal move"):
        codec.position_from_wire(cornered)


async def test_a_simulation_created_at_a_position_plays_on_from_there_and_records_it() -> None:
    """create-simulation with a position: bots joining it get that position, its turns are
    numbered on; the game's start and its record say where it began, and it replays from
    there."""
    position = tavern_position()
    async with table() as tables:
        heard: list[Update] = []
        tables.arena.listeners.append(heard.append)
        maker, made = client(tables)
        bad = changed(position, "score.team1", 7)
        maker.handle(command_of({"type": "create-simulation", "position": bad}))
        error = made.last("error")
        assert error["message"] == BotError.INVALID_POSITION
        assert "team1's score must be from 0 to 2" in error["reason"]
        maker.handle(command_of({"type": "create-simulation", "seed": 5, "position": position}))
        ready = made.last("ready")
        first, first_heard = client(tables)
        second, second_heard = client(tables)
        for session, nick in ((first, "a"), (second, "b")):
            session.handle(
                command_of(
                    {"type": "join-simulation", "nick": nick, "simulationId": ready["simulationId"]}
                )
            )
        await settle()
        on_move, mover = (
            (first, first_heard) if position["team"] == "team1" else (second, second_heard)
        )
        turn = mover.last("turn")
        assert (turn["state"], turn["turn"], turn["score"]) == (
            position["state"],
            position["turn"],
            position["score"],
        )
        on_move.handle(command_of(tavern_pass(turn, position["team"])))
        started = next(u for u in heard if isinstance(u, GameStarted))
        assert started.view.origin == {"position": position, "turn": position["turn"] - 1}
        (played,) = [u for u in heard if isinstance(u, TurnPlayed)]
        assert played.result.number == position["turn"]
        match = tables.arena.get(ready["simulationId"])
        assert match is not None
        match.stop()
        await settle()
    record = {
        "id": ready["simulationId"],
        "game": "tavern",
        "seed": 5,
        "settings": {**codec_of("tavern").settings(), "from": started.view.origin},
        "players": [
            {"seat": "team1", "nick": "a", "names": [], "kind": "bot"},
            {"seat": "team2", "nick": "b", "names": [], "kind": "bot"},
        ],
        "turns": [
            {
                "number": played.result.number,
                "seat": position["team"],
                "action": orjson.loads(played.result.action_json),
                "timedOut": False,
            }
        ],
        "result": None,
        "status": "unfinished",
        "startedAt": 0.0,
        "finishedAt": None,
        "turnCount": position["turn"],
        "tournament": None,
        "pairing": None,
    }
    start, after = frames(record)
    assert (start.turn, after.turn) == (position["turn"] - 1, position["turn"])
    assert codec_of("tavern").position_to_wire(start.state) == position
    assert origin_to_wire(record) == {"game": None, "turn": position["turn"] - 1, "given": True}
    replay = replay_to_wire(record)
    assert replay["frames"][0]["state"] == position["state"]
    assert not [u for u in heard if isinstance(u, GameFinished)]
    # Its game file reads back as the same game, and its text says where it began.
    read = read_game_file(record_lines(record, ""), "game.jsonl")
    assert [(f.turn, f.state) for f in frames(read)] == [
        (start.turn, start.state),
        (after.turn, after.state),
    ]
    header = next(replay_text(record)).splitlines()
    assert header[1] == f"begun at a given position, after turn {position['turn'] - 1}"
    # tavern play --from it: a new game begun at a given position too, named after it.
    codec = codec_of("tavern")
    point = starting_point(record, after.turn)
    assert (point.resume.state, point.resume.turn_count, point.resume.turns) == (
        after.state,
        after.turn,
        (),
    )
    assert point.resume.origin == {
        "position": codec.position_to_wire(after.state),
        "turn": after.turn,
        "game": record["id"],
    }
    with pytest.raises(NoStartingPoint, match=f"began at a position after turn {start.turn}"):
        starting_point(record, start.turn - 1)
    # Its positions for tavern test are numbered as its turns.
    (line,) = positions_of(record, 0, 99)
    assert (line["position"]["turn"], line["position"]["turns"]) == (start.turn, [])
    # Restored after a restart, it plays on from its last turn.
    async with table() as tables:
        restored = tables.arena.restore(record)
        assert restored.turn_count == position["turn"]
        assert restored.view().origin == record["settings"]["from"]
