"""What each address and each registered bot holds on this node, kept as seats and seeks change:
an address's seeks (capped, and paced so that a flood of seeks paired as fast as they come costs
the node no more than ``seeksPerAddressPerMinute`` games) and its waiting simulations (capped,
those its creator left kept apart, oldest first); a registered bot's unfinished games and seeks
(``maxGamesPerBot`` on the ladder counts them)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

from server.clock import Clock
from server.config import ArenaConfig
from server.errors import BotError, Rejected
from server.identity import AddressPacer

SEEK_BURST = 20  # seeks one address may make at once, before seeksPerAddressPerMinute applies


def count_down(counts: Counter[str], key: str) -> None:
    """One fewer held by ``key``; a key that holds none is not kept (counts stay as small as
    what is held)."""
    counts[key] -= 1
    if not counts[key]:
        del counts[key]


class SeekLedger:
    """The seeks waiting here: from which address each came, and which registered bot's."""

    def __init__(self, config: ArenaConfig, clock: Clock, held: BotHoldings) -> None:
        self.config = config
        self._held = held
        self._addresses: dict[str, str] = {}  # seek id -> the address it came from
        self._by_address: Counter[str] = Counter()
        self._pacer = AddressPacer(
            clock, burst=SEEK_BURST, refill_s=60 / config.seeks_per_address_per_minute
        )

    def admit(self, seek_id: str, address: str, bot: str | None) -> None:
        """Count a new seek from ``address`` (of ``bot``, if registered), or raise ``Rejected``
        if the address has ``maxSeeksPerAddress`` waiting or seeks faster than its pace."""
        most = self.config.max_seeks_per_address
        if self._by_address[address] >= most:
            raise Rejected(
                BotError.TOO_MANY_SEEKS, f"at most {most} seeks waiting from one address"
            )
        if (wait_s := self._pacer.wait_now(address)) > 0:
            per_minute = self.config.seeks_per_address_per_minute
            reason = f"at most {per_minute} seeks a minute from one address"
            raise Rejected(BotError.TOO_MANY_SEEKS, f"{reason}: try again in {math.ceil(wait_s)} s")
        self._pacer.spend_now(address)
        self._addresses[seek_id] = address
        self._by_address[address] += 1
        if bot is not None:
            self._held.seek_added(seek_id, bot)

    def ended(self, seek_id: str) -> None:
        """The seek was paired or withdrawn: its bot and its address hold it no more."""
        address = self._addresses.pop(seek_id, None)
        if address is not None:
            count_down(self._by_address, address)
        self._held.seek_ended(seek_id)


class BotHoldings:
    """Each registered bot's unfinished games and waiting seeks here; ``changed`` hears of every
    bot whose count changed (the other nodes keep the sum)."""

    def __init__(self, changed: Callable[[str], None]) -> None:
        self._changed = changed
        self._match_bots: dict[str, frozenset[str]] = {}  # an unfinished match's bots
        self._bot_matches: dict[str, set[str]] = {}
        self._seeking: dict[str, str] = {}  # seek id -> registered bot
        self._bot_seeks: Counter[str] = Counter()

    def games(self, bot: str) -> int:
        return len(self._bot_matches.get(bot, ())) + self._bot_seeks[bot]

    def seated(self, match_id: str, bots: frozenset[str]) -> None:
        """The registered bots of an unfinished match are now ``bots`` (none: it is over)."""
        before = self._match_bots.pop(match_id, frozenset())
        if bots:
            self._match_bots[match_id] = bots
        for bot in before - bots:
            matches = self._bot_matches[bot]
            matches.discard(match_id)
            if not matches:
                del self._bot_matches[bot]
        for bot in bots - before:
            self._bot_matches.setdefault(bot, set()).add(match_id)
        for bot in before ^ bots:
            self._changed(bot)

    def seek_added(self, seek_id: str, bot: str) -> None:
        self._seeking[seek_id] = bot
        self._bot_seeks[bot] += 1
        self._changed(bot)

    def seek_ended(self, seek_id: str) -> None:
        bot = self._seeking.pop(seek_id, None)
        if bot is not None:
            count_down(self._bot_seeks, bot)
            self._changed(bot)


class CreatorCaps:
    """The waiting simulations each address opened: at most ``maxWaitingSimulationsPerAddress``
    counted while their creator is connected; once it left, kept apart by address, oldest first,
    so that what it left behind never refuses the address a new one."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._creators: dict[str, str] = {}  # waiting match id -> the address that opened it
        self._counted: Counter[str] = Counter()
        self._orphans: dict[str, dict[str, None]] = {}

    def check(self, creator: str) -> bool:
        """Whether ``creator`` may open one more."""
        return self._counted[creator] < self.most

    def opened(self, match_id: str, creator: str) -> None:
        self._creators[match_id] = creator
        self._counted[creator] += 1

    def left(self, match_id: str) -> list[str]:
        """Its creator left: the match counts no more; returns the address's orphans, oldest
        first, when it has more than ``most`` of them (the oldest empty one is to go)."""
        creator = self._creators.get(match_id)
        if creator is None:
            return []  # started, or dropped, already
        orphans = self._orphans.setdefault(creator, {})
        if match_id in orphans:
            return []
        self._uncount(creator)
        orphans[match_id] = None
        return list(orphans) if len(orphans) > self.most else []

    def creator_of(self, match_id: str) -> str | None:
        return self._creators.get(match_id)

    def gone(self, match_id: str) -> None:
        """It started or was dropped: its creator may open another."""
        creator = self._creators.pop(match_id, None)
        if creator is None:
            return
        orphans = self._orphans.get(creator)
        if orphans is not None and match_id in orphans:
            del orphans[match_id]
            if not orphans:
                del self._orphans[creator]
        else:
            self._uncount(creator)

    def _uncount(self, creator: str) -> None:
        self._counted[creator] -= 1
        if not self._counted[creator]:
            del self._counted[creator]
