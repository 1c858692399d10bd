"""Challenges, the lichess model: a bot challenges another by name; the challenged bot accepts
or declines; an unanswered challenge expires.

A registered bot is *present* on a node while one of its connections there has named itself
(``bot`` and ``key``) and holds no game: a challenge goes to the first such connection. The
board here keeps the node's present bots and the challenges they were sent or sent; an arena on
Redis finds a bot on another node through ``server.cluster`` and its board there answers.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from server.clock import Clock, Timer
from server.games.base import JsonObject


class Challenged(Protocol):
    """A client that may be sent a challenge and answer it (``server.session.Session``)."""

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
    is declined for its sender."""

    def __init__(self, clock: Clock, timeout_s: float) -> None:
        self.clock = clock
        self.timeout_s = timeout_s
        self._present: dict[str, list[Challenged]] = {}  # by casefolded name
        self.open: dict[str, Challenge] = {}

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
                del self.open[challenge.id]
                if challenge.timer is not None:
                    challenge.timer.cancel()
                challenge.answer(None, reason)

    def find(self, bot: str) -> Challenged | None:
        """A free connection of ``bot`` here, if any."""
        return next((c for c in self._present.get(bot.casefold(), ()) if c.free), None)

    def new_id(self) -> str:
        return secrets.token_hex(6)

    def offer(self, challenge: Challenge, target: Challenged) -> None:
        """Send ``target`` the challenge; it expires unless answered in time."""
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
        del self.open[challenge.id]
        if challenge.timer is not None:
            challenge.timer.cancel()
        return challenge

    def _expire(self, challenge_id: str) -> None:
        challenge = self.open.pop(challenge_id, None)
        if challenge is not None:
            seconds = f"{self.timeout_s:g}"
            challenge.answer(None, f"no answer from {challenge.opponent} within {seconds} s")
