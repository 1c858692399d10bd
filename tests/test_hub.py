"""The spectator hub in memory: an arena on a hand-wound clock, the hub, and a page whose
websocket is a list. Work is counted, not timed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

import orjson
import pytest
from aiohttp import web

import visor.hub
from server.arena import Arena
from server.match import Match, SeatMessage, SeatRequest
from tests.clock import FakeClock
from tests.conftest import test_config
from visor.hub import Page, SpectatorHub


class Inbox:
    """A seat's channel that keeps its messages."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def send(self, message: SeatMessage) -> None:
        self.messages.append(message.body)

    def close(self) -> None:
        """Nothing to close."""


class Socket:
    """What a page's websocket is sent."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def send_str(self, text: str) -> None:
        self.sent.append(orjson.loads(text))

    async def close(self) -> None:
        """Nothing to close."""


def counted(function: Callable[..., Any], calls: list[object]) -> Callable[..., Any]:
    def count(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return function(*args, **kwargs)

    return count


async def settle() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


def play_passes(match: Match, inboxes: tuple[Inbox, Inbox], turns: int) -> None:
    """``turns`` turns in which the seat on move passes with every dwarf."""
    for _ in range(turns):
        seat = match.rules.to_move(match.state)
        turn = inboxes[seat].messages[-1]
        team = ("team1", "team2")[seat]
        actions = [{"botId": dwarf["id"], "type": "PASS"} for dwarf in turn["state"][team]]
        assert match.submit(seat, {"type": "player-turn", "actions": actions}, inboxes[seat])


async def test_an_unwatched_game_costs_the_hub_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Turns nobody watches build no view and encode no message in the hub; a page that comes
    later is still sent the game as it stands (its turn, position, replies and clock), and from
    then on each turn."""
    built: list[object] = []
    encoded: list[object] = []
    monkeypatch.setattr(visor.hub, "replace", counted(replace, built))
    monkeypatch.setattr(visor.hub, "dumps", counted(visor.hub.dumps, encoded))
    clock = FakeClock()
    arena = Arena(test_config(), clock=clock)
    hub = SpectatorHub(arena)
    async with arena.running():
        match = arena.open("tavern")
        inboxes = (Inbox(), Inbox())
        for number, inbox in enumerate(inboxes):
            match.seat(inbox, SeatRequest({"nick": f"bot{number}"}))
        await settle()
        play_passes(match, inboxes, 20)
        assert (built, encoded) == ([], [])
        position = match.codec.state_to_wire(match.state)

        clock.advance(0.25)
        socket = Socket()
        page = Page(cast(web.WebSocketResponse, socket), None)
        writer = asyncio.create_task(page.write_loop())
        hub.watch(page, match.id)
        play_passes(match, inboxes, 1)
        await settle()
        snapshot, turn = socket.sent
        assert snapshot["type"] == "snapshot" and snapshot["turn"] == 20
        assert snapshot["state"] == position
        assert snapshot["replyMs"] == {"team1": 0, "team2": 0}
        assert snapshot["clock"] == {"seat": "team1", "timeoutMs": 10_000, "elapsedMs": 250}
        assert turn["type"] == "turn" and turn["turn"] == 21 and turn["spectators"] == 1
        page.close()
        await writer
        match.stop()
