"""What an arena keeps in Redis, and under which names: every part of a node names its keys here.

A node that dies leaves nothing behind: what it writes has an expiry, or lives as long as its
node (listed in ``tavern:owned:{id}``) and is deleted by the first node that finds it dead:

* ``tavern:node:{id}``: the node's addresses (TCP, HTTP) and frames' version, refreshed every
  heartbeat: the node's liveness, the one key its heartbeat writes whatever it plays; a node
  whose key has expired is dead. ``tavern:nodes`` lists the ids ever seen, to find them.
* ``tavern:owned:{id}``: the keys that live as long as the node (its directory entries and
  aliases), added as it writes them: a node that finds it dead deletes them all, and a node
  that sees it appear reads its entries from there (no ``SCAN`` of the arena's keys).
* ``tavern:sim:{id}``: the directory, one entry per live simulation (its node, game, status,
  seats and nicks, turn, scores, when it was created), written when it changes (its turn and
  scores at most once a heartbeat), deleted when it ends, with no expiry of its own (see
  ``tavern:owned``). Changes are also published on ``tavern:lobby`` so that every node's lobby
  follows them live.
* ``tavern:finished``: the lobby rows (with their result) of the arena's last finished games,
  newest first, as many as a lobby lists; its expiry is renewed by every node's heartbeat. A
  finished game leaves the directory for this list, and is published on ``tavern:lobby`` too,
  so that every node's lobby lists it and its ``/watch`` page shows its result.
* ``tavern:alias:{name}``: another name of a live simulation (a Thud API game's token digest),
  kept as its entry is, so that any node finds the node to pass an API request to.
* ``tavern:claim:{game}``: ``{node} {simulation id}``, the match a random join that found nothing
  waiting opens, set only if absent (``SET NX GET``, atomic) so that random joins arriving
  through different nodes at once meet in one match; deleted once that match is full, and
  short-lived in any case (the directory lists it by then).
* ``tavern:seeks:{game}``: the seek pool (``server.cluster.seeks``), a sorted set of seeks
  scored by rating; a seek is removed when it is paired (two at once, atomically) or withdrawn,
  and by any node that finds its node gone. A node puts back those of its seeks it does not
  find there (the pool was reset, or Redis lost it), unless they were paired.
* ``tavern:pairing:{game}``: the node that pairs the game's seek pool now (a lease, renewed at
  each of its passes, expiring a second after its last).
* ``tavern:paired:{game}``: the seeks paired in the last minutes (a sorted set scored by the
  time), written by the script that pairs them, so that a seek whose pairing is on its way to
  its node is not put back in the pool.
* ``tavern:bot:{name}``: the node where a registered bot (its name casefolded) is present, to
  be challenged (``server.cluster.challenges``): written when it comes, deleted when it goes
  (if still that node's), listed in that node's ``tavern:owned``.
* ``tavern:held:{name}``: what a registered bot (its name casefolded) holds on each node, its
  games not finished and its seeks waiting, by node id (``server.cluster.bots``), for
  ``maxGamesPerBot``; each node writes its own field as it changes and lists the hash in its
  ``tavern:owned``; a dead node's field is not counted, and is removed by the node that finds
  it dead.
* ``tavern:last:{name}``: a registered bot's last ladder game (its opponent, and whether it had
  the first seat), for the pool's rematch avoidance and side alternation; kept a day.
* ``tavern:paced:{address}``: the wrong-key pacing of an address (``server.identity``), as the
  time its bucket is full again (GCRA), expiring then.
* ``tavern:registrations``: the arena's registrations (``registrationsPerHour``), as the time
  its bucket is full again (GCRA), expiring then.
* ``tavern:inbox:{id}``: the node's sharded pub/sub channel (``SSUBSCRIBE``), where the others
  publish batches of frames (``SPUBLISH``, ``server.cluster.wire``): seat requests, moves,
  what a seat is sent, pages' messages.

On a Redis Cluster every command and script stays in one hash slot: a game's seek pool and
its paired set carry the game as their hash tag (``tavern:seeks:{thud}`` and
``tavern:paired:{thud}``, one slot, for the scripts that take both), and so does its pairing
lease; every other command is on one key, or on keys each in a pipeline of its own slot's
commands (a dead node's keys are deleted one command each). The nodes' inboxes are sharded
channels, each on the server of its slot.

Anyone who reaches the Redis may write any of these keys with another type of value than the
nodes keep there (``TYPES``): a node that meets one deletes it (``server.cluster.repairs``), and
what the nodes keep there is written again by its owner (at its next change, or whole when its
``tavern:owned`` was the key).
"""

from __future__ import annotations

PREFIX = "tavern:"
NODES = PREFIX + "nodes"
LOBBY = PREFIX + "lobby"
FINISHED = PREFIX + "finished"
REGISTRATIONS = PREFIX + "registrations"
FINISHED_KEPT = 100  # as many as a lobby lists (visor.lobby.FINISHED_KEPT)

# The type of each kind of key (the name after ``tavern:``, up to the next colon), as Redis's
# TYPE names it.
TYPES = {
    "node": "string",
    "nodes": "set",
    "owned": "set",
    "sim": "string",
    "finished": "list",
    "alias": "string",
    "claim": "string",
    "seeks": "zset",
    "paired": "zset",
    "pairing": "string",
    "bot": "string",
    "held": "hash",
    "last": "string",
    "paced": "string",
    "registrations": "string",
}


OWNED_KINDS = frozenset({"owned", "sim", "alias", "held", "bot"})
"""The kinds of keys (or of fields, ``held``) a node lists in its ``tavern:owned``."""


def kind_of(key: str) -> str:
    """The kind of a key of the arena's (``tavern:held:grimli``: ``held``)."""
    return key.removeprefix(PREFIX).partition(":")[0]


def value_type(key: str) -> str:
    """The type of value a key of the arena's holds."""
    return TYPES[kind_of(key)]


def node_key(node_id: str) -> str:
    return f"{PREFIX}node:{node_id}"


def owned_key(node_id: str) -> str:
    return f"{PREFIX}owned:{node_id}"


def sim_key(simulation_id: str) -> str:
    return f"{PREFIX}sim:{simulation_id}"


def alias_key(name: str) -> str:
    return f"{PREFIX}alias:{name}"


def claim_key(game: str) -> str:
    return f"{PREFIX}claim:{game}"


# A game's seek keys are tagged with the game (braces: a Redis Cluster hashes only what is
# inside), so that they share one slot.
def seeks_key(game: str) -> str:
    return f"{PREFIX}seeks:{{{game}}}"


def pairing_key(game: str) -> str:
    return f"{PREFIX}pairing:{{{game}}}"


def paired_key(game: str) -> str:
    return f"{PREFIX}paired:{{{game}}}"


def bot_key(folded_name: str) -> str:
    return f"{PREFIX}bot:{folded_name}"


def held_key(folded_name: str) -> str:
    return f"{PREFIX}held:{folded_name}"


def last_key(folded_name: str) -> str:
    return f"{PREFIX}last:{folded_name}"


def paced_key(address: str) -> str:
    return f"{PREFIX}paced:{address}"


def inbox(node_id: str) -> str:
    return f"{PREFIX}inbox:{node_id}"
