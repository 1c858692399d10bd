"""The key check: a command that names a registered bot (``bot`` and ``key``), and a
registration, is checked off the event loop (``server.identity``) before it is carried out; the
client's next commands are held meanwhile, and carried out in order once it is done.

The session does not run the check itself: ``Session.handle`` answers such a command with a
``CheckKey`` effect, which its front end carries out (``carry_out``: a task the front end
spawns, on the arena's task group) and whose outcome it hands back (``Session.checked``). So the
session does no I/O and spawns nothing, and its tests hand it outcomes by hand (the sans-I/O
shape of h11 and websockets). ``carry_out`` is also where the front end carries out what the
session says to its client (``server.session.effects``)."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from server.arena import Arena, Standing
from server.commands import Challenge, Command, Identified, Register, Seek
from server.errors import BotError, Rejected
from server.games.base import JsonObject
from server.identity import HOSTING_PREFIX
from server.session.effects import CheckKey, Effect, perform

if TYPE_CHECKING:
    from server.session.core import Session

log = logging.getLogger(__name__)
MAX_HELD = 64  # a client's commands held while its key is checked; more are refused


@dataclass(frozen=True, slots=True)
class Proof:
    """A command whose ``bot`` and ``key`` were checked: the bot they prove (None: a guest),
    and its standing, for a seek or a challenge."""

    command: Identified
    bot: str | None
    standing: Standing | None


@dataclass(frozen=True, slots=True)
class Registered:
    """A registration taken: the name, and its key, which only this client ever sees."""

    bot: str
    key: str


Outcome = Proof | Registered | Rejected


class KeyHold:
    """Whether a check is in progress, and the commands (and refusals) that came meanwhile."""

    def __init__(self) -> None:
        self.checking = False
        self.held: deque[Command | Rejected] = deque()
        self.proof: Proof | None = None  # of the command being carried out

    def full(self) -> bool:
        return len(self.held) >= MAX_HELD


def identified(session: Session, command: Identified) -> JsonObject:
    """The command's fields once its ``bot`` and ``key`` are checked (``server.identity``):
    without the key, and with the registered name as its nick; a guest's as they are
    (a nick that is a registered name is refused). Raises ``Rejected``."""
    fields = command.fields
    if session.client.checked:
        bot = fields.get("bot")
        session.bot = bot if isinstance(bot, str) else None
        return fields
    proof = session.keys.proof
    if proof is None or proof.command is not command:  # no bot named: a guest's command
        session.arena.roster.guest(fields)
        session.bot = None
        return {name: value for name, value in fields.items() if name not in ("bot", "key")}
    session.bot = proof.bot
    key = fields.get("key")
    session.hosted = isinstance(key, str) and key.startswith(HOSTING_PREFIX)
    if proof.standing is not None:
        session.ladder.standing = proof.standing
    if session.bot is None:
        return fields
    session.ladder.present_as(session.bot)
    session.stays = True
    checked = {name: value for name, value in fields.items() if name != "key"}
    checked["bot"] = checked["nick"] = session.bot
    return checked


async def outcome_of(arena: Arena, address: str, command: Register | Identified) -> Outcome:
    """Check a command's key, or register: what the session is to be told."""
    try:
        if isinstance(command, Register):
            name, key = await arena.roster.register(command.bot, address)
            return Registered(name, key)
        bot = await arena.roster.identify(command.fields, address)
        standing = None
        if bot is not None and isinstance(command, Seek | Challenge):
            standing = await arena.standing(bot)
        return Proof(command, bot, standing)
    except Rejected as rejected:
        return rejected
    except Exception:  # a bug must cost this request, not the arena
        log.exception("checking %r failed", type(command).__name__)
        return Rejected(BotError.SERVER_ERROR, "the request failed; it was logged")


async def check_keys(arena: Arena, session: Session, effect: CheckKey) -> None:
    """Carry out a ``CheckKey``, then those its outcome leads to (a held command that names a
    bot), one at a time, in order."""
    asked: CheckKey | None = effect
    while asked is not None:
        outcome = await outcome_of(arena, session.client.address, asked.command)
        asked = None
        for next_effect in session.checked(outcome):
            if isinstance(next_effect, CheckKey):
                asked = next_effect  # the last one: nothing is carried out past a check
            else:
                perform(session.channel, next_effect)


def carry_out(arena: Arena, session: Session, effects: Sequence[Effect]) -> None:
    """What a front end does with a session's effects, in order: what it says goes to the
    client's channel; each check is a task of the arena's."""
    for effect in effects:
        if isinstance(effect, CheckKey):
            arena.spawn(check_keys(arena, session, effect), name="identity")
        else:
            perform(session.channel, effect)
