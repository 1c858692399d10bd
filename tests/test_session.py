"""Sessions in a running arena, in memory: what a session adds to a game being played (a rejoin
within the grace, a late reply, a seek's seat fields in its first turn), through a channel that
keeps what it is told, on a hand-wound clock. No sockets, no real waits. Every command and state
of the session itself is tested synchronously, in tests/test_session_protocol.py."""

from __future__ import annotations

import orjson

from server.commands import read
from server.errors import BotError
from server.ladder import TICK_S
from server.match import MatchEnd
from server.session import Client, Session
from tests.golden_files import GOLDEN
from tests.test_match import FIRST_TURN_S, Table, settle, table, tavern_pass
from tests.test_session_protocol import Channel, Heard

GRACE_S = 1.0


def client(tables: Table, address: str = "127.0.0.1") -> tuple[Session, Channel]:
    """A session of a running arena, whose effects are heard on its channel."""
    channel = Channel()
    return Heard(tables.arena, Client(address), channel), channel


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
