"""A bot connection's round trip, measured so that a reply's network time is not charged as its
thinking (issue 34): what the arena counts as a bot's think time is its reply time less the
round trip and less the time the arena itself was late (``server.clock``).

Sans-I/O: the front end says when it may ping (``ping``) and hands over each ``pong``, with its
clock's time; it sends the ping message this returns. A bot is pinged only if it asked to be
(``"pings": true`` when it takes a seat): the original protocol's bots hang up on a message
type they do not know. Where a bot answers no ping, the kernel's own estimate of the TCP round
trip (``TCP_INFO``) stands in, except through a balancer (it would measure the balancer's link).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from server.games.base import JsonObject

# A ping unanswered this long is given up (a bot that stopped answering, a lost line): the
# next ping replaces it.
PING_GIVEN_UP_S: Final = 10.0
# Weight of a new sample in the smoothed round trip (RFC 6298's alpha): a single slow answer
# (the bot busy with its turn's message when the ping came) moves the estimate by an eighth.
NEW_SAMPLE_WEIGHT: Final = 0.125
KERNEL_READ_EVERY_S: Final = 1.0  # the kernel's estimate is read again at most this often


class RoundTrip:
    """One connection's round trip: the pings sent and answered, and the estimate they give."""

    __slots__ = (
        "_kernel_read_at",
        "_kernel_s",
        "_last_sent",
        "_next_id",
        "_pending",
        "_smoothed_s",
        "interval_s",
        "kernel",
        "pings",
        "samples",
    )

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s  # at most one ping this often
        self.pings = False  # the bot answers pings (it asked for them)
        self.samples = 0  # pings answered
        # The kernel's estimate of the TCP round trip, where no balancer stands in between.
        self.kernel: Callable[[], float | None] | None = None
        self._kernel_s: float | None = None
        self._kernel_read_at = float("-inf")
        self._next_id = 1
        self._last_sent = float("-inf")
        self._pending: tuple[int, float] | None = None  # (id, sent at)
        self._smoothed_s: float | None = None

    def ping(self, now: float) -> JsonObject | None:
        """The ping to send now, if one is due: the bot answers pings, none is awaited (or the
        one awaited was given up), and the last was sent ``interval_s`` ago or more."""
        if not self.pings:
            return None
        pending = self._pending
        if pending is not None and now - pending[1] < PING_GIVEN_UP_S:
            return None
        if now - self._last_sent < self.interval_s:
            return None
        ping_id = self._next_id
        self._next_id += 1
        self._pending = (ping_id, now)
        self._last_sent = now
        return {"type": "ping", "id": ping_id}

    def pong(self, ping_id: object, now: float) -> None:
        """A pong: if it answers the ping awaited, a sample of the round trip (any other, late
        or made up, changes nothing)."""
        pending = self._pending
        if pending is None or type(ping_id) is not int or ping_id != pending[0]:
            return
        self._pending = None
        sample = max(0.0, now - pending[1])
        smoothed = self._smoothed_s
        if smoothed is None:
            self._smoothed_s = sample
        else:
            self._smoothed_s = smoothed + NEW_SAMPLE_WEIGHT * (sample - smoothed)
        self.samples += 1

    def reported(self, estimate_s: float | None) -> None:
        """The estimate another node measured for a connection it holds (``None``: none)."""
        self._smoothed_s = estimate_s

    def estimate_s(self, now: float) -> float | None:
        """The round trip as measured by the bot's pongs, else by the kernel where it may be
        read; ``None`` where neither measures it."""
        if self._smoothed_s is not None:
            return self._smoothed_s
        kernel = self.kernel
        if kernel is None:
            return None
        if now - self._kernel_read_at >= KERNEL_READ_EVERY_S:
            self._kernel_read_at = now
            self._kernel_s = kernel()
        return self._kernel_s
