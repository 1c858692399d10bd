"""The session as a protocol object (server.session): commands in, what it says to its client
and the effects it asks for out, and its seat's states, all synchronous: no event loop, no
settle(), an arena that is not even running. A match whose seats are all taken is not played
here (``Unplayed`` lists the matches started): its play is the match's
(tests/test_match.py), and what the session adds to it is tested in tests/test_session.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from server.arena import Arena, Standing
from server.commands import Cancel, Command, Leave, Register, read
from server.config import ArenaConfig
from server.errors import BotError, Rejected
from server.games.base import JsonObject
from server.holdings import SEEK_BURST
from server.identity import RegisteredBot, hash_key, new_key
from server.ladder import TICK_S
from server.match import Match, Phase
from server.session import (
    NO_EFFECTS,
    TRANSITIONS,
    CheckKey,
    Client,
    Effect,
    Error,
    Refuse,
    Seated,
    Send,
    Session,
    SessionState,
    Step,
    perform,
)
from server.session.keys import MAX_HELD, Outcome, Proof, Registered
from tests.clock import FakeClock
from tests.conftest import test_config
from tests.test_match import Inbox

FREE, ASKED, SEATED_STATE, GONE = SessionState


class Channel(Inbox):
    """A client as the session sees it: what it was sent (a match's seat channel, ``Inbox``),
    refused and told."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: list[str] = []
        self.seats = 0

    def send_data(self, data: bytes) -> None:
        raise AssertionError("only seats played on another node arrive encoded")

    def error(self, message: str, reason: str | None) -> None:
        self.messages.append({"type": "error", "message": message, "reason": reason})

    def refuse(self, message: str, reason: str) -> None:
        self.refused.append(message)

    def seated(self) -> None:
        self.seats += 1


class Heard(Session):
    """A session driven as its front end drives it, in memory: what it says is carried out on
    its channel at once (``perform``, as ``carry_out`` does); the key checks it asks for are
    returned, for the test to answer (or spawn)."""

    def handle(self, command: Command | Rejected) -> Sequence[Effect]:
        return self._heard(super().handle(command))

    def checked(self, outcome: Outcome) -> Sequence[Effect]:
        return self._heard(super().checked(outcome))

    def _heard(self, effects: Sequence[Effect]) -> list[Effect]:
        checks: list[Effect] = []
        for effect in effects:
            if isinstance(effect, CheckKey):
                checks.append(effect)
            else:
                perform(self.channel, effect)
        return checks


class Unplayed(Arena):
    """The arena's side, faked: it is not running, and a match whose seats are all taken is
    listed as started instead of played (its play is the match's: tests/test_match.py)."""

    def __init__(self, config: ArenaConfig, clock: FakeClock) -> None:
        super().__init__(config, clock)
        self.started: list[Match] = []

    def _start(self, match: Match) -> None:
        self._no_longer_waiting(match)  # as the arena does before it plays one
        self.started.append(match)


class Here:
    """An arena that is not running, on a hand-wound clock: the matches its sessions filled are
    listed, not played."""

    def __init__(self, **settings: Any) -> None:
        self.clock = FakeClock()
        self.arena = Unplayed(test_config(**settings), self.clock)
        self.started = self.arena.started


def arena(**settings: Any) -> Arena:
    return Here(**settings).arena


def session_of(where: Arena, address: str = "127.0.0.1") -> tuple[Session, Channel]:
    """A session whose effects are heard on its channel."""
    channel = Channel()
    return Heard(where, Client(address), channel), channel


def bare(where: Arena, address: str = "127.0.0.1") -> tuple[Session, Channel]:
    """A session whose effects the test reads (its channel hears only the match)."""
    channel = Channel()
    return Session(where, Client(address), channel), channel


def hand(session: Session, message: JsonObject) -> Sequence[Effect]:
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
    assert session.state is SEATED_STATE and session.in_game and heard.seats == 1
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
    assert session.state is SEATED_STATE and match.seed == 9 and heard.seats == 1
    hand(session, {"type": "player-turn", "move": {"from": [6, 0], "to": [6, 1]}})
    assert heard.errors() == [BotError.GAME_NOT_STARTED]
    session.handle(Leave())
    assert here.matches == {}  # a random join's simulation, left by everyone, is dropped


def test_every_refused_command_is_one_error_and_changes_nothing() -> None:
    here = arena()
    session, heard = session_of(here)
    for message in (
        {"type": "player-turn", "actions": []},
        {"type": "join-simulation", "simulationId": "nosuch1"},
        {"type": "join-simulation", "game": "chess"},
        {"type": "create-simulation", "seed": -1},
        {"type": "create-simulation", "seed": True},
        {"type": "rejoin", "simulationId": "nosuch1", "token": "t"},
        {"type": "dance"},
        {"type": "accept", "challenge": "c9"},
        {"type": "decline", "challenge": "c9"},
        {"type": "challenge", "opponent": "Orla"},
        {"type": "seek", "rated": True},
    ):
        assert hand(session, message) == []
    assert session.state is FREE and not session.seeking and here.matches == {}
    thud = here.open("thud")
    hand(session, {"type": "join-simulation", "simulationId": thud.id, "game": "tavern"})
    assert heard.errors() == [
        BotError.NOT_IN_A_GAME,
        BotError.WRONG_SIMULATION_ID,
        BotError.UNKNOWN_GAME,
        BotError.INVALID_SEED,
        BotError.INVALID_SEED,
        BotError.WRONG_SIMULATION_ID,
        BotError.UNKNOWN_MESSAGE_TYPE,
        BotError.UNKNOWN_CHALLENGE,
        BotError.UNKNOWN_CHALLENGE,
        BotError.INVALID_CHALLENGE,
        BotError.INVALID_SEEK,
        BotError.WRONG_GAME,
    ]
    assert heard.seats == 0 and session.seat is None and heard.refused == []
    assert session.state is FREE and not session.seeking
    assert thud.phase is Phase.WAITING and thud.seats == [None, None]


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

    def __init__(self, found: str | None = None) -> None:
        self.asked: list[tuple[str, bool]] = []
        self.found = found  # the waiting simulation another node has, for a random join

    def seat(
        self, peer: object, simulation_id: str, message: JsonObject, rejoin: bool, kind: str = "bot"
    ) -> Any:
        self.asked.append((simulation_id, rejoin))
        return Asked()

    def present(self, bot: str) -> None:
        """Never asked here."""

    def waiting(self, game: str, fields: JsonObject) -> str | None:
        return self.found

    def random_join(self, peer: object, game: str, message: JsonObject) -> Any:
        self.asked.append(("claim", False))
        return Asked()


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
    assert session.state is SEATED_STATE and heard.seats == 1
    session.routing.close()  # the seat was taken by a rejoin elsewhere
    assert session.state is FREE and heard.closed


def test_the_transitions_table_is_total_and_gone_is_final() -> None:
    for state in SessionState:
        assert TRANSITIONS[state, Step.LEAVE] is GONE
    for step in Step:
        assert TRANSITIONS[GONE, step] is GONE
    assert TRANSITIONS[FREE, Step.ASK] is ASKED and TRANSITIONS[ASKED, Step.GIVEN] is SEATED_STATE
    with pytest.raises(KeyError):  # a seat given that nobody asked for is a bug
        TRANSITIONS[FREE, Step.GIVEN]


# --- what the session says: effects, carried out by its front end -------------------------------
def test_what_the_session_says_is_returned_not_sent() -> None:
    """A command's answers are data the front end carries out: the channel hears nothing of the
    session's own until then (only what a match says to its seat goes straight to it)."""
    here = arena()
    session, heard = bare(here)
    (ready,) = hand(session, {"type": "create-simulation", "game": "thud", "seed": 3})
    assert isinstance(ready, Send) and ready.message.kind == "ready" and heard.messages == []
    simulation_id = ready.message.body["simulationId"]
    (refused,) = hand(session, {"type": "dance"})
    assert isinstance(refused, Error) and refused.message == BotError.UNKNOWN_MESSAGE_TYPE
    joined = hand(session, {"type": "join-simulation", "simulationId": simulation_id, "nick": "a"})
    assert joined == (Seated(),) and heard.kinds() == ["game-info"]  # the match's own message
    assert hand(session, {"type": "join-simulation", "nick": "a"}) == (
        Error(BotError.ALREADY_IN_A_GAME, "one game per connection"),
    )
    assert heard.kinds() == ["game-info"]


def test_a_move_builds_no_effects() -> None:
    """The hot path: a seat's move hands the match the message and returns the one shared empty
    answer; whatever the match answers goes straight to the seat's channel."""
    here = arena()
    session, heard = bare(here)
    hand(session, {"type": "join-simulation", "game": "thud", "nick": "a"})
    moved = hand(session, {"type": "player-turn", "move": {"from": [6, 0], "to": [6, 1]}})
    assert moved is NO_EFFECTS
    assert heard.kinds() == ["game-info", "error"]  # the match's: the game has not started


def test_held_commands_are_answered_in_order_around_a_seat() -> None:
    """A registration checked, then a refusal and a join held meanwhile: the client hears the
    registration and the refusal before the match's game-info, as they came."""
    here = arena()
    session, heard = bare(here)
    assert session.handle(Register("Grimli")) == (CheckKey(Register("Grimli")),)
    hand(session, {"type": "dance"})
    hand(session, {"type": "join-simulation", "game": "thud", "nick": "guest"})
    assert heard.messages == []
    rest = session.checked(Registered("Grimli", "the-key"))
    assert heard.kinds() == ["registered", "error", "game-info"] and rest == (Seated(),)


def test_a_refusal_past_a_limit_is_a_refuse_effect() -> None:
    here = arena(max_simulations_per_connection=1)
    session, heard = bare(here)
    hand(session, {"type": "create-simulation"})
    assert hand(session, {"type": "create-simulation"}) == (
        Refuse(BotError.TOO_MANY_SIMULATIONS, "at most 1 per connection"),
    )
    assert heard.messages == [] and heard.refused == []


def test_an_answer_from_elsewhere_is_said_at_once() -> None:
    """A seek paired by the pool is no command of this client's: its seat is taken, and said,
    when the pairing comes."""
    here = Here()
    first, first_heard = session_of(here.arena)
    second, second_heard = session_of(here.arena)
    hand(first, {"type": "seek", "game": "thud", "nick": "a"})
    hand(second, {"type": "seek", "game": "thud", "nick": "b"})
    here.clock.advance(TICK_S)  # the pool's next pass
    assert first_heard.seats == second_heard.seats == 1
    assert first_heard.kinds() == second_heard.kinds() == ["game-info"]
    (started,) = here.started
    assert first.state is second.state is SEATED_STATE and started.seating.is_full()


# --- every command, synchronously (these were async, with settle()) ------------------------------
def test_create_then_two_joins_by_id_start_a_game() -> None:
    here = Here()
    maker, made = session_of(here.arena)
    hand(maker, {"type": "create-simulation"})
    (ready,) = made.messages
    assert ready["type"] == "ready" and made.seats == 0  # the creator does not sit
    first, first_heard = session_of(here.arena)
    second, second_heard = session_of(here.arena)
    simulation_id = ready["simulationId"]
    hand(first, {"type": "join-simulation", "nick": "a", "simulationId": simulation_id})
    assert here.started == []
    hand(second, {"type": "join-simulation", "nick": "b", "simulationId": simulation_id})
    (started,) = here.started
    assert started.id == simulation_id and first_heard.seats == second_heard.seats == 1
    assert first_heard.kinds() == second_heard.kinds() == ["game-info"]
    assert first.in_game and second.in_game
    assert here.arena.waiting("tavern", {}) is None  # it waits for nobody any more
    # A move goes to the seat the session holds (not played yet: the match answers it).
    hand(first, {"type": "player-turn", "turn": 1, "actions": []})
    assert first_heard.errors() == [BotError.GAME_NOT_STARTED]


def test_one_game_per_client_and_a_bounded_number_of_creates() -> None:
    here = arena(max_simulations_per_connection=2)
    session, heard = session_of(here)
    hand(session, {"type": "join-simulation", "nick": "a"})  # random: waits in a new one
    hand(session, {"type": "join-simulation", "nick": "a"})
    assert heard.errors() == [BotError.ALREADY_IN_A_GAME]
    maker, made = session_of(here)
    for _ in range(3):
        hand(maker, {"type": "create-simulation"})
    assert made.kinds() == ["ready", "ready"]
    assert made.refused == [BotError.TOO_MANY_SIMULATIONS]


def test_random_joins_meet_and_an_abandoned_one_is_dropped() -> None:
    here = Here()
    lonely, _ = session_of(here.arena)
    hand(lonely, {"type": "join-simulation", "nick": "a", "game": "thud"})
    assert lonely.seat is not None
    (waiting,) = [m for m in here.arena.matches.values() if m.codec.name == "thud"]
    lonely.handle(Leave())  # nobody else came: the simulation it opened goes with it
    assert here.arena.get(waiting.id) is None
    first, first_heard = session_of(here.arena)
    second, second_heard = session_of(here.arena)
    hand(first, {"type": "join-simulation", "nick": "a", "game": "thud"})
    hand(second, {"type": "join-simulation", "nick": "b", "game": "thud"})
    simulation_id = first_heard.last("game-info")["simulationId"]
    assert second_heard.last("game-info")["simulationId"] == simulation_id
    assert [match.id for match in here.started] == [simulation_id]


def test_simulations_whose_creator_left_do_not_count_against_its_address() -> None:
    """An address may have two simulations waiting. Those whose creator's connection closed
    no longer count (before: they did until they expired, ten minutes later, and every client
    of that address was refused meanwhile); they stay joinable by id. The address keeps at most
    two such: for each one more, the oldest that nobody is in is dropped."""
    here = arena(max_waiting_simulations_per_address=2)
    maker, made = session_of(here, "127.7.7.7")
    for _ in range(3):
        hand(maker, {"type": "create-simulation"})
    assert made.kinds() == ["ready", "ready", "error"]
    assert made.errors() == [BotError.TOO_MANY_SIMULATIONS]
    first, second = (str(m["simulationId"]) for m in made.messages[:2])
    neighbour, heard = session_of(here, "127.7.7.7")
    hand(neighbour, {"type": "create-simulation"})
    assert heard.errors() == [BotError.TOO_MANY_SIMULATIONS]  # the creator is still here
    maker.handle(Leave())
    hand(neighbour, {"type": "create-simulation"})
    hand(neighbour, {"type": "create-simulation"})
    assert heard.kinds()[-2:] == ["ready", "ready"]
    third, fourth = (str(m["simulationId"]) for m in heard.messages[-2:])
    hand(neighbour, {"type": "create-simulation"})  # the neighbour's own two count
    assert heard.errors()[-1] == BotError.TOO_MANY_SIMULATIONS
    friend, friend_heard = session_of(here, "127.8.8.8")
    hand(friend, {"type": "join-simulation", "nick": "f", "simulationId": first})
    assert friend_heard.kinds() == ["game-info"]  # what a creator left can still be joined
    neighbour.handle(Leave())
    assert here.get(second) is None and here.get(third) is None  # the oldest empty ones
    assert here.get(first) is not None and here.get(fourth) is not None
    again, again_heard = session_of(here, "127.7.7.7")
    for _ in range(2):
        hand(again, {"type": "create-simulation"})
    assert again_heard.kinds() == ["ready", "ready"]


def test_an_address_seeks_at_most_its_rate_after_a_burst() -> None:
    """A seek flood from one address (each seek paired as fast as it comes, opening a game
    each) is paced: after a burst of ``SEEK_BURST``, ``seeksPerAddressPerMinute`` (here 60, one
    a second); another address is not slowed, and neither is a seek once its time has come."""
    here = Here(seeks_per_address_per_minute=60)
    seekers = [session_of(here.arena, "127.7.7.7") for _ in range(SEEK_BURST + 1)]
    for seeker, _ in seekers:
        hand(seeker, {"type": "seek", "game": "thud", "nick": "flood"})
    assert [heard.errors() for _, heard in seekers[:SEEK_BURST]] == [[]] * SEEK_BURST
    refused = seekers[-1][1]
    assert refused.errors() == [BotError.TOO_MANY_SEEKS]
    assert refused.messages[-1]["reason"] == (
        "at most 60 seeks a minute from one address: try again in 1 s"
    )
    other, other_heard = session_of(here.arena, "127.8.8.8")
    hand(other, {"type": "seek", "game": "thud", "nick": "other"})
    assert other_heard.errors() == []
    here.clock.advance(1.0)
    again, again_heard = session_of(here.arena, "127.7.7.7")
    hand(again, {"type": "seek", "game": "thud", "nick": "flood"})
    assert again_heard.errors() == []


def present(here: Arena, bot: str, message: JsonObject) -> tuple[Session, Channel]:
    """A session whose command naming ``bot`` was checked (the key check's outcome by hand)."""
    session, heard = session_of(here)
    command = read({**message, "bot": bot, "key": "k"})
    assert session.handle(command) == [CheckKey(command)]  # type: ignore[arg-type]
    session.checked(Proof(command, bot, Standing(games=0)))  # type: ignore[arg-type]
    return session, heard


def test_a_challenge_is_offered_then_accepted_or_declined() -> None:
    """Challenge, accept and decline, synchronously: the challenged bot is offered it at once;
    accepting opens the match and seats both (the challenger as the answer comes); declining
    tells the challenger why."""
    here = Here()
    here.arena.roster.update(
        [RegisteredBot(name, hash_key(new_key())) for name in ("Grimli", "Orla", "Thrain")]
    )
    orla, orla_heard = present(here.arena, "Orla", {"type": "seek", "game": "thud"})
    grimli, grimli_heard = present(
        here.arena, "Grimli", {"type": "challenge", "game": "thud", "opponent": "Orla"}
    )
    assert grimli_heard.kinds() == ["challenge-sent"] and orla.seeking
    offered = orla_heard.last("challenge")
    assert (offered["from"], offered["game"]) == ("Grimli", "thud")
    hand(orla, {"type": "accept", "challenge": offered["challenge"]})
    (started,) = here.started
    assert orla.state is grimli.state is SEATED_STATE and not orla.seeking
    assert [seat.bot for seat in started.view().players if seat is not None] == ["Grimli", "Orla"]
    assert orla_heard.seats == grimli_heard.seats == 1
    thrain, thrain_heard = present(here.arena, "Thrain", {"type": "seek", "game": "thud"})
    thrain.handle(Cancel())  # a page's: no wire name
    assert not thrain.seeking and thrain_heard.errors() == []
    again, again_heard = present(
        here.arena, "Grimli", {"type": "challenge", "game": "thud", "opponent": "Thrain"}
    )
    asked = thrain_heard.last("challenge")["challenge"]
    hand(thrain, {"type": "decline", "challenge": asked, "reason": "busy"})
    declined = again_heard.last("challenge-declined")
    assert (declined["challenge"], declined["reason"]) == (asked, "busy")
    assert again.state is FREE and here.started == [started]


def test_a_random_join_tries_the_other_nodes_then_the_claim_then_here() -> None:
    """A random join that finds its match on another node asks for that seat; refused (taken
    meanwhile), it goes through the nodes' claim; refused again, it opens a simulation here."""
    here, nodes = Here(), Elsewhere(found="far1234")
    here.arena.elsewhere = nodes  # type: ignore[assignment]
    session, heard = session_of(here.arena)
    hand(session, {"type": "join-simulation", "game": "thud", "nick": "a"})
    assert session.state is ASKED and nodes.asked == [("far1234", False)]
    session.routing.remote_refused(BotError.SIMULATION_FULL, None)
    assert session.state is ASKED and nodes.asked[-1] == ("claim", False)
    session.routing.remote_refused(BotError.SIMULATION_FULL, None)
    (match,) = here.arena.matches.values()
    assert session.state is SEATED_STATE and heard.kinds() == ["game-info"] and heard.seats == 1
    assert heard.errors() == [] and match.codec.name == "thud"
    # It leaves: the simulation it opened, which nobody else joined, goes with it.
    session.handle(Leave())
    assert session.state is GONE and here.arena.matches == {}


def test_the_nodes_claim_may_open_the_simulation_here_with_the_id_agreed() -> None:
    here, nodes = Here(), Elsewhere()
    here.arena.elsewhere = nodes  # type: ignore[assignment]
    session, heard = session_of(here.arena)
    hand(session, {"type": "join-simulation", "game": "thud", "nick": "a"})
    assert session.state is ASKED and nodes.asked == [("claim", False)]
    session.routing.open_here("agreed1")
    assert session.state is SEATED_STATE and heard.last("game-info")["simulationId"] == "agreed1"
