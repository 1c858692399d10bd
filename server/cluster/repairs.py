"""Keys of the arena's Redis that hold another type of value than the nodes keep there.

Anyone who reaches the Redis may write any key, and a command on a key of another type fails
with ``WRONGTYPE``. A node reads each reply on its own (a pipeline's too), so that such a key
costs only its own entry: the node says so (``values.Complaints``: logged at most once a minute
per key, and counted for /metrics), and deletes the key in the link's next write if it still
holds another type (one script, atomically: a key another node has written again meanwhile is
kept). What the nodes keep there is written again by its owner (``server.cluster.keys``): at
once, after the deletion, for what a node lists as its own; the seek pool by the nodes whose
seeks it held.
"""

from __future__ import annotations

from collections.abc import Callable

from redis.exceptions import ResponseError

from server.cluster import values
from server.cluster.keys import value_type
from server.cluster.link import Command, Link

DELETE_IF_OTHER_TYPE = """local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= ARGV[1] and kind ~= 'none' then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0"""


def is_wrong_type(reply: object) -> bool:
    """Whether a command's reply is Redis's error for a key of another type (a script's
    included)."""
    return isinstance(reply, ResponseError) and str(reply).startswith("WRONGTYPE")


class Repairs:
    """The keys of another type this node met, deleted in the link's next write."""

    def __init__(
        self,
        link: Link,
        complaints: values.Complaints,
        deleted: Callable[[str], None] = lambda key: None,
    ) -> None:
        self.link = link
        self.complaints = complaints
        self.deleted = deleted  # told of each key to be deleted: its owner may write it again
        self._due: dict[str, str] = {}  # key -> the type it should hold

    def wrong_type(self, key: str, reply: object) -> bool:
        """Whether ``reply``, a command's on ``key``, says the key holds another type of value;
        if so, the key is said and deleted."""
        if not is_wrong_type(reply):
            return False
        self.other_type(key)
        return True

    def other_type(self, key: str) -> None:
        """``key`` holds another type of value: it is said and deleted."""
        kind = value_type(key)
        self.complaints(key, f"another type of value than a {kind}, deleted")
        if key not in self._due:
            self._due[key] = kind
            self.deleted(key)  # written again after the deletion, in the same write
            self.link.flush_soon()

    def check(self, key: str, reply: object) -> None:
        """A reply that should be no error: one of another type is dealt with
        (``wrong_type``), any other error raised (the link then fails and is made again)."""
        if isinstance(reply, Exception) and not self.wrong_type(key, reply):
            raise reply

    def writes(self) -> list[Command]:
        due, self._due = self._due, {}
        return [("EVAL", DELETE_IF_OTHER_TYPE, 1, key, kind) for key, kind in due.items()]
