"""A small asyncio client for the arena: connect, create or join, then a turn loop.

    async with await ArenaClient.connect("127.0.0.1", 9000) as client:
        info = await client.join(nick="me", names=["Ann", "Bo"])
        final = await client.play(lambda message: {"type": "player-turn", "actions": [...]})

A registered bot (docs/ladder.md) seeks a rated game with its key from ``TAVERN_BOT_KEY``:

        info = await client.seek(game="thud", bot="Grimli")

A join or seek refused with ``Too many key checks`` (too many key checks from this address wait
at the arena) is sent again on the same connection, after 1 s, then 2, 4... up to 30 s; any other
refusal (``Invalid bot key``...) raises ``ArenaError``.

The turn callback receives each ``turn`` message and returns the reply (or awaits it); the
client adds the number of the turn it answers, so a reply that comes too late is refused
(``Stale turn``) instead of being played as the next turn. The server's errors come back as
``ArenaError``; informational ones (a turn that timed out, a late reply refused, an opponent who
left) are passed to ``on_notice`` instead and the loop goes on.

Every join and seek asks to be pinged (``"pings": true``): the client answers each ``ping`` with
its ``pong`` as soon as it reads it, so that the arena can tell the network's share of a reply's
time from the bot's thinking (docs/protocol.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

import orjson

JsonObject = dict[str, Any]
TurnHandler = Callable[[JsonObject], JsonObject | Awaitable[JsonObject]]
END_TYPES = frozenset({"win-game", "loss-game", "draw-game"})
NOTICES = frozenset({"Turn timeout", "Stale turn", "Player disconnected"})
BOT_KEY_VARIABLE = "TAVERN_BOT_KEY"
PACED = "Too many key checks"  # the arena asks to send the request again later
RETRY_FIRST_S, RETRY_MOST_S = 1.0, 30.0


def bot_fields(bot: str, key: str | None = None) -> JsonObject:
    """What names a registered bot in a join, seek or challenge: its name and its key (by
    default from ``TAVERN_BOT_KEY``, so that the key stays out of the code)."""
    key = key if key is not None else os.environ.get(BOT_KEY_VARIABLE)
    if not key:
        raise ValueError(f"{bot}'s key: set {BOT_KEY_VARIABLE}")
    return {"bot": bot, "key": key}


class ArenaError(Exception):
    """The server refused something; ``message`` is its stable text, ``reason`` the detail."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message if reason is None else f"{message}: {reason}")
        self.message = message
        self.reason = reason


class ArenaClient:
    """One connection to the arena."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    @classmethod
    async def connect(cls, host: str = "127.0.0.1", port: int = 9000) -> ArenaClient:
        reader, writer = await asyncio.open_connection(host, port, limit=16 * 1024 * 1024)
        return cls(reader, writer)

    async def __aenter__(self) -> ArenaClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()

    async def send(self, message: JsonObject) -> None:
        self._writer.write(orjson.dumps(message) + b"\n")
        await self._writer.drain()

    async def receive(self) -> JsonObject:
        """The next message; raises ``ConnectionError`` if the server closed the connection."""
        while True:
            line = await self._reader.readline()
            if not line:
                raise ConnectionError("the server closed the connection")
            if line.strip():
                message: JsonObject = orjson.loads(line)
                if message.get("type") == "ping":  # answered at once: never after thinking
                    pong = {"type": "pong", "id": message.get("id")}
                    self._writer.write(orjson.dumps(pong) + b"\n")
                    continue
                return message

    async def _expect(self, wanted: str) -> JsonObject:
        message = await self.receive()
        if message["type"] == "error":
            raise ArenaError(message["message"], message.get("reason"))
        if message["type"] != wanted:
            raise ArenaError("Unexpected message", f"wanted {wanted}, got {message['type']}")
        return message

    async def _ask(self, request: JsonObject, wanted: str) -> JsonObject:
        """Send a request and return its answer; sent again, backing off, while it is paced."""
        delay = RETRY_FIRST_S
        while True:
            await self.send(request)
            try:
                return await self._expect(wanted)
            except ArenaError as refused:
                if refused.message != PACED:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MOST_S)

    async def create_simulation(self, game: str = "tavern", seed: int | None = None) -> JsonObject:
        """Create an empty simulation; returns the ``ready`` message (its ``simulationId``)."""
        message: JsonObject = {"type": "create-simulation", "game": game}
        if seed is not None:
            message["seed"] = seed
        await self.send(message)
        return await self._expect("ready")

    async def join(
        self, simulation_id: str | None = None, *, nick: str, game: str = "tavern", **fields: Any
    ) -> JsonObject:
        """Join by id, or a random waiting simulation when the id is None; returns game-info.

        Extra fields go into the request as they are: ``names`` for Dwarven Tavern, ``side``
        for Thud, ``seed`` for a simulation that a random join creates.
        """
        request: JsonObject = {"type": "join-simulation", "game": game, "nick": nick}
        request["simulationId"] = simulation_id
        request["pings"] = True
        request.update(fields)
        return await self._ask(request, "game-info")

    async def seek(
        self,
        *,
        game: str = "thud",
        bot: str,
        key: str | None = None,
        rated: bool = True,
        **fields: Any,
    ) -> JsonObject:
        """Wait for an opponent of about the same rating; returns game-info once paired."""
        request: JsonObject = {"type": "seek", "game": game, **bot_fields(bot, key)}
        request["rated"] = rated
        request["pings"] = True
        request.update(fields)
        return await self._ask(request, "game-info")

    async def play(
        self,
        on_turn: TurnHandler,
        on_notice: Callable[[JsonObject], None] | None = None,
    ) -> JsonObject:
        """Answer every turn until the game ends; returns the final message."""
        while True:
            message = await self.receive()
            kind = message["type"]
            if kind == "turn":
                reply = on_turn(message)
                if isinstance(reply, Awaitable):
                    reply = await reply
                await self.send({**reply, "turn": message["turn"]})
            elif kind in END_TYPES:
                return message
            elif kind == "error":
                if message["message"] not in NOTICES:
                    raise ArenaError(message["message"], message.get("reason"))
                if on_notice is not None:
                    on_notice(message)
            elif on_notice is not None:
                on_notice(message)
