"""The session as a protocol object (server.session): commands in, what it says to its client
and the effects it asks for out, and its seat's states, all synchronous: no event loop, no
settle(), an arena that is not even running."""

from __future__ import annotations

from typing import Any

import pytest

from server.arena import Arena, Standing
from server.commands import Cancel, Leave, Register, read
from server.errors import BotError, Rejected
from server.games.base import JsonObject
from server.identity import RegisteredBot, hash_key, new_key
from server.session import TRANSITIONS, CheckKey, Client, Session, SessionState, Step
from server.session.keys import MAX_HELD, Proof, Registered
from tests.clock import FakeClock
from tests.conftest import test_config
from tests.test_session import Channel

FREE, ASKED, SEATED, GONE = SessionState


def arena(**settings: Any) -> Arena:
    return Arena(test_config(**settings), clock=FakeClock())


def session_of(where: Arena, address: str = "127.0.0.1") -> tuple[Session, Channel]:
    channel = Channel()
    return Session(where, Client(address), channel), channel


def hand(session: Session, message: JsonObject) -> list[CheckKey]:
    return session.handle(read(message))


def test_create_join_move_and_leave_walk_the_seat_s_states() -> None:
    here = arena()
    session, heard = session_of(here)
    assert hand(session, {"type": "player-turn"}) == []
    assert heard.errors() == [BotError.NOT_IN_A_GAME] and session.state is FREE
    assert hand(session, {"type": "create-simulation", "game": "thud", "seed": 3}) == []
    ready = heard.last("ready")
    assert (ready["game"], ready["seed"]) == ("thud", 3)
    hand(session, {"type": "join-simulation", "simulationId": ready["simulationId"], "nick": "a"})
    assert session.state is SEATED and session.in_game and heard.seats == 1
    assert heard.last("game-info")["side"] == "dwarf"
    hand(session, {"type": "join-simulation", "nick": "a"})
    assert heard.errors()[-1] == BotError.ALREADY_IN_A_GAME
    assert session.handle(Leave()) == []
    assert session.state is GONE and session.seat is None
    assert here.get(ready["simulationId"]) is not None  # created by it, waiting for players


def test_a_random_join_waits_in_a_new_simulation_and_a_move_there_is_early() -> None:
    here = arena()
    session, heard = session_of(here)
    assert hand(session, {"type": "join-simulation", "game": "thud", "seed": 9}) == []
    (match,) = here.matches.values()
    assert session.state is SEATED and match.seed == 9 and heard.seats == 1
    hand(session, {"type": "player-turn", "move": {"from": [6, 0], "to": [6, 1]}})
    assert heard.errors() == [BotError.GAME_NOT_STARTED]
    session.handle(Leave())
    assert here.matches == {}  # a random join's simulation, left by everyone, is dropped


def test_every_refusal_is_one_error_line_and_changes_nothing() -> None:
    here = arena()
    session, heard = session_of(here)
    for message in (
        {"type": "dance"},
        {"type": "create-simulation", "seed": -1},
        {"type": "join-simulation", "simulationId": "nosuch1"},
        {"type": "rejoin", "simulationId": "nosuch1", "token": "t"},
        {"type": "accept", "challenge": "c9"},
        {"type": "decline", "challenge": "c9"},
        {"type": "challenge", "opponent": "Orla"},
        {"type": "seek", "rated": True},
    ):
        assert hand(session, message) == []
    assert heard.errors() == [
        BotError.UNKNOWN_MESSAGE_TYPE,
        BotError.INVALID_SEED,
        BotError.WRONG_SIMULATION_ID,
        BotError.WRONG_SIMULATION_ID,
        BotError.UNKNOWN_CHALLENGE,
        BotError.UNKNOWN_CHALLENGE,
        BotError.INVALID_CHALLENGE,
        BotError.INVALID_SEEK,
    ]
    assert session.state is FREE and not session.seeking and here.matches == {}


def test_a_seek_waits_until_cancelled() -> None:
    here = arena()
    session, heard = session_of(here)
    hand(session, {"type": "seek", "game": "thud", "nick": "guest"})
    assert session.seeking and not session.idle and heard.messages == []
    assert session.handle(Cancel()) == []
    assert not session.seeking and session.idle and session.state is FREE


def test_a_command_naming_a_bot_asks_for_a_key_check_and_the_next_ones_wait() -> None:
    """The session spawns nothing: it asks its front end for the check (``CheckKey``), holds
    what comes meanwhile, and carries all out, in order, once it is told the outcome."""
    here = arena()
    here.roster.update([RegisteredBot("Grimli", hash_key(new_key()))])
    session, heard = session_of(here)
    seek = read({"type": "seek", "game": "thud", "bot": "Grimli", "key": "k"})
    assert session.handle(seek) == [CheckKey(seek)]  # type: ignore[arg-type]
    assert hand(session, {"type": "dance"}) == []
    assert hand(session, {"type": "player-turn"}) == []
    assert heard.messages == [] and session.keys.checking
    standing = Standing(games=0)
    assert session.checked(Proof(seek, "Grimli", standing)) == []  # type: ignore[arg-type]
    assert session.seeking and session.bot == "Grimli" and session.ladder.present == "Grimli"
    assert heard.errors() == [BotError.UNKNOWN_MESSAGE_TYPE, BotError.NOT_IN_A_GAME]
    # A wrong key: refused, and nothing else changes.
    again = read({"type": "challenge", "opponent": "Orla", "bot": "Grimli", "key": "bad"})
    assert session.handle(again) == [CheckKey(again)]  # type: ignore[arg-type]
    session.checked(Rejected(BotError.INVALID_BOT_KEY, "no bot 'Grimli' with this key"))
    assert heard.errors()[-1] == BotError.INVALID_BOT_KEY and session.seeking


def test_a_held_command_that_names_a_bot_is_the_next_check() -> None:
    here = arena()
    session, heard = session_of(here)
    first = session.handle(Register("Grimli"))
    second = read({"type": "seek", "bot": "Grimli", "key": "k"})
    assert first == [CheckKey(Register("Grimli"))]
    assert session.handle(second) == []
    assert session.checked(Registered("Grimli", "the-key")) == [CheckKey(second)]  # type: ignore[arg-type]
    assert heard.last("registered") == {"type": "registered", "bot": "Grimli", "key": "the-key"}
    assert session.keys.checking


def test_past_the_held_limit_the_client_is_refused_and_leaving_drops_what_is_held() -> None:
    here = arena()
    session, heard = session_of(here)
    session.handle(Register("Grimli"))
    for _ in range(MAX_HELD + 1):
        hand(session, {"type": "player-turn"})
    assert heard.refused == [BotError.TOO_MANY_MESSAGES]
    session.handle(Leave())
    assert session.checked(Registered("Grimli", "k")) == []
    assert heard.messages == []  # gone: neither the answer nor what was held


class Elsewhere:
    """Other nodes as the session's routing sees them: each seat asked is recorded."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, bool]] = []

    def seat(
        self, peer: object, simulation_id: str, message: JsonObject, rejoin: bool, kind: str = "bot"
    ) -> Any:
        self.asked.append((simulation_id, rejoin))
        return Asked()

    def present(self, bot: str) -> None:
        """Never asked here."""


class Asked:
    playing = True

    def submit(self, message: JsonObject) -> None:
        return None

    def leave(self) -> None:
        """The client left."""


def test_a_seat_asked_of_another_node_is_given_or_refused() -> None:
    here, nodes = arena(), Elsewhere()
    here.elsewhere = nodes  # type: ignore[assignment]
    session, heard = session_of(here)
    hand(session, {"type": "join-simulation", "simulationId": "far1234", "nick": "a"})
    assert session.state is ASKED and nodes.asked == [("far1234", False)]
    session.routing.remote_refused(BotError.SIMULATION_FULL, None)
    assert session.state is FREE and heard.errors() == [BotError.SIMULATION_FULL]
    hand(session, {"type": "rejoin", "simulationId": "far1234", "token": "t"})
    assert session.state is ASKED
    session.routing.remote_seated()
    assert session.state is SEATED and heard.seats == 1
    session.routing.close()  # the seat was taken by a rejoin elsewhere
    assert session.state is FREE and heard.closed


def test_the_transitions_table_is_total_and_gone_is_final() -> None:
    for state in SessionState:
        assert TRANSITIONS[state, Step.LEAVE] is GONE
    for step in Step:
        assert TRANSITIONS[GONE, step] is GONE
    assert TRANSITIONS[FREE, Step.ASK] is ASKED and TRANSITIONS[ASKED, Step.GIVEN] is SEATED
    with pytest.raises(KeyError):  # a seat given that nobody asked for is a bug
        TRANSITIONS[FREE, Step.GIVEN]
