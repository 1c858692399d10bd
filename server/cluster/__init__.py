"""Arena nodes on Redis: many ``tavern serve`` processes, on one machine or many, as one arena.

A layer above the arena, beside the TCP server; its only way into a match is the one every
front end uses (``match.seat``, ``match.submit``, ``match.leave``, ``match.rejoin``), so a match
never knows which node a seat or a spectator is connected through. ``server.cluster.node``
puts a node's parts together (see its docstring); it and the parts that talk to Redis import
redis-py, and are imported only by an arena configured with ``redis``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import Protocol

from server.games.base import JsonObject


class RedisRefused(Exception):
    """The Redis of the arena answers but refuses this node (a wrong password, a database it
    does not have) at its first link: that will not mend itself, unlike a Redis that is away."""


class Unanswered(Exception):
    """Another node did not answer a request (``OtherNodes.ask``): lost, too slow, or the link
    to Redis is down."""


Answerer = Callable[[str, bytes], Awaitable[tuple[int, bytes]]]
"""What answers another node's request here: its path (with its query) and body (JSON, or
nothing) to a status (as HTTP's) and a body (JSON)."""

Deliver = Callable[[str], None]
"""Where a page's message for another node's watchers goes."""


class Spectators(Protocol):
    """The pages of a node (the visor's hub), as the other nodes reach them."""

    def relay(self, simulation_id: str, deliver: Deliver) -> None:
        """Another node's pages watch this node's match: ``deliver`` gets what a page watching
        it here would (a snapshot first, or why there is none)."""

    def unrelay(self, simulation_id: str, deliver: Deliver) -> None:
        """They stopped watching."""

    def relayed(self, simulation_id: str, text: str, last: bool) -> None:
        """A message for this node's pages watching another node's match; ``last``: the match
        can no longer be watched (its node is lost)."""

    def finished_elsewhere(self, entry: JsonObject) -> None:
        """Another node's game finished: its lobby row, with its result, joins the finished
        ones here."""

    def lobby_changed(self, simulation_ids: Collection[str] | None = None) -> None:
        """These of the other nodes' simulations changed (None: any of them may have)."""


class OtherNodes(Protocol):
    """The other nodes as the visor sees them (``server.cluster.node.ClusterNode``)."""

    def simulations(self) -> list[JsonObject]:
        """The other nodes' live simulations, as lobby rows."""

    def simulation(self, simulation_id: str) -> JsonObject | None:
        """One of the other nodes' live simulations, as its lobby row (None if none plays
        it)."""

    def watch(self, simulation_id: str) -> bool:
        """Pages here start watching another node's match; False if no node plays it."""

    def unwatch(self, simulation_id: str) -> None:
        """No page here watches it any more."""

    def serve_spectators(self, spectators: Spectators) -> None:
        """Reach this node's pages through ``spectators``."""

    async def alias(self, name: str, simulation_id: str) -> None:
        """Another name for a live simulation of this node (a Thud API game's token digest), by
        which the other nodes find it while it lives; written once this returns."""

    async def locate(self, name: str) -> str | None:
        """The id of the other node with a live simulation of this name, if any."""

    def node_of(self, simulation_id: str) -> str | None:
        """The id of the other node that plays this live simulation, if one does."""

    async def ask(self, node: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        """Another node's answer (status, JSON) to a request only it can answer (a move of a
        Thud API game it plays, a live game's turns), through Redis; ``Unanswered`` if none
        comes."""

    def answer_requests(self, answerer: Answerer) -> None:
        """Answer the other nodes' requests here through ``answerer``."""
