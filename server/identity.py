"""Bot identities: registered names, their keys, and the check every join, seek and challenge
goes through (``server.session``).

A registered bot names itself with ``bot`` and ``key``; its name is then its own: nobody may
play under it without the key, not even as a guest's free ``nick``, nor under a name that looks
like it (``server.names``: a Greek omicron for an o is still ``Thorin``), and no bot may
register a look-alike of it. Only a salted hash of a key is kept (``hashlib.scrypt``, a random
salt per key, its parameters stored with it), compared in constant time; a key is shown once,
when it is made, and never logged, recorded or echoed.

Guessing is paced by delaying checks, never by refusing a right key: wrong keys cost their
address a token of a bucket that fills slowly (``AddressPacer``), and a key not verified yet waits,
before it is checked, until its address's bucket holds a token. Such keys are checked one at a
time per address on a node (the others from that address wait their turn, at most
``MAX_WAITING_CHECKS`` of them; past that a check is refused with ``Too many key checks`` and
when to try again), so that guesses sent at once on many connections are paced as if sent one
after another, while a right key from an address that also sends wrong ones is let in after
its wait. A key verified before (remembered by a digest) is answered at once: no guess is ever
among them. On an arena of nodes the buckets live in Redis (``server.cluster.bots``), so a
guesser switching nodes is paced all the same. scrypt runs on the roster's own few threads,
never in the event loop, so that a check stalls no game; each session has at most one check in
flight (``server.session``). The roster here is a copy of the records' ``bots`` table, which
the node keeps up to date with what changed (``server.records.identities``): the check itself
never waits for a database.

Self-registration (``"registration": "open"``) is paced per address as wrong keys are, and the
whole arena takes at most ``registrationsPerHour`` (``RegistrationBudget``, or Redis's on an
arena of nodes): a bucket of that many, refilled at that many an hour.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import math
import re
import secrets
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from server.clock import Clock
from server.errors import BotError, Rejected
from server.games.base import JsonObject
from server.names import name_forms, refused_character

T = TypeVar("T")

BOT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
KEY_PREFIX = "tvk_"
HOSTING_PREFIX = "tvh_"  # a hosting key's (``new_hosting_key``)
# scrypt's cost: 16 MiB and some 40 ms a hash. A key is 256 random bits, so this guards a
# leaked table, not a weak secret; a verified key is then remembered by its digest.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 1 << 14, 8, 1
SALT_BYTES = 16
DIGEST_BYTES = 32
# Wrong keys, per address: a burst of this many, then one more every ``KEY_REFILL_S``.
KEY_BURST = 5
KEY_REFILL_S = 2.0
MAX_PACED_ADDRESSES = 10_000  # addresses whose bucket is remembered (full ones are forgotten)
# Checks of keys not verified yet (and registrations) from one address that may wait their turn
# on a node; past them, one is refused (``Too many key checks``). A guesser's checks wait one
# ``KEY_REFILL_S`` each: a right key behind them waits at most about 16 of those.
MAX_WAITING_CHECKS = 16
HASH_THREADS = 2  # scrypt's threads (it releases the GIL): a check waits for one
REGISTRATIONS_PER_HOUR = 100  # ``registrationsPerHour``'s default


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


def new_hosting_key() -> str:
    """A fresh key for a worker to play a hosted bot with (never shown to anyone)."""
    return HOSTING_PREFIX + secrets.token_urlsafe(32)


def hosting_hash(key: str) -> str:
    """A hosting key's hash: SHA-256 (a key of 256 random bits needs no slow hash; a leaked
    table still gives nobody the key)."""
    return "sha256$" + hashlib.sha256(key.encode()).hexdigest()


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
    """One row of the records' ``bots``: a revoked key is an empty ``key_hash``. ``forms`` are
    what its name is compared by (``server.names``), worked out once, as the row is read."""

    name: str
    key_hash: str
    banned: bool = False
    # The hosting keys' hashes (``hosting_hash``): the keys ``tavern worker --hosted``
    # processes play the bot's active version with, one a worker, besides its owner's key.
    hosting_hashes: tuple[str, ...] = ()
    forms: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "forms", name_forms(self.name))


def look_alike_of(name: str, registered: Iterable[RegisteredBot]) -> RegisteredBot | None:
    """The registered bot whose name ``name`` looks like (``tavern bots add``'s check)."""
    forms = name_forms(name)
    return next((bot for bot in registered if any(form in forms for form in bot.forms)), None)


class Pacer(Protocol):
    """Where wrong keys are counted: this node's memory (``AddressPacer``), or the arena's Redis."""

    async def wait_s(self, address: str) -> float:
        """0 if the address's bucket holds a token, else how long until it does."""

    async def spend(self, address: str) -> None:
        """A wrong key (or a registration) from the address: a token of its bucket."""


class Budget(Protocol):
    """The arena's registrations: this node's (``RegistrationBudget``), or Redis's."""

    async def take(self) -> float:
        """0, and one registration counted; or, with none left, how long until there is."""


class AddressPacer:
    """A token bucket per address, in this node's memory: spent by wrong keys and
    registrations here, and by seeks (``server.arena``)."""

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

    async def wait_s(self, address: str) -> float:
        return self.wait_now(address)

    async def spend(self, address: str) -> None:
        self.spend_now(address)

    def wait_now(self, address: str) -> float:
        """``wait_s``, at once."""
        tokens = self._tokens(address)
        return 0.0 if tokens >= 1 else (1 - tokens) * self.refill_s

    def spend_now(self, address: str) -> None:
        """``spend``, at once."""
        if len(self._buckets) >= MAX_PACED_ADDRESSES:
            self._forget_full()
        self._buckets[address] = (self._tokens(address) - 1, self.clock.now())

    def _forget_full(self) -> None:
        for address in [a for a in self._buckets if self._tokens(a) >= self.burst]:
            del self._buckets[address]


class RegistrationBudget:
    """The arena's registrations, in this node's memory: a bucket of ``per_hour``, refilled at
    ``per_hour`` an hour (GCRA: the time the bucket is full again)."""

    def __init__(self, clock: Clock, per_hour: int = REGISTRATIONS_PER_HOUR) -> None:
        self.clock = clock
        self.per_hour = per_hour
        self.interval_s = 3600 / per_hour
        self._full_at = -math.inf  # full: no registration yet

    async def take(self) -> float:
        return self.take_now()

    def take_now(self) -> float:
        """``take``, at once."""
        now = self.clock.now()
        full_at = max(self._full_at, now)
        wait_s = full_at - now - (self.per_hour - 1) * self.interval_s
        if wait_s > 0:
            return wait_s
        self._full_at = full_at + self.interval_s
        return 0.0


class Roster:
    """The registered bots as this node knows them, and the check of a message's identity."""

    def __init__(
        self,
        clock: Clock,
        registration_open: bool = False,
        registrations_per_hour: int = REGISTRATIONS_PER_HOUR,
    ) -> None:
        self.clock = clock
        self.registration_open = registration_open
        self.registrations_per_hour = registrations_per_hour
        self.keep: Callable[[RegisteredBot], object] | None = None  # the records, if kept
        # Told (name, error, reason) when a bot is banned or its key revoked or replaced: the
        # arena's clients that proved they are that bot lose what the proof gave them.
        self.on_barred: Callable[[str, str, str], object] | None = None
        self.pacer: Pacer = AddressPacer(clock)  # an arena of nodes puts the shared one here
        self.budget: Budget = RegistrationBudget(clock, registrations_per_hour)  # or Redis's
        self._bots: dict[str, RegisteredBot] = {}  # by casefolded name
        self._forms: dict[str, RegisteredBot] = {}  # by each of ``server.names.name_forms``
        self._ratings: dict[tuple[str, str], float] = {}  # (game, bot) -> this season's mu
        # Keys already verified, by a digest under a secret of this process: a bot that joins
        # game after game pays for scrypt once.
        self._secret = secrets.token_bytes(32)
        self._verified: set[tuple[str, bytes]] = set()
        self._hashing: ThreadPoolExecutor | None = None  # made at the first hash, closed by close
        # The addresses whose checks wait their turn: a lock each, and how many hold or want it.
        self._turns: dict[str, tuple[asyncio.Lock, list[int]]] = {}

    def update(self, bots: Iterable[RegisteredBot]) -> None:
        """Rows of the records' table, new or changed since the last read: a rotated or revoked
        key's verifications are forgotten."""
        stale: set[str] = set()
        for bot in bots:
            known = self._bots.get(bot.name.casefold())
            if known is not None and known.key_hash != bot.key_hash:
                stale.add(known.key_hash)
            self._add(bot)
            self._changed(known, bot)
        if stale:
            self._verified = {entry for entry in self._verified if entry[0] not in stale}

    def _add(self, bot: RegisteredBot) -> None:
        self._bots[bot.name.casefold()] = bot
        for form in bot.forms:
            alike = self._forms.get(form)  # two look-alikes registered before this check: one
            if alike is None or alike.name == bot.name:
                self._forms[form] = bot

    def _changed(self, before: RegisteredBot | None, now: RegisteredBot) -> None:
        """A bot as the records say it now: ``on_barred`` hears of a ban, and of a key that
        is no longer the one the bot's clients proved (revoked, or replaced by a rotate)."""
        if before is None or self.on_barred is None:
            return
        if now.banned and not before.banned:
            self.on_barred(now.name, BotError.BOT_BANNED, f"{now.name} is banned from the ladder")
        elif now.key_hash != before.key_hash:
            done = "revoked" if not now.key_hash else "replaced by a new one"
            self.on_barred(now.name, BotError.INVALID_BOT_KEY, f"the key of {now.name} was {done}")

    def is_barred(self, name: str) -> bool:
        """A registered bot that may not seek or challenge now: banned, or with no key."""
        bot = self.get(name)
        return bot is not None and (bot.banned or not bot.key_hash)

    async def register(self, name: object, address: str) -> tuple[str, str]:
        """A bot registering itself (``"registration": "open"``): its name and its new key,
        which only the caller ever sees. It is known here at once, and kept in the records."""
        if not self.registration_open:
            raise Rejected(
                BotError.REGISTRATION_CLOSED, "bots are registered by the organiser here"
            )
        async with self._turn(address):
            wait_s = await self.pacer.wait_s(address)
            if wait_s > 0:
                raise Rejected(
                    BotError.REGISTRATION_CLOSED,
                    f"too many registrations from this address: try again in {math.ceil(wait_s)} s",
                )
            checked = self._unlike_any(name)
            wait_s = await self.budget.take()
            if wait_s > 0:
                raise Rejected(
                    BotError.REGISTRATION_CLOSED,
                    f"the arena takes at most {self.registrations_per_hour} registrations an "
                    f"hour: try again in {math.ceil(wait_s)} s",
                )
            await self.pacer.spend(address)
            key = new_key()
            bot = RegisteredBot(checked, await self._hashed(hash_key, key))
        self._unlike_any(checked)  # registered meanwhile, through another address?
        self._add(bot)
        if self.keep is not None:
            self.keep(bot)
        return checked, key

    def _unlike_any(self, name: object) -> str:
        """A name to register: visible, unlike every registered one, then well formed."""
        if isinstance(name, str):
            refused = refused_character(name)
            if refused is not None:
                raise Rejected(
                    BotError.INVALID_BOT_NAME, f"a name may not hold this character ({refused})"
                )
            taken = self.look_alike(name)
            if taken is not None:
                raise Rejected(BotError.BOT_NAME_TAKEN, _taken(name, taken))
        return check_name(name)

    def replace_ratings(self, ratings: dict[tuple[str, str], float]) -> None:
        """The current season's ratings as just read: (game, bot) -> mu."""
        self._ratings = ratings

    def update_ratings(self, ratings: dict[tuple[str, str], float]) -> None:
        """Ratings of the current season changed since the last read."""
        self._ratings.update(ratings)

    def rating(self, game: str, bot: str) -> float | None:
        return self._ratings.get((game, bot))

    def get(self, name: str) -> RegisteredBot | None:
        return self._bots.get(name.casefold())

    def look_alike(self, name: str) -> RegisteredBot | None:
        """The registered bot whose name ``name`` is, or looks like (``server.names``)."""
        forms = self._forms
        return next((forms[form] for form in name_forms(name) if form in forms), None)

    def guest(self, fields: JsonObject) -> None:
        """A guest's message: its ``nick`` must be visible and unlike every registered name
        (raises ``Rejected``)."""
        nick = fields.get("nick")
        if not isinstance(nick, str):
            return  # the game's codec says what a nick must be
        refused = refused_character(nick)
        if refused is not None:
            raise Rejected(
                BotError.INVALID_JOIN,
                f"a nick may not hold control or invisible characters ({refused})",
            )
        taken = self.look_alike(nick)
        if taken is not None:
            raise Rejected(
                BotError.NAME_REGISTERED,
                f"{_taken(nick, taken)}: give its bot and key, or another nick",
            )

    async def identify(self, fields: JsonObject, address: str) -> str | None:
        """The registered name a message's ``bot`` and ``key`` prove, or None for a guest;
        raises ``Rejected`` for a wrong key, or a guest's ``nick`` that is a registered name.
        A key not verified yet waits for its address's turn, and for a token of its bucket."""
        name = fields.get("bot")
        if name is None:
            self.guest(fields)
            return None
        key = fields.get("key")
        if isinstance(name, str) and isinstance(key, str):
            bot = self.get(name)
            if bot is not None and self._verified_already(bot, key):
                return bot.name  # verified before: no guess is ever among these
        async with self._turn(address):
            await self._paced(address)
            bot = self.get(name) if isinstance(name, str) else None  # as it is after the wait
            if bot is None or not isinstance(key, str) or not await self._matches(bot, key):
                await self.pacer.spend(address)
                raise Rejected(BotError.INVALID_BOT_KEY, f"no bot {str(name)[:32]!r} with this key")
        return bot.name

    async def _paced(self, address: str) -> None:
        """Wait until the address's bucket holds a token (another node may spend it meanwhile:
        then wait again)."""
        while (wait_s := await self.pacer.wait_s(address)) > 0:
            await self._sleep(wait_s)

    async def _sleep(self, seconds: float) -> None:
        """Sleep on the roster's clock (a hand-wound one in tests)."""
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not woken.done():
                woken.set_result(None)

        timer = self.clock.call_later(seconds, wake)
        try:
            await woken
        finally:
            timer.cancel()

    @contextlib.asynccontextmanager
    async def _turn(self, address: str) -> AsyncIterator[None]:
        """The address's turn to check a key not verified yet (or to register): one at a
        time, at most ``MAX_WAITING_CHECKS`` waiting (past them: ``Too many key checks``)."""
        lock, users = self._turns.setdefault(address, (asyncio.Lock(), [0]))
        if users[0] >= MAX_WAITING_CHECKS:
            retry_s = max(1, math.ceil(await self.pacer.wait_s(address)))
            raise Rejected(
                BotError.TOO_MANY_KEY_CHECKS,
                f"{MAX_WAITING_CHECKS} key checks from this address wait already: "
                f"try again in {retry_s} s",
            )
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._turns[address]

    def _digest(self, key: str) -> bytes:
        return hmac.digest(self._secret, key.encode(), "sha256")

    def _verified_already(self, bot: RegisteredBot, key: str) -> bool:
        return (bot.key_hash, self._digest(key)) in self._verified

    async def _matches(self, bot: RegisteredBot, key: str) -> bool:
        if key.startswith(HOSTING_PREFIX):  # a worker playing the bot's hosted version
            digest = hosting_hash(key)
            return any(hmac.compare_digest(digest, known) for known in bot.hosting_hashes)
        if self._verified_already(bot, key):  # by a check that had its turn first
            return True
        if not await self._hashed(key_matches, key, bot.key_hash):
            return False
        self._verified.add((bot.key_hash, self._digest(key)))
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


def _taken(name: str, bot: RegisteredBot) -> str:
    if name.casefold() == bot.name.casefold():
        return f"{name!r} is a registered bot's name"
    return f"{name!r} looks like the registered bot {bot.name!r}"
