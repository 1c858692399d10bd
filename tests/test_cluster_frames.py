"""A node's inbox: each kind of frame goes to its handler (``server.cluster.inbox``), and a bad
frame costs only itself; then a real node, in this process on a real redis-server, answering
frames of every kind published by a node played by the test.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Collection
from typing import Any

import orjson
import pytest
from redis.asyncio import Redis
from redis.asyncio.client import PubSub

from server.arena import Arena
from server.cluster import Deliver, Unanswered, keys, requests, values, wire
from server.cluster.claims import Claims
from server.cluster.following import Following
from server.cluster.inbox import Handler, Inbox
from server.cluster.link import Link
from server.cluster.node import ClusterNode
from server.cluster.repairs import Repairs
from server.cluster.seats import SeatsAsked, SeatsGiven
from server.errors import BotError
from server.games.base import JsonObject
from server.match_events import TurnPlayed
from server.match_options import SeatRequest
from server.match_views import TurnResult
from tests.clock import FakeClock
from tests.conftest import test_config
from tests.services import RedisServer
from tests.test_match import Inbox as Channel
from tests.test_match import settle, tavern_pass

SENDER = "0badcafe"  # the node the test plays
WAIT_S = 10.0

# --- the inbox alone -----------------------------------------------------------------------------
Handled = tuple[bytes, str, int, bytes]  # kind, sender, connection, payload


def recording_inbox(
    fail: dict[bytes, Exception] | None = None,
) -> tuple[Inbox, list[Handled]]:
    """An inbox whose handlers record what they are handed (and raise, for the kinds in
    ``fail``)."""
    handled: list[Handled] = []

    def handler(kind: bytes) -> Handler:
        def handle(sender: str, connection: int, payload: bytes) -> None:
            handled.append((kind, sender, connection, payload))
            if fail and kind in fail:
                raise fail[kind]

        return handle

    table = {kind: handler(kind) for kind in wire.KINDS}
    return Inbox(table, values.Complaints("0123abcd")), handled


def batch(*frames: tuple[bytes, int, bytes]) -> bytes:
    return SENDER.encode() + b"".join(wire.frame(*frame) for frame in frames)


def test_each_kind_of_frame_goes_to_its_handler_in_order() -> None:
    inbox, handled = recording_inbox()
    frames = [(kind, number, b"payload %d" % number) for number, kind in enumerate(wire.KINDS)]
    inbox.received(batch(*frames))
    assert handled == [(kind, SENDER, number, payload) for kind, number, payload in frames]


def test_a_frame_of_an_unknown_kind_costs_only_itself(caplog: pytest.LogCaptureFixture) -> None:
    inbox, handled = recording_inbox()
    inbox.received(batch((wire.JOIN, 1, b"a"), (b"Z", 2, b"b"), (wire.MOVE, 3, b"c")))
    assert handled == [(wire.JOIN, SENDER, 1, b"a"), (wire.MOVE, SENDER, 3, b"c")]
    assert [record.getMessage() for record in caplog.records] == [
        f"node 0123abcd: frames from {SENDER}: frames dropped: 1 "
        "(a frame of the unknown kind b'Z'); skipped"
    ]


def test_a_frame_cut_short_costs_only_itself_and_what_follows(
    caplog: pytest.LogCaptureFixture,
) -> None:
    inbox, handled = recording_inbox()
    whole = batch((wire.DATA, 1, b"first"), (wire.CLOSE, 2, b""))
    inbox.received(whole + wire.HEADER.pack(wire.DATA, 3, 100) + b"only this")
    inbox.received(whole + b"\x00\x01")  # a header cut short
    assert handled == 2 * [(wire.DATA, SENDER, 1, b"first"), (wire.CLOSE, SENDER, 2, b"")]
    assert "a frame of 100 bytes with 9 left" in caplog.text  # said once a minute per sender
    assert len(caplog.records) == 1


def test_a_frame_that_does_not_read_or_fails_costs_only_itself(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fail = {wire.JOIN: values.BadValue("not JSON"), wire.MOVE: RuntimeError("a bug")}
    inbox, handled = recording_inbox(fail)
    frames = [(wire.JOIN, 1, b"x"), (wire.MOVE, 2, b"y"), (wire.LEAVE, 3, b"")]
    inbox.received(batch(*frames))
    assert handled == [(kind, SENDER, number, payload) for kind, number, payload in frames]
    (said,) = caplog.records  # both under the sender's key: the first one is said
    assert (
        said.getMessage() == f"node 0123abcd: frames from {SENDER}: a frame b'J': not JSON; skipped"
    )
    caplog.clear()
    other = recording_inbox(fail)[0]
    other.received(batch((wire.MOVE, 2, b"y")))
    (bug,) = caplog.records
    assert "a frame b'M' failed" in bug.getMessage() and bug.exc_info is not None


def test_a_batch_that_is_not_a_node_s_is_dropped_whole(caplog: pytest.LogCaptureFixture) -> None:
    inbox, handled = recording_inbox()
    inbox.received(b"NOTANODE" + wire.frame(wire.DATA, 1, b"x"))
    assert handled == []
    assert "frames from a non-node: frames dropped: 1" in caplog.text


def test_an_inbox_takes_a_handler_for_every_kind_and_no_other() -> None:
    def ignore(sender: str, connection: int, payload: bytes) -> None:
        """A frame's handler that does nothing."""

    complaints = values.Complaints("0123abcd")
    table = dict.fromkeys(wire.KINDS, ignore)
    del table[wire.SPECTATE]
    with pytest.raises(ValueError, match="a handler for each kind"):
        Inbox(table, complaints)
    with pytest.raises(ValueError, match="a handler for each kind"):
        Inbox({**table, wire.SPECTATE: ignore, b"Z": ignore}, complaints)


# --- a seat's link, both ends in memory ----------------------------------------------------------
OWNER, HOLDER = "0a0a0a0a", "0b0b0b0b"  # the node playing the match, the one holding the bot
Sent = tuple[str, bytes, int, bytes]  # to which node, kind, connection, payload


class Wire(Link):
    """A node's link in memory: what the node sends stays here until the test delivers it (or
    loses it, as a Redis that stops does with the frames in flight)."""

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self._up = asyncio.Event()
        self.up = True
        self._tasks = asyncio.TaskGroup()  # never entered: the seats only ask if there is one
        self.sent: list[Sent] = []

    def send(self, node: str, kind: bytes, connection: int, payload: bytes) -> None:
        self.sent.append((node, kind, connection, payload))

    def taken(self) -> list[Sent]:
        sent, self.sent = self.sent, []
        return sent


class Ends:
    """A bot's seat across two nodes in memory: the holder's ``SeatsAsked`` and the owner's
    ``SeatsGiven``, each with its real inbox; the owner's match on a hand-wound clock, its
    other seat played here."""

    def __init__(self, arena: Arena) -> None:
        self.arena = arena
        self.to_owner, self.to_holder = Wire(HOLDER), Wire(OWNER)
        complaints = values.Complaints(HOLDER)
        repairs = Repairs(self.to_owner, complaints)
        following = Following(self.to_owner, repairs)
        self.asked = SeatsAsked(
            self.to_owner, arena, following, Claims(self.to_owner, repairs), grace_s=10.0
        )
        self.given = SeatsGiven(self.to_holder, arena, keep_s=10.0)
        self.holder = Inbox(table_of(self.asked), complaints)
        self.owner = Inbox(table_of(self.given), values.Complaints(OWNER))
        self.match = arena.open("tavern")
        self.here = Channel()
        self.match.seat(self.here, SeatRequest({"nick": "here"}))
        following.directory.put(
            {"simulationId": self.match.id, "game": "tavern", "status": "waiting", "node": OWNER}
            | {"players": [None, None], "free": [1]}
        )
        self.bot = Peer()
        join = {"type": "join-simulation", "game": "tavern", "nick": "there"}
        self.seat = self.asked.seat(self.bot, self.match.id, join, False, "bot")

    def deliver(self) -> None:
        """Every frame sent, both ways, until none is left (bounded)."""
        for _ in range(10):
            if not (self.to_owner.sent or self.to_holder.sent):
                return
            if frames := self.to_owner.taken():
                self.owner.received(HOLDER.encode() + encoded(frames, OWNER))
            if frames := self.to_holder.taken():
                self.holder.received(OWNER.encode() + encoded(frames, HOLDER))
        raise AssertionError("the frames never stop")

    def resume(self) -> None:
        """Both nodes see each other again after a lost link."""
        self.asked.back({OWNER})
        self.given.back({HOLDER})
        self.deliver()

    def lines(self) -> list[JsonObject]:
        """What the bot was sent since the last call."""
        heard, self.bot.heard = self.bot.heard, []
        return [orjson.loads(what[1]) for what in heard if what[0] == "data"]


def encoded(frames: list[Sent], node: str) -> bytes:
    assert {sent[0] for sent in frames} == {node}
    return b"".join(wire.frame(kind, number, payload) for _, kind, number, payload in frames)


def table_of(seats: SeatsAsked | SeatsGiven) -> dict[bytes, Handler]:
    """An inbox's table: the kinds for this end of a seat's link to ``seats``, the others
    nowhere (none is sent in these tests)."""

    def nowhere(sender: str, connection: int, payload: bytes) -> None:
        raise AssertionError(f"a frame for another part, from {sender}")

    table: dict[bytes, Handler] = dict.fromkeys(wire.KINDS, nowhere)
    if isinstance(seats, SeatsAsked):
        table |= {
            wire.DATA: seats.data,
            wire.SEATED: seats.seated,
            wire.REFUSED: seats.refused,
            wire.CLOSE: seats.closed,
            wire.RESUMED: seats.resumed,
        }
    else:
        table |= {
            wire.JOIN: seats.join,
            wire.MOVE: seats.move,
            wire.LEAVE: seats.leave,
            wire.RESUME: seats.resume,
        }
    return table


@contextlib.asynccontextmanager
async def seat_across() -> AsyncIterator[Ends]:
    """The bot seated through its node, the match started, the seat here on move."""
    arena = Arena(test_config(), clock=FakeClock())
    async with arena.running():
        ends = Ends(arena)
        ends.deliver()
        await settle()
        assert [what[0] for what in ends.bot.heard] == ["data", "seated"]
        assert [line["type"] for line in ends.lines()] == ["game-info"]
        yield ends


async def test_the_frames_of_a_seat_lost_with_the_link_are_sent_again_once_and_in_order() -> None:
    """A turn for the bot, then the bot's move, each lost in flight (as when Redis stops): once
    both nodes are back the turn reaches the bot, the move the match, each once; a frame that
    comes twice (a resume's, or one published again) is dropped without a word."""
    async with seat_across() as ends:
        ends.match.submit(0, tavern_pass(ends.here.last("turn"), "team1"), ends.here)
        lost = ends.to_holder.taken()  # the bot's turn, in flight as Redis stops
        assert [kind for _, kind, _, _ in lost] == [wire.DATA]
        assert ends.lines() == []
        ends.resume()
        (turn,) = ends.lines()
        assert (turn["type"], turn["turn"]) == ("turn", 2)
        ends.holder.received(OWNER.encode() + encoded(lost, HOLDER))  # the lost one, late
        assert ends.lines() == []
        ends.seat.submit(tavern_pass(turn, "team2"))
        lost = ends.to_owner.taken()  # the bot's move, in flight as Redis stops
        assert ends.match.turn_count == 1
        ends.resume()
        assert ends.match.turn_count == 2
        assert ends.here.last("turn")["turn"] == 3
        ends.owner.received(HOLDER.encode() + encoded(lost, OWNER))  # played once only
        ends.resume()  # nothing lost: nothing sent again, nothing shown twice
        assert ends.match.turn_count == 2
        assert ends.lines() == [] and ends.bot.heard == []
        assert ends.here.errors() == []


async def test_a_seat_whose_lost_frames_are_no_longer_kept_is_told_and_closed() -> None:
    """The owner says it read fewer of the seat's frames than the seat's node still keeps (or
    says it has no such seat, once it was seated): the bot is told why, and its seat closed."""
    async with seat_across() as ends:
        connection = ends.seat.connection
        gone = wire.RESUME_STATE.pack(0, wire.GONE)
        ends.holder.received(OWNER.encode() + wire.frame(wire.RESUMED, connection, gone))
        assert [what[0] for what in ends.bot.heard] == ["data", "close"]
        (lost,) = ends.lines()
        assert lost["message"] == BotError.ARENA_LINK_LOST
        assert ends.asked.handles == {}


async def test_a_seat_s_close_says_whether_its_game_is_over() -> None:
    """At its game's end the seat's link closes with ``wire.GAME_OVER``, and the bot's node
    keeps its connection for another game (issue 30, item 1); a seat taken by a rejoin closes
    without it, and the connection closes, as before."""
    async with seat_across() as ends:
        ends.match.leave(0, ends.here)  # the owner's other seat leaves: the bot wins
        await settle()
        ends.deliver()
        assert [what[0] for what in ends.bot.heard] == ["data", "data", "ended"]
        assert [line["type"] for line in ends.lines()] == ["error", "win-game"]
        assert ends.asked.handles == {}
        ends.seat.submit({"type": "player-turn", "stop": True})  # answered by its node
        assert [line["message"] for line in ends.lines()] == [BotError.GAME_OVER]
        assert ends.to_owner.sent == []
    async with seat_across() as ends:
        seat = ends.match.seats[1]
        assert seat is not None
        ends.match.rejoin(Channel(), seat.token)  # taken over through another connection
        ends.deliver()
        assert ends.bot.heard == [("close",)]


async def test_frames_about_a_seat_from_another_node_than_its_own_are_dropped_and_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Anyone who reaches the Redis can publish with any node's id: a frame about a seat, of
    any kind the node holding it reads, from a node that does not play its match is counted,
    said once a minute, and changes nothing."""
    async with seat_across() as ends:
        connection = ends.seat.connection
        refusal = orjson.dumps({"message": "x", "reason": None})
        forged = [
            (wire.DATA, connection, seq(3, 1) + b'{"type":"turn"}\n'),
            (wire.SEATED, connection, seq(3, 1)),
            (wire.REFUSED, connection, seq(3, 1) + refusal),
            (wire.CLOSE, connection, seq(3, 1)),
            (wire.RESUMED, connection, wire.RESUME_STATE.pack(0, wire.ASK)),
        ]
        for frame in forged:
            ends.holder.received(batch(frame))
        assert ends.asked.strays == len(forged)
        assert ends.bot.heard == [] and ends.to_owner.sent == []
        assert [record.getMessage() for record in caplog.records] == [
            f"node {HOLDER}: frames from {SENDER}: a frame {wire.DATA!r}: "
            f"a frame about a seat on {OWNER}; skipped"
        ]
        ends.match.submit(0, tavern_pass(ends.here.last("turn"), "team1"), ends.here)
        ends.deliver()  # the owner's own frames still read, in order
        assert [line["type"] for line in ends.lines()] == ["turn"]


async def test_a_move_from_another_node_carries_its_connection_s_round_trip() -> None:
    """The node holding the bot's connection passes its round trip on with each move (any the
    bot wrote there itself replaced); the match here credits it as a local bot's (issue 34)."""
    async with seat_across() as ends:
        played: list[TurnResult] = []
        ends.arena.listeners.append(
            lambda update: played.append(update.result) if isinstance(update, TurnPlayed) else None
        )
        ends.match.submit(0, tavern_pass(ends.here.last("turn"), "team1"), ends.here)
        ends.deliver()
        (turn,) = ends.lines()
        ends.bot.round_trip = 0.08
        ends.seat.submit({**tavern_pass(turn, "team2"), values.RELAYED_RTT_KEY: 1})
        ((_, kind, _, body),) = ends.to_owner.sent
        move = orjson.loads(body[wire.SEQ.size :])  # after the frame's number
        assert kind == wire.MOVE and move[values.RELAYED_RTT_KEY] == 80
        ends.deliver()
        assert ends.match.turn_count == 2
        assert played[-1].timing is not None and played[-1].timing.round_trip_s == 0.08
        assert values.RELAYED_RTT_KEY not in played[-1].action
    for bad in (b'{"rttMs": "80"}', b'{"rttMs": -1}', b'{"rttMs": 1e9}', b'{"rttMs": true}'):
        with pytest.raises(values.BadValue):
            values.move(bad)
    assert values.move(b'{"type": "player-turn"}') == ({"type": "player-turn"}, None)


# --- a real node ---------------------------------------------------------------------------------
class Peer:
    """A connection here playing a seat on another node (``server.arena.RemotePeer``)."""

    def __init__(self) -> None:
        self.heard: list[tuple[Any, ...]] = []

    def send_data(self, data: bytes) -> None:
        self.heard.append(("data", data))

    def remote_seated(self) -> None:
        self.heard.append(("seated",))

    def remote_refused(self, message: str, reason: str | None) -> None:
        self.heard.append(("refused", message, reason))

    def close(self) -> None:
        self.heard.append(("close",))

    def ended(self) -> None:
        self.heard.append(("ended",))

    def round_trip_s(self) -> float | None:
        return self.round_trip

    round_trip: float | None = None  # as the node holding the bot's connection measures it


class Pages:
    """The node's pages (``server.cluster.Spectators``), as the other nodes reach them."""

    def __init__(self) -> None:
        self.heard: list[tuple[Any, ...]] = []

    def relay(self, simulation_id: str, deliver: Deliver) -> None:
        self.heard.append(("relay", simulation_id, deliver))

    def unrelay(self, simulation_id: str, deliver: Deliver) -> None:
        self.heard.append(("unrelay", simulation_id, deliver))

    def relayed(self, simulation_id: str, text: str, last: bool) -> None:
        self.heard.append(("relayed", simulation_id, text, last))

    def finished_elsewhere(self, entry: JsonObject) -> None:
        """Not heard in these tests."""

    def lobby_changed(self, simulation_ids: Collection[str] | None = None) -> None:
        """Not heard in these tests."""


class OtherNode:
    """The node the test plays: alive in Redis, publishing frames to the real node's inbox and
    reading those published to its own."""

    def __init__(self, store: Redis, pubsub: PubSub, node: ClusterNode) -> None:
        self.store = store
        self.pubsub = pubsub
        self.node = node
        self.frames: list[wire.Frame] = []

    async def publish(self, *frames: tuple[bytes, int, bytes], tail: bytes = b"") -> None:
        await self.store.spublish(keys.inbox(self.node.id), batch(*frames) + tail)

    async def next(self, kind: bytes, connection: int) -> bytes:
        """The payload of the next frame of this kind about this connection sent to it."""
        async with asyncio.timeout(WAIT_S):
            while True:
                for index, (found, number, payload) in enumerate(self.frames):
                    if (found, number) == (kind, connection):
                        del self.frames[index]
                        return payload
                message = await self.pubsub.get_message(ignore_subscribe_messages=True, timeout=1)
                if message is not None:
                    read = wire.read_batch(message["data"])
                    assert read.sender == self.node.id and not read.dropped
                    self.frames += read.frames


@contextlib.asynccontextmanager
async def node_and_other(redis: RedisServer) -> AsyncIterator[tuple[ClusterNode, OtherNode]]:
    """A node in this process, and the other node, alive in Redis, that the test plays."""
    config = test_config(redis=redis.url, node_heartbeat_ms=100, node_ttl_ms=600)
    arena = Arena(config)
    node = ClusterNode(arena, config)
    arena.elsewhere = node
    async with Redis.from_url(redis.url) as store, store.pubsub() as pubsub:
        entry = {"http": "127.0.0.1:1", "wire": wire.VERSION}
        await store.set(keys.node_key(SENDER), orjson.dumps(entry), px=60_000)
        await store.sadd(keys.NODES, SENDER)
        await pubsub.ssubscribe(keys.inbox(SENDER))
        async with arena.running(), node.running({"http": "127.0.0.1:1"}):
            assert node.link.up
            yield node, OtherNode(store, pubsub, node)


async def test_a_node_speaking_other_frames_is_said_once(
    redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """In the middle of an upgrade that changes the frames, a node says which living node speaks
    another version (an entry without one is version 1), once, and again if it comes back."""
    async with node_and_other(redis) as (node, other):
        older = "0dd0dd00"
        await other.store.set(keys.node_key(older), orjson.dumps({"http": "127.0.0.1:2"}))
        await other.store.sadd(keys.NODES, older)
        await eventually(lambda: older in node.following.other_wire)
        assert node.following.other_wire == {older: 1}  # the test's other node speaks these
        await asyncio.sleep(0.3)  # heartbeats go by: said once
        said = [
            r.getMessage() for r in caplog.records if "speaks the nodes' frames" in r.getMessage()
        ]
        assert said == [
            f"node {node.id}: node {older} speaks the nodes' frames version 1, this one "
            f"{wire.VERSION}: seats cannot cross between them (docs/operations.md, a rolling "
            "upgrade)"
        ]
        await other.store.delete(keys.node_key(older))
        await eventually(lambda: not node.following.other_wire)


async def eventually(check: Callable[[], object]) -> None:
    async with asyncio.timeout(WAIT_S):
        while not check():
            await asyncio.sleep(0.01)


async def heard(who: Peer | Pages, *expected: tuple[Any, ...]) -> None:
    await eventually(lambda: len(who.heard) >= len(expected))
    assert who.heard == list(expected)
    who.heard.clear()


async def test_each_kind_of_frame_reaches_its_part_of_a_real_node(redis: RedisServer) -> None:
    """Frames of every kind, published to a node by another, each do their part's work: those
    for the node playing a match (a seat asked, a move, a leave, pages watching), and those for
    the node holding a connection (the seat's answers, a page's message); a frame of an unknown
    kind or cut short before them costs only itself."""
    async with node_and_other(redis) as (node, other):
        pages = Pages()
        node.serve_spectators(pages)
        # To the node playing the match: a seat asked, a move, the client gone.
        match = node.arena.open("tavern")
        join = {"type": "join-simulation", "game": "tavern", "nick": "far"}
        request = {"simulationId": match.id, "message": join, "rejoin": False}
        await other.publish((b"Z", 7, b"unknown"), (wire.JOIN, 7, seq(1) + orjson.dumps(request)))
        game_info = await other.next(wire.DATA, 7)  # the session's first words, then seated
        assert game_info.startswith(seq(1, 1)) and b'"game-info"' in game_info
        assert await other.next(wire.SEATED, 7) == seq(2, 1)
        assert sum(player is not None for player in match.view().players) == 1
        await other.publish((wire.MOVE, 7, seq(2, 2) + b"{}"), tail=b"\x00\x01")
        not_started = await other.next(wire.DATA, 7)
        assert not_started.startswith(seq(3, 2))
        assert orjson.loads(not_started[8:])["message"] == BotError.GAME_NOT_STARTED
        await other.publish((wire.LEAVE, 7, seq(3, 3)))
        await eventually(lambda: all(player is None for player in match.view().players))
        # Pages on the other node watching it, then no more.
        await other.publish((wire.WATCH, 0, match.id.encode()))
        await eventually(lambda: pages.heard)
        ((what, watched, deliver),) = pages.heard
        assert (what, watched) == ("relay", match.id)
        pages.heard.clear()
        deliver('{"type": "x"}')
        assert await other.next(wire.SPECTATE, 0) == match.id.encode() + b' {"type": "x"}'
        await other.publish((wire.UNWATCH, 0, match.id.encode()))
        await heard(pages, ("unrelay", match.id, deliver))
        # To the node holding the connection: a seat asked of the other node, its answers.
        await announce(other, "far1234")
        await eventually(lambda: any(s["simulationId"] == "far1234" for s in node.simulations()))
        peer, refused = Peer(), Peer()
        node.seat(peer, "far1234", join, False)
        asked = await other.next(wire.JOIN, 1)
        assert asked.startswith(seq(1))
        assert orjson.loads(asked[8:]) == {**request, "simulationId": "far1234", "kind": "bot"}
        await other.publish(
            (wire.SEATED, 1, seq(1, 1)),
            (wire.DATA, 1, seq(2, 1) + b"a line\n"),
            (wire.CLOSE, 1, seq(3, 1)),
        )
        await heard(peer, ("seated",), ("data", b"a line\n"), ("close",))
        node.seat(refused, "far1234", join, False)
        await other.next(wire.JOIN, 2)
        refusal = {"message": BotError.SIMULATION_FULL, "reason": "both seats taken"}
        await other.publish((wire.REFUSED, 2, seq(1, 1) + orjson.dumps(refusal)))
        await heard(refused, ("refused", BotError.SIMULATION_FULL, "both seats taken"))
        # A page here watching the other node's match (and its messages from no other node).
        assert node.watch("far1234")
        assert await other.next(wire.WATCH, 0) == b"far1234"
        forged = wire.frame(wire.SPECTATE, 0, b'far1234 {"type": "forged"}')
        await other.store.spublish(keys.inbox(node.id), b"0f0f0f0f" + forged)  # not its node
        await other.publish((wire.SPECTATE, 0, b'far1234 {"type": "y"}'))
        await heard(pages, ("relayed", "far1234", '{"type": "y"}', False))


def seq(number: int, read: int = 0) -> bytes:
    """The head of a seat's frame: its number on the seat's link, and the last one read."""
    return wire.SEQ.pack(number, read)


async def announce(other: OtherNode, simulation_id: str) -> None:
    """The other node says it plays a waiting simulation."""
    entry = {
        "simulationId": simulation_id,
        "game": "tavern",
        "status": "waiting",
        "players": [None, None],
        "scores": None,
        "turn": 0,
        "spectators": 0,
        "node": SENDER,
        "free": [0, 1],
        "created": 1.0,
    }
    await other.store.publish(keys.LOBBY, orjson.dumps({"node": SENDER, "set": [entry], "del": []}))


async def test_a_node_whose_redis_calls_swallow_its_cancellation_still_stops(
    redis: RedisServer,
) -> None:
    """redis-py sometimes answers a cancelled call normally: a heartbeat that went on beating
    after its node was told to stop kept the node's task group, and the test that ran it, open
    for ever. A node whose every beat swallows the cancellation stops within its leave's wait."""
    swallowed: list[float] = []
    failed = False  # once the test has failed, a beat lets the cancellation through
    async with contextlib.AsyncExitStack() as stack:
        node, _ = await stack.enter_async_context(node_and_other(redis))
        beat = node.beat

        async def swallowing(store: Any) -> None:
            try:
                await beat(store)
                await asyncio.sleep(0.2)  # where a cancellation lands, as inside redis-py
            except asyncio.CancelledError:
                if failed:
                    raise
                swallowed.append(asyncio.get_running_loop().time())

        node.beat = swallowing  # type: ignore[method-assign,assignment]
        await asyncio.sleep(0.3)  # beating with it
        stopping = asyncio.create_task(stack.aclose())
        stopped, _ = await asyncio.wait({stopping}, timeout=10)
        failed = not stopped
        if failed:
            stopping.cancel()
            await asyncio.wait({stopping}, timeout=10)
        assert not failed, "the node went on beating after it was told to stop"
    assert swallowed  # the stop landed in a beat, which swallowed it


async def test_a_request_between_nodes_is_answered_through_redis_and_bounded(
    redis: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node asks another (``OtherNodes.ask``) and answers the other's requests through its
    answerer, by frames on Redis (no HTTP between nodes); a node that floods it with requests
    is answered 503 past ``ANSWERED_AT_ONCE`` at once; one that never answers is Unanswered."""
    monkeypatch.setattr(requests, "ANSWER_WAIT_S", 0.5)
    release = asyncio.Event()
    asked: list[tuple[str, bytes]] = []

    async def answerer(path: str, body: bytes) -> tuple[int, bytes]:
        asked.append((path, body))
        if path == "/slow":
            await release.wait()
        return 200, b'{"path": "%s"}' % path.encode()

    def reply(payload: bytes) -> tuple[int, bytes]:
        return requests.STATUS.unpack_from(payload)[0], payload[requests.STATUS.size :]

    async with node_and_other(redis) as (node, other):
        # No answerer yet: the node says so.
        await other.publish((wire.REQUEST, 1, b"/game\n{}"))
        assert reply(await other.next(wire.REPLY, 1)) == (503, requests.NO_ANSWERER)
        node.answer_requests(answerer)
        await other.publish((wire.REQUEST, 2, b'/api/games/abc1234/turns?from=3\n{"x": 1}'))
        assert reply(await other.next(wire.REPLY, 2)) == (
            200,
            b'{"path": "/api/games/abc1234/turns?from=3"}',
        )
        assert asked == [("/api/games/abc1234/turns?from=3", b'{"x": 1}')]
        # A flood: the node answers so many at once, the rest 503 at once.
        flood = requests.ANSWERED_AT_ONCE + 3
        await other.publish(*((wire.REQUEST, 10 + n, b"/slow\n") for n in range(flood)))
        for n in range(requests.ANSWERED_AT_ONCE, flood):
            assert reply(await other.next(wire.REPLY, 10 + n)) == (503, requests.BUSY)
        release.set()
        for n in range(requests.ANSWERED_AT_ONCE):
            assert reply(await other.next(wire.REPLY, 10 + n))[0] == 200
        # The node asks the other: the request goes as a frame, the answer comes back.
        asking = asyncio.create_task(node.ask(SENDER, "/game", b'{"game": "t"}'))
        number = 1
        assert await other.next(wire.REQUEST, number) == b'/game\n{"game": "t"}'
        await other.publish((wire.REPLY, number, requests.STATUS.pack(409) + b'{"error": "x"}'))
        assert await asking == (409, b'{"error": "x"}')
        # A request without its path is a bad frame; one nobody answers is Unanswered.
        await other.publish((wire.REQUEST, 99, b"no newline"))
        with pytest.raises(Unanswered, match=r"did not answer within 0\.5 s"):
            await node.ask(SENDER, "/game", b"{}")
        assert node.complaints.counts["frames"] == 1
