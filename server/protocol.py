"""The arena's TCP protocol, sans I/O: bytes in, messages and errors out; messages in, bytes out.

Input framing is a stream of JSON objects. Bots written for the original server send bare
objects with no terminator, others end each with a newline, some pretty-print over several
lines, and TCP may split or coalesce any of them; all of that must work. orjson does the
scanning: parsing what is buffered either gives a message, or says where it went wrong. An
error at the very end of the buffer means the message is not complete yet; "content after
document" means a whole message followed by the next one; anything else is garbage, dropped
up to the broken message's first newline (or, with no newline yet, up to the next ``{``), so
one bad message never costs the next one. Python touches each byte only through C code
(orjson, ``bytes.find``), so a hostile peer costs little however it frames its bytes, and a
buffer is parsed again only when a chunk could end a message (it holds a ``}``) or a line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

JsonObject = dict[str, Any]

INVALID_JSON = "Invalid JSON"
MESSAGE_TOO_LONG = "Message too long"


@dataclass(frozen=True, slots=True)
class Message:
    """One well-formed message: a JSON object with a non-empty string ``type``."""

    payload: JsonObject

    @property
    def type(self) -> str:
        return str(self.payload["type"])


@dataclass(frozen=True, slots=True)
class InvalidMessage:
    """Input that is not a message; the connection stays usable."""

    reason: str


@dataclass(frozen=True, slots=True)
class MessageTooLong:
    """A message exceeded the size limit; the connection must be closed."""

    limit: int


ReaderEvent = Message | InvalidMessage | MessageTooLong

_NOT_WHITESPACE = re.compile(rb"[^ \t\r\n]")
_OPEN_OBJECT = ord("{")
_AFTER_DOCUMENT = "unexpected content after document"
_NOT_UTF8 = "str is not valid UTF-8"


class MessageReader:
    """Turns a byte stream from one peer into messages, in order."""

    def __init__(self, max_message_bytes: int) -> None:
        self.max_message_bytes = max_message_bytes
        self._buffer = bytearray()  # bytes received and not yet consumed
        self._closed = False

    def feed(self, data: bytes) -> list[ReaderEvent]:
        """Consume a chunk as received; return what it completed."""
        if self._closed:
            return []
        if not self._buffer:
            # The common case: the chunk is exactly one message, terminated or not.
            try:
                value = orjson.loads(data)
            except orjson.JSONDecodeError:
                pass
            else:
                if len(data) <= self.max_message_bytes or len(data.strip()) <= (
                    self.max_message_bytes
                ):
                    return [_to_event(value)]
        self._buffer += data
        if b"}" not in data and b"\n" not in data and len(self._buffer) <= self.max_message_bytes:
            return []  # nothing in this chunk can end a message or a line
        events: list[ReaderEvent] = []
        self._drain(events)
        return events

    def _drain(self, events: list[ReaderEvent]) -> None:
        buffer = self._buffer
        start, end = 0, len(buffer)
        while start < end:
            found = _NOT_WHITESPACE.search(buffer, start)
            if found is None:
                start = end
                break
            start = found.start()
            if buffer[start] != _OPEN_OBJECT:
                events.append(InvalidMessage("not a JSON object (unexpected byte at offset 0)"))
                start = self._resync(start, start)
                continue
            outcome = self._parse(start, end)
            if outcome is None:  # not complete yet
                break
            value, stop = outcome
            if isinstance(value, InvalidMessage):
                events.append(value)
                start = self._resync(start, stop)
                continue
            if _length(buffer, start, stop) > self.max_message_bytes:
                self._close(events)
                return
            events.append(_to_event(value))
            start = stop
        del buffer[:start]
        if len(buffer) > self.max_message_bytes:
            self._close(events)

    def _parse(self, start: int, end: int) -> tuple[object, int] | None:
        """The message that starts at ``start``: its value (or why it is garbage) and where it
        stops; ``None`` if the bytes up to ``end`` are only its beginning."""
        with memoryview(self._buffer) as view:
            chunk = view[start:end]
            try:
                return orjson.loads(chunk), end
            except orjson.JSONDecodeError as error:
                if error.msg.startswith(_NOT_UTF8):
                    return self._parse_before_bad_utf8(start, end, bytes(chunk))
                stop = start + _byte_offset(chunk, error.pos)
                if stop >= end:
                    return None
                if error.msg == _AFTER_DOCUMENT:
                    return orjson.loads(view[start:stop]), stop
                return InvalidMessage(
                    f"not valid JSON: {error.msg} (at offset {stop - start})"
                ), stop

    def _parse_before_bad_utf8(
        self, start: int, end: int, chunk: bytes
    ) -> tuple[object, int] | None:
        """orjson checks the UTF-8 of the whole buffer first: find the bad bytes and judge the
        message by what comes before them (a multi-byte character may be only half here)."""
        try:
            chunk.decode()
        except UnicodeDecodeError as error:
            bad, truncated = error.start, error.end == len(chunk) and "end of data" in error.reason
        else:  # orjson saw something Python does not: treat the message as garbage
            return InvalidMessage(f"not valid JSON: {_NOT_UTF8}"), end
        before = self._parse(start, start + bad) if bad else None
        if before is not None and not isinstance(before[0], InvalidMessage):
            return before  # a whole message ends before the bad bytes
        if truncated:
            return None  # the rest of the character has not arrived
        return InvalidMessage(f"not valid JSON: {_NOT_UTF8} (at offset {bad})"), start + bad

    def _resync(self, start: int, error_at: int) -> int:
        """Where to look for the next message after garbage starting at ``start``: past the
        broken line's first newline (a raw newline cannot be inside a JSON string, so it ends
        the broken line even when the error was only noticed on a later one), or, with no
        newline yet, at the next ``{`` after the error."""
        buffer = self._buffer
        newline = buffer.find(b"\n", start)
        if newline >= 0:
            return newline + 1
        brace = buffer.find(b"{", max(error_at, start + 1))
        return brace if brace >= 0 else len(buffer)

    def _close(self, events: list[ReaderEvent]) -> None:
        self._closed = True
        self._buffer.clear()
        events.append(MessageTooLong(self.max_message_bytes))


def _byte_offset(chunk: memoryview, position: int) -> int:
    """orjson reports character positions; bytes are what the buffer counts."""
    if position <= 0 or chunk[:position].tobytes().isascii():
        return position
    return len(bytes(chunk).decode(errors="replace")[:position].encode(errors="surrogatepass"))


def _length(buffer: bytearray, start: int, stop: int) -> int:
    """A message's length without the whitespace that follows it."""
    return len(buffer[start:stop].rstrip())


def _to_event(value: object) -> Message | InvalidMessage:
    if isinstance(value, dict) and isinstance(value.get("type"), str) and value["type"]:
        return Message(value)
    return InvalidMessage('a message must be a JSON object with a non-empty string "type"')


def encode(message: JsonObject) -> bytes:
    """One message as one line: compact JSON, keys in the given order, ``\\n``-terminated."""
    return orjson.dumps(message) + b"\n"


def kept_json(value: object) -> bytes:
    """JSON bytes to keep (in a cache or a queue for another thread), holding only their length.

    orjson's result holds a 4 KiB buffer however short the JSON is (measured with orjson 3.13):
    thousands kept waste megabytes, and freed by the records thread they fragmented the
    server's heap until it grew without bound.
    """
    return bytes(memoryview(orjson.dumps(value)))


def error_message(message: str, reason: str | None = None) -> JsonObject:
    """The error line; ``message`` is the stable text bots match on, ``reason`` the detail."""
    error: JsonObject = {"type": "error", "message": message}
    if reason:
        error["reason"] = reason
    return error
