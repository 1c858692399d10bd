"""Bot identities: registered names, their keys, and the check every join, seek and challenge
goes through (``server.session``).

A registered bot names itself with ``bot`` and ``key``; its name is then its own: nobody may
play under it without the key, not even as a guest's free ``nick``. Only a salted hash of a key
is kept (``hashlib.scrypt``, a random salt per key, its parameters stored with it), compared in
constant time; a key is shown once, when it is made, and never logged, recorded or echoed.
Wrong keys cost their address a token of a bucket that fills slowly (``KeyPacer``), so that
guessing is paced: a check takes a token first and gives it back only for a right key, so that
checks in flight at once are paced too. On an arena of nodes the buckets live in Redis
(``server.cluster.bots``), so a guesser switching nodes is paced all the same. scrypt runs on
the roster's own few threads, never in the event loop, so that a check stalls no game; each
session has at most one check in flight (``server.session``), so what waits for the threads is
bounded by the connections. The roster here is a copy of the records' ``bots`` table, which
the node refreshes (``server.records``): the check itself never waits for a database.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import math
import re
import secrets
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol, TypeVar

from server.clock import Clock
from server.errors import BotError, Rejected
from server.games.base import JsonObject

T = TypeVar("T")

BOT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
KEY_PREFIX = "tvk_"
# scrypt's cost: 16 MiB and some 40 ms a hash. A key is 256 random bits, so this guards a
# leaked table, not a weak secret; a verified key is then remembered by its digest.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 1 << 14, 8, 1
SALT_BYTES = 16
DIGEST_BYTES = 32
# Wrong keys, per address: a burst of this many, then one more every ``KEY_REFILL_S``.
KEY_BURST = 5
KEY_REFILL_S = 2.0
MAX_PACED_ADDRESSES = 10_000  # addresses whose bucket is remembered (full ones are forgotten)
HASH_THREADS = 2  # scrypt's threads (it releases the GIL): a check waits for one


def new_key() -> str:
    """A fresh secret key, shown once to whoever registers the bot."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    """``scrypt$N$r$p$salt$digest``: the parameters travel with the hash, so they can grow."""
    salt = secrets.token_bytes(SALT_BYTES)
    digest = _scrypt(key, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    return "$".join(
        ("scrypt", str(SCRYPT_N), str(SCRYPT_R), str(SCRYPT_P), _b64(salt), _b64(digest))
    )


def key_matches(key: str, stored: str) -> bool:
    """Whether ``key`` is the one ``stored`` is the hash of, compared in constant time."""
    parts = stored.split("$")
    if len(parts) != 6 or parts[0] != "scrypt":
        return False  # a revoked key (empty), or a hash this code does not know
    n, r, p = (int(part) for part in parts[1:4])
    salt, digest = base64.urlsafe_b64decode(parts[4]), base64.urlsafe_b64decode(parts[5])
    return hmac.compare_digest(_scrypt(key, salt, n, r, p), digest)


def _scrypt(key: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    memory = 128 * r * n * p + (1 << 20)
    return hashlib.scrypt(key.encode(), salt=salt, n=n, r=r, p=p, maxmem=memory, dklen=DIGEST_BYTES)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode()


def check_name(name: object) -> str:
    """A name a bot may register: letters, digits, ``_.-``, 1 to 32 of them."""
    if not isinstance(name, str) or not BOT_NAME.fullmatch(name):
        raise Rejected(
            BotError.INVALID_BOT_NAME,
            "a bot's name is 1 to 32 letters, digits, '_', '.' or '-', starting with a letter "
            "or digit",
        )
    return name


@dataclass(frozen=True, slots=True)
class RegisteredBot:
    """One row of the records' ``bots``: a revoked key is an empty ``key_hash``."""

    name: str
    key_hash: str
    banned: bool = False


class Pacer(Protocol):
    """Where wrong keys are counted: this node's memory (``KeyPacer``), or the arena's Redis."""

    async def take(self, address: str) -> float:
        """Take a token of the address's bucket: 0 if taken, else how long until one is."""

    def refund(self, address: str) -> None:
        """Give back the token of a check that found the right key."""


class KeyPacer:
    """A token bucket per address, in this node's memory, spent by wrong keys (and
    registrations)."""

    def __init__(
        self, clock: Clock, burst: int = KEY_BURST, refill_s: float = KEY_REFILL_S
    ) -> None:
        self.clock = clock
        self.burst = burst
        self.refill_s = refill_s
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (tokens, as of)

    def _tokens(self, address: str) -> float:
        tokens, since = self._buckets.get(address, (self.burst, self.clock.now()))
        return min(self.burst, tokens + (self.clock.now() - since) / self.refill_s)

    async def take(self, address: str) -> float:
        return self.take_now(address)

    def take_now(self, address: str) -> float:
        """``take``, at once."""
        tokens = self._tokens(address)
        if tokens < 1:
            return (1 - tokens) * self.refill_s
        if len(self._buckets) >= MAX_PACED_ADDRESSES:
            self._forget_full()
        self._buckets[address] = (tokens - 1, self.clock.now())
        return 0.0

    def refund(self, address: str) -> None:
        if address in self._buckets:
            self._buckets[address] = (min(self.burst, self._tokens(address) + 1), self.clock.now())

    def _forget_full(self) -> None:
        for address in [a for a in self._buckets if self._tokens(a) >= self.burst]:
            del self._buckets[address]


class Roster:
    """The registered bots as this node knows them, and the check of a message's identity."""

    def __init__(self, clock: Clock, registration_open: bool = False) -> None:
        self.registration_open = registration_open
        self.keep: Callable[[RegisteredBot], object] | None = None  # the records, if kept
        self.pacer: Pacer = KeyPacer(clock)  # an arena of nodes puts the shared one here
        self._bots: dict[str, RegisteredBot] = {}  # by casefolded name
        self._ratings: dict[tuple[str, str], float] = {}  # (game, bot) -> this season's mu
        # Keys already verified, by a digest under a secret of this process: a bot that joins
        # game after game pays for scrypt once.
        self._secret = secrets.token_bytes(32)
        self._verified: set[tuple[str, bytes]] = set()
        self._hashing: ThreadPoolExecutor | None = None  # made at the first hash, closed by close

    def replace(self, bots: list[RegisteredBot]) -> None:
        """The records' table as just read."""
        self._bots = {bot.name.casefold(): bot for bot in bots}
        hashes = {bot.key_hash for bot in bots}
        self._verified = {entry for entry in self._verified if entry[0] in hashes}

    async def register(self, name: object, address: str) -> tuple[str, str]:
        """A bot registering itself (``"registration": "open"``): its name and its new key,
        which only the caller ever sees. It is known here at once, and kept in the records."""
        if not self.registration_open:
            raise Rejected(
                BotError.REGISTRATION_CLOSED, "bots are registered by the organiser here"
            )
        wait_s = await self.pacer.take(address)
        if wait_s > 0:
            raise Rejected(
                BotError.REGISTRATION_CLOSED,
                f"too many registrations from this address: try again in {math.ceil(wait_s)} s",
            )
        try:
            checked = check_name(name)
            if self.get(checked) is not None:
                raise Rejected(BotError.BOT_NAME_TAKEN, f"a bot named {checked!r} is registered")
        except Rejected:
            self.pacer.refund(address)  # only registrations made are paced
            raise
        key = new_key()
        bot = RegisteredBot(checked, await self._hashed(hash_key, key))
        if self.get(checked) is not None:  # registered meanwhile, through another connection
            raise Rejected(BotError.BOT_NAME_TAKEN, f"a bot named {checked!r} is registered")
        self._bots[checked.casefold()] = bot
        if self.keep is not None:
            self.keep(bot)
        return checked, key

    def replace_ratings(self, ratings: dict[tuple[str, str], float]) -> None:
        """The current season's ratings as just read: (game, bot) -> mu."""
        self._ratings = ratings

    def rating(self, game: str, bot: str) -> float | None:
        return self._ratings.get((game, bot))

    def get(self, name: str) -> RegisteredBot | None:
        return self._bots.get(name.casefold())

    def guest(self, fields: JsonObject) -> None:
        """A guest's message: its ``nick`` may not be a registered name (raises ``Rejected``)."""
        nick = fields.get("nick")
        if isinstance(nick, str) and nick.casefold() in self._bots:
            raise Rejected(
                BotError.NAME_REGISTERED,
                f"{nick!r} is a registered bot's name: give its bot and key, or another nick",
            )

    async def identify(self, fields: JsonObject, address: str) -> str | None:
        """The registered name a message's ``bot`` and ``key`` prove, or None for a guest;
        raises ``Rejected`` for a wrong key, or a guest's ``nick`` that is a registered name."""
        name = fields.get("bot")
        if name is None:
            self.guest(fields)
            return None
        key = fields.get("key")
        wait_s = await self.pacer.take(address)
        if wait_s > 0:
            raise Rejected(
                BotError.INVALID_BOT_KEY,
                f"too many wrong keys from this address: try again in {math.ceil(wait_s)} s",
            )
        bot = self.get(name) if isinstance(name, str) else None
        if bot is None or not isinstance(key, str) or not await self._matches(bot, key):
            raise Rejected(BotError.INVALID_BOT_KEY, f"no bot {str(name)[:32]!r} with this key")
        self.pacer.refund(address)  # a right key costs nothing
        return bot.name

    async def _matches(self, bot: RegisteredBot, key: str) -> bool:
        digest = hmac.digest(self._secret, key.encode(), "sha256")
        if (bot.key_hash, digest) in self._verified:
            return True
        if not await self._hashed(key_matches, key, bot.key_hash):
            return False
        self._verified.add((bot.key_hash, digest))
        return True

    async def _hashed(self, work: Callable[..., T], *args: str) -> T:
        """``work`` (scrypt) on the roster's threads, off the event loop."""
        if self._hashing is None:
            self._hashing = ThreadPoolExecutor(HASH_THREADS, thread_name_prefix="scrypt")
        return await asyncio.get_running_loop().run_in_executor(self._hashing, work, *args)

    def close(self) -> None:
        """The arena stops: its hashing threads end (a check in flight finishes first)."""
        if self._hashing is not None:
            self._hashing.shutdown(wait=False, cancel_futures=True)
            self._hashing = None
