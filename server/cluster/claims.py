"""Random joins' claims: which node opens the one match that the random joins of a game
arriving through different nodes at the same moment share (``tavern:claim:{game}``)."""

from __future__ import annotations

from redis.exceptions import RedisError

from server.cluster import values
from server.cluster.keys import claim_key
from server.cluster.link import Command, Link
from server.cluster.repairs import Repairs
from server.match_events import GameFinished, GameStarted, Removed, SeatsChanged, Update
from server.match_views import Status

RELEASE_CLAIM = """if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0"""  # a claim is deleted by the node that made it, and only while it is still that one


class Claims:
    """This node's claims: made with ``SET NX GET``, held while the match is waiting for
    players, released (in the link's next write) once it is full or gone (an arena listener)."""

    def __init__(self, link: Link, repairs: Repairs) -> None:
        self.link = link
        self.repairs = repairs
        self.complaints = repairs.complaints
        self._held: dict[str, tuple[str, bytes]] = {}  # simulation id -> its claim's key, value
        self._released: list[tuple[str, bytes]] = []  # claims to delete

    async def claim(self, game: str, simulation_id: str) -> tuple[str, str] | None:
        """Claim this game's next match for ``simulation_id`` here, unless another claim holds
        it: that claim's node and simulation id, or None if the claim is this one (or Redis is
        out of reach). A claim that does not read is deleted (if it is still there) and the
        key claimed again; a key that holds another type of value is deleted for the next
        claim."""
        key, value = claim_key(game), self._value(self.link.node_id, simulation_id)
        for _ in range(2):
            redis = self.link.redis
            if redis is None:
                return None
            try:
                answer = await redis.set(key, value, nx=True, get=True, px=self.link.ttl_ms)
                if not isinstance(answer, bytes):
                    return None
                try:
                    return values.claim(answer)
                except values.BadValue as bad:
                    self.complaints(key, bad)
                    await redis.eval(RELEASE_CLAIM, 1, key, answer)
            except (RedisError, OSError) as error:
                self.repairs.wrong_type(key, error)
                return None
        return None

    def hold(self, game: str, simulation_id: str) -> None:
        """This node's claim opened its match: released once the match is full."""
        self._held[simulation_id] = (claim_key(game), self._value(self.link.node_id, simulation_id))

    def release(self, game: str, node: str, simulation_id: str) -> None:
        """Delete the claim of ``node`` for ``simulation_id``, if it is still there."""
        self._released.append((claim_key(game), self._value(node, simulation_id)))
        self.link.flush_soon()

    def on_update(self, update: Update) -> None:
        if not self._held:
            return
        if isinstance(update, SeatsChanged | GameStarted):
            view = update.view
            if view.match_id in self._held and (
                view.status is not Status.WAITING or None not in view.players
            ):  # full: the next random join opens another
                self._let_go(view.match_id)
        elif isinstance(update, GameFinished | Removed):
            match_id = update.view.match_id if isinstance(update, GameFinished) else update.match_id
            if match_id in self._held:
                self._let_go(match_id)

    def writes(self) -> list[Command]:
        if not self._released:
            return []
        released, self._released = self._released, []
        return [("EVAL", RELEASE_CLAIM, 1, key, value) for key, value in released]

    def _let_go(self, simulation_id: str) -> None:
        self._released.append(self._held.pop(simulation_id))
        self.link.flush_soon()

    @staticmethod
    def _value(node: str, simulation_id: str) -> bytes:
        return f"{node} {simulation_id}".encode()
