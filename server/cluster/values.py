"""What a node reads from Redis, checked before it is used.

Whatever is in the arena's Redis was written by its nodes, or by anyone else who reaches that
Redis, so a node takes nothing it reads there on trust: directory entries, nodes' entries, the
finished games, aliases, claims, lobby messages and the payloads of frames each have their
reader here. A reader returns the value in the shape the node uses, rebuilt from the fields it
knows, or raises ``BadValue``; the node then skips the value and says so (``Complaints``: at
most once a minute for each key or sender, with a count, so that a flood of bad values costs
little and the log stays readable).
"""

from __future__ import annotations

import collections
import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from server.cluster import wire
from server.cluster.keys import PREFIX
from server.games import GAMES
from server.games.base import JsonObject
from server.ladder import Seeker
from server.match_views import Status

log = logging.getLogger(__name__)

SIMULATION_ID = re.compile(r"[0-9a-z][0-9a-z-]{0,63}")
STATUSES = frozenset(status.value for status in Status)
COMPLAIN_EVERY_S = 60.0
COMPLAINT_KEYS = 1024  # keys and senders remembered; any more share one line a minute
OTHER_KEYS = "other keys"


class BadValue(ValueError):
    """A value read from Redis that this node cannot use: it is skipped."""


# --- the values ----------------------------------------------------------------------------------
def node_id(value: object) -> str:
    """A node's id: 8 lowercase hex digits (``ClusterNode.id``)."""
    if isinstance(value, bytes) and wire.NODE_ID.fullmatch(value):
        return value.decode()
    if isinstance(value, str) and value.isascii() and wire.NODE_ID.fullmatch(value.encode()):
        return value
    raise BadValue(f"{_shown(value)} is not a node id")


def node_wire(raw: bytes | str) -> int:
    """The version of the frames a node speaks, from its entry (``tavern:node:{id}``)."""
    version = _object(_json(raw), "a node's entry").get("wire", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise BadValue(f"the node's frames version {_shown(version)} is not a positive integer")
    return version


def directory_entry(value: object) -> JsonObject:
    """A simulation as the directory keeps it (``listing.lobby_entry``): a lobby row, its node,
    its free seats and when it was created; ``value`` as stored (bytes), or as a lobby message
    carries it."""
    entry = _object(_json(value) if isinstance(value, bytes) else value, "a directory entry")
    row = _lobby_row(entry)
    players = row["players"]
    free = entry.get("free")
    if not isinstance(free, list) or not all(
        _is_int(index) and 0 <= index < len(players) and players[index] is None for index in free
    ):
        raise BadValue("its free seats are not a list of empty seats")
    created = entry.get("created")
    if not isinstance(created, int | float) or isinstance(created, bool):
        raise BadValue("its creation time is not a number")
    return {**row, "node": node_id(entry.get("node")), "free": list(free), "created": created}


def finished_entry(value: object) -> JsonObject:
    """A finished game's directory entry, with its result (``tavern:finished``)."""
    entry = directory_entry(value)
    if entry["status"] != Status.FINISHED.value or "result" not in entry:
        raise BadValue("a finished game's entry is not finished, or has no result")
    return entry


def alias(raw: bytes | str) -> tuple[str, str]:
    """What ``tavern:alias:{name}`` names: a simulation id and its node."""
    value = _object(_json(raw), "an alias")
    return _simulation_id(value.get("simulationId")), node_id(value.get("node"))


def claim(raw: bytes) -> tuple[str, str]:
    """A random join's claim (``tavern:claim:{game}``): the node, and its simulation id."""
    try:
        owner, _, simulation_id = raw.decode().partition(" ")
    except UnicodeDecodeError:
        raise BadValue(f"the claim {_shown(raw)} is not text") from None
    return node_id(owner), _simulation_id(simulation_id)


@dataclass(frozen=True, slots=True)
class LobbyChange:
    """What a node announced on ``tavern:lobby``: its simulations set (lobby entries) and
    deleted (ids), and its games that ended (their entries)."""

    node: str
    set: list[object]  # each read by ``directory_entry``, on its own
    deleted: list[str]
    ended: list[object]  # each read by ``finished_entry``


def lobby_change(raw: bytes) -> LobbyChange:
    change = _object(_json(raw), "a lobby message")
    changed, deleted, ended = change.get("set"), change.get("del"), change.get("ended", [])
    if not isinstance(changed, list) or not isinstance(ended, list):
        raise BadValue("its entries are not lists")
    if not isinstance(deleted, list) or not all(isinstance(name, str) for name in deleted):
        raise BadValue("what it deletes is not a list of ids")
    return LobbyChange(node_id(change.get("node")), changed, deleted, ended)


# --- frames' payloads ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class JoinRequest:
    """A bot on another node asks for a seat here (a ``wire.JOIN`` frame)."""

    simulation_id: str
    message: JsonObject  # the bot's join or rejoin message
    rejoin: bool
    kind: str | None  # "person" for a person's seat, else a bot's


def join_request(payload: bytes) -> JoinRequest:
    request = _object(_json(payload), "a seat request")
    simulation_id, message = request.get("simulationId"), request.get("message")
    if not isinstance(simulation_id, str) or not isinstance(message, dict):
        raise BadValue("a seat request without a simulation id or a message")
    kind = request.get("kind")
    return JoinRequest(
        simulation_id,
        message,
        request.get("rejoin") is True,
        kind if isinstance(kind, str) else None,
    )


def refusal(payload: bytes) -> tuple[str, str | None]:
    """Why another node refused a seat (a ``wire.REFUSED`` frame): its message and reason."""
    refused = _object(_json(payload), "a refusal")
    reason = refused.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise BadValue("a refusal's reason is not text")
    return _text(refused, "message"), reason


# Beside a bot's move from another node: the round trip of its connection there, in ms, as
# that node measures it (``server.round_trip``), credited here as a local bot's is.
RELAYED_RTT_KEY = "rttMs"
MOST_RELAYED_RTT_MS = 60_000


def move(payload: bytes) -> tuple[JsonObject, float | None]:
    """A bot's message for a seat played here (a ``wire.MOVE`` frame), and the round trip of
    its connection that its node reports with it (seconds; ``None``: none measured)."""
    message = _object(_json(payload), "a move")
    reported = message.pop(RELAYED_RTT_KEY, None)
    if reported is None:
        return message, None
    if not isinstance(reported, int | float) or isinstance(reported, bool):
        raise BadValue("a move's round trip is not a number")
    if not 0 <= reported <= MOST_RELAYED_RTT_MS:
        raise BadValue("a move's round trip is out of bounds")
    return message, reported / 1000


def relayed_move(message: JsonObject, round_trip_s: float | None) -> bytes:
    """A ``wire.MOVE`` frame's body: the bot's message, with its connection's round trip (any
    the bot put there itself replaced: only its node may say it)."""
    if RELAYED_RTT_KEY in message or round_trip_s is not None:
        message = {key: value for key, value in message.items() if key != RELAYED_RTT_KEY}
        if round_trip_s is not None:
            message[RELAYED_RTT_KEY] = round(round_trip_s * 1000, 3)
    return orjson.dumps(message)


def seek_member(node: str, seeker: Seeker) -> bytes:
    """A seek as its member of ``tavern:seeks:{game}`` (read back by ``seeker``)."""
    return orjson.dumps(
        {
            "node": node,
            "id": seeker.id,
            "bot": seeker.bot,
            "game": seeker.game,
            "rated": seeker.rated,
            "rating": seeker.rating,
            "since": seeker.since,
            "last": seeker.last_opponent,
            "first": seeker.had_first_seat,
        }
    )


def seeker(member: bytes) -> tuple[str, Seeker]:
    """A member of a seek pool: its node and its seek."""
    entry = _object(_json(member), "a seek")
    rated, first, last = entry.get("rated"), entry.get("first"), entry.get("last")
    rating, since = entry.get("rating"), entry.get("since")
    if not (isinstance(rated, bool) and isinstance(first, bool)):
        raise BadValue("a seek's rated or first seat is not true or false")
    if not (isinstance(rating, int | float) and isinstance(since, int | float)):
        raise BadValue("a seek's rating or time is not a number")
    if last is not None and not isinstance(last, str):
        raise BadValue("a seek's last opponent is not text")
    game = _text(entry, "game")
    if game not in GAMES:
        raise BadValue(f"{_shown(game)} is not a game")
    found = Seeker(_text(entry, "id"), _text(entry, "bot"), game, rated, rating, since, last, first)
    return node_id(entry.get("node")), found


def pairing(payload: bytes) -> tuple[str, str]:
    """A seek of this node's paired into another node's match (a ``wire.PAIRED`` frame)."""
    paired = _object(_json(payload), "a pairing")
    return _text(paired, "seek"), _simulation_id(paired.get("simulationId"))


@dataclass(frozen=True, slots=True)
class ChallengeRequest:
    id: str
    challenger: str
    opponent: str
    game: str
    seat: int | None
    rated: bool


def challenge_request(payload: bytes) -> ChallengeRequest:
    """A challenge from a bot on another node (a ``wire.CHALLENGE`` frame)."""
    request = _object(_json(payload), "a challenge")
    game, seat, rated = _text(request, "game"), request.get("seat"), request.get("rated")
    if game not in GAMES:
        raise BadValue(f"{_shown(game)} is not a game")
    if not (seat is None or (_is_int(seat) and seat in (0, 1))) or not isinstance(rated, bool):
        raise BadValue("a challenge's seat or rated is not one")
    return ChallengeRequest(
        _text(request, "challenge"),
        _text(request, "from"),
        _text(request, "opponent"),
        game,
        seat,
        rated,
    )


def challenge_answer(payload: bytes) -> tuple[str, str | None, str | None]:
    """The answer to a challenge sent to another node: its id, the match's or why not."""
    answer = _object(_json(payload), "a challenge's answer")
    simulation_id, reason = answer.get("simulationId"), answer.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise BadValue("a challenge's reason is not text")
    return (
        _text(answer, "challenge"),
        None if simulation_id is None else _simulation_id(simulation_id),
        reason,
    )


def last_game(raw: bytes) -> tuple[str, bool]:
    """A bot's last ladder game (``tavern:last:{name}``): its opponent, and whether the bot had
    the first seat."""
    entry = _object(_json(raw), "a last game")
    first = entry.get("first")
    if not isinstance(first, bool):
        raise BadValue("a last game's first seat is not true or false")
    return _text(entry, "opponent"), first


def time_value(raw: bytes) -> float:
    """A wall-clock time, as a script wrote it (``tavern:paced:{address}``)."""
    try:
        found = float(raw)
    except ValueError:
        raise BadValue(f"{_shown(raw)} is not a time") from None
    if not math.isfinite(found):
        raise BadValue(f"{_shown(raw)} is not a time")
    return found


def held(entry: dict[Any, Any]) -> dict[str, int]:
    """What a bot holds on each node (``tavern:held:{name}``): games and seeks by node id."""
    counts = {}
    for node, count in entry.items():
        try:
            counts[node_id(node)] = int(count)
        except ValueError:
            raise BadValue(f"{_shown(count)} is not a count") from None
    return counts


def text(payload: bytes) -> str:
    try:
        return payload.decode()
    except UnicodeDecodeError:
        raise BadValue(f"{_shown(payload)} is not UTF-8") from None


# --- saying what was bad -------------------------------------------------------------------------
class Complaints:
    """Bad values and frames, logged at most once every ``COMPLAIN_EVERY_S`` for each key (a
    Redis key, or the sender of frames), then how many more came in that time; and each
    counted, by the kind of its key (``counts``: ``tavern_redis_bad_values`` in /metrics)."""

    def __init__(self, node: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.node = node
        self.clock = clock
        self.counts: collections.Counter[str] = collections.Counter()
        # Key -> when it was said, how many more came since; the oldest first.
        self._said: collections.OrderedDict[str, tuple[float, int]] = collections.OrderedDict()

    def __call__(self, key: str, what: object, exc_info: bool = False) -> None:
        self.counts[_kind(key)] += 1
        now = self.clock()
        self._forget(now)
        if key not in self._said and len(self._said) >= COMPLAINT_KEYS:
            key = OTHER_KEYS
        said = self._said.get(key)
        if said is not None:
            self._said[key] = (said[0], said[1] + 1)
            return
        self._said[key] = (now, 0)
        log.warning("node %s: %s: %s; skipped", self.node, key, what, exc_info=exc_info)

    def _forget(self, now: float) -> None:
        """Forget the keys said longer ago than ``COMPLAIN_EVERY_S``, saying how many more
        came for each."""
        while self._said:
            key, (said_at, more) = next(iter(self._said.items()))
            if now - said_at < COMPLAIN_EVERY_S:
                return
            del self._said[key]
            if more:
                log.warning(
                    "node %s: %s: %d more like it in %.0f s; skipped",
                    *(self.node, key, more, COMPLAIN_EVERY_S),
                )


def _kind(key: str) -> str:
    """What a complaint's key counts as: a kind of Redis key (``sim``, ``seeks``...), the lobby,
    or ``frames``."""
    return key.removeprefix(PREFIX).replace(":", " ").partition(" ")[0]


# --- reading JSON --------------------------------------------------------------------------------
def _json(raw: bytes | str) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise BadValue(f"{_shown(raw)} is not JSON") from None


def _object(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadValue(f"{what} is not an object: {_shown(value)}")
    return value


def _text(value: dict[str, Any], name: str) -> str:
    found = value.get(name)
    if not isinstance(found, str):
        raise BadValue(f"its {name} is not text")
    return found


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _simulation_id(value: object) -> str:
    if isinstance(value, str) and SIMULATION_ID.fullmatch(value):
        return value
    raise BadValue(f"{_shown(value)} is not a simulation id")


def _scores(value: object) -> JsonObject | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(map(_is_number, value.values())):
        raise BadValue("its scores are not numbers by seat")
    return dict(value)


def _seat(value: object) -> JsonObject | None:
    if value is None:
        return None
    seat = _object(value, "a seat")
    names = seat.get("names")
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise BadValue("a seat's names are not a list of text")
    read: JsonObject = {
        "seat": _text(seat, "seat"),
        "nick": _text(seat, "nick"),
        "names": list(names),
        "kind": _text(seat, "kind"),
    }
    if "bot" in seat:  # a registered bot's seat (``SeatView.lobby_wire``)
        read["bot"] = _text(seat, "bot")
    return read


def _lobby_row(row: dict[str, Any]) -> JsonObject:
    """A match as a lobby lists it (``MatchView.lobby_row``)."""
    game, status = row.get("game"), row.get("status")
    if game not in GAMES:
        raise BadValue(f"its game {_shown(game)} is not one of the arena's")
    if status not in STATUSES:
        raise BadValue(f"its status {_shown(status)} is not a match's")
    players, turn, spectators = row.get("players"), row.get("turn"), row.get("spectators")
    if not isinstance(players, list):
        raise BadValue("its players are not a list")
    if not _is_int(turn) or not _is_int(spectators):
        raise BadValue("its turn or its spectators are not whole numbers")
    read: JsonObject = {
        "simulationId": _simulation_id(row.get("simulationId")),
        "game": game,
        "status": status,
        "players": [_seat(player) for player in players],
        "scores": _scores(row.get("scores")),
        "turn": turn,
        "spectators": spectators,
    }
    if "result" in row:
        result = _object(row["result"], "its result")
        winner = result.get("winner")
        if winner is not None and not isinstance(winner, str):
            raise BadValue("its winner is not a seat")
        read["result"] = {
            "reason": _text(result, "reason"),
            "score": _scores(result.get("score")),
            "winner": winner,
        }
    return read


def _shown(value: object) -> str:
    """A bad value as a log shows it: its start only."""
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."
