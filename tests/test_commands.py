"""The parser of a client's commands (server.commands): every command, and every refusal of a
message's shape or type with its error, in memory."""

from __future__ import annotations

from typing import Any

import pytest

from server.arena import MAX_SEED
from server.commands import (
    Accept,
    Challenge,
    Create,
    Decline,
    Join,
    Move,
    RandomJoin,
    Register,
    Rejoin,
    Seek,
    parse,
    read,
)
from server.errors import BotError, Rejected
from server.games.base import TimeBank


def refused(message: dict[str, Any]) -> tuple[str, str | None]:
    with pytest.raises(Rejected) as caught:
        parse(message)
    return caught.value.message, caught.value.reason


def test_create_simulation_with_each_of_its_fields() -> None:
    plain = {"type": "create-simulation"}
    assert parse(plain) == Create(plain, "tavern", None, None, None)
    full = {
        "type": "create-simulation",
        "game": "thud",
        "seed": MAX_SEED,
        "clock": {"initialMs": 60_000, "incrementMs": 1_000},
        "position": {"anything": "the codec judges"},
    }
    assert parse(full) == Create(
        full, "thud", MAX_SEED, TimeBank(60_000, 1_000), {"anything": "the codec judges"}
    )
    assert parse({"type": "create-simulation", "game": None}).game == "tavern"  # type: ignore[union-attr]


def test_a_join_by_id_and_a_random_join() -> None:
    by_id = {"type": "join-simulation", "simulationId": "abc1234", "game": "thud", "nick": "x"}
    assert parse(by_id) == Join(by_id, "abc1234", "thud")
    # A join by id is not judged by its seed: only a simulation it opens would use one.
    odd_seed = {"type": "join-simulation", "simulationId": "abc1234", "seed": "x"}
    assert parse(odd_seed) == Join(odd_seed, "abc1234", None)
    for no_id in (None, "", 0, False):
        random = {"type": "join-simulation", "simulationId": no_id, "seed": 7}
        assert parse(random) == RandomJoin(random, "tavern", 7)
    assert parse({"type": "join-simulation", "game": "thud"}) == RandomJoin(
        {"type": "join-simulation", "game": "thud"}, "thud", None
    )


def test_rejoin_move_seek_challenge_accept_decline_register() -> None:
    rejoin = {"type": "rejoin", "simulationId": "abc1234", "token": "t0k"}
    assert parse(rejoin) == Rejoin(rejoin, "abc1234", "t0k")
    turn = {"type": "player-turn", "actions": [], "turn": 3}
    assert parse(turn) == Move(turn)
    seek = {"type": "seek", "game": "thud", "rated": True, "bot": "Grimli", "key": "k"}
    assert parse(seek) == Seek(seek, "thud", True)
    assert parse({"type": "seek"}) == Seek({"type": "seek"}, "tavern", False)
    challenge = {"type": "challenge", "game": "thud", "opponent": "Orla", "side": "troll"}
    assert parse(challenge) == Challenge(challenge, "thud", "Orla", False, "troll")
    accept = {"type": "accept", "challenge": "c1"}
    assert parse(accept) == Accept(accept, "c1")
    assert parse({"type": "decline", "challenge": "c1"}) == Decline("c1", "declined")
    long = "why " * 100
    assert parse({"type": "decline", "challenge": "c1", "reason": long}) == Decline(
        "c1", long[:200]
    )
    assert parse({"type": "register", "bot": "Grimli"}) == Register("Grimli")
    assert parse({"type": "register"}) == Register(None)  # the roster words that refusal


def test_a_message_that_is_no_command() -> None:
    for kind in ("dance", "ready", "", 3, None):
        assert refused({"type": kind}) == (BotError.UNKNOWN_MESSAGE_TYPE, f"unknown type {kind!r}")
    assert refused({}) == (BotError.UNKNOWN_MESSAGE_TYPE, "unknown type None")


def test_every_refusal_of_a_field_s_shape_or_type() -> None:
    games = "game must be one of: tavern, thud"
    seeds = f"seed must be an integer from 0 to {MAX_SEED}"
    cases: list[tuple[dict[str, Any], tuple[str, str | None]]] = [
        ({"type": "create-simulation", "game": "chess"}, (BotError.UNKNOWN_GAME, games)),
        ({"type": "create-simulation", "game": 1}, (BotError.UNKNOWN_GAME, games)),
        ({"type": "join-simulation", "game": "chess"}, (BotError.UNKNOWN_GAME, games)),
        ({"type": "seek", "game": ["thud"]}, (BotError.UNKNOWN_GAME, games)),
        ({"type": "challenge", "game": "go"}, (BotError.UNKNOWN_GAME, games)),
        ({"type": "create-simulation", "seed": -1}, (BotError.INVALID_SEED, seeds)),
        ({"type": "create-simulation", "seed": True}, (BotError.INVALID_SEED, seeds)),
        ({"type": "create-simulation", "seed": 1.5}, (BotError.INVALID_SEED, seeds)),
        ({"type": "create-simulation", "seed": MAX_SEED + 1}, (BotError.INVALID_SEED, seeds)),
        ({"type": "join-simulation", "seed": "7"}, (BotError.INVALID_SEED, seeds)),
        (
            {"type": "create-simulation", "clock": {"initialMs": 0}},
            (
                BotError.INVALID_CLOCK,
                'clock must be {"initialMs": 1 to 86400000, "incrementMs": 0 to 3600000}',
            ),
        ),
        (
            {"type": "create-simulation", "position": None},
            (BotError.INVALID_POSITION, "position must be a position of the game"),
        ),
        ({"type": "join-simulation", "simulationId": ["a"]}, (BotError.WRONG_SIMULATION_ID, None)),
        (
            {"type": "join-simulation", "simulationId": "abc1234", "game": 3},
            (BotError.WRONG_GAME, '"game" must be a game\'s name'),
        ),
        ({"type": "rejoin", "token": "t"}, (BotError.WRONG_SIMULATION_ID, None)),
        ({"type": "rejoin", "simulationId": 5, "token": "t"}, (BotError.WRONG_SIMULATION_ID, None)),
        (
            {"type": "rejoin", "simulationId": "abc1234"},
            (BotError.INVALID_TOKEN, "no seat of this simulation has that token"),
        ),
        (
            {"type": "seek", "rated": "yes"},
            (BotError.INVALID_SEEK, '"rated" must be true or false'),
        ),
        (
            {"type": "challenge"},
            (BotError.INVALID_CHALLENGE, '"opponent" must name another bot'),
        ),
        (
            {"type": "challenge", "opponent": 3},
            (BotError.INVALID_CHALLENGE, '"opponent" must name another bot'),
        ),
        (
            {"type": "challenge", "opponent": "Orla", "rated": 1},
            (BotError.INVALID_CHALLENGE, '"rated" must be true or false'),
        ),
        (
            {"type": "challenge", "game": "thud", "opponent": "Orla", "side": "goblin"},
            (BotError.INVALID_CHALLENGE, '"side" must be one of: dwarf, troll'),
        ),
        (
            {"type": "accept", "challenge": 7},
            (BotError.UNKNOWN_CHALLENGE, "no open challenge of that id for you"),
        ),
        ({"type": "decline"}, (BotError.UNKNOWN_CHALLENGE, "no open challenge of that id for you")),
    ]
    for message, error in cases:
        assert refused(message) == error, message


def test_read_hands_a_refusal_over_as_a_value() -> None:
    refusal = read({"type": "dance"})
    assert isinstance(refusal, Rejected) and refusal.message == BotError.UNKNOWN_MESSAGE_TYPE
    assert read({"type": "player-turn"}) == Move({"type": "player-turn"})


def test_a_commands_repr_never_shows_the_key_it_carries() -> None:
    """A command may reach a log line (a failure while it is handled): its fields, which hold
    the bot's key, are left out of its ``repr``."""
    command = parse({"type": "seek", "game": "thud", "bot": "Grimli", "key": "s3cret-key"})
    assert "s3cret-key" not in repr(command) and "s3cret-key" not in str(command)
