"""Every error the arena sends, by its stable text, and the refusal that carries one.

An error line is ``{"type": "error", "message": M, "reason": R}``: ``M`` is one of the texts
here, which bots and pages match on and which never change; ``R`` explains the case in words.
docs/protocol.md's tables list exactly ``BotError``'s texts (a test reads them from there).
"""

from __future__ import annotations

from enum import StrEnum


class BotError(StrEnum):
    """What a bot is told (over TCP, or through any front end)."""

    INVALID_JSON = "Invalid JSON"
    UNKNOWN_MESSAGE_TYPE = "Unknown message type"
    MESSAGE_TOO_LONG = "Message too long"
    TOO_MANY_MESSAGES = "Too many messages"
    WRONG_SIMULATION_ID = "Wrong simulation ID"
    SIMULATION_FULL = "Simulation full"
    WRONG_GAME = "Wrong game"
    SIDE_TAKEN = "Side taken"
    ILLEGAL_MOVE = "Illegal move"
    UNKNOWN_GAME = "Unknown game"
    INVALID_SEED = "Invalid seed"
    INVALID_CLOCK = "Invalid clock"
    INVALID_POSITION = "Invalid position"
    INVALID_JOIN = "Invalid join"
    INVALID_TOKEN = "Invalid token"
    NOT_YOUR_SEAT = "Not your seat"
    TOO_MANY_CONNECTIONS = "Too many connections"
    TOO_MANY_SIMULATIONS = "Too many simulations"
    IDLE_TIMEOUT = "Idle timeout"
    SERVER_ERROR = "Server error"
    SERVER_SHUTTING_DOWN = "Server shutting down"
    SERVER_DRAINING = "Server draining"
    RECORDS_FULL = "Records full"
    ALREADY_IN_A_GAME = "Already in a game"
    NOT_IN_A_GAME = "Not in a game"
    GAME_NOT_STARTED = "Game not started"
    NOT_YOUR_TURN = "Not your turn"
    INVALID_TURN = "Invalid turn"
    STALE_TURN = "Stale turn"
    GAME_OVER = "Game over"
    TURN_TIMEOUT = "Turn timeout"
    PLAYER_DISCONNECTED = "Player disconnected"
    ARENA_NODE_LOST = "Arena node lost"
    ARENA_LINK_LOST = "Arena link lost"
    INVALID_BOT_KEY = "Invalid bot key"
    TOO_MANY_KEY_CHECKS = "Too many key checks"
    NAME_REGISTERED = "Name registered"
    INVALID_BOT_NAME = "Invalid bot name"
    BOT_NAME_TAKEN = "Bot name taken"
    REGISTRATION_CLOSED = "Registration closed"
    INVALID_SEEK = "Invalid seek"
    BOT_BANNED = "Bot banned"
    TOO_MANY_GAMES = "Too many games"
    TOO_MANY_SEEKS = "Too many seeks"
    INVALID_CHALLENGE = "Invalid challenge"
    UNKNOWN_BOT = "Unknown bot"
    TOO_MANY_CHALLENGES = "Too many challenges"
    UNKNOWN_CHALLENGE = "Unknown challenge"


ALREADY_LIVE = "Already live"
"""Never sent to a client: a stored game asked to be restored while it is being played."""


class Rejected(Exception):
    """A request that cannot be honoured: nothing changed, and the client is told why.

    ``message`` is the stable text (``BotError``, or a page's own); ``reason`` explains this
    case.
    """

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(f"{message}: {reason}" if reason else message)
        self.message = message
        self.reason = reason
