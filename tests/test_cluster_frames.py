"""A node's inbox: each kind of frame goes to its handler (``server.cluster.inbox``), and a bad
frame costs only itself; then a real node, in this process on a real redis-server, answering
frames of every kind published by a node played by the test.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest
from redis.asyncio import Redis
from redis.asyncio.client import PubSub

from server.arena import Arena
from server.cluster import Deliver, keys, values, wire
from server.cluster.inbox import Handler, Inbox
from server.cluster.node import ClusterNode
from server.errors import BotError
from server.games.base import JsonObject
from tests.conftest import test_config
from tests.services import RedisServer

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

    def lobby_changed(self) -> None:
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
        await self.store.publish(keys.inbox(self.node.id), batch(*frames) + tail)

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
        await store.set(keys.node_key(SENDER), orjson.dumps({"http": "127.0.0.1:1"}), px=60_000)
        await store.sadd(keys.NODES, SENDER)
        await pubsub.subscribe(keys.inbox(SENDER))
        async with arena.running(), node.running({"http": "127.0.0.1:1"}):
            assert node.link.up
            yield node, OtherNode(store, pubsub, node)


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
        # A page here watching the other node's match.
        assert node.watch("far1234")
        assert await other.next(wire.WATCH, 0) == b"far1234"
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
