"""Challenges across nodes: a bot challenged on the node where it is present.

A node where a registered bot is present writes ``tavern:bot:{name}`` (its node id) when the
bot comes, lists it in its ``tavern:owned:{id}``, and deletes it when the bot goes (if it is
still its own: the bot may be present on another node by then); a challenge for a bot not
present here goes, as a ``wire.CHALLENGE`` frame, to the node that key names if it is alive,
whose ``server.challenges`` board offers it to the bot; the answer comes back as a
``wire.ANSWERED`` frame (the match's id, or why not), and the challenger's session asks for
its seat the ordinary way. A challenge the other node never answers expires here too.
"""

from __future__ import annotations

import asyncio

import orjson
from redis.exceptions import RedisError

from server.arena import Arena
from server.challenges import Challenge
from server.cluster import values, wire
from server.cluster.following import DELETE_IF_NODE, Following
from server.cluster.keys import bot_key, owned_key
from server.cluster.link import Command, Link

NOT_CONNECTED = "{} is not connected"


class RemoteChallenges:
    """This node's challenges that cross nodes, both ways, and its bots' presence in Redis."""

    def __init__(self, link: Link, arena: Arena, following: Following) -> None:
        self.link = link
        self.arena = arena
        self.following = following
        self.sent: dict[str, Challenge] = {}  # this node's challengers', awaiting an answer
        self._present: set[str] = set()  # casefolded names written to Redis
        self._writes: list[Command] = []

    def present(self, bot: str) -> None:
        """``server.arena.Elsewhere.present``."""
        name = bot.casefold()
        if name not in self._present:
            self._present.add(name)
            self._writes += self._presence(name)
            self.link.flush_soon()

    def _presence(self, name: str) -> list[Command]:
        return [
            ("SADD", owned_key(self.link.node_id), bot_key(name)),
            ("SET", bot_key(name), self.link.node_id),
        ]

    def refresh(self) -> list[Command]:
        """At each heartbeat: the bots no longer present here are no longer found here (their
        keys deleted, if still this node's); the others are not written again."""
        gone = {name for name in self._present if not self.arena.challenges.find(name)}
        self._present -= gone
        owned, node = owned_key(self.link.node_id), self.link.node_id
        commands: list[Command] = []
        for name in gone:
            commands += (
                ("EVAL", DELETE_IF_NODE, 1, bot_key(name), node),
                ("SREM", owned, bot_key(name)),
            )
        return commands

    def relinked(self) -> None:
        """Every bot present here is written again (Redis may have lost them)."""
        for name in self._present:
            self._writes += self._presence(name)

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
        if node is None or node == self.link.node_id or node not in self.following.alive:
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
