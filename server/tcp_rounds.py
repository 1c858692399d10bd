"""What the bots' port does for all its connections at once, once per round of the event loop:
their writes made together (``WriteBatch``), the input of connections without a game let
through a budget at a time (``RoundBudget``); and for each, its idle deadline
(``IdleDeadline``), TCP keepalive (``keep_alive``) and the kernel's round trip
(``kernel_round_trip_s``)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

UNJOINED_INPUT_PER_ROUND = 32_768  # see RoundBudget
WRITE_BATCH_S = 0.001  # see WriteBatch: measured with bench/load.py, 300 to 1,000 games
# TCP keepalive on every bot's connection: a peer silent this long is probed, and one that
# answers none of the probes (a machine gone, a cable cut) is dropped, within 60 s. A bot that
# waits for a game or a challenge may stay silent for as long as it likes: the kernel answers
# the probes for it, unseen by the bot.
KEEPALIVE_IDLE_S = 30
KEEPALIVE_INTERVAL_S = 10
KEEPALIVE_PROBES = 3
TCP_INFO_BYTES = 104  # struct tcp_info up to its round trip estimate and beyond
TCP_INFO_RTT_OFFSET = 68  # tcpi_rtt: the smoothed round trip, in microseconds


class Writer(Protocol):
    """A connection whose writes wait for the end of the round (``server.tcp.Connection``)."""

    def write_unsent(self) -> None:
        """Hand what waits to the transport, in order."""


class WriteBatch:
    """Socket writes made together: at the end of the event loop's round, or sooner once the
    first has waited ``most_s``.

    A write to a bot's socket may wake the bot's process. Made one by one between turns, such
    writes cost more than the rest of a turn under load; made back to back, most find their
    process already awake (Tavern under load: 12,000 to 14,000 turns/s instead of 10,600 to
    11,100). The wait is bounded: held to the end of a long round (a burst of turns), the first
    writes of the round made the reply latency's p99 two to three times longer.
    """

    def __init__(self, most_s: float) -> None:
        self.most_s = most_s
        self._connections: list[Writer] = []
        self._since = 0.0
        self._flush_due = False

    def add(self, connection: Writer) -> None:
        if not self._connections:
            self._since = time.perf_counter()
        self._connections.append(connection)
        if time.perf_counter() - self._since >= self.most_s:
            self._write()
        elif not self._flush_due:
            self._flush_due = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self._flush_due = False
        self._write()

    def _write(self) -> None:
        connections, self._connections = self._connections, []
        for connection in connections:
            connection.write_unsent()


class RoundBudget:
    """Input bytes from connections that have not joined a game, handled per loop round.

    Such connections cannot delay the games: however many of them send at once, each round of
    the event loop handles at most about ``per_round`` of their bytes, in the order they came;
    the others stop reading (their bytes wait in the kernel's buffers) until their turn, while
    seated bots are served at once, and so is what a connection sends first
    (``UNMETERED_INPUT``: a create or a join), so a bot that has just connected never waits
    behind the flood.
    """

    def __init__(self, per_round: int) -> None:
        self.per_round = per_round
        self._left = per_round
        self._waiting: deque[tuple[int, Callable[[], None]]] = deque()
        self._refill_due = False

    def take(self, size: int, then: Callable[[], None]) -> bool:
        """True if ``size`` bytes may be handled now; else ``then`` is called when they may."""
        if self._left > 0 and not self._waiting:
            self._left -= size
            self._refill_soon()
            return True
        self._waiting.append((size, then))
        self._refill_soon()
        return False

    def _refill_soon(self) -> None:
        if not self._refill_due:
            self._refill_due = True
            asyncio.get_running_loop().call_soon(self._refill)

    def _refill(self) -> None:
        """A new round: let through as many waiting as its budget allows, and no more."""
        self._refill_due = False
        left = self.per_round
        loop = asyncio.get_running_loop()
        while self._waiting and left > 0:
            size, then = self._waiting.popleft()
            loop.call_soon(then)
            left -= size
        self._left = left
        if self._waiting:
            self._refill_soon()


def keep_alive(sock: socket.socket | None) -> None:
    """TCP keepalive on a bot's socket (``KEEPALIVE_IDLE_S``...), where the system has it."""
    if sock is None:
        return
    options = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for names, value in (
        (("TCP_KEEPIDLE", "TCP_KEEPALIVE"), KEEPALIVE_IDLE_S),  # the second: macOS's name
        (("TCP_KEEPINTVL",), KEEPALIVE_INTERVAL_S),
        (("TCP_KEEPCNT",), KEEPALIVE_PROBES),
    ):
        option = next((getattr(socket, n) for n in names if hasattr(socket, n)), None)
        if option is not None:
            options.append((socket.IPPROTO_TCP, option, value))
    with contextlib.suppress(OSError):  # a socket closed by its peer already
        for level, option, value in options:
            sock.setsockopt(level, option, value)


class IdleDeadline:
    """A connection's ``idleTimeoutMs``: counted only while it is idle, from when it became so
    (``start``, which a running count does not restart), and stopped when it is not."""

    def __init__(self, idle_s: float, expired: Callable[[], None]) -> None:
        self.idle_s = idle_s
        self._expired = expired
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.idle_s, self._rang)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _rang(self) -> None:
        self._timer = None
        self._expired()


def kernel_round_trip_s(sock: socket.socket | None) -> float | None:
    """The kernel's smoothed estimate of a TCP connection's round trip (``TCP_INFO``), where
    the system gives one."""
    option = getattr(socket, "TCP_INFO", None)
    if sock is None or option is None:
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, option, TCP_INFO_BYTES)
    except OSError:  # closed meanwhile
        return None
    if len(info) < TCP_INFO_RTT_OFFSET + 4:
        return None
    microseconds: int = struct.unpack_from("I", info, TCP_INFO_RTT_OFFSET)[0]
    return microseconds / 1e6
