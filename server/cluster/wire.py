"""What nodes send each other through Redis: frames, batched per destination node.

One message to a node's inbox channel (``SPUBLISH``, sharded pub/sub) carries the sender's id
and every frame due to that node in one round of the sender's event loop. A frame is a kind,
the connection it is about (a number the node holding the connection chose), and a payload: a
seat's message in its wire form, unchanged, or a small JSON object.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

VERSION = 3
"""The frames' format, in every node's entry (``tavern:node:{id}``): a node that sees another
speak a different one says so in its log, as seats cannot cross between them (an entry without
it is version 1, before seats' links were sequenced; version 2 asked other nodes by HTTP, not
with ``REQUEST``). docs/operations.md, a rolling upgrade."""
NODE_ID_BYTES = 8  # a node id: 8 hex digits
NODE_ID = re.compile(rb"[0-9a-f]{%d}" % NODE_ID_BYTES)
HEADER = struct.Struct(">cII")  # kind, connection, payload length

# To the node playing the match:
JOIN = b"J"  # {"simulationId", "message", "rejoin"}: seat this connection
MOVE = b"M"  # a message from the seat's bot, as JSON
LEAVE = b"L"  # the connection is gone
WATCH = b"W"  # payload: a simulation id; pages on the sender watch it
UNWATCH = b"U"
RESUME = b"E"  # RESUME_STATE: the other end of a seat's link after a lost link (see SEQ)
# To the node holding the connection:
DATA = b"D"  # a message for the bot, in wire form
SEATED = b"S"
REFUSED = b"R"  # {"message", "reason"}
CLOSE = b"C"  # the seat's channel was closed: GAME_OVER at its game's end, else empty
RESUMED = b"F"  # RESUME_STATE: the other end of a seat's link after a lost link (see SEQ)
SPECTATE = b"P"  # simulation id, a space, a page's message
PAIRED = b"Q"  # {"seek", "simulationId"}: a seek of the receiver's, paired into the sender's match
CHALLENGE = b"X"  # a challenge for a bot present on the receiver (server.cluster.challenges)
ANSWERED = b"A"  # {"challenge", "simulationId", "reason"}: the answer to one
# Either way (server.cluster.requests), the frame's connection being the request's number:
REQUEST = b"H"  # a path (with its query), a newline, a body: asked of the node playing a game
REPLY = b"Y"  # a status (two bytes, as HTTP's) and a body: the answer to a REQUEST
KINDS = frozenset(
    {
        REQUEST,
        REPLY,
        JOIN,
        MOVE,
        LEAVE,
        WATCH,
        UNWATCH,
        DATA,
        SEATED,
        REFUSED,
        CLOSE,
        RESUME,
        RESUMED,
        SPECTATE,
        PAIRED,
        CHALLENGE,
        ANSWERED,
    }
)

Frame = tuple[bytes, int, bytes]  # kind, connection, payload

# CLOSE's body when the seat's game is over (a ladder client stays connected for its next
# game); empty when the seat was taken by a rejoin or cut short (the connection closes, as it
# does after every close from a node that predates this body).
GAME_OVER = b"over"

# A seat's link (the frames about one seat that crosses nodes, both ways, from JOIN to CLOSE)
# is sequenced: each of its frames' payload starts with SEQ, its number on the link and the
# number of the last frame its sender read from the other end. A frame can be lost only as
# the link to Redis is lost: once both ends are in the arena again, each says (RESUME to the
# node playing the match, RESUMED to the node holding the connection) the last frame it read,
# and the other sends again the frames after it; a frame read already is dropped.
SEQ = struct.Struct(">II")
RESUME_STATE = struct.Struct(">IB")  # the last frame read; ASK, ANSWER or GONE
ASK = 1  # "send again what I did not read, and say what you read"
ANSWER = 2  # "send again what I did not read"
GONE = 3  # "I have no such seat": it was left, or never asked for


def frame(kind: bytes, connection: int, payload: bytes) -> bytes:
    return HEADER.pack(kind, connection, len(payload)) + payload


@dataclass(slots=True)  # not frozen: made for every batch, and frozen ones cost 3 times more
class Batch:
    """A published batch as read: its sender (None when the batch does not start with a node
    id: all of it is dropped), its frames, and how many frames were dropped and why (the
    first reason): a frame of an unknown kind is skipped, a header cut short or a payload
    longer than what is left ends the batch."""

    sender: str | None
    frames: list[Frame]
    dropped: int = 0
    fault: str = ""


def read_batch(data: bytes) -> Batch:
    """Whatever was published on a node's inbox (anyone who reaches the Redis can publish
    there): never raises, however bad the bytes."""
    if not NODE_ID.fullmatch(data, 0, NODE_ID_BYTES):
        return Batch(None, [], 1, "the batch does not start with a node id")
    frames: list[Frame] = []
    dropped, fault = 0, ""
    offset, end, size = NODE_ID_BYTES, len(data), HEADER.size
    while offset < end:
        if end - offset < size:
            dropped, fault = dropped + 1, fault or f"a frame header cut short at byte {offset}"
            break
        kind, connection, length = HEADER.unpack_from(data, offset)
        offset += size
        if length > end - offset:
            dropped += 1
            fault = fault or f"a frame of {length} bytes with {end - offset} left"
            break
        if kind in KINDS:
            frames.append((kind, connection, data[offset : offset + length]))
        else:
            dropped, fault = dropped + 1, fault or f"a frame of the unknown kind {kind!r}"
        offset += length
    return Batch(data[:NODE_ID_BYTES].decode(), frames, dropped, fault)
