"""One client of the arena (``Session``), in parts: the key check (``keys``), seeks and
challenges (``ladder``), routing to another node (``routing``), what it says to its client as
data (``effects``); see ``core``."""

from server.session.channel import Client, LocalSeat, SessionChannel
from server.session.core import TRANSITIONS, Session, SessionState, Step
from server.session.effects import (
    NO_EFFECTS,
    CheckKey,
    Close,
    Effect,
    Error,
    Refuse,
    Said,
    Seated,
    Send,
    perform,
)
from server.session.keys import carry_out

__all__ = [
    "NO_EFFECTS",
    "TRANSITIONS",
    "CheckKey",
    "Client",
    "Close",
    "Effect",
    "Error",
    "LocalSeat",
    "Refuse",
    "Said",
    "Seated",
    "Send",
    "Session",
    "SessionChannel",
    "SessionState",
    "Step",
    "carry_out",
    "perform",
]
