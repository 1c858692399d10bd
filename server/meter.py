"""What one peer may cost the server: token buckets, pure (the caller brings the clock).

Every connection is metered, seated ones included: the bytes it sends, and the errors it earns
(each bad line, unknown message, refused move... is an error line written back). An honest bot
earns a few errors and sends a few hundred bytes a turn; a peer past its budget is not cut off,
it is read more slowly (its bytes wait in the kernel's buffers, which slows its sender), so that
however it floods it costs the server a bounded share, and the other games go on.
"""

from __future__ import annotations

from dataclasses import dataclass


class TokenBucket:
    """``rate`` tokens a second, up to ``burst``; taking more than there are runs into debt,
    which is paid back at ``rate`` before anything more may be taken. ``tokens`` is what is
    left as of the last take (negative: in debt); a bucket out of debt stays so as time passes,
    so a caller may read it instead of calling ``wait_s``."""

    __slots__ = ("_at", "burst", "rate", "tokens")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self._at = now

    def take(self, amount: float, now: float) -> None:
        if now > self._at:  # refilled first
            self.tokens = min(self.burst, self.tokens + (now - self._at) * self.rate)
            self._at = now
        self.tokens -= amount

    def wait_s(self, now: float) -> float:
        """How long until the bucket is out of debt (0 if it is not in debt). A bucket out of
        debt stays so as time passes: it is refilled (lazily, from ``_at``) only when in debt,
        as it is read several times a message."""
        if self.tokens >= 0:
            return 0.0
        self.take(0, now)  # refilled
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate


@dataclass(frozen=True, slots=True)
class MeterLimits:
    """A connection's budget: input bytes and error replies per second, with their bursts."""

    bytes_per_s: float
    bytes_burst: float
    errors_per_s: float
    errors_burst: float


class InputMeter:
    """One peer's budget: how long its reading must pause for what it has cost so far."""

    __slots__ = ("_bytes", "_errors")

    def __init__(self, limits: MeterLimits, now: float) -> None:
        self._bytes = TokenBucket(limits.bytes_per_s, limits.bytes_burst, now)
        self._errors = TokenBucket(limits.errors_per_s, limits.errors_burst, now)

    def received(self, size: int, now: float) -> None:
        self._bytes.take(size, now)

    def erred(self, now: float) -> None:
        self._errors.take(1, now)

    def pause_s(self, now: float) -> float:
        """How long to stop reading the peer: until both budgets are out of debt (read twice a
        message: a peer out of debt, the common case, is answered without a call)."""
        bytes_bucket, errors = self._bytes, self._errors
        if bytes_bucket.tokens >= 0 and errors.tokens >= 0:
            return 0.0
        return max(bytes_bucket.wait_s(now), errors.wait_s(now))
