"""Pages watching games: a snapshot when they start, then every update of the match, from
the arena's updates here, or through the relay of the node that plays it (``visor.relays``)."""

from __future__ import annotations

import asyncio

import orjson

from server.arena import Arena
from server.cluster import OtherNodes
from server.games.base import JsonObject
from server.match_views import MatchView, clock_to_wire
from visor.live_views import LiveViews
from visor.lobby import Lobby
from visor.pages import Page


class Watching:
    """Which pages watch which match, and what they are sent."""

    def __init__(
        self,
        arena: Arena,
        others: OtherNodes | None,
        live: LiveViews,
        lobby: Lobby,
        watchers: dict[str, set[Page]],
    ) -> None:
        self.arena = arena
        self.others = others
        self.live = live
        self.lobby = lobby
        self.watchers = watchers  # the pages watching each match (the lobby counts them)
        self.elsewhere: set[str] = set()  # matches of other nodes that pages here watch

    def count(self, match_id: str) -> int:
        """How many pages here watch the match."""
        return len(self.watchers.get(match_id, ()))

    def snapshot(self, view: MatchView) -> JsonObject:
        """Everything a watcher needs at once, whenever it arrives."""
        codec = view.codec
        message: JsonObject = {
            "type": "snapshot",
            "simulationId": view.match_id,
            "game": codec.name,
            "status": view.status.value,
            "seats": list(codec.seat_names),
            "players": [None if p is None else p.to_wire() for p in view.players],
            "board": codec.view.describe(),
            "turn": view.turn,
            "state": None if view.state is None else codec.state_to_wire(view.state),
            "scores": view.scores(),
            "spectators": self.count(view.match_id),
            "clock": clock_to_wire(codec, view.clock),
            "replyMs": self.live.replies_ms(view.match_id),
        }
        started = self.live.clock_since(view.match_id)
        if message["clock"] is not None and started is not None:
            elapsed = self.arena.clock.now() - started
            message["clock"]["elapsedMs"] = round(1000 * elapsed)
        if view.outcome is not None:
            message["result"] = view.result()
        return message

    def not_live(self, simulation_id: str) -> JsonObject:
        """What a page asking to watch a game that is not being played is told: its result,
        if it finished (on this node or another), or that there is no such game."""
        finished = self.lobby.finished.get(simulation_id)
        if finished is None:
            return {
                "type": "error",
                "message": "There is no simulation with this id",
                "simulationId": simulation_id,
            }
        return {
            "type": "error",
            "message": "This game has finished",
            "simulationId": simulation_id,
            "game": finished["game"],
            "players": finished["players"],
            "result": finished.get("result"),
        }

    def send_later(self, match_id: str, text: bytes) -> None:
        """``text`` to the pages watching the match, in the loop's next round: so that the
        players' next turn, held briefly in a server.tcp.WriteBatch, is not written after
        hundreds of pages' copies."""
        pages = self.watchers.get(match_id)
        if pages:
            asyncio.get_running_loop().call_soon(self.push, match_id, list(pages), text)

    def push(self, match_id: str, pages: list[Page], text: bytes) -> None:
        snapshot: bytes | None = None
        for page in pages:
            if snapshot is None and page.behind:
                view = self.live.get(match_id)
                snapshot = orjson.dumps(self.snapshot(view)) if view is not None else text
            page.push(text, snapshot=snapshot)

    def watch(self, page: Page, simulation_id: str) -> None:
        self.stop_watching(page)
        view = self.live.get(simulation_id)
        if view is None and self.others is not None and self.others.watch(simulation_id):
            # Played on another node: its snapshot and messages come through the relay.
            self.elsewhere.add(simulation_id)
            page.watching = simulation_id
            self.watchers.setdefault(simulation_id, set()).add(page)
            return
        if view is None:
            page.send(self.not_live(simulation_id))
            return
        page.watching = simulation_id
        self.watchers.setdefault(simulation_id, set()).add(page)
        self.lobby.changed(simulation_id)
        page.send(self.snapshot(view), droppable=True)

    def stop_watching(self, page: Page) -> None:
        if page.watching is None:
            return
        pages = self.watchers.get(page.watching)
        if pages is not None:
            pages.discard(page)
            if not pages:
                del self.watchers[page.watching]
                if page.watching in self.elsewhere and self.others is not None:
                    self.elsewhere.discard(page.watching)
                    self.others.unwatch(page.watching)
        self.lobby.changed(page.watching)
        page.watching = None

    def relayed(self, simulation_id: str, text: str, last: bool) -> None:
        """A message of another node's match for the pages here watching it; ``last``: its
        node is lost: each page is told, then closed."""
        pages = self.watchers.get(simulation_id)
        if pages:
            self.push(simulation_id, list(pages), text.encode())
        if last:
            self.elsewhere.discard(simulation_id)
            for page in self.watchers.pop(simulation_id, set()):
                page.watching = None
                page.close(hang_up=True)
