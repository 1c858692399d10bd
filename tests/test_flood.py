"""Floods and scans that one peer or a few addresses could use against the TCP arena (issue 20,
items 10, 12, 14 and 15), each over real sockets on loopback with a real arena.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

import orjson
import pytest

from server.cluster.directory import Directory
from server.games.base import JsonObject
from server.match_options import MatchOptions
from tests.conftest import RawClient, serving, test_config

CREATE = {"type": "create-simulation"}


async def connect_from(address: str, port: int) -> RawClient:
    """A client whose connection comes from ``address`` (any 127.x.y.z is this machine)."""
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, local_addr=(address, 0), limit=1 << 22
    )
    return RawClient(reader, writer)


async def lines_until_quiet(client: RawClient, quiet_s: float, most: int) -> list[JsonObject]:
    """Every message the server sends until it says nothing for ``quiet_s`` (at most ``most``)."""
    received: list[JsonObject] = []
    with contextlib.suppress(TimeoutError, ConnectionError):
        while len(received) < most:
            received.append(await client.receive(quiet_s))
    return received


async def test_a_line_of_open_braces_gets_one_error_and_the_bot_plays_on(connect: Any) -> None:
    """10,000 ``{`` once earned an error per brace, and the bot was dropped for not reading
    them ("send buffer full")."""
    client = await connect()
    braces = b"{" * 10_000
    for offset in range(0, len(braces), 1460):  # as the network delivers it: in segments
        await client.send_raw(braces[offset : offset + 1460])
    await client.send_raw(b"\n" + orjson.dumps(CREATE) + b"\n")
    await client.expect_error("Invalid JSON")
    await client.expect("ready")
    # Without a newline, the same line costs one error and nothing more, however long it is.
    await client.send_raw(b"{" * 4096)
    replies = await lines_until_quiet(client, quiet_s=0.5, most=100)
    assert [reply["message"] for reply in replies] == ["Invalid JSON"]


async def test_a_seated_bot_that_floods_is_answered_at_its_error_rate_and_plays_on() -> None:
    """120 seated connections once sent 709 MB of ``{"type":"x"}`` in 33 s, each line answered
    at once, and cut honest throughput by 60%: every connection is metered now (item 14). Its
    lines are all answered, in order, at its rate; then its move is played."""
    rate, flood = 200, 1000
    async with serving(test_config(max_errors_per_second=rate)) as arena:
        flooder, other = [await RawClient.connect(arena.tcp_port) for _ in range(2)]
        for client, side in ((flooder, "dwarf"), (other, "troll")):
            await client.send({"type": "join-simulation", "game": "thud", "side": side})
            await client.expect("game-info")
        turn = await flooder.expect("turn")
        move = turn["state"]["moves"][0]
        loop = asyncio.get_running_loop()
        await flooder.send_raw(b'{"type":"x"}\n' * flood)
        await flooder.send(
            {"type": "player-turn", "move": {"from": move["from"], "to": move["to"]}}
        )
        started = loop.time()
        replies = []
        while loop.time() - started < 0.5:
            replies.append(await flooder.receive(10))
        # A burst of twice the rate, then the rate: nowhere near one reply per line at once.
        assert len(replies) <= 2 * rate + rate * (loop.time() - started) + rate / 5
        async with asyncio.timeout(flood / rate + 10):
            while len(replies) < flood:
                replies.append(await flooder.receive(10))
        assert {reply["message"] for reply in replies} == {"Unknown message type"}
        assert (await other.expect("turn"))["state"]["ply"] == 2  # its move, after its lines
        for client in (flooder, other):
            await client.close()


async def test_random_joins_find_a_waiting_simulation_without_looking_at_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With 4,000 simulations waiting, an invalid random join looked at every one of them before
    it was refused, 2.8 ms each (item 12): it is checked first now, and a valid one goes
    straight to its simulation."""
    async with serving(test_config(max_waiting_simulations_per_address=10_000)) as arena:
        codec = arena.arena.codec("thud")
        for _ in range(4000):
            arena.arena.open("thud", MatchOptions())
        half_full = arena.arena.open("thud", MatchOptions())
        dwarf = await RawClient.connect(arena.tcp_port)
        await dwarf.send({"type": "join-simulation", "game": "thud", "simulationId": half_full.id})
        await dwarf.expect("game-info")
        looked_at: list[Sequence[int]] = []
        real_choose_seat = codec.choose_seat

        def counting_choose_seat(free_seats: Sequence[int], request: JsonObject) -> int:
            looked_at.append(free_seats)
            return real_choose_seat(free_seats, request)

        monkeypatch.setattr(codec, "choose_seat", counting_choose_seat)
        waiting = len(arena.matches)
        bad = await RawClient.connect(arena.tcp_port)
        for message in (
            {"type": "join-simulation", "game": "thud", "nick": ""},
            {"type": "join-simulation", "game": "thud", "side": "wizard"},
            {"type": "join-simulation", "game": "thud", "nick": ["x"] * 100},
        ):
            await bad.send(message)
            await bad.expect_error("Invalid join")
        assert looked_at == []  # refused before any simulation was looked at
        assert len(arena.matches) == waiting  # and none was opened for it
        # A troll's random join takes the simulation where a dwarf waits, at once.
        troll = await RawClient.connect(arena.tcp_port)
        await troll.send({"type": "join-simulation", "game": "thud", "side": "troll"})
        info = await troll.expect("game-info")
        assert info["simulationId"] == half_full.id
        assert len(looked_at) == 1
        for client in (dwarf, bad, troll):
            await client.close()


async def test_idle_connections_from_a_few_addresses_give_way_to_a_new_bot() -> None:
    """10,410 idle connections from 3 addresses once locked every new bot out for up to the
    idle timeout (item 15): a full arena now closes its longest idle connection for a
    newcomer; seated bots are never closed for it."""
    most = 60
    async with serving(test_config(max_connections=most)) as arena:
        seated = await connect_from("127.0.0.9", arena.tcp_port)
        await seated.send({"type": "join-simulation", "nick": "seated"})
        await seated.expect("game-info")
        idle = [
            await connect_from(f"127.0.0.{2 + index % 3}", arena.tcp_port)
            for index in range(most - 1)
        ]
        async with asyncio.timeout(10):
            while len(arena.connections) < most:
                await asyncio.sleep(0.01)
        newcomer = await RawClient.connect(arena.tcp_port)
        await newcomer.send({"type": "join-simulation", "nick": "newcomer"})
        info = await newcomer.expect("game-info")
        assert info["team"] == "team2"  # it met the seated bot
        error = await idle[0].expect_error("Too many connections")
        assert "longest idle" in error["reason"]
        assert await idle[0].is_closed()
        assert (await seated.expect("turn"))["turn"] == 1
        for client in (seated, newcomer, *idle):
            await client.close()


def test_the_directory_finds_another_nodes_waiting_simulation_by_seat() -> None:
    """The other nodes' waiting simulations are indexed as a node's own are (item 12): a random
    join through another node does not look at every entry either."""

    def entry(name: str, node: str, free: list[int], status: str = "waiting") -> JsonObject:
        players: list[Any] = [None if seat in free else {"nick": "x"} for seat in range(2)]
        return {
            "simulationId": name,
            "game": "thud",
            "node": node,
            "status": status,
            "players": players,
            "free": free,
        }

    directory = Directory()
    directory.replace(
        [entry(f"empty{n}", "a", [0, 1]) for n in range(1000)]
        + [entry("dwarf-waits", "b", [1]), entry("playing", "a", [], status="playing")]
    )
    assert directory.waiting("thud", (1,)) == "dwarf-waits"  # a troll meets the waiting dwarf
    assert directory.waiting("thud", (0,)) == "empty0"  # a dwarf takes an empty one
    assert directory.waiting("tavern", (0, 1)) is None
    directory.put(entry("dwarf-waits", "b", [], status="playing"))  # it started
    assert directory.waiting("thud", (1,)) == "empty0"
    assert directory.drop_nodes({"a"}) == 1001
    assert directory.waiting("thud", (0, 1)) is None
    assert len(directory) == 1
