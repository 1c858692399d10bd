"""The arena's TCP protocol, sans I/O: bytes in, messages and errors out; messages in, bytes out.

Input framing is a stream of JSON objects. Bots written for the original server send bare
objects with no terminator, others end each with a newline, some pretty-print over several
lines, and TCP may split or coalesce any of them; all of that must work. orjson does the
scanning: parsing what is buffered either gives a message, or says where it went wrong. An
error at the very end of the buffer means the message is not complete yet; "content after
document" means a whole message followed by the next one; anything else is garbage, dropped
up to the broken message's first newline (or, with no newline yet, up to the next ``{``), so
one bad message never costs the next one. A stretch of garbage is reported once, however many
pieces it breaks into, and a line that keeps breaking (``{{{{...``) is tried at only a few of its
``{`` before the rest of it is dropped unread: garbage costs the reader, and the peer's answers,
a bounded amount per line. A message that arrives in pieces is parsed only once
its nesting is back at the top level, which the reader follows as the pieces come, skipping
strings with a regular expression and counting brackets with ``bytes.count``: Python does
almost nothing per byte, however a peer frames its bytes.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any, Final

import orjson

JsonObject = dict[str, Any]


class Message:
    """One well-formed message: a JSON object with a non-empty string ``type``.

    Made for every message read: a plain class with a ``Final`` attribute (immutable as far as
    the type checker goes) builds in a third of a frozen dataclass's time."""

    __slots__ = ("payload",)

    def __init__(self, payload: JsonObject) -> None:
        self.payload: Final = payload

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Message) and other.payload == self.payload

    __hash__ = None  # type: ignore[assignment]  # a dict's holder: unhashable, as before

    def __repr__(self) -> str:
        return f"Message({self.payload!r})"

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
_STRING_BODY = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)  # up to a closing quote
# Complete strings and anything else but brackets and the quote of an unfinished string.
_SKIP = re.compile(rb'(?:"[^"\\]*(?:\\.[^"\\]*)*"|[^"{}\[\]])*', re.DOTALL)
_STEPS = bytes.maketrans(b"{[}]", b"\x01\x01\xff\xff")  # as signed bytes: +1 and -1
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"{}[]")))
_OPEN_OBJECT = ord("{")
_QUOTE = ord('"')
MAX_DEPTH = 1024  # orjson's limit of nesting
MAX_RESYNCS = 16  # starts tried within one line of garbage before the rest of the line is dropped
_AFTER_DOCUMENT = "unexpected content after document"
_NOT_UTF8 = "str is not valid UTF-8"


class MessageReader:
    """Turns a byte stream from one peer into messages, in order."""

    def __init__(self, max_message_bytes: int) -> None:
        self.max_message_bytes = max_message_bytes
        self._buffer = bytearray()  # bytes received and not yet consumed
        self._closed = False
        # How the message at the start of the buffer nests, over its first ``_tracked`` bytes.
        self._tracked = 0
        self._depth = 0
        self._in_string = False
        self._checked = 0  # the buffer's length when it was last parsed and found incomplete
        # Garbage: reported once per stretch (until a newline or a good message), and retried at
        # a bounded number of starts; past them, input is dropped up to the next newline.
        self._reported = False
        self._resyncs = 0
        self._to_newline = False
        self.more = False  # whole messages may wait in the buffer: ``feed(b"", most)`` reads on

    def feed(self, data: bytes, most: int | None = None) -> list[ReaderEvent]:
        """Consume a chunk as received; return what it completed, at most ``most`` events (the
        rest stays in the buffer, ``more`` is set, and ``feed(b"", most)`` reads on): a reader
        that cannot handle a peer's whole chunk now need not parse it now either."""
        if self._closed:
            return []
        if self.more:
            self._buffer += data
            return self._read(most)
        if self._to_newline:
            newline = data.find(b"\n")
            if newline < 0:
                return []
            data = data[newline + 1 :]
            self._to_newline = False
            self._line_ended()
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
                    event = _to_event(value)
                    if isinstance(event, Message):  # every move: ``_value``'s work, inline
                        self._reported, self._resyncs = False, 0  # the stretch ended
                        return [event]
                    events: list[ReaderEvent] = []
                    self._garbage(events, event.reason)
                    if b"\n" in data:
                        self._line_ended()
                    return events
        self._buffer += data
        if not self._may_be_ready(b"\n" in data):
            return []
        return self._read(most)

    def _read(self, most: int | None) -> list[ReaderEvent]:
        events: list[ReaderEvent] = []
        self._drain(events, most)
        self._tracked, self._depth, self._in_string = 0, 0, False
        if self._buffer and not self.more:
            # The start of the next message: follow its nesting from here on.
            self._track()
            self._checked = len(self._buffer)
        return events

    def _may_be_ready(self, newline: bool) -> bool:
        """Whether parsing the buffer now could give anything: a message that may be whole (its
        nesting came back to the top), garbage to report (no ``{`` first, or a line to judge),
        or a buffer past the size limit. Lines are judged when the buffer has doubled since the
        last parse, so a peer cannot make the reader parse its message once per chunk."""
        buffer = self._buffer
        first = _NOT_WHITESPACE.search(buffer)
        if first is None:  # whitespace between messages is dropped, never kept
            if b"\n" in buffer:
                self._line_ended()
            buffer.clear()
            self._tracked = 0
            return False
        if buffer[first.start()] != _OPEN_OBJECT:
            return True
        if len(buffer) > self.max_message_bytes or self._track():
            return True
        return newline and (len(buffer) >= 2 * self._checked or self._last_line_is_message())

    def _last_line_is_message(self) -> bool:
        """Whether the buffer's last whole line is a JSON object by itself: then what comes
        before it (an unfinished message over several lines, still open) is garbage, and the
        object must not wait for the buffer to double (a bot that sent it waits for an answer).
        Each line is looked at once, so this costs no more than reading the bytes."""
        buffer = self._buffer
        last = buffer.rfind(b"\n")
        previous = buffer.rfind(b"\n", 0, last)
        with memoryview(buffer) as view:
            line = view[previous + 1 : last]
            try:
                return isinstance(orjson.loads(line), dict)
            except orjson.JSONDecodeError:
                return False

    def _track(self) -> bool:
        """Follow the nesting over the bytes not followed yet; True if it may be back at the top.

        Everything here runs in C, a stretch at a time: complete strings, and what lies between
        them but brackets, are skipped by one regular expression; a stretch of brackets and
        plain values is reduced to +1 and -1 steps by ``bytes.translate`` and summed by
        ``itertools.accumulate``, whose lowest point tells whether the nesting came back up.
        """
        buffer = self._buffer
        position, end, depth = self._tracked, len(buffer), self._depth
        while position < end:
            if self._in_string:
                stop = _string_end(buffer, position, end)
                if stop < 0:  # the string goes on past what has come
                    position = _unfinished_string_rest(buffer, position, end)
                    break
                self._in_string = False
                position = stop + 1
            position = _SKIP.match(buffer, position, end).end()  # type: ignore[union-attr]
            if position >= end:
                break
            if buffer[position] == _QUOTE:  # a string that has not ended yet
                self._in_string = True
                position += 1
                continue
            quote = buffer.find(b'"', position, end)
            stretch_end = end if quote < 0 else quote
            steps = buffer[position:stretch_end].translate(_STEPS, _NOT_BRACKETS)
            signed = memoryview(steps).cast("b")
            # The depth after each bracket (at a message's start, before it: 0, not counted).
            depths = (
                itertools.accumulate(signed, initial=depth)
                if depth
                else itertools.accumulate(signed)
            )
            if steps and min(depths) <= 0:
                self._tracked, self._depth = stretch_end, depth
                return True  # back at the top: orjson judges whether and where it ends
            depth += sum(signed)
            if depth > MAX_DEPTH:  # deeper than JSON allows: orjson will call it garbage
                self._tracked, self._depth = stretch_end, depth
                return True
            position = stretch_end
        self._tracked, self._depth = position, depth
        return False

    def _drain(self, events: list[ReaderEvent], most: int | None) -> None:
        buffer = self._buffer
        start, end = 0, len(buffer)
        self.more = False
        while start < end:
            if most is not None and len(events) >= most:
                self.more = True
                break
            found = _NOT_WHITESPACE.search(buffer, start)
            if found is None:
                if buffer.find(b"\n", start) >= 0:
                    self._line_ended()
                start = end
                break
            if buffer.find(b"\n", start, found.start()) >= 0:
                self._line_ended()
            start = found.start()
            if buffer[start] != _OPEN_OBJECT:
                self._garbage(events, "not a JSON object (unexpected byte at offset 0)")
                start = self._resync(start, start)
                continue
            outcome = self._parse(start, end)
            if outcome is None:  # not complete yet
                break
            value, stop = outcome
            if isinstance(value, InvalidMessage):
                self._garbage(events, value.reason)
                start = self._resync(start, stop)
                continue
            if _length(buffer, start, stop) > self.max_message_bytes:
                self._close(events)
                return
            self._value(events, value)
            start = stop
        del buffer[:start]
        if len(buffer) > self.max_message_bytes and not self.more:
            self._close(events)

    def _parse(self, start: int, end: int) -> tuple[object, int] | None:
        """The message that starts at ``start``: its value (or why it is garbage) and where it
        stops; ``None`` if the bytes up to ``end`` are only its beginning.

        A message on a line of its own (the usual case) is read from that line alone: orjson
        checks the UTF-8 of everything it is given, and a buffer of many lines would otherwise
        be checked again for each of them."""
        newline = self._buffer.find(b"\n", start, end)
        if newline >= 0:
            with memoryview(self._buffer) as view:
                try:
                    return orjson.loads(view[start:newline]), newline
                except orjson.JSONDecodeError:
                    pass  # garbage, or a message over several lines: judged below
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

    def _value(self, events: list[ReaderEvent], value: object) -> None:
        """A whole JSON value: a message, or garbage if it is not one."""
        event = _to_event(value)
        if isinstance(event, Message):
            events.append(event)
            self._line_ended()
        else:
            self._garbage(events, event.reason)

    def _line_ended(self) -> None:
        """A newline or a good message ends a stretch of garbage: the next one is reported."""
        self._reported, self._resyncs = False, 0

    def _garbage(self, events: list[ReaderEvent], reason: str) -> None:
        """Report garbage, once per stretch of it."""
        if not self._reported:
            self._reported = True
            events.append(InvalidMessage(reason))

    def _resync(self, start: int, error_at: int) -> int:
        """Where to look for the next message after garbage starting at ``start``: past the
        broken line's first newline (a raw newline cannot be inside a JSON string, so it ends
        the broken line even when the error was only noticed on a later one), or, with no
        newline yet, at the next ``{`` after the error, a few times; after that, the rest of
        the line is dropped as it comes."""
        buffer = self._buffer
        newline = buffer.find(b"\n", start)
        if newline >= 0:
            self._line_ended()
            return newline + 1
        self._resyncs += 1
        brace = buffer.find(b"{", max(error_at, start + 1))
        if brace < 0 or self._resyncs > MAX_RESYNCS:
            self._to_newline = self._resyncs > MAX_RESYNCS
            return len(buffer)
        return brace

    def _close(self, events: list[ReaderEvent]) -> None:
        self._closed = True
        self._buffer.clear()
        events.append(MessageTooLong(self.max_message_bytes))


def _string_end(buffer: bytearray, start: int, end: int) -> int:
    """Where the string that goes on at ``start`` ends (its closing quote), or -1."""
    quote = buffer.find(b'"', start, end)
    escape = buffer.find(b"\\", start, end if quote < 0 else quote)
    if escape < 0:  # no escapes: the quote, if it has come, ends it
        return quote
    body = _STRING_BODY.match(buffer, escape, end)
    stop = body.end() if body else escape
    return stop if stop < end and buffer[stop] == _QUOTE else -1


def _unfinished_string_rest(buffer: bytearray, start: int, end: int) -> int:
    """Where to look again for the end of a string that goes on: at the end, or before a
    trailing backslash, whose pair (the escaped character) has not come yet."""
    if buffer.find(b"\\", start, end) < 0:
        return end
    body = _STRING_BODY.match(buffer, start, end)
    return body.end() if body else start


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
    return orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)


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
