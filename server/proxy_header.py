"""The PROXY protocol's header, sans I/O: the client's own address, as a load balancer tells it.

Behind a balancer (HAProxy's ``send-proxy-v2``) every connection comes from the balancer's
address, so every per-address cap would count all clients together. The balancer begins each
connection with a header naming the client; this module reads it (version 2, binary, and
version 1, a text line). Only connections from the addresses listed as balancers (``Balancers``,
config.json's ``balancers``) are read for one, and each of those must begin with one: from
anyone else a header is no more than the garbage it looks like, so that nobody can name an
address of their choice.

A ``LOCAL`` header (a balancer's own health check), an ``UNSPEC`` or ``UNKNOWN`` family, and
a Unix socket's address name no client: the connection then counts as the balancer's own.
``AwaitedHeader`` is the wait for it, on an injected clock, that the bots' port and the HTTP
ports share.
Specification: https://www.haproxy.org/download/2.6/doc/proxy-protocol.txt
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from server.clock import Clock

V1_PREFIX = b"PROXY "
V1_MAX_BYTES = 107  # the specification's longest line, CRLF included
V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"
V2_FIXED_BYTES = 16  # the signature, the version and command, the family, the length
# The longest header taken: the addresses (216 bytes for Unix sockets) and TLVs a balancer may
# add (a unique id, an authority, TLS details). A balancer is trusted, but not without bound.
MAX_HEADER_BYTES = 4096
HEADER_TIMEOUT_S = 3.0  # a balancer sends its header as it connects: it is not waited for long

_V2_LOCAL, _V2_PROXY = 0x20, 0x21
_V2_STREAM = 0x1
_V2_ADDRESS_BYTES = {0x1: 12, 0x2: 36, 0x3: 216}  # by address family: IPv4, IPv6, Unix
_V1_FAMILIES = {b"TCP4": 4, b"TCP6": 6}
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_PORT_DIGITS = frozenset(b"0123456789")


class BadHeader(ValueError):
    """What a balancer's connection began with is not a PROXY header."""


@dataclass(frozen=True, slots=True)
class ProxyHeader:
    """A whole header: the client it names (None: the balancer's own connection), and how many
    bytes it took; what follows is the client's."""

    client: tuple[str, int] | None
    length: int


def parse(data: bytes) -> ProxyHeader | None:
    """The header ``data`` begins with, or None if more bytes are needed to tell; raises
    ``BadHeader`` as soon as the bytes cannot begin one."""
    head = data[: len(V2_SIGNATURE)]
    if V2_SIGNATURE.startswith(head):
        return _parse_v2(data) if len(data) >= V2_FIXED_BYTES else None
    if V1_PREFIX.startswith(data[: len(V1_PREFIX)]):
        return _parse_v1(data)
    raise BadHeader("it does not begin with a PROXY header")


def _parse_v2(data: bytes) -> ProxyHeader | None:
    command, family, length = struct.unpack_from("!BBH", data, len(V2_SIGNATURE))
    total = V2_FIXED_BYTES + length
    if command not in (_V2_LOCAL, _V2_PROXY):
        raise BadHeader(f"version 2 header with version and command 0x{command:02x}")
    if total > MAX_HEADER_BYTES:
        raise BadHeader(f"version 2 header of {total} bytes (at most {MAX_HEADER_BYTES})")
    # LOCAL (the balancer's own connection) and UNSPEC name no client: their addresses, if
    # any, are skipped unread.
    address_family, transport = family >> 4, family & 0xF
    named = command == _V2_PROXY and family != 0x00
    needed = _V2_ADDRESS_BYTES.get(address_family, 0)
    if named and (not needed or transport != _V2_STREAM):
        raise BadHeader(f"version 2 header of family 0x{family:02x}, not a stream's")
    if named and length < needed:
        raise BadHeader(f"version 2 header of {length} address bytes, {needed} needed")
    if len(data) < total:
        return None
    body = data[V2_FIXED_BYTES : V2_FIXED_BYTES + needed]
    source: IPAddress
    if not named or address_family == 0x3:  # nor does a Unix socket's path
        return ProxyHeader(None, total)
    if address_family == 0x1:
        source = ipaddress.IPv4Address(body[0:4])
        (port,) = struct.unpack_from("!H", body, 8)
    else:
        source = ipaddress.IPv6Address(body[0:16])
        (port,) = struct.unpack_from("!H", body, 32)
    return ProxyHeader((str(plain(source)), port), total)


def _parse_v1(data: bytes) -> ProxyHeader | None:
    end = data.find(b"\r\n", 0, V1_MAX_BYTES)
    if end < 0:
        if len(data) >= V1_MAX_BYTES or b"\n" in data:
            raise BadHeader(f"version 1 header with no CRLF within {V1_MAX_BYTES} bytes")
        return None
    fields = data[len(V1_PREFIX) : end].split(b" ")
    if fields[0] == b"UNKNOWN":  # the rest of the line is to be ignored
        return ProxyHeader(None, end + 2)
    version = _V1_FAMILIES.get(fields[0])
    if version is None or len(fields) != 5:
        raise BadHeader("version 1 header not of the form PROXY TCP4|TCP6 SRC DST SPORT DPORT")
    try:
        source = ipaddress.ip_address(fields[1].decode("ascii"))
        destination = ipaddress.ip_address(fields[2].decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise BadHeader("version 1 header with an address that is not one") from None
    if source.version != version or destination.version != version:
        raise BadHeader(f"version 1 header with an address not of {fields[0].decode()}")
    ports = [_v1_port(field) for field in fields[3:]]
    return ProxyHeader((str(plain(source)), ports[0]), end + 2)


def _v1_port(field: bytes) -> int:
    if not field or not set(field) <= _PORT_DIGITS or (field[0] == ord("0") and len(field) > 1):
        raise BadHeader(f"version 1 header with port {field[:8]!r}")
    port = int(field)
    if port > 65535:
        raise BadHeader(f"version 1 header with port {port}")
    return port


def plain(address: IPAddress) -> IPAddress:
    """An address as the caps count it: an IPv4 client seen through IPv6 is the IPv4 one."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class Balancers:
    """The addresses (or networks) whose connections begin with a PROXY header."""

    def __init__(self, networks: Iterable[str]) -> None:
        self._networks = [ipaddress.ip_network(network, strict=False) for network in networks]

    def __bool__(self) -> bool:
        return bool(self._networks)

    def listed(self, peer: object) -> bool:
        """Whether ``peer`` (a socket's peer name) is a balancer's."""
        if not self._networks or not isinstance(peer, tuple) or not peer:
            return False
        try:
            address = plain(ipaddress.ip_address(peer[0]))
        except ValueError:  # not an IP address (a Unix socket's peer)
            return False
        return any(address in network for network in self._networks)


class HeaderReader:
    """A balancer's connection's first bytes, until its header is whole."""

    def __init__(self, balancer: tuple[Any, ...]) -> None:
        self.balancer = balancer  # the connection's peer name
        self._data = b""

    def feed(self, data: bytes) -> tuple[tuple[Any, ...], bytes] | None:
        """Once the header is whole, the client's peer name (the balancer's own, if the header
        names no client) and the bytes after it; until then None. Raises ``BadHeader``."""
        self._data += data
        header = parse(self._data)
        if header is None:
            return None
        return header.client or self.balancer, self._data[header.length :]


class AwaitedHeader:
    """A listed balancer's connection until its header names the client, as both the bots' port
    and the HTTP ports wait for it: ``named`` is called with the client's peer name once the
    header is whole, ``failed`` with why if it is bad or does not come within
    ``HEADER_TIMEOUT_S`` (the connection is then to be closed: a balancer that sends none is
    set up wrong, and its clients' addresses are unknown)."""

    def __init__(
        self,
        balancer: tuple[Any, ...],
        clock: Clock,
        named: Callable[[tuple[Any, ...]], None],
        failed: Callable[[str], None],
    ) -> None:
        self.reader = HeaderReader(balancer)
        self.waiting = True  # until the header is whole, bad or late
        self._named = named
        self._failed = failed
        self._deadline = clock.call_later(
            HEADER_TIMEOUT_S, lambda: self._fail(f"no header within {HEADER_TIMEOUT_S:g} s")
        )

    def feed(self, data: bytes) -> bytes:
        """What the client sent after the header: nothing until the header is whole."""
        try:
            whole = self.reader.feed(data)
        except BadHeader as error:
            self._fail(str(error))
            return b""
        if whole is None:
            return b""
        self.stop()
        client, rest = whole
        self._named(client)
        return rest

    def stop(self) -> None:
        """No more waiting (the header came, or the connection is gone)."""
        self.waiting = False
        self._deadline.cancel()

    def _fail(self, why: str) -> None:
        if self.waiting:
            self.stop()
            self._failed(why)
