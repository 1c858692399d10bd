"""The attackers of issue 30 (``bench/hostile.py``'s scenarios behind the balancer) that speak
the bots' protocol: creates left behind, wrong keys, challenge spam, a seek flood, a
registration flood. Each is run by ``bench/attackers.py KIND SPEC`` in a process of its own,
as the others are, and returns its figures; every connection goes to 127.0.0.1 only, from the
loopback addresses it is given (``spec["sources"]``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from typing import Any

import orjson

from bench.common import connect_from

Figures = dict[str, Any]
CONNECT_TIMEOUT_S = 10.0
ANSWER_TIMEOUT_S = 10.0
RETRY_S = 1.0
PER_CONNECTION = 100  # creates one connection may make (the default maxSimulationsPerConnection)
SPAM_IN_FLIGHT = 32  # challenges the challenger has sent and not yet seen answered
WRONG_KEY = "tvk_" + "x" * 43  # shaped as a key, and no bot's


async def opened(source: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    sock = await connect_from(source, port, timeout_s=CONNECT_TIMEOUT_S)
    return await asyncio.open_connection(sock=sock, limit=1 << 22)


def kind_of(line: bytes) -> str:
    """An answer as counted: its type, or an error's message."""
    if not line:
        return "closed by the server"
    found = orjson.loads(line)
    return f"refused: {found.get('message')}" if found.get("type") == "error" else found["type"]


def deadline_of(spec: dict[str, Any]) -> float:
    return time.monotonic() + float(spec["seconds"])


async def creates_then_leave(spec: dict[str, Any]) -> Figures:
    """``creates`` simulations created from one address (``PER_CONNECTION`` a connection,
    the connections at once), each answer read, then every connection closed at once: the
    creator leaves its simulations waiting, empty."""
    counts: Counter[str] = Counter()
    create = b'{"type":"create-simulation","game":"tavern"}\n'
    source = spec["sources"][0]

    async def one(count: int) -> None:
        reader, writer = await opened(source, spec["port"])
        writer.write(create * count)
        try:
            async with asyncio.timeout(ANSWER_TIMEOUT_S):
                for _ in range(count):
                    line = await reader.readline()
                    counts["created" if kind_of(line) == "ready" else kind_of(line)] += 1
                    if not line:
                        return
        except TimeoutError:
            counts["unanswered"] += 1
        finally:
            writer.transport.abort()

    total = spec["creates"]
    shares = [min(PER_CONNECTION, total - start) for start in range(0, total, PER_CONNECTION)]
    await asyncio.gather(*(one(share) for share in shares))
    figures: Figures = dict(counts)
    figures["connections, all closed"] = len(shares)
    return figures


async def wrong_keys(spec: dict[str, Any]) -> Figures:
    """``count`` rated seeks naming the registered bot ``bot`` with a wrong key, one after
    another on one connection from one address, each answer awaited."""
    counts: Counter[str] = Counter()
    seek = {"type": "seek", "game": "thud", "bot": spec["bot"], "key": WRONG_KEY, "rated": True}
    started = time.monotonic()
    reader, writer = await opened(spec["sources"][0], spec["port"])
    try:
        for _ in range(spec["count"]):
            writer.write(orjson.dumps(seek) + b"\n")
            async with asyncio.timeout(ANSWER_TIMEOUT_S):
                line = await reader.readline()
            counts[kind_of(line)] += 1
            if not line:
                break
    except TimeoutError:
        counts["unanswered"] += 1
    finally:
        writer.transport.abort()
    figures: Figures = dict(counts)
    figures["seconds to send them"] = round(time.monotonic() - started, 1)
    return figures


async def challenge_spam(spec: dict[str, Any]) -> Figures:
    """The registered bot ``bot`` challenging ``opponent`` as fast as the arena takes the
    challenges, on ``connections`` connections at once, for ``seconds``: on each,
    ``SPAM_IN_FLIGHT`` unanswered at any time (a connection whose messages wait for a key's
    check may have 64), each answer (``challenge-sent``, or an error) letting the next one go;
    every line read and counted."""
    counts: Counter[str] = Counter()
    challenge = {
        "type": "challenge",
        "opponent": spec["opponent"],
        "game": "thud",
        "rated": False,
        "bot": spec["bot"],
        "key": spec["key"],
    }
    line = orjson.dumps(challenge) + b"\n"
    deadline = deadline_of(spec)

    async def spamming() -> None:
        reader, writer = await opened(spec["sources"][0], spec["port"])
        in_flight = asyncio.Semaphore(SPAM_IN_FLIGHT)

        async def read() -> None:
            while answer := await reader.readline():
                kind = kind_of(answer)
                counts[kind] += 1
                if kind != "challenge-declined":  # a later answer, to an earlier challenge
                    in_flight.release()
            counts["closed by the server"] += 1

        reading = asyncio.create_task(read())
        try:
            while time.monotonic() < deadline and not reading.done():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                        await in_flight.acquire()
                        writer.write(line)
                        counts["challenges sent"] += 1
            await asyncio.wait([reading], timeout=1.0)
        finally:
            reading.cancel()
            writer.transport.abort()

    started = time.monotonic()
    await asyncio.gather(*(spamming() for _ in range(spec["connections"])))
    figures: Figures = dict(counts)
    figures["sent a second"] = round(counts["challenges sent"] / (time.monotonic() - started))
    return figures


async def seek_flood(spec: dict[str, Any]) -> Figures:
    """``connections`` guest seeks (``{"type":"seek","game":GAME,"nick":...}``), one a
    connection, spread over the ``ports`` and the ``sources``, all sent at once, under one nick
    (``one_nick``) or each its own: a connection the pool pairs (``game-info``) or the server
    refuses or closes is closed, and seeks again from a new connection until ``seconds`` are
    over, so that as many seeks wait as the arena takes."""
    counts: Counter[str] = Counter()
    deadline = deadline_of(spec)
    numbers = itertools.count()
    ports, sources = itertools.cycle(spec["ports"]), itertools.cycle(spec["sources"])

    async def seeking(source: str, port: int) -> None:
        while time.monotonic() < deadline:
            try:
                reader, writer = await opened(source, port)
            except (OSError, TimeoutError) as error:
                counts[f"{type(error).__name__} (tried again)"] += 1
                await asyncio.sleep(RETRY_S)
                continue
            nick = "flood" if spec["one_nick"] else f"flood {next(numbers)}"
            writer.write(orjson.dumps({"type": "seek", "game": spec["game"], "nick": nick}) + b"\n")
            counts["seeks sent"] += 1
            try:
                async with asyncio.timeout(max(0.1, deadline - time.monotonic())):
                    line = await reader.readline()
            except TimeoutError:
                counts["waiting at the end"] += 1
                writer.transport.abort()
                return
            except OSError:
                line = b""
            writer.transport.abort()
            found = kind_of(line)
            counts["paired" if found == "game-info" else found] += 1
            if found != "game-info":
                await asyncio.sleep(RETRY_S)

    await asyncio.gather(*(seeking(next(sources), next(ports)) for _ in range(spec["connections"])))
    return dict(counts)


async def registration_flood(spec: dict[str, Any]) -> Figures:
    """From each of the ``sources``, one connection registering new bots (``register``) one
    after another as fast as they are answered, for ``seconds``; a connection the server
    closes is opened again a second later."""
    counts: Counter[str] = Counter()
    deadline = deadline_of(spec)
    names = (f"flood{os.getpid()}x{number}" for number in itertools.count())

    async def from_source(source: str) -> None:
        while time.monotonic() < deadline:
            try:
                reader, writer = await opened(source, spec["port"])
            except (OSError, TimeoutError) as error:
                counts[f"{type(error).__name__} (tried again)"] += 1
                await asyncio.sleep(RETRY_S)
                continue
            try:
                async with asyncio.timeout(max(0.1, deadline - time.monotonic())):
                    while True:
                        writer.write(orjson.dumps({"type": "register", "bot": next(names)}) + b"\n")
                        line = await reader.readline()
                        counts[kind_of(line)] += 1
                        if not line:
                            break
            except TimeoutError:
                return
            except OSError as error:
                counts[f"{type(error).__name__}"] += 1
            finally:
                writer.transport.abort()
            await asyncio.sleep(RETRY_S)

    started = time.monotonic()
    await asyncio.gather(*(from_source(source) for source in spec["sources"]))
    figures: Figures = dict(counts)
    figures["registered a second"] = round(counts["registered"] / (time.monotonic() - started), 1)
    return figures


ATTACKERS: dict[str, Callable[[dict[str, Any]], Coroutine[Any, Any, Figures]]] = {
    "creates-then-leave": creates_then_leave,
    "wrong-keys": wrong_keys,
    "challenge-spam": challenge_spam,
    "seek-flood": seek_flood,
    "registration-flood": registration_flood,
}
