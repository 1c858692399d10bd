"""Requests one node asks another over the link, as frames: what only the node that plays a game
can answer (a move of a Thud API game, a live game's turns so far).

A request is a ``wire.REQUEST`` frame to the node asked: its number (the frame's connection),
then its path (with its query) and a newline, then its body (JSON, or nothing); the answer
comes back as a ``wire.REPLY`` frame of the same number: a status (as HTTP's, two bytes) and a
body. The node asked answers through the visor's ``Answerer`` (``answer_requests``), which
answers as its HTTP routes would, but never asks a third node. There is no HTTP between nodes:
a node needs no route to the others' HTTP ports, only to Redis.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import struct

from server.cluster import Answerer, Unanswered, values, wire
from server.cluster.link import Link

log = logging.getLogger(__name__)

ANSWER_WAIT_S = 10.0  # for the node asked to answer
ANSWERED_AT_ONCE = 64  # requests from one node answered at once; more are answered 503
STATUS = struct.Struct(">H")
BUSY = b'{"error": "too many requests from other nodes at once"}'
NO_ANSWERER = b'{"error": "this node answers no requests"}'


class Requests:
    """This node's requests to the others, waiting for their answers, and its answers to
    theirs."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.answerer: Answerer | None = None
        self._numbers = itertools.count(1)
        self._waiting: dict[int, tuple[str, asyncio.Future[tuple[int, bytes]]]] = {}
        self._answering: collections.Counter[str] = collections.Counter()  # by asking node

    async def ask(self, node: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        """``server.cluster.OtherNodes.ask``."""
        if not self.link.up:
            raise Unanswered("the arena's link to Redis is down")
        number = next(self._numbers)
        answered: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        self._waiting[number] = (node, answered)
        self.link.send(node, wire.REQUEST, number, path.encode() + b"\n" + body)
        try:
            async with asyncio.timeout(ANSWER_WAIT_S):
                return await answered
        except TimeoutError:
            raise Unanswered(f"node {node} did not answer within {ANSWER_WAIT_S:g} s") from None
        finally:
            self._waiting.pop(number, None)

    def lost(self, nodes: set[str] | None = None) -> None:
        """The link, or these nodes, are lost: their requests will never be answered."""
        for number, (node, answered) in list(self._waiting.items()):
            if (nodes is None or node in nodes) and not answered.done():
                answered.set_exception(Unanswered(f"the arena lost its link to node {node}"))
                del self._waiting[number]

    # --- frames ------------------------------------------------------------------------------
    def replied(self, sender: str, number: int, payload: bytes) -> None:
        """``wire.REPLY``: the answer to one of this node's requests."""
        waiting = self._waiting.get(number)
        if waiting is None:
            return  # answered too late: its asker gave up
        node, answered = waiting
        if node != sender:
            raise values.BadValue(f"an answer to a request of node {node}")
        try:
            (status,) = STATUS.unpack_from(payload)
        except struct.error:
            raise values.BadValue("an answer without its status") from None
        if not answered.done():
            answered.set_result((status, payload[STATUS.size :]))

    def requested(self, sender: str, number: int, payload: bytes) -> None:
        """``wire.REQUEST``: another node asks; answered as this node's HTTP routes would."""
        head, found, body = payload.partition(b"\n")
        if not found:
            raise values.BadValue("a request without its path")
        try:
            path = head.decode()
        except UnicodeDecodeError:
            raise values.BadValue("a request whose path is not UTF-8") from None
        answerer = self.answerer
        if answerer is None:
            self._reply(sender, number, 503, NO_ANSWERER)
        elif self._answering[sender] >= ANSWERED_AT_ONCE:
            self._reply(sender, number, 503, BUSY)
        else:
            self._answering[sender] += 1
            if not self.link.spawn(self._answer(answerer, sender, number, path, body), "request"):
                self._answered(sender)  # the node is stopping: nobody waits for the answer

    def _answered(self, sender: str) -> None:
        self._answering[sender] -= 1
        if not self._answering[sender]:
            del self._answering[sender]

    async def _answer(
        self, answerer: Answerer, sender: str, number: int, path: str, body: bytes
    ) -> None:
        try:
            status, answer = await answerer(path, body)
        except Exception:  # a bug answering must cost that request, not the node
            log.exception("node %s: a request of node %s failed", self.link.node_id, sender)
            status, answer = 500, b'{"error": "the node asked failed to answer"}'
        finally:
            self._answered(sender)
        self._reply(sender, number, status, answer)

    def _reply(self, sender: str, number: int, status: int, body: bytes) -> None:
        self.link.send(sender, wire.REPLY, number, STATUS.pack(status) + body)
