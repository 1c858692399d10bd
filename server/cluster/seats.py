"""Seats that cross nodes, from both ends.

A bot connected to node B asking for a simulation node A plays: B's ``SeatsAsked`` sends A a
seat request; A's ``SeatsGiven`` gives it a session of its own there (``server.session``), whose
channel publishes what the seat is sent, in wire form, to B, which writes it to the bot
unchanged. The bot's moves go back to A and are submitted the ordinary way; the clock stays on
A.
"""

from __future__ import annotations

import asyncio
import itertools

import orjson

from server.arena import Arena, RandomJoiner, RemotePeer
from server.cluster import values, wire
from server.cluster.claims import Claims
from server.cluster.following import Following
from server.cluster.link import Link
from server.errors import BotError
from server.games.base import JsonObject
from server.match import SeatMessage
from server.protocol import encode, error_message
from server.session import Client, Session

LINK_LOST_REASON = "this node lost its link to the other arena nodes"
PEOPLE = ("person", "client")  # seats with a person's time (a page's own or its client's)


# --- a client here, a match on another node ------------------------------------------------------
class PeerSeat:
    """A client here playing a seat on another node (``server.arena.SeatHandle``)."""

    def __init__(self, seats: SeatsAsked, connection: int, peer: RemotePeer) -> None:
        self.seats = seats
        self.connection = connection
        self.peer = peer
        self.owner: str | None = None  # the node playing the match, once known

    @property
    def playing(self) -> bool:
        return self.connection in self.seats.handles

    def submit(self, message: JsonObject) -> None:
        if self.owner is not None:
            self.seats.link.send(self.owner, wire.MOVE, self.connection, orjson.dumps(message))

    def leave(self) -> None:
        if self.seats.handles.pop(self.connection, None) is not None and self.owner is not None:
            self.seats.link.send(self.owner, wire.LEAVE, self.connection, b"")


class SeatsAsked:
    """The seats this node's clients asked of other nodes, by connection number (a number of
    this node's, in the frames both ways)."""

    def __init__(self, link: Link, arena: Arena, following: Following, claims: Claims) -> None:
        self.link = link
        self.arena = arena
        self.following = following
        self.claims = claims
        self.handles: dict[int, PeerSeat] = {}
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
        tasks = self.link.tasks
        if tasks is None:
            asyncio.get_running_loop().call_soon(
                self._refuse, handle, BotError.ARENA_LINK_LOST, LINK_LOST_REASON
            )
        elif (entry := self.following.directory.get(simulation_id)) is not None:
            self._ask(handle, str(entry["node"]), request)
        else:  # not followed yet (just created elsewhere?): the directory itself says
            tasks.create_task(self._seat_found(handle, simulation_id, request))
        return handle

    async def _seat_found(self, handle: PeerSeat, simulation_id: str, request: JsonObject) -> None:
        entry = await self._look_up(handle, simulation_id)
        if handle.connection not in self.handles:
            return  # the connection is gone already
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
        self.link.send(owner, wire.JOIN, handle.connection, orjson.dumps(request))

    def _refuse(self, handle: PeerSeat, message: str, reason: str | None) -> None:
        if self.handles.pop(handle.connection, None) is not None:
            handle.peer.remote_refused(message, reason)

    # --- the owner's answers (frames) ---------------------------------------------------------
    def data(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.DATA``: a message for the client, in wire form."""
        handle = self.handles.get(connection)
        if handle is not None:
            handle.peer.send_data(payload)

    def seated(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.SEATED``."""
        handle = self.handles.get(connection)
        if handle is not None:
            handle.peer.remote_seated()

    def refused(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.REFUSED``: why (read before anything else)."""
        handle = self.handles.get(connection)
        message, reason = values.refusal(payload)
        if handle is not None:
            self._refuse(handle, message, reason)

    def closed(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.CLOSE``: the seat's channel on the owner was closed."""
        handle = self.handles.pop(connection, None)
        if handle is not None:
            handle.peer.close()

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
        """Redis is out of reach: the seats still waiting for an owner are refused."""
        for handle in list(self.handles.values()):
            if handle.owner is None:  # those with an owner are held, or lost with their node
                self._refuse(handle, BotError.ARENA_LINK_LOST, LINK_LOST_REASON)


# --- a match here, a client on another node ------------------------------------------------------
class RemoteSeatChannel:
    """The channel of a session here whose client is connected through another node: what the
    session says goes back to that node, as frames (``server.session.SessionChannel``)."""

    def __init__(self, seats: SeatsGiven, peer_node: str, connection: int) -> None:
        self.seats = seats
        self.peer_node = peer_node
        self.connection = connection
        self.session: Session | None = None
        self.open = True
        self.joined = False  # the seat was given: refusals are error lines from now on

    def send(self, message: SeatMessage) -> None:
        self.send_data(encode(message.body))

    def send_data(self, data: bytes) -> None:
        if self.open:
            self.seats.link.send(self.peer_node, wire.DATA, self.connection, data)

    def error(self, message: str, reason: str | None) -> None:
        if self.joined:
            self.send_data(encode(error_message(message, reason)))
        elif self.open:  # the seat asked for is refused: the other node tells its client
            refusal = orjson.dumps({"message": message, "reason": reason})
            self.seats.link.send(self.peer_node, wire.REFUSED, self.connection, refusal)
            self.open = False
            self.seats.forget(self)

    def refuse(self, message: str, reason: str) -> None:
        self.error(message, reason)
        self.close()

    def seated(self) -> None:
        self.joined = True
        self.seats.link.send(self.peer_node, wire.SEATED, self.connection, b"")

    def close(self) -> None:
        if self.open:
            self.open = False
            self.seats.link.send(self.peer_node, wire.CLOSE, self.connection, b"")
            self.seats.forget(self)

    def gone(self) -> None:
        """The client (or its node) is gone: the session leaves, with nothing more sent."""
        self.open = False
        if self.session is not None:
            self.session.closed()


class SeatsGiven:
    """The seats of matches here that other nodes' clients play, by node and connection."""

    def __init__(self, link: Link, arena: Arena) -> None:
        self.link = link
        self.arena = arena
        self.channels: dict[tuple[str, int], RemoteSeatChannel] = {}

    # --- the asking nodes' frames -------------------------------------------------------------
    def join(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.JOIN``: a client on ``sender`` asks for a seat of a match played here: a
        session of its own here asks for it, exactly as a client connected here would,
        refusals included."""
        request = values.join_request(payload)
        channel = RemoteSeatChannel(self, sender, connection)
        person = request.kind in PEOPLE
        timeout_s = self.arena.config.person_turn_timeout_ms / 1000 if person else None
        client = Client(
            f"node {sender}",
            kind=request.kind if person and request.kind else "bot",
            turn_timeout_s=timeout_s,
            routes=False,
            checked=True,
        )
        session = channel.session = Session(self.arena, client, channel)
        self.channels[(sender, connection)] = channel
        fields = {**request.message, "simulationId": request.simulation_id}
        if request.rejoin:
            session.rejoin(fields)
        else:
            session.join(fields)

    def move(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.MOVE``: a message from the seat's client."""
        channel = self.channels.get((sender, connection))
        if channel is None or channel.session is None or not channel.joined:
            data = encode(error_message(BotError.NOT_IN_A_GAME, "join a simulation first"))
            self.link.send(sender, wire.DATA, connection, data)
            return
        channel.session.move(values.move(payload))

    def leave(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.LEAVE``: the client is gone."""
        channel = self.channels.pop((sender, connection), None)
        if channel is not None:
            channel.gone()

    def forget(self, channel: RemoteSeatChannel) -> None:
        key = (channel.peer_node, channel.connection)
        if self.channels.get(key) is channel:
            del self.channels[key]

    # --- nodes lost, and leaving ---------------------------------------------------------------
    def nodes(self) -> set[str]:
        return {node for node, _ in self.channels}

    def lost(self, nodes: set[str]) -> None:
        """The clients on these nodes are gone."""
        for key, channel in list(self.channels.items()):
            if key[0] in nodes:
                del self.channels[key]
                channel.gone()

    def close_all(self, notice: bytes) -> None:
        """This node stops: every client hears why (``notice``, an error line)."""
        for (node, connection), channel in list(self.channels.items()):
            self.link.send(node, wire.DATA, connection, notice)
            channel.close()
