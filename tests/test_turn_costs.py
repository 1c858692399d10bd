"""What a turn costs besides the game itself, counted (not timed): an arena on a hand-wound
clock, its spectator hub, and a page whose websocket is a list."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from types import SimpleNamespace
from typing import Any, cast

import orjson
import pytest
from aiohttp import WSMsgType, web

import visor.hub
import visor.live_views
import visor.lobby
import visor.relays
import visor.watching
from server.arena import Arena
from server.match import Match
from server.match_options import SeatRequest
from server.seat_channel import SeatMessage
from tests.clock import FakeClock
from tests.conftest import test_config
from visor.hub import SpectatorHub
from visor.pages import Page


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

    async def send_frame(self, data: bytes, opcode: WSMsgType) -> None:
        assert opcode == WSMsgType.TEXT
        self.sent.append(orjson.loads(data))

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


class CountingClock(FakeClock):
    """A hand-wound clock that counts the timers it is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.timers = 0

    def call_later(self, delay_s: float, callback: Callable[[], object]) -> Any:
        self.timers += 1
        return super().call_later(delay_s, callback)


async def test_turns_answered_in_time_set_no_timer() -> None:
    """The match's one timer is set when the game starts, and again only when it rings (for
    the turn awaited then) or must ring sooner; a seat that does not answer still times out
    on time."""
    clock = CountingClock()
    arena = Arena(test_config(turn_timeout_ms=2000, first_turn_timeout_ms=5000), clock=clock)
    async with arena.running():
        match = arena.open("tavern")
        inboxes = (Inbox(), Inbox())
        for number, inbox in enumerate(inboxes):
            match.seat(inbox, SeatRequest({"nick": f"bot{number}"}))
        await settle()
        play_passes(match, inboxes, 2)  # each seat's first turn: 5 s each
        clock.advance(1.0)
        play_passes(match, inboxes, 50)  # 2 s each from now on: the timer must ring sooner
        assert clock.timers == 2
        clock.advance(1.999)  # it rang for turn 3, answered: set again for turn 53, once
        assert match.turn_count == 52 and clock.timers == 3
        clock.advance(0.001)  # the awaited seat's 2 s are up: it passes
        assert match.turn_count == 53
        assert inboxes[0].messages[-1] == {
            "type": "error",
            "message": "Turn timeout",
            "reason": "no reply in 2 s: you passed",
        }
        match.stop()


async def test_an_unwatched_game_costs_the_hub_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Turns nobody watches build no view and encode no message in the hub; a page that comes
    later is still sent the game as it stands (its turn, position, replies and clock), and from
    then on each turn."""
    built: list[object] = []
    encoded: list[object] = []
    monkeypatch.setattr(visor.live_views, "replace", counted(replace, built))
    dumps = SimpleNamespace(dumps=counted(orjson.dumps, encoded))
    for module in (visor.hub, visor.lobby, visor.watching, visor.relays):
        monkeypatch.setattr(module, "orjson", dumps)
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
        page = Page(cast(web.WebSocketResponse, socket), None, 1 << 20)
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
