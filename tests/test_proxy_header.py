"""The PROXY protocol's header, sans I/O, on golden bytes: two captured from HAProxy 2.6 with
``send-proxy-v2`` (a client's connection from 127.0.5.6, and a health check with
``check-send-proxy``), the others written from the specification."""

from __future__ import annotations

from typing import Any

import pytest

from server.proxy_header import (
    HEADER_TIMEOUT_S,
    MAX_HEADER_BYTES,
    V1_MAX_BYTES,
    AwaitedHeader,
    BadHeader,
    Balancers,
    HeaderReader,
    ProxyHeader,
    parse,
)
from tests.clock import FakeClock

SIGNATURE = bytes.fromhex("0d0a0d0a000d0a515549540a")
# HAProxy 2.6: a client 127.0.5.6 port 33613 to 127.0.0.1 port 19100, then the client's bytes.
HAPROXY_V2 = bytes.fromhex("0d0a0d0a000d0a515549540a2111000c7f0005067f000001834d4a9c")
HAPROXY_CHECK = bytes.fromhex("0d0a0d0a000d0a515549540a20000000")  # LOCAL, no address
V2_IPV6 = SIGNATURE + bytes.fromhex(
    "2121"  # PROXY, TCP over IPv6
    "0024"  # 36 address bytes
    "20010db8000000000000000000000001"  # 2001:db8::1
    "20010db8000000000000000000000002"  # 2001:db8::2
    "d431" "01bb"  # ports 54321, 443
)  # fmt: skip
V2_MAPPED = SIGNATURE + bytes.fromhex(
    "21210024" "00000000000000000000ffff7f030303" "00000000000000000000000000000001" "00500050"
)  # fmt: skip  # ::ffff:127.3.3.3
V2_UNIX = SIGNATURE + bytes.fromhex("213100d8") + b"/run/client.sock".ljust(108, b"\0") * 2
V2_WITH_TLVS = SIGNATURE + bytes.fromhex(
    "21110013" "7f0a0b0c7f000001" "30390050" "0500047a616d64"  # + PP2_TYPE_UNIQUE_ID "zamd"
)  # fmt: skip
V1_TCP4 = b"PROXY TCP4 127.9.8.7 127.0.0.1 56324 9000\r\n"
V1_TCP6 = b"PROXY TCP6 2001:db8::7 2001:db8::1 40000 443\r\n"
V1_UNKNOWN = b"PROXY UNKNOWN ffff:f...f:ffff ffff:f...f:ffff 65535 65535\r\n"
BOT = b'{"type":"create-simulation"}\n'


@pytest.mark.parametrize(
    ("header", "client"),
    [
        (HAPROXY_V2, ("127.0.5.6", 33613)),
        (HAPROXY_CHECK, None),
        (V2_IPV6, ("2001:db8::1", 54321)),
        (V2_MAPPED, ("127.3.3.3", 80)),
        (V2_UNIX, None),
        (V2_WITH_TLVS, ("127.10.11.12", 12345)),
        (V1_TCP4, ("127.9.8.7", 56324)),
        (V1_TCP6, ("2001:db8::7", 40000)),
        (V1_UNKNOWN, None),
    ],
    ids=["haproxy", "check", "ipv6", "mapped", "unix", "tlvs", "v1-tcp4", "v1-tcp6", "v1-unknown"],
)
def test_a_whole_header_names_its_client_and_leaves_what_follows(
    header: bytes, client: tuple[str, int] | None
) -> None:
    assert parse(header + BOT) == ProxyHeader(client, len(header))
    assert parse(header) == ProxyHeader(client, len(header))


@pytest.mark.parametrize(
    "header", [HAPROXY_V2, HAPROXY_CHECK, V2_IPV6, V2_UNIX, V2_WITH_TLVS, V1_TCP4, V1_UNKNOWN]
)
def test_a_truncated_header_waits_for_more_and_comes_whole_byte_by_byte(header: bytes) -> None:
    for cut in range(len(header)):
        assert parse(header[:cut]) is None, cut
    balancer = ("127.0.0.2", 41000)
    reader = HeaderReader(balancer)
    for index in range(len(header) - 1):
        assert reader.feed(header[index : index + 1]) is None
    whole = reader.feed(header[-1:] + BOT)
    header_read = parse(header)
    assert header_read is not None
    assert whole == (header_read.client or balancer, BOT)  # no client named: the balancer


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (BOT, "does not begin with a PROXY header"),
        (b"GET / HTTP/1.1\r\n", "does not begin"),
        (b"PROXZ", "does not begin"),
        (SIGNATURE[:5] + b"X", "does not begin"),
        (SIGNATURE + bytes.fromhex("1111000c") + bytes(12), "version and command 0x11"),
        (SIGNATURE + bytes.fromhex("2211000c") + bytes(12), "version and command 0x22"),
        (SIGNATURE + bytes.fromhex("21120000"), "family 0x12"),  # UDP
        (SIGNATURE + bytes.fromhex("21410000"), "family 0x41"),
        (SIGNATURE + bytes.fromhex("21110008") + bytes(8), "8 address bytes, 12 needed"),
        (SIGNATURE + bytes.fromhex("2111ffff"), "65551 bytes"),
        (b"PROXY TCP4 127.0.0.1 127.0.0.1 1 2\n", "no CRLF"),
        (b"PROXY TCP4 " + b"1" * V1_MAX_BYTES, "no CRLF"),
        (b"PROXY TCP5 127.0.0.1 127.0.0.1 1 2\r\n", "not of the form"),
        (b"PROXY TCP4 127.0.0.1 127.0.0.1 1\r\n", "not of the form"),
        (b"PROXY TCP4 127.0.0.1  127.0.0.1 1 2\r\n", "not of the form"),
        (b"PROXY TCP4 127.0.0.300 127.0.0.1 1 2\r\n", "not one"),
        (b"PROXY TCP4 ::1 127.0.0.1 1 2\r\n", "not of TCP4"),
        (b"PROXY TCP6 127.0.0.1 ::1 1 2\r\n", "not of TCP6"),
        (b"PROXY TCP4 127.0.0.1 127.0.0.1 65536 2\r\n", "port 65536"),
        (b"PROXY TCP4 127.0.0.1 127.0.0.1 080 2\r\n", "port b'080'"),
        (b"PROXY TCP4 127.0.0.1 127.0.0.1 -1 2\r\n", "port b'-1'"),
        (b"PROXY TCP4 127.0.0.1 127.0.0.1 1 \xff\r\n", "port"),
    ],
)
def test_what_cannot_begin_a_header_is_refused_as_soon_as_it_shows(data: bytes, why: str) -> None:
    with pytest.raises(BadHeader, match=why.replace("(", r"\(")):
        parse(data)


def test_an_oversized_v2_header_is_refused_before_its_bytes_come() -> None:
    length = MAX_HEADER_BYTES - 16 + 1
    with pytest.raises(BadHeader, match="at most"):
        parse(SIGNATURE + bytes.fromhex("2111") + length.to_bytes(2, "big"))
    largest = SIGNATURE + bytes.fromhex("2111") + (MAX_HEADER_BYTES - 16).to_bytes(2, "big")
    assert parse(largest) is None  # the longest allowed waits for its bytes
    assert parse(largest + bytes(MAX_HEADER_BYTES - 16)) == ProxyHeader(
        ("0.0.0.0", 0), MAX_HEADER_BYTES
    )


def test_balancers_are_addresses_or_networks_and_nobody_else() -> None:
    balancers = Balancers(["127.0.0.2", "10.1.0.0/16", "::1"])
    assert balancers
    assert balancers.listed(("127.0.0.2", 41000))
    assert balancers.listed(("::ffff:127.0.0.2", 41000, 0, 0))  # seen through a dual socket
    assert balancers.listed(("10.1.200.3", 1))
    assert balancers.listed(("::1", 1, 0, 0))
    assert not balancers.listed(("127.0.0.1", 41000))
    assert not balancers.listed(("10.2.0.1", 1))
    assert not balancers.listed("/run/tavern.sock")
    assert not balancers.listed(None)
    none = Balancers([])
    assert not none and not none.listed(("127.0.0.2", 41000))


def awaited(clock: FakeClock) -> tuple[AwaitedHeader, list[object]]:
    """A balancer's connection waiting for its header, and what it was told (the client it
    names, or why it failed)."""
    heard: list[object] = []

    def named(client: tuple[Any, ...]) -> None:
        heard.append(client)

    def failed(why: str) -> None:
        heard.append(why)

    return AwaitedHeader(("127.0.0.2", 5000), clock, named, failed), heard


def test_a_header_sent_in_pieces_names_the_client_and_keeps_what_follows() -> None:
    clock = FakeClock()
    header, heard = awaited(clock)
    assert header.feed(HAPROXY_V2[:10]) == b"" and heard == [] and header.waiting
    assert header.feed(HAPROXY_V2[10:] + BOT) == BOT
    assert heard == [("127.0.5.6", 33613)] and not header.waiting
    clock.advance(HEADER_TIMEOUT_S * 2)  # the deadline was cancelled
    assert heard == [("127.0.5.6", 33613)]


def test_a_header_late_or_bad_fails_once() -> None:
    clock = FakeClock()
    late, heard_late = awaited(clock)
    late.feed(HAPROXY_V2[:5])
    clock.advance(HEADER_TIMEOUT_S - 0.01)
    assert heard_late == []
    clock.advance(0.02)
    assert heard_late == [f"no header within {HEADER_TIMEOUT_S:g} s"] and not late.waiting
    bad, heard_bad = awaited(clock)
    assert bad.feed(BOT) == b""
    assert len(heard_bad) == 1 and isinstance(heard_bad[0], str)
    clock.advance(HEADER_TIMEOUT_S * 2)
    assert len(heard_bad) == 1  # told once
