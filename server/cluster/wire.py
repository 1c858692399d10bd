"""What nodes send each other through Redis: frames, batched per destination node.

One PUBLISH to a node's inbox channel carries the sender's id and every frame due to that node
in one round of the sender's event loop. A frame is a kind, the connection it is about (a
number the node holding the connection chose), and a payload: a seat's message in its wire
form, unchanged, or a small JSON object.

Commands go to Redis already encoded (RESP), written straight to the connection's transport:
a crossing turn costs less without a client library's layers between the frame and the socket.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

NODE_ID_BYTES = 8  # a node id: 8 hex digits
HEADER = struct.Struct(">cII")  # kind, connection, payload length

# To the node playing the match:
JOIN = b"J"  # {"simulationId", "message", "rejoin"}: seat this connection
MOVE = b"M"  # a message from the seat's bot, as JSON
LEAVE = b"L"  # the connection is gone
WATCH = b"W"  # payload: a simulation id; pages on the sender watch it
UNWATCH = b"U"
# To the node holding the connection:
DATA = b"D"  # a message for the bot, in wire form
SEATED = b"S"
REFUSED = b"R"  # {"message", "reason"}
CLOSE = b"C"  # the seat's channel was closed
SPECTATE = b"P"  # simulation id, a space, a page's message


def frame(kind: bytes, connection: int, payload: bytes) -> bytes:
    return HEADER.pack(kind, connection, len(payload)) + payload


def frames(data: bytes) -> tuple[str, Iterator[tuple[bytes, int, bytes]]]:
    """The sender of a published batch, and its frames."""
    sender = data[:NODE_ID_BYTES].decode()
    return sender, _split(data)


def _split(data: bytes) -> Iterator[tuple[bytes, int, bytes]]:
    offset, end, size = NODE_ID_BYTES, len(data), HEADER.size
    view = memoryview(data)
    while offset < end:
        kind, connection, length = HEADER.unpack_from(data, offset)
        offset += size
        yield kind, connection, bytes(view[offset : offset + length])
        offset += length


def command(*args: bytes | str | int) -> bytes:
    """A Redis command, encoded."""
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        out += (b"$%d\r\n" % len(data), data, b"\r\n")
    return b"".join(out)


def publish_head(channel: str) -> bytes:
    """A PUBLISH to ``channel``, up to its message's length."""
    name = channel.encode()
    return b"*3\r\n$7\r\nPUBLISH\r\n$%d\r\n%s\r\n" % (len(name), name)
