"""Challenges, the lichess model: a bot challenges another by name; the challenged bot accepts
or declines; an unanswered challenge expires.

A registered bot is *present* on a node while one of its connections there has named itself
(``bot`` and ``key``) and holds no game: a challenge goes to the first such connection. The
board here keeps the node's present bots and the challenges they were sent or sent; an arena on
Redis finds a bot on another node through ``server.cluster`` and its board there answers.

Challenges waiting for an answer are capped twice: those a bot sent through this node
(``maxOpenChallengesPerBot``: past it, its challenge is refused, ``Too many challenges``), and
those offered to a bot here, from any node (``maxOpenChallengesToBot``: past it, a challenge is
declined for its sender at once). So a flood of challenges costs its sender, never its target:
the target is sent at most that many at a time, whatever others send (before the caps, a target
reading promptly was sent them 20 a second, ``messageGapMs`` apart, and was dropped once the
others waiting for it filled its ``maxSendBufferBytes``).
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from server.clock import Clock, Timer
from server.errors import BotError, Rejected
from server.games.base import JsonObject


class Challenged(Protocol):
    """A client that may be sent a challenge and answer it (``server.session.ladder.Ladder``)."""

    @property
    def free(self) -> bool:
        """It holds no game (and is not gone)."""

    def challenged(self, challenge: Challenge) -> None:
        """Tell the client of a challenge for it."""

    def barred(self, message: str, reason: str) -> None:
        """The bot the client proved it is may no longer seek or challenge (an error line's
        text and reason: banned, or its key revoked or replaced)."""


@dataclass(slots=True)
class Challenge:
    """One challenge: who sent it, to whom, for which game, with which seat for the sender."""

    id: str
    challenger: str
    opponent: str
    game: str
    seat: int | None  # the challenger's seat, if it asked for a side
    rated: bool
    fields: JsonObject  # the challenger's identified fields, to seat it with
    # What the challenger's end does with the answer: seat it (a match here, and its seat), or
    # reach a match elsewhere, or hear a refusal.
    answer: Callable[[str | None, str | None], object] = field(repr=False)
    target: Challenged | None = None
    timer: Timer | None = None

    def to_wire(self, seat_names: tuple[str, ...], field_name: str) -> JsonObject:
        """The challenge as the challenged bot reads it: its own side, if one is set."""
        message: JsonObject = {
            "type": "challenge",
            "challenge": self.id,
            "from": self.challenger,
            "game": self.game,
            "rated": self.rated,
        }
        if self.seat is not None:
            message[field_name] = seat_names[1 - self.seat]
        return message


class ChallengeBoard:
    """This node's present bots and open challenges; a challenge unanswered in ``timeout_s``
    is declined for its sender. At most ``most_from`` challenges sent by one bot through this
    node, and ``most_to`` offered to one bot here, wait for an answer at once."""

    def __init__(self, clock: Clock, timeout_s: float, most_from: int, most_to: int) -> None:
        self.clock = clock
        self.timeout_s = timeout_s
        self.most_from = most_from
        self.most_to = most_to
        self._present: dict[str, list[Challenged]] = {}  # by casefolded name
        self.open: dict[str, Challenge] = {}  # offered here, by id
        self._sent: dict[str, str] = {}  # sent through this node, not answered: id -> sender
        self._from: Counter[str] = Counter()  # by casefolded sender: its challenges in _sent
        self._to: Counter[str] = Counter()  # by casefolded opponent: its challenges in open

    def here(self, bot: str, client: Challenged) -> None:
        clients = self._present.setdefault(bot.casefold(), [])
        if client not in clients:
            clients.append(client)

    def gone(self, bot: str, client: Challenged) -> None:
        clients = self._present.get(bot.casefold(), [])
        if client in clients:
            clients.remove(client)
        if not clients:
            self._present.pop(bot.casefold(), None)

    def barred(self, bot: str, message: str, reason: str) -> None:
        """``bot`` is banned, or its key revoked or replaced (``Roster.on_barred``): it is
        present here no more, each of its clients is told (``Challenged.barred``), and the
        open challenges it sent or was sent are declined, with the reason."""
        for client in self._present.pop(bot.casefold(), []):
            client.barred(message, reason)
        folded = bot.casefold()
        for challenge in list(self.open.values()):
            if folded in (challenge.challenger.casefold(), challenge.opponent.casefold()):
                self._close(challenge)
                if challenge.timer is not None:
                    challenge.timer.cancel()
                challenge.answer(None, reason)

    def find(self, bot: str) -> Challenged | None:
        """A free connection of ``bot`` here, if any."""
        return next((c for c in self._present.get(bot.casefold(), ()) if c.free), None)

    def new_id(self) -> str:
        return secrets.token_hex(6)

    def send(self, challenge: Challenge) -> None:
        """A challenge its sender, connected here, sends: counted until ``answered``; past
        ``most_from`` it is refused (raises ``Rejected``)."""
        sender = challenge.challenger.casefold()
        if self._from[sender] >= self.most_from:
            raise Rejected(
                BotError.TOO_MANY_CHALLENGES,
                f"at most {self.most_from} challenges of one bot wait for an answer at once",
            )
        self._sent[challenge.id] = sender
        self._from[sender] += 1

    def answered(self, challenge: Challenge) -> None:
        """The sender heard the answer to its challenge (accepted, declined, expired...)."""
        sender = self._sent.pop(challenge.id, None)
        if sender is not None:
            self._from[sender] -= 1
            if not self._from[sender]:
                del self._from[sender]

    def offer(self, challenge: Challenge, target: Challenged) -> None:
        """Send ``target`` the challenge; it expires unless answered in time. One past the
        ``most_to`` waiting for the target's answer is declined at once, unseen by it."""
        opponent = challenge.opponent.casefold()
        if self._to[opponent] >= self.most_to:
            reason = f"{challenge.opponent} has {self.most_to} challenges waiting for its answer"
            challenge.answer(None, f"{reason}: try again later")
            return
        self._to[opponent] += 1
        challenge.target = target
        self.open[challenge.id] = challenge
        challenge.timer = self.clock.call_later(self.timeout_s, lambda: self._expire(challenge.id))
        target.challenged(challenge)

    def take(self, challenge_id: object, target: Challenged) -> Challenge | None:
        """The open challenge ``challenge_id`` sent to ``target``, closed now; None if there
        is none (never sent to it, answered, or expired)."""
        challenge = self.open.get(challenge_id) if isinstance(challenge_id, str) else None
        if challenge is None or challenge.target is not target:
            return None
        self._close(challenge)
        if challenge.timer is not None:
            challenge.timer.cancel()
        return challenge

    def _expire(self, challenge_id: str) -> None:
        challenge = self.open.get(challenge_id)
        if challenge is not None:
            self._close(challenge)
            seconds = f"{self.timeout_s:g}"
            challenge.answer(None, f"no answer from {challenge.opponent} within {seconds} s")

    def _close(self, challenge: Challenge) -> None:
        del self.open[challenge.id]
        opponent = challenge.opponent.casefold()
        self._to[opponent] -= 1
        if not self._to[opponent]:
            del self._to[opponent]
