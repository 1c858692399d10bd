"""Challenges across nodes: a bot challenged on the node where it is present.

A node where a registered bot is present keeps ``tavern:bot:{name}`` (its node id) alive with its
heartbeat; a challenge for a bot not present here goes, as a ``wire.CHALLENGE`` frame, to the
node that key names, whose ``server.challenges`` board offers it to the bot; the answer comes
back as a ``wire.ANSWERED`` frame (the match's id, or why not), and the challenger's session
asks for its seat the ordinary way. A challenge the other node never answers expires here too.
"""

from __future__ import annotations

import asyncio

import orjson
from redis.exceptions import RedisError

from server.arena import Arena
from server.challenges import Challenge
from server.cluster import values, wire
from server.cluster.keys import bot_key
from server.cluster.link import Command, Link

NOT_CONNECTED = "{} is not connected"


class RemoteChallenges:
    """This node's challenges that cross nodes, both ways, and its bots' presence in Redis."""

    def __init__(self, link: Link, arena: Arena) -> None:
        self.link = link
        self.arena = arena
        self.sent: dict[str, Challenge] = {}  # this node's challengers', awaiting an answer
        self._present: set[str] = set()  # casefolded names written to Redis
        self._writes: list[Command] = []

    def present(self, bot: str) -> None:
        """``server.arena.Elsewhere.present``."""
        name = bot.casefold()
        if name not in self._present:
            self._present.add(name)
            self._writes.append(("SET", bot_key(name), self.link.node_id, "PX", self.link.ttl_ms))
            self.link.flush_soon()

    def refresh(self) -> list[Command]:
        """At each heartbeat: the bots still present here stay found here."""
        self._present = {name for name in self._present if self.arena.challenges.find(name)}
        return [
            ("SET", bot_key(n), self.link.node_id, "PX", self.link.ttl_ms) for n in self._present
        ]

    def writes(self) -> list[Command]:
        writes, self._writes = self._writes, []
        return writes

    def challenge(self, challenge: Challenge) -> None:
        """``server.arena.Elsewhere.challenge``: the opponent is not present here."""
        tasks = self.link.tasks
        if tasks is None:
            challenge.answer(None, NOT_CONNECTED.format(challenge.opponent))
            return
        tasks.create_task(self._send(challenge))

    async def _send(self, challenge: Challenge) -> None:
        node = None
        redis = self.link.redis
        if redis is not None:
            try:
                raw = await redis.get(bot_key(challenge.opponent.casefold()))
                node = None if raw is None else values.node_id(raw)
            except (RedisError, OSError, values.BadValue):
                node = None
        if node is None or node == self.link.node_id:
            challenge.answer(None, NOT_CONNECTED.format(challenge.opponent))
            return
        self.sent[challenge.id] = challenge
        payload = {
            "challenge": challenge.id,
            "from": challenge.challenger,
            "opponent": challenge.opponent,
            "game": challenge.game,
            "seat": challenge.seat,
            "rated": challenge.rated,
        }
        self.link.send(node, wire.CHALLENGE, 0, orjson.dumps(payload))
        await asyncio.sleep(self.arena.challenges.timeout_s + 1)
        if self.sent.pop(challenge.id, None) is not None:  # that node never answered
            challenge.answer(None, f"no answer from {challenge.opponent}")

    def offered(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.CHALLENGE``: a bot on ``sender`` challenges one present here."""
        request = values.challenge_request(payload)
        board = self.arena.challenges

        def answer(simulation_id: str | None, reason: str | None) -> None:
            reply = {"challenge": request.id, "simulationId": simulation_id, "reason": reason}
            self.link.send(sender, wire.ANSWERED, 0, orjson.dumps(reply))

        challenge = Challenge(
            request.id,
            request.challenger,
            request.opponent,
            request.game,
            request.seat,
            request.rated,
            {},
            answer,
        )
        target = board.find(request.opponent)
        if target is None:
            answer(None, NOT_CONNECTED.format(request.opponent))
        else:
            board.offer(challenge, target)

    def answered(self, sender: str, connection: int, payload: bytes) -> None:
        """``wire.ANSWERED``: the challenged bot's node answers a challenge sent from here."""
        challenge_id, simulation_id, reason = values.challenge_answer(payload)
        challenge = self.sent.pop(challenge_id, None)
        if challenge is not None:
            challenge.answer(simulation_id, reason)
