"""Seats that cross nodes, from both ends.

A bot connected to node B asking for a simulation node A plays: B's ``SeatsAsked`` sends A a
seat request; A's ``SeatsGiven`` gives it a session of its own there (``server.session``), whose
channel publishes what the seat is sent, in wire form, to B, which writes it to the bot
unchanged. The bot's moves go back to A and are submitted the ordinary way; the clock stays on
A.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import struct
import time

import orjson

from server.arena import Arena, RandomJoiner, RemotePeer
from server.cluster import values, wire
from server.cluster.claims import Claims
from server.cluster.following import Following
from server.cluster.link import Link
from server.commands import Leave, Move, read
from server.errors import BotError
from server.games.base import JsonObject
from server.protocol import encode, error_message
from server.round_trip import RoundTrip
from server.seat_channel import SeatMessage
from server.session import Client, Session, carry_out

log = logging.getLogger(__name__)

LINK_LOST_REASON = "this node lost its link to the other arena nodes"
RESUME_FAILED = "messages of this seat were lost with the link between the arena nodes"
PEOPLE = ("person", "client")  # seats with a person's time (a page's own or its client's)
MAX_UNREAD = 256  # frames a seat's link keeps until the other end says it read them


# --- a seat's link, at either end -----------------------------------------------------------------
class SeatLink:
    """One end of a seat's link between two nodes (see ``wire.SEQ``): the frames sent that the
    other end has not said it read, to send again after a lost link, and the number of the last
    frame read from it, so that a frame read already is dropped rather than shown twice (a turn)
    or played twice (a move)."""

    __slots__ = ("connection", "link", "node", "read", "resume_kind", "sent", "unread")

    def __init__(self, link: Link, node: str, connection: int, resume_kind: bytes) -> None:
        self.link = link
        self.node = node  # the other end's
        self.connection = connection  # the number the node holding the connection gave it
        self.resume_kind = resume_kind  # RESUME or RESUMED: toward the other end
        self.unread: collections.deque[tuple[int, bytes, bytes]] = collections.deque()
        self.sent = 0  # the number of the last frame sent
        self.read = 0  # the number of the last frame read, in order

    def send(self, kind: bytes, body: bytes) -> None:
        self.sent += 1
        self.unread.append((self.sent, kind, body))
        if len(self.unread) > MAX_UNREAD:
            self.unread.popleft()  # kept no more: a resume that needs it loses the seat
        head = wire.SEQ.pack(self.sent, self.read)
        self.link.send(self.node, kind, self.connection, head + body)

    def accept(self, payload: bytes) -> bytes | None:
        """A frame's body, or None for a frame read already, or one after a frame that was
        lost (it is sent again, in order, once the link is resumed)."""
        try:
            number, read = wire.SEQ.unpack_from(payload)
        except struct.error:
            raise values.BadValue("a seat's frame without its number") from None
        self._forget(read)
        if number != self.read + 1:
            return None
        self.read = number
        return payload[wire.SEQ.size :]

    def _forget(self, read: int) -> None:
        unread = self.unread
        while unread and unread[0][0] <= read:
            unread.popleft()

    def ask(self) -> None:
        """Both ends are in the arena again: what did the other read?"""
        state = wire.RESUME_STATE.pack(self.read, wire.ASK)
        self.link.send(self.node, self.resume_kind, self.connection, state)

    def resume(self, read: int, how: int) -> bool:
        """The other end read up to ``read``: the frames after it go again (asked, after this
        end's last read); False if one of them is kept no more, or was never sent."""
        self._forget(read)
        if how == wire.ASK:
            state = wire.RESUME_STATE.pack(self.read, wire.ANSWER)
            self.link.send(self.node, self.resume_kind, self.connection, state)
        first = self.unread[0][0] if self.unread else self.sent + 1
        if first != read + 1:
            return False
        for number, kind, body in self.unread:
            head = wire.SEQ.pack(number, self.read)
            self.link.send(self.node, kind, self.connection, head + body)
        if self.unread:
            log.info(
                "node %s: %d frames of a seat's link sent again to node %s",
                *(self.link.node_id, len(self.unread), self.node),
            )
        return True


def resume_state(payload: bytes) -> tuple[int, int]:
    """A ``wire.RESUME`` or ``wire.RESUMED`` frame's last frame read, and what it asks."""
    try:
        read, how = wire.RESUME_STATE.unpack(payload)
    except struct.error:
        raise values.BadValue("a resume that does not read") from None
    if how not in (wire.ASK, wire.ANSWER, wire.GONE):
        raise values.BadValue(f"a resume that asks {how}")
    return read, how


def gone(link: Link, node: str, kind: bytes, connection: int) -> None:
    """Tell ``node`` that this node has no seat's link of that number."""
    link.send(node, kind, connection, wire.RESUME_STATE.pack(0, wire.GONE))


# --- a client here, a match on another node ------------------------------------------------------
class PeerSeat:
    """A client here playing a seat on another node (``server.arena.SeatHandle``)."""

    def __init__(self, seats: SeatsAsked, connection: int, peer: RemotePeer) -> None:
        self.seats = seats
        self.connection = connection
        self.peer = peer
        self.owner: str | None = None  # the node playing the match, once known
        self.frames: SeatLink | None = None  # toward it, once known
        self.by_id = False  # its owner is looked up by the simulation's id (and waits for Redis)

    @property
    def playing(self) -> bool:
        return self.connection in self.seats.handles

    def submit(self, message: JsonObject) -> None:
        if not self.playing:  # its game is over; the client, still connected, is told so here
            self.peer.send_data(encode(error_message(BotError.GAME_OVER, "this game has ended")))
        elif self.frames is not None:
            self.frames.send(wire.MOVE, values.relayed_move(message, self.peer.round_trip_s()))

    def leave(self) -> None:
        if self.seats.handles.pop(self.connection, None) is not None and self.frames is not None:
            self.frames.send(wire.LEAVE, b"")


class SeatsAsked:
    """The seats this node's clients asked of other nodes, by connection number (a number of
    this node's, in the frames both ways)."""

    def __init__(
        self, link: Link, arena: Arena, following: Following, claims: Claims, grace_s: float
    ) -> None:
        self.link = link
        self.arena = arena
        self.following = following
        self.claims = claims
        self.grace_s = grace_s  # a seat asked for while Redis is away waits this long for it
        self.handles: dict[int, PeerSeat] = {}
        self.strays = 0  # frames about a seat here from a node that does not play it: dropped
        self._numbers = itertools.count(1)

    def seat(
        self, peer: RemotePeer, simulation_id: str, message: JsonObject, rejoin: bool, kind: str
    ) -> PeerSeat:
        """Ask the node playing ``simulation_id`` for the seat (``server.arena.Elsewhere``)."""
        handle = self._handle(peer)
        request = {
            "simulationId": simulation_id,
            "message": message,
            "rejoin": rejoin,
            "kind": kind,
        }
        if (entry := self.following.directory.get(simulation_id)) is not None:
            self._ask(handle, str(entry["node"]), request)
        else:  # not followed yet (just created elsewhere?), or Redis is away: see _seat_found
            handle.by_id = True
            if not self.link.spawn(self._seat_found(handle, simulation_id, request), "seat"):
                asyncio.get_running_loop().call_soon(
                    self._refuse, handle, BotError.ARENA_LINK_LOST, LINK_LOST_REASON
                )
        return handle

    async def _seat_found(self, handle: PeerSeat, simulation_id: str, request: JsonObject) -> None:
        """Ask the node the directory names for the seat. One created a moment ago is listed a
        moment later (``Following.look_up``); while Redis is away, the request waits for it
        (for ``grace_s`` at most: a join is not refused for an outage shorter than a seat
        that crosses nodes is held for), then is refused."""
        deadline = time.monotonic() + self.grace_s
        entry = None
        while True:
            if not await self.link.back_within(deadline - time.monotonic()):
                self._refuse(handle, BotError.ARENA_LINK_LOST, LINK_LOST_REASON)
                return
            entry = await self._look_up(handle, simulation_id)
            if handle.connection not in self.handles:
                return  # the connection is gone already
            if entry is not None or self.link.up:
                break
        if entry is None or entry["node"] == self.link.node_id:
            self._refuse(handle, BotError.WRONG_SIMULATION_ID, None)
        else:
            self._ask(handle, entry["node"], request)

    def random_join(self, peer: RandomJoiner, game: str, message: JsonObject) -> PeerSeat:
        """A random join that found no waiting match anywhere (``server.arena.Elsewhere``)."""
        handle = self._handle(peer)
        tasks = self.link.tasks
        if tasks is None:
            asyncio.get_running_loop().call_soon(self._open_here, handle, peer, None)
        else:
            tasks.create_task(self._claim(handle, peer, game, message))
        return handle

    async def _claim(
        self, handle: PeerSeat, peer: RandomJoiner, game: str, message: JsonObject
    ) -> None:
        """Open the match of this game's random joins here, unless another node just did:
        then join that one (or, should no node play it, open one here all the same: a random
        join is never refused for a claim)."""
        candidate = self.arena.new_id()
        claimed = await self.claims.claim(game, candidate)
        if claimed is None:  # this node's to open
            self._open_here(handle, peer, candidate)
            if self.arena.get(candidate) is None:  # it joined one waiting here instead
                self.claims.release(game, self.link.node_id, candidate)
            else:
                self.claims.hold(game, candidate)
            return
        owner, simulation_id = claimed
        if owner == self.link.node_id:
            self._open_here(handle, peer, None)
            return
        entry = await self._look_up(handle, simulation_id)
        if entry is None or entry["node"] != owner:  # a claim left by a node that is gone
            self.claims.release(game, owner, simulation_id)
            self._open_here(handle, peer, None)
        elif handle.connection in self.handles:
            request = {"simulationId": simulation_id, "message": message, "rejoin": False}
            self._ask(handle, owner, request)

    def _handle(self, peer: RemotePeer) -> PeerSeat:
        handle = PeerSeat(self, next(self._numbers), peer)
        self.handles[handle.connection] = handle
        return handle

    async def _look_up(self, handle: PeerSeat, simulation_id: str) -> JsonObject | None:
        return await self.following.look_up(
            simulation_id, lambda: handle.connection in self.handles
        )

    def _open_here(self, handle: PeerSeat, peer: RandomJoiner, simulation_id: str | None) -> None:
        if self.handles.pop(handle.connection, None) is not None:
            peer.open_here(simulation_id)

    def _ask(self, handle: PeerSeat, owner: str, request: JsonObject) -> None:
        handle.owner = owner
        handle.frames = SeatLink(self.link, owner, handle.connection, wire.RESUME)
        handle.frames.send(wire.JOIN, orjson.dumps(request))

    def _refuse(self, handle: PeerSeat, message: str, reason: str | None) -> None:
        if self.handles.pop(handle.connection, None) is not None:
            handle.peer.remote_refused(message, reason)

    # --- the owner's answers (frames) ---------------------------------------------------------
    def _from_owner(
        self, sender: str, connection: int, payload: bytes
    ) -> tuple[PeerSeat, bytes] | None:
        """The seat a frame is about and the frame's body; None for a frame to drop without a
        word (about a seat gone, or read already). One from another node than the seat's
        (anyone who reaches the Redis can publish with any node's id) is counted and said
        (``values.BadValue``)."""
        handle = self.handles.get(connection)
        if handle is None:
            return None
        if handle.owner != sender or handle.frames is None:
            self.strays += 1
            raise values.BadValue(f"a frame about a seat on {handle.owner}")
        body = handle.frames.accept(payload)
        return None if body is None else (handle, body)

    def data(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.DATA``: a message for the client, in wire form."""
        if found := self._from_owner(sender, connection, payload):
            found[0].peer.send_data(found[1])

    def seated(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.SEATED``."""
        if found := self._from_owner(sender, connection, payload):
            found[0].peer.remote_seated()

    def refused(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.REFUSED``: why."""
        if found := self._from_owner(sender, connection, payload):
            message, reason = values.refusal(found[1])
            self._refuse(found[0], message, reason)

    def closed(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.CLOSE``: the seat's channel on the owner was closed, at its game's end or
        for a rejoin."""
        if found := self._from_owner(sender, connection, payload):
            del self.handles[connection]
            if found[1] == wire.GAME_OVER:
                found[0].peer.ended()
            else:
                found[0].peer.close()

    def resumed(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.RESUMED``: the owner's end of a seat's link, after a lost link: what it
        read goes again (a seat it does not have: the seat request itself, unless it read that
        already and has forgotten the seat since, which loses the seat)."""
        read, how = resume_state(payload)
        handle = self.handles.get(connection)
        if handle is None or handle.frames is None or handle.owner != sender:
            if handle is not None:
                self.strays += 1
                raise values.BadValue(f"a resume about a seat on {handle.owner}")
            if how == wire.ASK:
                gone(self.link, sender, wire.RESUME, connection)
            return
        if how == wire.GONE or not handle.frames.resume(read, how):
            # Gone: the owner gave the seat up while this node was out of its reach.
            reason = LINK_LOST_REASON if how == wire.GONE else RESUME_FAILED
            del self.handles[connection]
            handle.peer.send_data(encode(error_message(BotError.ARENA_LINK_LOST, reason)))
            handle.peer.close()

    def back(self, nodes: set[str]) -> None:
        """These nodes are in the arena again after a lost link: each seat on them asks what
        its owner read."""
        for handle in self.handles.values():
            if handle.owner in nodes and handle.frames is not None:
                handle.frames.ask()

    # --- nodes lost ---------------------------------------------------------------------------
    def owners(self) -> set[str]:
        return {handle.owner for handle in self.handles.values() if handle.owner is not None}

    def lost(self, nodes: set[str], notice: bytes) -> None:
        """The seats on these nodes are told why (``notice``, an error line) and closed."""
        for connection, handle in list(self.handles.items()):
            if handle.owner in nodes:
                del self.handles[connection]
                handle.peer.send_data(notice)
                handle.peer.close()

    def unlinked(self) -> None:
        """Redis is out of reach: the random joins still waiting for an owner are refused (and
        open their game here); a seat asked for by id waits for the link (``_seat_found``)."""
        for handle in list(self.handles.values()):
            # Those with an owner are held, or lost with their node.
            if handle.owner is None and not handle.by_id:
                self._refuse(handle, BotError.ARENA_LINK_LOST, LINK_LOST_REASON)


# --- a match here, a client on another node ------------------------------------------------------
class RemoteSeatChannel:
    """The channel of a session here whose client is connected through another node: what the
    session says goes back to that node, as frames of the seat's link
    (``server.session.SessionChannel``)."""

    def __init__(self, seats: SeatsGiven, frames: SeatLink) -> None:
        self.seats = seats
        self.frames = frames
        self.peer_node = frames.node
        self.connection = frames.connection
        self.session: Session | None = None
        self.open = True
        self.joined = False  # the seat was given: refusals are error lines from now on
        # Its client's round trip, as the node holding its connection reports with each move.
        self.round_trip = RoundTrip(seats.arena.config.ping_interval_ms / 1000)

    def send(self, message: SeatMessage) -> None:
        self.send_data(encode(message.body))

    def send_data(self, data: bytes) -> None:
        if self.open:
            self.frames.send(wire.DATA, data)

    def error(self, message: str, reason: str | None) -> None:
        if self.joined:
            self.send_data(encode(error_message(message, reason)))
        elif self.open:  # the seat asked for is refused: the other node tells its client
            self.frames.send(wire.REFUSED, orjson.dumps({"message": message, "reason": reason}))
            self.open = False
            self.seats.forget(self)

    def refuse(self, message: str, reason: str) -> None:
        self.error(message, reason)
        self.close()

    def seated(self) -> None:
        self.joined = True
        self.frames.send(wire.SEATED, b"")

    def close(self) -> None:
        if self.open:
            self.open = False
            over = self.session is not None and self.session.game_over
            self.frames.send(wire.CLOSE, wire.GAME_OVER if over else b"")
            self.seats.forget(self)

    def gone(self) -> None:
        """The client (or its node) is gone: the session leaves, with nothing more sent."""
        self.open = False
        if self.session is not None:
            self.session.handle(Leave())


class SeatsGiven:
    """The seats of matches here that other nodes' clients play, by node and connection; and
    the links of those that ended here lately, kept for ``keep_s`` in case their last frames
    were lost with a link to Redis (asked again by their node once it is back)."""

    def __init__(self, link: Link, arena: Arena, keep_s: float) -> None:
        self.link = link
        self.arena = arena
        self.keep_s = keep_s
        self.channels: dict[tuple[str, int], RemoteSeatChannel] = {}
        self.ended: dict[tuple[str, int], tuple[float, SeatLink]] = {}  # when, and the link

    # --- the asking nodes' frames -------------------------------------------------------------
    def _frames(self, key: tuple[str, int]) -> SeatLink | None:
        channel = self.channels.get(key)
        if channel is not None:
            return channel.frames
        ended = self.ended.get(key)
        return None if ended is None else ended[1]

    def join(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.JOIN``: a client on ``sender`` asks for a seat of a match played here: a
        session of its own here asks for it, exactly as a client connected here would,
        refusals included. Asked again after a lost link, it is dropped."""
        key = (sender, connection)
        if (known := self._frames(key)) is not None:
            if known.accept(payload) is not None:
                raise values.BadValue("a second seat request on a seat's link")
            return
        frames = SeatLink(self.link, sender, connection, wire.RESUMED)
        body = frames.accept(payload)
        if body is None:
            raise values.BadValue("a seat request that is not its link's first frame")
        request = values.join_request(body)
        channel = RemoteSeatChannel(self, frames)
        person = request.kind in PEOPLE
        timeout_s = self.arena.config.person_turn_timeout_ms / 1000 if person else None
        client = Client(
            f"node {sender}",
            kind=request.kind if person and request.kind else "bot",
            turn_timeout_s=timeout_s,
            routes=False,
            checked=True,
            round_trip=channel.round_trip,
        )
        session = channel.session = Session(self.arena, client, channel)
        self.channels[key] = channel
        kind = "rejoin" if request.rejoin else "join-simulation"
        message = {**request.message, "type": kind, "simulationId": request.simulation_id}
        carry_out(self.arena, session, session.handle(read(message)))

    def move(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.MOVE``: a message from the seat's client (one that crossed the seat's end
        is dropped)."""
        key = (sender, connection)
        frames = self._frames(key)
        if frames is None:
            raise values.BadValue("a move for no seat")
        body = frames.accept(payload)
        channel = self.channels.get(key)
        if body is None or channel is None:
            return
        if channel.session is None or not channel.joined:
            error = error_message(BotError.NOT_IN_A_GAME, "join a simulation first")
            channel.send_data(encode(error))
            return
        message, round_trip_s = values.move(body)
        channel.round_trip.reported(round_trip_s)
        carry_out(self.arena, channel.session, channel.session.handle(Move(message)))

    def leave(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.LEAVE``: the client is gone."""
        key = (sender, connection)
        frames = self._frames(key)
        if frames is None or frames.accept(payload) is None:
            return
        self.ended.pop(key, None)
        channel = self.channels.pop(key, None)
        if channel is not None:
            channel.gone()

    def resume(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.RESUME``: the client's end of a seat's link, after a lost link: what it did
        not read goes again (a seat it does not have is left)."""
        read, how = resume_state(payload)
        key = (sender, connection)
        frames = self._frames(key)
        if frames is None:
            if how == wire.ASK:
                gone(self.link, sender, wire.RESUMED, connection)
            return
        if how == wire.GONE or not frames.resume(read, how):
            if how != wire.GONE:
                gone(self.link, sender, wire.RESUMED, connection)
            self.ended.pop(key, None)
            channel = self.channels.pop(key, None)
            if channel is not None:
                channel.gone()

    def back(self, nodes: set[str]) -> None:
        """These nodes are in the arena again after a lost link: each seat of theirs here
        asks what its client's end read."""
        for (node, _), channel in self.channels.items():
            if node in nodes:
                channel.frames.ask()

    def forget(self, channel: RemoteSeatChannel) -> None:
        key = (channel.peer_node, channel.connection)
        if self.channels.get(key) is channel:
            del self.channels[key]
            if self.keep_s > 0:
                self.ended[key] = (time.monotonic(), channel.frames)

    def forget_ended(self) -> None:
        """The links of seats that ended longer than ``keep_s`` ago go."""
        horizon = time.monotonic() - self.keep_s
        for key in [key for key, (when, _) in self.ended.items() if when < horizon]:
            del self.ended[key]

    # --- nodes lost, and leaving ---------------------------------------------------------------
    def nodes(self) -> set[str]:
        return {node for node, _ in self.channels}

    def lost(self, nodes: set[str]) -> None:
        """The clients on these nodes are gone."""
        for key in [key for key in self.ended if key[0] in nodes]:
            del self.ended[key]
        for key, channel in list(self.channels.items()):
            if key[0] in nodes:
                del self.channels[key]
                channel.gone()

    def close_all(self, notice: bytes) -> None:
        """This node stops: every client hears why (``notice``, an error line)."""
        for channel in list(self.channels.values()):
            channel.send_data(notice)
            channel.close()
