"""Relays: the pages of other nodes watching a match played here. Each gets, through its
node (``server.cluster.relays``), what a page watching it here would."""

from __future__ import annotations

import orjson

from server.cluster import Deliver
from visor.lobby import Lobby
from visor.watching import Watching


class Relays:
    """The other nodes' pages watching each match here, as their ``Deliver``s."""

    def __init__(self, watching: Watching, lobby: Lobby) -> None:
        self.watching = watching
        self.lobby = lobby
        self.delivers: dict[str, set[Deliver]] = {}

    def count(self, match_id: str) -> int:
        return len(self.delivers.get(match_id, ()))

    def relay(self, simulation_id: str, deliver: Deliver) -> None:
        view = self.watching.live.get(simulation_id)
        if view is None:  # it ended a moment ago
            deliver(orjson.dumps(self.watching.not_live(simulation_id)).decode())
            return
        self.delivers.setdefault(simulation_id, set()).add(deliver)
        self.lobby.changed()
        deliver(orjson.dumps(self.watching.snapshot(view)).decode())

    def unrelay(self, simulation_id: str, deliver: Deliver) -> None:
        delivers = self.delivers.get(simulation_id)
        if delivers is not None:
            delivers.discard(deliver)
            if not delivers:
                del self.delivers[simulation_id]

    def send(self, match_id: str, text: bytes) -> None:
        """``text`` to every other node's pages watching the match."""
        delivers = self.delivers.get(match_id)
        if delivers:
            relayed = text.decode()
            for deliver in delivers:
                deliver(relayed)

    def ended(self, match_id: str) -> None:
        """The match is over: nothing more is relayed."""
        self.delivers.pop(match_id, None)
