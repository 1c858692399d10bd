"""The arena's TCP protocol, sans I/O: bytes in, messages and errors out; messages in, bytes out.

Input framing is a stream of JSON objects. Bots written for the original server send bare
objects with no terminator, others end each with a newline, some pretty-print over several
lines, and TCP may split or coalesce any of them; all of that must work. So instead of splitting
on newlines, a small pushdown scanner follows the JSON grammar byte by byte to find where each
object ends, and notices garbage as early as the grammar allows. After garbage it drops input up
to the next newline (or everything buffered, if none has arrived) and starts afresh, so one bad
message never costs the next one. The common case, a chunk holding exactly one or a few whole
objects, is parsed directly by orjson without scanning.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, auto
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


class _Expect(Enum):
    MESSAGE = auto()  # between messages: only whitespace or '{'
    KEY_OR_CLOSE = auto()  # just after '{'
    KEY = auto()  # after ',' in an object
    COLON = auto()
    VALUE_OR_CLOSE = auto()  # just after '['
    VALUE = auto()
    AFTER_VALUE = auto()  # ',' or a closing bracket
    STRING = auto()
    STRING_ESCAPE = auto()
    LITERAL = auto()  # number, true, false, null (orjson checks the spelling)


_WHITESPACE = frozenset(b" \t\r\n")
_LITERAL_START = frozenset(b"-0123456789tfn")
_LITERAL_BODY = frozenset(b"0123456789+-.eEtrueflsan")
_OPEN_OBJECT, _OPEN_ARRAY = ord("{"), ord("[")
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_NEWLINE = ord("\n")


class MessageReader:
    """Turns a byte stream from one peer into messages, in order."""

    def __init__(self, max_message_bytes: int) -> None:
        self.max_message_bytes = max_message_bytes
        self._buffer = bytearray()  # bytes of the message being scanned, from its '{'
        self._scanned = 0  # how much of _buffer the scanner has consumed
        self._expect = _Expect.MESSAGE
        self._after_string = _Expect.AFTER_VALUE
        self._stack: list[int] = []
        self._closed = False

    def feed(self, data: bytes) -> list[ReaderEvent]:
        """Consume a chunk as received; return what it completed."""
        if self._closed:
            return []
        if self._expect is _Expect.MESSAGE and not self._buffer:
            quick = self._parse_whole_chunk(data)
            if quick is not None:
                return quick
        self._buffer += data
        events: list[ReaderEvent] = []
        self._scan(events)
        if len(self._buffer) > self.max_message_bytes and not self._closed:
            self._closed = True
            self._buffer.clear()
            events.append(MessageTooLong(self.max_message_bytes))
        return events

    def _parse_whole_chunk(self, data: bytes) -> list[ReaderEvent] | None:
        """The fast path: the chunk is one object, or whole newline-separated objects."""
        stripped = data.strip()
        if not stripped:
            return []
        if not (stripped[0] == _OPEN_OBJECT and stripped[-1] == ord("}")):
            return None
        lines = [stripped] if _NEWLINE not in stripped else stripped.split(b"\n")
        events: list[ReaderEvent] = []
        for raw_line in lines:
            line = raw_line.strip()
            if not line:
                continue
            if len(line) > self.max_message_bytes:
                return None
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                return None
            events.append(_to_event(value))
        return events

    def _scan(self, events: list[ReaderEvent]) -> None:
        buffer = self._buffer
        position = self._scanned
        end = len(buffer)
        expect = self._expect
        stack = self._stack
        while position < end:
            byte = buffer[position]
            if expect is _Expect.STRING:
                if byte == _QUOTE:
                    expect = self._after_string
                elif byte == _BACKSLASH:
                    expect = _Expect.STRING_ESCAPE
                elif byte < 0x20:
                    expect = self._fail(events, position)
                    buffer, position, end = self._buffer, 0, len(self._buffer)
                    continue
                position += 1
                continue
            if expect is _Expect.STRING_ESCAPE:
                expect = _Expect.STRING
                position += 1
                continue
            if expect is _Expect.LITERAL:
                if byte in _LITERAL_BODY:
                    position += 1
                    continue
                expect = _Expect.AFTER_VALUE
            if byte in _WHITESPACE:
                if expect is _Expect.MESSAGE:
                    # Whitespace between messages is dropped so it never counts as a message.
                    del buffer[: end - len(buffer.lstrip())]
                    position, end = 0, len(buffer)
                else:
                    position += 1
                continue
            if expect is _Expect.MESSAGE:
                if byte != _OPEN_OBJECT:
                    expect = self._fail(events, position)
                    buffer, position, end = self._buffer, 0, len(self._buffer)
                    continue
                del buffer[:position]
                position, end = 0, len(buffer)
                stack.append(byte)
                expect = _Expect.KEY_OR_CLOSE
            elif expect is _Expect.KEY_OR_CLOSE or expect is _Expect.KEY:
                if byte == _QUOTE:
                    expect, self._after_string = _Expect.STRING, _Expect.COLON
                elif byte == ord("}") and expect is _Expect.KEY_OR_CLOSE:
                    stack.pop()
                    expect = _Expect.AFTER_VALUE
                else:
                    expect = self._fail(events, position)
                    buffer, position, end = self._buffer, 0, len(self._buffer)
                    continue
            elif expect is _Expect.COLON:
                if byte != ord(":"):
                    expect = self._fail(events, position)
                    buffer, position, end = self._buffer, 0, len(self._buffer)
                    continue
                expect = _Expect.VALUE
            elif expect is _Expect.VALUE or expect is _Expect.VALUE_OR_CLOSE:
                if byte in (_OPEN_OBJECT, _OPEN_ARRAY):
                    stack.append(byte)
                    expect = (
                        _Expect.KEY_OR_CLOSE if byte == _OPEN_OBJECT else _Expect.VALUE_OR_CLOSE
                    )
                elif byte == _QUOTE:
                    expect, self._after_string = _Expect.STRING, _Expect.AFTER_VALUE
                elif byte in _LITERAL_START:
                    expect = _Expect.LITERAL
                elif byte == ord("]") and expect is _Expect.VALUE_OR_CLOSE:
                    stack.pop()
                    expect = _Expect.AFTER_VALUE
                else:
                    expect = self._fail(events, position)
                    buffer, position, end = self._buffer, 0, len(self._buffer)
                    continue
            elif expect is _Expect.AFTER_VALUE:
                opener = stack[-1]
                if byte == ord(","):
                    expect = _Expect.KEY if opener == _OPEN_OBJECT else _Expect.VALUE
                elif (byte == ord("}") and opener == _OPEN_OBJECT) or (
                    byte == ord("]") and opener == _OPEN_ARRAY
                ):
                    stack.pop()
                else:
                    expect = self._fail(events, position)
                    buffer, position, end = self._buffer, 0, len(self._buffer)
                    continue
            position += 1
            if expect is _Expect.AFTER_VALUE and not stack:
                if position > self.max_message_bytes:
                    self._closed = True
                    buffer.clear()
                    events.append(MessageTooLong(self.max_message_bytes))
                    return
                events.append(_decode(bytes(buffer[:position])))
                del buffer[:position]
                position, end = 0, len(buffer)
                expect = _Expect.MESSAGE
        self._scanned = position
        self._expect = expect

    def _fail(self, events: list[ReaderEvent], position: int) -> _Expect:
        """Report garbage and resynchronise after its first newline (or drop what is buffered).

        The buffer starts where the broken message started, and a raw newline cannot occur
        inside a JSON string, so its first newline ends the broken line even when the error
        was only noticed on a later one.
        """
        events.append(InvalidMessage(f"not a JSON object (unexpected byte at offset {position})"))
        newline = self._buffer.find(b"\n")
        if newline < 0:
            self._buffer.clear()
        else:
            del self._buffer[: newline + 1]
        self._stack.clear()
        return _Expect.MESSAGE


def _decode(raw: bytes) -> Message | InvalidMessage:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        return InvalidMessage(f"not valid JSON: {error}")
    return _to_event(value)


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
