"""A node's inbox: the batches of frames the other nodes publish to it, each frame handed to the
handler of its kind (``server.cluster.wire``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from server.cluster import values, wire

Handler = Callable[[str, int, bytes], None]
"""What a frame of one kind does: called with its sender, its connection and its payload."""


class Inbox:
    """Where anyone who reaches the Redis can publish: a bad frame costs only itself (said at
    most once a minute per sender)."""

    def __init__(self, handlers: Mapping[bytes, Handler], complaints: values.Complaints) -> None:
        if handlers.keys() != wire.KINDS:
            raise ValueError(f"a handler for each kind of frame, not {sorted(handlers)}")
        self.handlers = dict(handlers)
        self.complaints = complaints

    def received(self, data: bytes) -> None:
        """A batch, as published: its frames that read, each handled on its own."""
        batch = wire.read_batch(data)
        sender = batch.sender
        if batch.dropped:
            fault = f"frames dropped: {batch.dropped} ({batch.fault})"
            self.complaints(f"frames from {sender or 'a non-node'}", fault)
        if sender is None:
            return
        handlers = self.handlers
        for kind, connection, payload in batch.frames:
            try:
                handlers[kind](sender, connection, payload)
            except values.BadValue as bad:
                self.complaints(f"frames from {sender}", f"a frame {kind!r}: {bad}")
            except Exception:  # a bug: it must cost that frame, not the node
                self.complaints(f"frames from {sender}", f"a frame {kind!r} failed", exc_info=True)
