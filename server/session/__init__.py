"""One client of the arena (``Session``), in parts: the key check (``keys``), seeks and
challenges (``ladder``), routing to another node (``routing``); see ``core``."""

from server.session.channel import Client, LocalSeat, SessionChannel
from server.session.core import TRANSITIONS, Session, SessionState, Step
from server.session.keys import CheckKey, Effect, carry_out

__all__ = [
    "TRANSITIONS",
    "CheckKey",
    "Client",
    "Effect",
    "LocalSeat",
    "Session",
    "SessionChannel",
    "SessionState",
    "Step",
    "carry_out",
]
