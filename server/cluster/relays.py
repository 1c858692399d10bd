"""Pages that watch a match another node plays, from both ends: this node's pages watching
elsewhere (``Watching``), and other nodes' pages watching here (``Relays``). The node playing
the match sends the watching node what a page watching it there would get (a snapshot first),
and the watching node hands it to its own pages (``server.cluster.Spectators``)."""

from __future__ import annotations

import orjson

from server.cluster import Deliver, Spectators, values, wire
from server.cluster.directory import Directory
from server.cluster.link import Link


class Watching:
    """The other nodes' matches this node's pages watch: their node, by simulation id."""

    def __init__(self, link: Link, directory: Directory) -> None:
        self.link = link
        self.directory = directory
        self.spectators: Spectators | None = None
        self._owners: dict[str, str] = {}

    def watch(self, simulation_id: str) -> bool:
        """Pages here start watching another node's match; False if no node plays it."""
        entry = self.directory.get(simulation_id)
        if entry is None or not self.link.up:
            return False
        # Asked again for each page: a page that comes later needs its own snapshot.
        self._owners[simulation_id] = owner = str(entry["node"])
        self.link.send(owner, wire.WATCH, 0, simulation_id.encode())
        return True

    def unwatch(self, simulation_id: str) -> None:
        owner = self._owners.pop(simulation_id, None)
        if owner is not None:
            self.link.send(owner, wire.UNWATCH, 0, simulation_id.encode())

    def relayed(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.SPECTATE``: the simulation id, a space, a page's message; from the node
        playing it only (anyone who reaches the Redis can publish with any node's id)."""
        simulation_id, _, text = payload.partition(b" ")
        name = values.text(simulation_id)
        owner = self._owners.get(name)
        if owner is not None and owner != sender:
            raise values.BadValue(f"a page's message about a match of {owner}")
        if owner is not None and self.spectators is not None:
            self.spectators.relayed(name, values.text(text), last=False)

    def nodes(self) -> set[str]:
        return set(self._owners.values())

    def lost(self, nodes: set[str], message: str, reason: str) -> None:
        """The matches of these nodes can no longer be watched: their pages hear why."""
        notice = orjson.dumps({"type": "error", "message": message, "reason": reason}).decode()
        for simulation_id, owner in list(self._owners.items()):
            if owner in nodes:
                del self._owners[simulation_id]
                if self.spectators is not None:
                    self.spectators.relayed(simulation_id, notice, last=True)


class Relays:
    """Other nodes' pages watching matches played here: where their messages go, by node and
    simulation id."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.spectators: Spectators | None = None
        self._delivers: dict[tuple[str, str], Deliver] = {}

    def watched(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.WATCH``: pages on ``sender`` watch a match here: a snapshot now, then every
        message."""
        simulation_id = values.text(payload)
        if self.spectators is None:
            return
        deliver = self._delivers.get((sender, simulation_id))
        if deliver is None:
            deliver = self._delivers[(sender, simulation_id)] = self._deliver(sender, simulation_id)
        self.spectators.relay(simulation_id, deliver)

    def unwatched(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.UNWATCH``."""
        self._unrelay(sender, values.text(payload))

    def _deliver(self, node: str, simulation_id: str) -> Deliver:
        prefix = simulation_id.encode() + b" "
        send = self.link.send

        def deliver(text: str) -> None:
            send(node, wire.SPECTATE, 0, prefix + text.encode())

        return deliver

    def _unrelay(self, node: str, simulation_id: str) -> None:
        deliver = self._delivers.pop((node, simulation_id), None)
        if deliver is not None and self.spectators is not None:
            self.spectators.unrelay(simulation_id, deliver)

    def nodes(self) -> set[str]:
        return {node for node, _ in self._delivers}

    def lost(self, nodes: set[str]) -> None:
        """The pages on these nodes are gone."""
        for node, simulation_id in [key for key in self._delivers if key[0] in nodes]:
            self._unrelay(node, simulation_id)
