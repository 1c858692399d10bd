"""The sans-I/O protocol reader and writer, in memory."""

from __future__ import annotations

import itertools
import tracemalloc

import orjson
import pytest

from server.protocol import (
    MAX_RESYNCS,
    InvalidMessage,
    Message,
    MessageReader,
    MessageTooLong,
    ReaderEvent,
    encode,
    error_message,
    kept_json,
)

TURN = {"type": "player-turn", "actions": [{"botId": 1, "type": "MOVE", "direction": "NORTH"}]}
CREATE = {"type": "create-simulation"}


def payloads(events: list[ReaderEvent]) -> list[object]:
    return [e.payload if isinstance(e, Message) else type(e).__name__ for e in events]


def feed_all(reader: MessageReader, *chunks: bytes) -> list[ReaderEvent]:
    events: list[ReaderEvent] = []
    for chunk in chunks:
        events += reader.feed(chunk)
    return events


def test_bare_object_without_terminator() -> None:
    # The original's bundled bot writes JSON.stringify(message) with no newline.
    assert payloads(MessageReader(1024).feed(orjson.dumps(TURN))) == [TURN]


def test_newline_terminated_and_crlf() -> None:
    reader = MessageReader(1024)
    assert payloads(reader.feed(orjson.dumps(TURN) + b"\r\n")) == [TURN]


def test_several_messages_in_one_read_are_handled_in_order() -> None:
    chunk = orjson.dumps(CREATE) + orjson.dumps(TURN) + b"\n" + orjson.dumps(CREATE) + b"\n\n"
    assert payloads(MessageReader(1024).feed(chunk)) == [CREATE, TURN, CREATE]


def test_message_split_across_reads() -> None:
    data = orjson.dumps(TURN) + b"\n"
    for cut in range(1, len(data)):
        reader = MessageReader(1024)
        assert payloads(feed_all(reader, data[:cut], data[cut:])) == [TURN], cut


def test_one_byte_at_a_time() -> None:
    data = orjson.dumps(TURN) + orjson.dumps(CREATE)
    reader = MessageReader(1024)
    assert payloads(feed_all(reader, *(bytes([b]) for b in data))) == [TURN, CREATE]


def test_pretty_printed_message_over_several_lines() -> None:
    pretty = orjson.dumps(TURN, option=orjson.OPT_INDENT_2)
    assert pretty.count(b"\n") > 3
    assert payloads(MessageReader(1024).feed(pretty)) == [TURN]


def test_braces_and_newline_escapes_inside_strings() -> None:
    message = {"type": "join-simulation", "nick": 'a}b{c"d\\', "names": ["x\ny"]}
    reader = MessageReader(1024)
    data = orjson.dumps(message)
    assert payloads(feed_all(reader, data[:12], data[12:])) == [message]


def test_garbage_gets_invalid_and_the_connection_stays_usable() -> None:
    reader = MessageReader(1024)
    events = reader.feed(b"hello world\n" + orjson.dumps(CREATE))
    assert payloads(events) == ["InvalidMessage", CREATE]


@pytest.mark.parametrize(
    "bad",
    [b"null", b"[1,2]", b'{"foo":1}', b'{"type":""}', b'{"type":3}', b"42", b'"str"'],
)
def test_values_that_are_not_messages(bad: bytes) -> None:
    # The original answered "Invalid JSON" to null, arrays and objects without a type.
    reader = MessageReader(1024)
    events = reader.feed(bad + b"\n" + orjson.dumps(CREATE) + b"\n")
    assert payloads(events) == ["InvalidMessage", CREATE]


@pytest.mark.parametrize(
    "bad",
    [b'{"type" "x"}', b'{"type":"x",}', b'{"type":"x" "y"}', b'{"type":tru}', b'{"a":[1,}'],
)
def test_broken_objects_do_not_swallow_the_next_line(bad: bytes) -> None:
    reader = MessageReader(1024)
    assert payloads(reader.feed(bad + b"\n" + orjson.dumps(CREATE) + b"\n")) == [
        "InvalidMessage",
        CREATE,
    ]


def test_raw_control_character_in_a_string_is_invalid() -> None:
    reader = MessageReader(1024)
    events = reader.feed(b'{"type":"a\nb"}\n' + orjson.dumps(CREATE))
    # The newline ends the broken line, so its tail is a second piece of garbage.
    assert payloads(events) == ["InvalidMessage", "InvalidMessage", CREATE]


def test_invalid_utf8_is_invalid_json() -> None:
    reader = MessageReader(1024)
    assert payloads(reader.feed(b'{"type":"\xff"}{"type":"ok"}')) == [
        "InvalidMessage",
        {"type": "ok"},
    ]


def test_multibyte_utf8_split_between_reads() -> None:
    message = {"type": "join-simulation", "nick": "Þórin Eichenschild 🍺"}
    data = orjson.dumps(message)
    split = data.index("🍺".encode()) + 2
    reader = MessageReader(1024)
    assert payloads(feed_all(reader, data[:split], data[split:])) == [message]


def test_too_long_message_is_fatal() -> None:
    reader = MessageReader(64)
    events = reader.feed(b'{"type":"x","pad":"' + b"a" * 100)
    assert events == [MessageTooLong(64)]
    assert reader.feed(orjson.dumps(CREATE)) == []


def test_too_long_complete_message_is_fatal() -> None:
    reader = MessageReader(64)
    events = reader.feed(orjson.dumps({"type": "x", "pad": "a" * 100}) + b"\n")
    assert isinstance(events[-1], MessageTooLong)


def test_whitespace_between_messages_does_not_count_toward_the_limit() -> None:
    reader = MessageReader(64)
    events = feed_all(reader, b" " * 50, b"\n" * 50, orjson.dumps(CREATE))
    assert payloads(events) == [CREATE]


def test_long_garbage_without_newline_is_dropped_not_fatal() -> None:
    reader = MessageReader(64)
    events = feed_all(reader, b"x" * 200, orjson.dumps(CREATE))
    assert payloads(events) == ["InvalidMessage", CREATE]


def test_encode_is_one_compact_line_in_key_order() -> None:
    assert encode({"type": "score", "team": "team1"}) == b'{"type":"score","team":"team1"}\n'


def test_error_message_shape() -> None:
    assert error_message("Invalid JSON") == {"type": "error", "message": "Invalid JSON"}
    assert error_message("Invalid turn", "why") == {
        "type": "error",
        "message": "Invalid turn",
        "reason": "why",
    }


def test_invalid_message_reason_is_text() -> None:
    (event,) = MessageReader(64).feed(b"[]")
    assert isinstance(event, InvalidMessage)
    assert "JSON object" in event.reason


def test_unclosed_object_line_does_not_swallow_the_next_message() -> None:
    reader = MessageReader(1024)
    assert payloads(reader.feed(b"{\n" + orjson.dumps(CREATE) + b"\n")) == [
        "InvalidMessage",
        CREATE,
    ]


def test_messages_with_multibyte_text_in_one_read_split_where_each_ends() -> None:
    first = {"type": "join-simulation", "nick": "Þórin 🍺", "names": ["Dvalinn"]}
    data = orjson.dumps(first) + orjson.dumps(CREATE) + b" " + orjson.dumps(first)
    assert payloads(MessageReader(1024).feed(data)) == [first, CREATE, first]


def test_a_good_message_before_bad_utf8_is_kept() -> None:
    reader = MessageReader(1024)
    events = reader.feed(orjson.dumps(CREATE) + b'{"type":"\xff"}' + orjson.dumps(TURN))
    assert payloads(events) == [CREATE, "InvalidMessage", TURN]


def test_a_character_split_after_a_closing_brace_waits_for_its_end() -> None:
    message = {"type": "join-simulation", "names": ["a}b"], "nick": "🍺"}
    data = orjson.dumps(message)
    split = data.index("🍺".encode()) + 1
    reader = MessageReader(1024)
    assert reader.feed(data[:split]) == []
    assert payloads(reader.feed(data[split:])) == [message]


def test_garbage_without_newline_resyncs_at_the_next_object() -> None:
    reader = MessageReader(1024)
    assert payloads(reader.feed(b'{"type": tru}' + orjson.dumps(CREATE))) == [
        "InvalidMessage",
        CREATE,
    ]


def test_nesting_deeper_than_json_allows_is_garbage_not_a_wait() -> None:
    reader = MessageReader(1 << 20)
    events = reader.feed(b"{" + b'"a":[' * 1100 + b"\n" + orjson.dumps(CREATE))
    assert payloads(events) == ["InvalidMessage", CREATE]


@pytest.mark.parametrize(
    ("head", "piece", "tail"),
    [
        (b'{"type": "x", "pad": "', b"a" * 1000, b'"}'),  # a long string
        (b'{"type": "x", "pad": [', b"{}," * 333 + b"[],", b"1]}"),  # brackets in every piece
        (b'{"type": "x", "pad": [', b'"}",' * 250, b'""]}'),  # closing brackets inside strings
        (b'{"type": "x", "pad": [', b"1,\n" * 333 + b"1", b"]}"),  # a line in every piece
    ],
    ids=["string", "brackets", "strings", "lines"],
)
def test_a_message_in_many_pieces_is_parsed_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch, head: bytes, piece: bytes, tail: bytes
) -> None:
    """A peer dripping a long message costs a few parses of it, not one per piece."""
    parsed: list[int] = []
    real_loads = orjson.loads

    def counting_loads(data: bytes | bytearray | memoryview | str) -> object:
        parsed.append(len(data))
        return real_loads(data)

    monkeypatch.setattr(orjson, "loads", counting_loads)
    reader = MessageReader(1 << 20)
    assert reader.feed(head) == []
    for _ in range(100):
        assert reader.feed(piece) == []
    (message,) = payloads(reader.feed(tail))
    assert isinstance(message, dict)
    assert message["type"] == "x"
    whole = len(head) + 100 * len(piece) + len(tail)
    assert sum(parsed) < 4 * whole  # the first piece's fast-path try, a few line checks, the end


# --- properties: any bytes, any split ----------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

json_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
messages = st.builds(
    lambda kind, extra: {**extra, "type": kind},
    st.text(min_size=1, max_size=12),
    st.dictionaries(st.text(max_size=8), json_values, max_size=4),
)


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(min_value=0), max_size=8))
def test_any_bytes_in_any_split_give_only_events(data: bytes, cuts: list[int]) -> None:
    reader = MessageReader(128)
    for chunk in split_at(data, cuts):
        for event in reader.feed(chunk):
            assert isinstance(event, Message | InvalidMessage | MessageTooLong)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(messages, min_size=1, max_size=5),
    st.lists(st.sampled_from([b"", b"\n", b"\r\n", b" ", b"\n\n"]), min_size=5, max_size=5),
    st.lists(st.integers(min_value=0), max_size=8),
)
def test_valid_messages_survive_any_framing_and_split(
    sent: list[dict[str, object]], separators: list[bytes], cuts: list[int]
) -> None:
    data = b"".join(orjson.dumps(m) + sep for m, sep in zip(sent, separators, strict=False))
    reader = MessageReader(1 << 20)
    events = [e for chunk in split_at(data, cuts) for e in reader.feed(chunk)]
    assert payloads(events) == sent


def test_a_message_after_an_unclosed_line_is_read_at_once() -> None:
    """An object left open at the end of its line, then a whole message on the next: the
    message comes out with that line (before, it waited until the buffer had doubled, while
    its bot waited for an answer). Found by the property test below."""
    reader = MessageReader(1 << 20)
    assert reader.feed(b'{       "":""\n') == []
    garbage, message = reader.feed(b'{"type":"0"}\n')
    assert isinstance(garbage, InvalidMessage)
    assert message == Message({"type": "0"})


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=60).filter(lambda b: b"\n" not in b), messages)
def test_garbage_line_never_costs_the_next_message(
    garbage: bytes, message: dict[str, object]
) -> None:
    reader = MessageReader(1 << 20)
    events = reader.feed(garbage + b"\n") + reader.feed(orjson.dumps(message) + b"\n")
    assert payloads(events)[-1] == message


def test_kept_json_holds_only_its_length() -> None:
    """What the server keeps (cached move JSON, queued records) must not hold orjson's buffer."""
    values = [{"move": {"from": [i % 15, 3], "to": [4, i % 15]}} for i in range(200)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [kept_json(value) for value in values]
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert [orjson.loads(line) for line in kept] == values
    assert held < 200 * 200  # about 80 bytes each; orjson's own results held 4 KiB each


def test_a_line_of_open_braces_is_one_error_and_a_few_parses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """4,096 ``{`` in TCP segments once cost a parse and an error reply per brace (issue 20,
    item 10)."""
    parsed: list[int] = []
    real_loads = orjson.loads

    def counting_loads(data: bytes | bytearray | memoryview | str) -> object:
        parsed.append(len(data))
        return real_loads(data)

    monkeypatch.setattr(orjson, "loads", counting_loads)
    reader = MessageReader(65_536)
    events = feed_all(reader, *([b"{" * 1460] * 3), b"{" * 4096)
    assert payloads(events) == ["InvalidMessage"]
    assert len(parsed) <= MAX_RESYNCS + 4
    # The rest of the line is dropped unread; the next line is read as usual.
    assert payloads(reader.feed(b"{{{{\n" + orjson.dumps(CREATE) + b"\n")) == [CREATE]


def test_each_bad_line_is_reported_once() -> None:
    lines = [b"{" * 10_000, b"}}}} {]", b"null", b"null", orjson.dumps(CREATE)]
    data = b"\n".join(lines) + b"\n"
    segments = [data[i : i + 1460] for i in range(0, len(data), 1460)]
    assert payloads(feed_all(MessageReader(1 << 20), *segments)) == ["InvalidMessage"] * 4 + [
        CREATE
    ]


def test_garbage_between_good_messages_is_reported_each_time() -> None:
    reader = MessageReader(1024)
    good = orjson.dumps(CREATE)
    assert payloads(reader.feed(b"x" + good + b"y" + good)) == [
        "InvalidMessage",
        CREATE,
        "InvalidMessage",
        CREATE,
    ]


def test_a_chunk_of_many_messages_is_read_as_far_as_asked() -> None:
    """A reader that may handle only a few of a peer's messages now parses only those (issue
    20, item 14: seated bots flooding small messages)."""
    reader = MessageReader(1024)
    lines = [orjson.dumps({"type": "x", "n": n}) + b"\n" for n in range(100)]
    events = reader.feed(b"".join(lines), most=32)
    assert payloads(events) == [{"type": "x", "n": n} for n in range(32)]
    assert reader.more
    assert len(reader.feed(b"", most=32)) == 32
    # What arrives meanwhile waits behind what was read first.
    events = reader.feed(orjson.dumps(CREATE) + b"\n", most=100)
    assert payloads(events) == [*({"type": "x", "n": n} for n in range(64, 100)), CREATE]
    assert not reader.more
    assert reader.feed(b"", most=10) == []


def test_a_chunk_of_many_lines_is_parsed_once_per_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each message of a chunk is parsed from its own line, not from the rest of the chunk: a
    16 KiB chunk of small messages once cost about as many parses of 16 KiB as it had lines."""
    parsed: list[int] = []
    real_loads = orjson.loads

    def counting_loads(data: bytes | bytearray | memoryview | str) -> object:
        parsed.append(len(data))
        return real_loads(data)

    monkeypatch.setattr(orjson, "loads", counting_loads)
    chunk = b'{"type":"x"}\n' * 1000
    assert len(MessageReader(65_536).feed(chunk)) == 1000
    assert sum(parsed) < 3 * len(chunk)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(messages, min_size=1, max_size=8),
    st.lists(st.integers(min_value=0), max_size=8),
    st.integers(min_value=1, max_value=3),
)
def test_reading_a_few_at_a_time_gives_what_reading_all_gives(
    sent: list[dict[str, object]], cuts: list[int], most: int
) -> None:
    data = b"".join(orjson.dumps(m) + b"\n" for m in sent)
    reader = MessageReader(1 << 20)
    events: list[ReaderEvent] = []
    for chunk in split_at(data, cuts):
        events += reader.feed(chunk, most)
        while reader.more:
            events += reader.feed(b"", most)
    assert payloads(events) == sent
