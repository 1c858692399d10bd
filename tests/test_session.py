"""Sessions in memory: every client command, its checks and its answers, through a channel that
keeps what it is told, on a hand-wound clock. No sockets, no real waits: each case takes
milliseconds, and what a front end (TCP, a page, another node) adds is only bytes."""

from __future__ import annotations

import orjson

from server.commands import read
from server.errors import BotError
from server.games.base import JsonObject
from server.holdings import SEEK_BURST
from server.ladder import TICK_S
from server.match import MatchEnd, Phase
from server.seat_channel import SeatMessage
from server.session import Client, Session
from tests.golden_files import GOLDEN
from tests.test_match import FIRST_TURN_S, Table, settle, table, tavern_pass

GRACE_S = 1.0


class Channel:
    """A client as the session sees it: what it was sent, refused and told."""

    def __init__(self) -> None:
        self.messages: list[JsonObject] = []
        self.refused: list[str] = []
        self.seats = 0
        self.closed = False

    def send(self, message: SeatMessage) -> None:
        self.messages.append(message.body)

    def send_data(self, data: bytes) -> None:
        raise AssertionError("only seats played on another node arrive encoded")

    def error(self, message: str, reason: str | None) -> None:
        self.messages.append({"type": "error", "message": message, "reason": reason})

    def refuse(self, message: str, reason: str) -> None:
        self.refused.append(message)

    def seated(self) -> None:
        self.seats += 1

    def close(self) -> None:
        self.closed = True

    def kinds(self) -> list[str]:
        return [str(message["type"]) for message in self.messages]

    def errors(self) -> list[str]:
        return [str(m["message"]) for m in self.messages if m["type"] == "error"]

    def last(self, kind: str) -> JsonObject:
        return next(m for m in reversed(self.messages) if m["type"] == kind)


def client(tables: Table, address: str = "127.0.0.1") -> tuple[Session, Channel]:
    channel = Channel()
    return Session(tables.arena, Client(address), channel), channel


async def test_create_then_two_joins_by_id_start_a_game() -> None:
    async with table() as tables:
        maker, made = client(tables)
        maker.handle(read({"type": "create-simulation"}))
        (ready,) = made.messages
        assert ready["type"] == "ready" and made.seats == 0  # the creator does not sit
        first, first_heard = client(tables)
        second, second_heard = client(tables)
        simulation_id = ready["simulationId"]
        first.handle(read({"type": "join-simulation", "nick": "a", "simulationId": simulation_id}))
        second.handle(read({"type": "join-simulation", "nick": "b", "simulationId": simulation_id}))
        await settle()
        assert first_heard.seats == second_heard.seats == 1
        assert first_heard.kinds() == ["game-info", "turn"]
        assert second_heard.kinds() == ["game-info"]
        assert first.in_game and second.in_game
        # A move goes to the seat the session holds.
        first.handle(read(tavern_pass(first_heard.last("turn"), "team1")))
        assert second_heard.kinds()[-1] == "turn"


async def test_every_refused_command_is_one_error_and_changes_nothing() -> None:
    async with table() as tables:
        session, heard = client(tables)
        session.handle(read({"type": "player-turn", "actions": []}))
        session.handle(read({"type": "join-simulation", "simulationId": "nosuch1"}))
        session.handle(read({"type": "join-simulation", "game": "chess"}))
        session.handle(read({"type": "create-simulation", "seed": -1}))
        session.handle(read({"type": "create-simulation", "seed": True}))
        session.handle(read({"type": "rejoin", "simulationId": "nosuch1", "token": "x"}))
        session.handle(read({"type": "dance"}))
        thud = tables.arena.open("thud")
        session.handle(read({"type": "join-simulation", "simulationId": thud.id, "game": "tavern"}))
        assert heard.errors() == [
            BotError.NOT_IN_A_GAME,
            BotError.WRONG_SIMULATION_ID,
            BotError.UNKNOWN_GAME,
            BotError.INVALID_SEED,
            BotError.INVALID_SEED,
            BotError.WRONG_SIMULATION_ID,
            BotError.UNKNOWN_MESSAGE_TYPE,
            BotError.WRONG_GAME,
        ]
        assert heard.seats == 0 and session.seat is None and heard.refused == []
        assert thud.phase is Phase.WAITING and thud.seats == [None, None]


async def test_one_game_per_client_and_a_bounded_number_of_creates() -> None:
    async with table(max_simulations_per_connection=2) as tables:
        session, heard = client(tables)
        session.handle(read({"type": "join-simulation", "nick": "a"}))  # random: waits in a new one
        session.handle(read({"type": "join-simulation", "nick": "a"}))
        assert heard.errors() == [BotError.ALREADY_IN_A_GAME]
        maker, made = client(tables)
        for _ in range(3):
            maker.handle(read({"type": "create-simulation"}))
        assert made.kinds() == ["ready", "ready"]
        assert made.refused == [BotError.TOO_MANY_SIMULATIONS]


async def test_random_joins_meet_and_an_abandoned_one_is_dropped() -> None:
    async with table() as tables:
        lonely, _ = client(tables)
        lonely.handle(read({"type": "join-simulation", "nick": "a", "game": "thud"}))
        assert lonely.seat is not None
        (waiting,) = [m for m in tables.arena.matches.values() if m.codec.name == "thud"]
        lonely.closed()  # nobody else came: the simulation it opened goes with it
        assert tables.arena.get(waiting.id) is None
        first, first_heard = client(tables)
        second, second_heard = client(tables)
        first.handle(read({"type": "join-simulation", "nick": "a", "game": "thud"}))
        second.handle(read({"type": "join-simulation", "nick": "b", "game": "thud"}))
        await settle()
        assert (
            first_heard.last("game-info")["simulationId"]
            == (second_heard.last("game-info")["simulationId"])
        )


async def test_a_dropped_client_rejoins_within_the_grace_or_forfeits_after_it() -> None:
    # The grace is shorter than the first turn's time, which runs meanwhile.
    async with table(reconnect_grace_ms=round(GRACE_S * 1000)) as tables:
        first, first_heard = client(tables)
        second, second_heard = client(tables)
        first.handle(read({"type": "join-simulation", "nick": "a", "opponentNotices": True}))
        second.handle(read({"type": "join-simulation", "nick": "b"}))
        await settle()
        token = second_heard.last("game-info")["token"]
        simulation_id = second_heard.last("game-info")["simulationId"]
        second.closed()
        assert first_heard.last("opponent-gone")["seconds"] == GRACE_S
        tables.clock.advance(GRACE_S - 0.001)
        back, back_heard = client(tables)
        back.handle(read({"type": "rejoin", "simulationId": simulation_id, "token": "wrong"}))
        assert back_heard.errors() == [BotError.INVALID_TOKEN]
        back.handle(read({"type": "rejoin", "simulationId": simulation_id, "token": token}))
        assert back_heard.seats == 1 and back_heard.kinds()[-1] == "game-info"
        assert first_heard.kinds()[-1] == "opponent-back"
        # Gone again, for good this time: the grace runs out to the millisecond.
        back.closed()
        tables.clock.advance(GRACE_S - 0.001)
        await settle()
        assert first_heard.kinds()[-1] == "opponent-gone"
        tables.clock.advance(0.001)
        await settle()
        assert first_heard.kinds()[-1] == "win-game"
        (finished,) = tables.finished
        assert finished.outcome.reason == MatchEnd.PLAYER_DISCONNECTED


async def test_a_late_reply_through_the_session_is_stale_not_played() -> None:
    async with table() as tables:
        first, first_heard = client(tables)
        second, second_heard = client(tables)
        first.handle(read({"type": "join-simulation", "nick": "a"}))
        second.handle(read({"type": "join-simulation", "nick": "b"}))
        await settle()
        turn = first_heard.last("turn")
        tables.clock.advance(tables.arena.config.first_turn_timeout_ms / 1000)
        assert first_heard.errors() == [BotError.TURN_TIMEOUT]
        # Team1 passed at its timeout and team2 is on move: team1's late reply is not played.
        first.handle(read(tavern_pass(turn, "team1")))
        assert first_heard.errors()[-1] == BotError.STALE_TURN
        assert second_heard.last("turn")["turn"] == 2
        second.handle(read(tavern_pass(second_heard.last("turn"), "team2")))
        assert first_heard.last("turn")["turn"] == 3


async def test_simulations_whose_creator_left_do_not_count_against_its_address() -> None:
    """An address may have two simulations waiting. Those whose creator's connection closed
    no longer count (before: they did until they expired, ten minutes later, and every client
    of that address was refused meanwhile); they stay joinable by id. The address keeps at most
    two such: for each one more, the oldest that nobody is in is dropped."""
    async with table(max_waiting_simulations_per_address=2) as tables:
        maker, made = client(tables, "127.7.7.7")
        for _ in range(3):
            maker.handle(read({"type": "create-simulation"}))
        assert made.kinds() == ["ready", "ready", "error"]
        assert made.errors() == [BotError.TOO_MANY_SIMULATIONS]
        first, second = (str(m["simulationId"]) for m in made.messages[:2])
        neighbour, heard = client(tables, "127.7.7.7")
        neighbour.handle(read({"type": "create-simulation"}))
        assert heard.errors() == [BotError.TOO_MANY_SIMULATIONS]  # the creator is still here
        maker.closed()
        neighbour.handle(read({"type": "create-simulation"}))
        neighbour.handle(read({"type": "create-simulation"}))
        assert heard.kinds()[-2:] == ["ready", "ready"]
        third, fourth = (str(m["simulationId"]) for m in heard.messages[-2:])
        neighbour.handle(read({"type": "create-simulation"}))  # the neighbour's own two count
        assert heard.errors()[-1] == BotError.TOO_MANY_SIMULATIONS
        friend, friend_heard = client(tables, "127.8.8.8")
        friend.handle(read({"type": "join-simulation", "nick": "f", "simulationId": first}))
        assert friend_heard.kinds() == ["game-info"]  # what a creator left can still be joined
        neighbour.closed()
        arena = tables.arena
        assert arena.get(second) is None and arena.get(third) is None  # the oldest empty ones
        assert arena.get(first) is not None and arena.get(fourth) is not None
        again, again_heard = client(tables, "127.7.7.7")
        for _ in range(2):
            again.handle(read({"type": "create-simulation"}))
        assert again_heard.kinds() == ["ready", "ready"]


async def test_a_seek_takes_the_seat_fields_a_join_takes() -> None:
    """A seek's ``nick``, ``names`` and ``opponentNotices`` are its seat's, as a join's (issue 30,
    item 16): the paired game's first turn is the golden one of two joins with these names."""
    async with table(reconnect_grace_ms=round(GRACE_S * 1000)) as tables:
        first, first_heard = client(tables)
        second, second_heard = client(tables)
        names = ["Carawebo", "Pantuflo", "Chistaburras", "Pontato", "Jhonny Tablas"]
        first.handle(read({"type": "seek", "game": "tavern", "nick": "Dummy", "names": names}))
        tables.clock.advance(0.01)  # the first seeker waited longest: it takes the first seat
        rival = {"nick": "Rival", "names": ["Rhun", "Balgairen", "Tavio"], "opponentNotices": True}
        second.handle(read({"type": "seek", "game": "tavern", **rival}))
        tables.clock.advance(TICK_S)  # the pool's next pass
        await settle()
        assert first_heard.kinds() == ["game-info", "turn"]
        golden = orjson.loads((GOLDEN / "tavern" / "turn-initial.json").read_bytes())
        assert first_heard.last("turn") == {**golden, "timeoutMs": FIRST_TURN_S * 1000}
        first.closed()
        assert second_heard.last("opponent-gone") == {"type": "opponent-gone", "seconds": GRACE_S}


async def test_an_address_seeks_at_most_its_rate_after_a_burst() -> None:
    """A seek flood from one address (each seek paired as fast as it comes, opening a game
    each) is paced: after a burst of ``SEEK_BURST``, ``seeksPerAddressPerMinute`` (here 60, one
    a second); another address is not slowed, and neither is a seek once its time has come."""
    async with table(seeks_per_address_per_minute=60) as tables:
        seekers = [client(tables, "127.7.7.7") for _ in range(SEEK_BURST + 1)]
        for seeker, _ in seekers:
            seeker.handle(read({"type": "seek", "game": "thud", "nick": "flood"}))
        assert [heard.errors() for _, heard in seekers[:SEEK_BURST]] == [[]] * SEEK_BURST
        refused = seekers[-1][1]
        assert refused.errors() == [BotError.TOO_MANY_SEEKS]
        assert refused.messages[-1]["reason"] == (
            "at most 60 seeks a minute from one address: try again in 1 s"
        )
        other, other_heard = client(tables, "127.8.8.8")
        other.handle(read({"type": "seek", "game": "thud", "nick": "other"}))
        assert other_heard.errors() == []
        tables.clock.advance(1.0)
        again, again_heard = client(tables, "127.7.7.7")
        again.handle(read({"type": "seek", "game": "thud", "nick": "flood"}))
        assert again_heard.errors() == []
