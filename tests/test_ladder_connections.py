"""Ladder bots' connections over real sockets (issue 30, items 1 and 2): a registered bot seeks
again on the connection it played its last game on; a bot seeking, or present for challenges,
waits past ``idleTimeoutMs`` while a connection that does nothing is still cut, and one that
stops seeking counts its idle time again from then; a full arena closes idle connections before
waiting ones; every bot's socket has TCP keepalive, on either event loop."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import uvloop

from server.tcp_rounds import KEEPALIVE_IDLE_S, KEEPALIVE_INTERVAL_S, KEEPALIVE_PROBES
from tests.conftest import RECEIVE_TIMEOUT_S, RawClient, serving, test_config
from tests.test_identity import added, arena_on

IDLE_S = 1.0  # a key check (scrypt) on a busy machine takes some tenths of a second
ENDS = ("win-game", "loss-game", "draw-game")


def seek(game: str = "thud", **fields: Any) -> dict[str, Any]:
    return {"type": "seek", "game": game, **fields}


async def played_out(dwarf: RawClient, troll: RawClient) -> None:
    """A Thud game both bots were just seated in, ended at once: the dwarfs make no move."""
    await dwarf.expect("turn")
    await dwarf.send({"type": "player-turn", "stop": True})
    for client in (dwarf, troll):
        assert (await client.receive())["type"] in ENDS


async def seated(*clients: RawClient) -> list[dict[str, Any]]:
    return [await client.expect("game-info") for client in clients]


def by_side(clients: list[RawClient], infos: list[dict[str, Any]]) -> tuple[RawClient, RawClient]:
    """The dwarf's client, then the troll's."""
    sides = {info["side"]: client for client, info in zip(clients, infos, strict=True)}
    return sides["dwarf"], sides["troll"]


async def test_a_registered_bot_seeks_again_on_the_connection_of_its_last_game(
    tmp_path: Path,
) -> None:
    """Before, the arena closed a bot's connection at its game's end, so a seek sent on it
    after the game was never answered (item 1)."""
    database = str(tmp_path / "arena.db")
    keys = {name: added(database, name) for name in ("Grimli", "Ugluk")}
    async with arena_on(database) as (arena, port):
        bots = [await RawClient.connect(port) for _ in keys]
        for client, (name, key) in zip(bots, keys.items(), strict=True):
            await client.send(seek(bot=name, key=key))
        first = await seated(*bots)
        await played_out(*by_side(bots, first))
        grimli, ugluk = bots
        await grimli.send(seek(bot="Grimli", key=keys["Grimli"]))  # the same connection
        guest = await RawClient.connect(port)
        await guest.send(seek(nick="guest"))
        again, _ = await seated(grimli, guest)
        assert again["simulationId"] != first[0]["simulationId"]
        (match,) = arena.matches.values()
        assert {seat.player.nick for seat in match.seats if seat is not None} == {
            "Grimli",
            "guest",
        }
        # Ugluk, after its game, is still connected: present for challenges, free to seek.
        await ugluk.send({"type": "player-turn", "stop": True})
        assert (await ugluk.expect_error("Game over"))["reason"] == "this game has ended"
        for client in (*bots, guest):
            await client.close()


async def test_seeking_and_present_bots_wait_past_the_idle_timeout_an_idle_one_does_not(
    tmp_path: Path,
) -> None:
    """Before, every connection without a seat was cut ``idleTimeoutMs`` after it connected,
    a seeking or present ladder bot too (item 2)."""
    database = str(tmp_path / "arena.db")
    key = added(database, "Grimli")
    async with arena_on(database, idle_timeout_ms=round(IDLE_S * 1000)) as (_, port):
        idle, seeking, present = [await RawClient.connect(port) for _ in range(3)]
        await seeking.send(seek("tavern", nick="seeker"))
        await present.send({"type": "create-simulation", "bot": "Grimli", "key": key})
        await present.expect("ready")
        refusal = await idle.expect_error("Idle timeout")
        assert refusal["reason"] == f"no game, no seek and no registered bot named in {IDLE_S:g} s"
        assert await idle.is_closed()
        await asyncio.sleep(3 * IDLE_S)
        for client in (seeking, present):  # still there, and answering
            await client.send({"type": "create-simulation"})
            await client.expect("ready")
        for client in (idle, seeking, present):
            await client.close()


async def test_a_bot_that_stops_seeking_counts_its_idle_time_again_from_then() -> None:
    """A guest seeks longer than the idle timeout, plays, and after its game (its connection
    kept: it sought) is idle again: cut a whole ``idleTimeoutMs`` after the game's end."""
    async with serving(test_config(idle_timeout_ms=round(IDLE_S * 1000))) as arena:
        early = await RawClient.connect(arena.tcp_port)
        await early.send(seek(nick="early"))
        await asyncio.sleep(2 * IDLE_S)
        late = await RawClient.connect(arena.tcp_port)
        await late.send(seek(nick="late"))
        clients = [early, late]
        await played_out(*by_side(clients, await seated(*clients)))
        loop = asyncio.get_running_loop()
        ended_at = loop.time()
        for client in clients:
            refusal = await client.expect_error("Idle timeout")
            assert refusal["reason"].endswith(f"in {IDLE_S:g} s")
            assert loop.time() - ended_at >= 0.75 * IDLE_S  # not counted from the connection
            assert await client.is_closed()


async def test_a_full_arena_closes_idle_connections_before_waiting_ones(tmp_path: Path) -> None:
    """The newcomer to a full arena takes the place of the connection idle longest, however new;
    with none idle, of the one waiting longest for a game or a challenge; never a seated one."""
    database = str(tmp_path / "arena.db")
    key = added(database, "Grimli")
    async with arena_on(database, max_connections=3) as (arena, port):
        seeking, present, idle = [await RawClient.connect(port) for _ in range(3)]
        await seeking.send(seek("tavern", nick="seeker"))
        await present.send({"type": "create-simulation", "bot": "Grimli", "key": key})
        await present.expect("ready")
        newcomer = await RawClient.connect(port)
        refusal = await idle.expect_error("Too many connections")
        assert refusal["reason"] == "the arena is full: the longest idle connection gives way"
        assert await idle.is_closed()
        await newcomer.send(seek(nick="newcomer"))  # Thud: it waits too, alone
        async with asyncio.timeout(RECEIVE_TIMEOUT_S):
            while len(arena.seeks.seekers) < 2:
                await asyncio.sleep(0.01)
        last = await RawClient.connect(port)
        refusal = await seeking.expect_error("Too many connections")
        assert refusal["reason"] == "the arena is full: the longest waiting one gives way"
        assert await seeking.is_closed()
        for client in (present, newcomer):  # untouched
            await client.send({"type": "create-simulation"})
            await client.expect("ready")
        for client in (seeking, present, idle, newcomer, last):
            await client.close()


async def keepalive_options() -> tuple[int, int, int, int]:
    """A bot's connection's keepalive settings, read from the server's end of its socket."""
    async with serving(test_config()) as arena:
        client = await RawClient.connect(arena.tcp_port)
        async with asyncio.timeout(RECEIVE_TIMEOUT_S):
            while not arena.connections:
                await asyncio.sleep(0.01)
        (connection,) = arena.connections
        assert connection.transport is not None
        sock = connection.transport.get_extra_info("socket")
        options = (
            sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
            sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
            sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
            sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
        )
        await client.close()
        return options


@pytest.mark.parametrize("new_loop", [asyncio.new_event_loop, uvloop.new_event_loop])
def test_every_bot_connection_has_tcp_keepalive(
    new_loop: Callable[[], asyncio.AbstractEventLoop],
) -> None:
    """Dead peers of bots waiting without a word are found by the kernel's probes (the arena
    runs on uvloop by default, on asyncio's own loop where uvloop is missing)."""
    with asyncio.Runner(loop_factory=new_loop) as runner:
        options = runner.run(keepalive_options())
    assert options == (1, KEEPALIVE_IDLE_S, KEEPALIVE_INTERVAL_S, KEEPALIVE_PROBES)
