"""Honest probes beside an attack of ``bench/hostile.py``: what a newcomer meets while it lasts
and after (a page load, a new bot's game, a registered bot's rated seek, ``/readyz``, the
records' API), each answer counted by what it was and by the attack's phase (``Run.saw``),
with the slowest answer of each, and whether it is what a user should get: the lobby, ``ready``,
``paired`` (or a seek waiting less than half of ``ANSWER_WITHIN_S`` when the run ends), 200, or
from the records' API a JSON 503 that says what is away.

Each kind of probe comes from honest loopback addresses of its own (127.0.0.x; the attackers
use 127.0.1.x and 127.0.2.x, the honest pairs 127.0.0.10 and up), on a new connection each
time, and goes where a user goes: through the balancer when there is one.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import aiohttp
import orjson

from bench.common import connect_from

if TYPE_CHECKING:
    from bench.hostile import Run

PROBE_EVERY_S = 1.0
READY_EVERY_S = 0.5
ANSWER_WITHIN_S = 10.0
SEEK_PAUSE_S = 2.0  # between two rounds of rated seeks (each bot's games left meanwhile end)
HTTP_SOURCE = "127.0.0.9"  # /readyz and the records' API
LOBBY_SHOWN = "lobby shown"
PAIRED = "paired"


def honest_source(first: int, index: int, count: int = 50) -> str:
    """The ``index``th probe's address, among ``count`` from 127.0.0.``first`` on."""
    return f"127.0.0.{first + index % count}"


@dataclass(frozen=True)
class LadderBot:
    """A registered bot the bench knows the key of, and the address it connects from."""

    name: str
    key: str
    source: str


async def opened(source: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    sock = await connect_from(source, port, timeout_s=ANSWER_WITHIN_S)
    return await asyncio.open_connection(sock=sock, limit=1 << 22)


async def answer(reader: asyncio.StreamReader) -> dict[str, object]:
    line = await reader.readline()
    if not line:
        return {"type": "closed with no answer"}
    found: dict[str, object] = orjson.loads(line)
    return found


def what_came(found: dict[str, object]) -> str:
    return str(found.get("message", found.get("type")))


def failure(error: BaseException) -> str:
    if isinstance(error, TimeoutError):
        return f"no answer in {ANSWER_WITHIN_S:g} s"
    return f"failed: {type(error).__name__}"


# --- pages ----------------------------------------------------------------------------------------
async def page_loads(run: Run) -> None:
    """A person opening the lobby every ``PROBE_EVERY_S``: the page (``GET /``), then its
    websocket's first lobby message, or what the arena answered instead (``Too many pages``)."""
    for index in itertools.count():
        started = time.perf_counter()
        outcome = await page_load(run.http_port, honest_source(100, index))
        run.saw("page load", outcome, time.perf_counter() - started, outcome == LOBBY_SHOWN)
        await asyncio.sleep(PROBE_EVERY_S)


async def page_load(port: int, source: str) -> str:
    base = f"http://127.0.0.1:{port}"
    connector = aiohttp.TCPConnector(local_addr=(source, 0), force_close=True)
    try:
        async with (
            asyncio.timeout(ANSWER_WITHIN_S),
            aiohttp.ClientSession(connector=connector) as session,
        ):
            async with session.get(f"{base}/") as response:
                await response.read()
                if response.status != 200:
                    return f"/ answered {response.status}"
            async with session.ws_connect(f"{base}/ws", max_msg_size=0) as ws:
                await ws.send_str('{"type":"lobby"}')
                async for message in ws:
                    if message.type is not aiohttp.WSMsgType.TEXT:
                        continue
                    found = orjson.loads(message.data)
                    if found.get("type") == "lobby":
                        return LOBBY_SHOWN
                    if found.get("type") == "error":
                        return what_came(found)
                return f"websocket closed ({ws.close_code})"
    except (TimeoutError, aiohttp.ClientError, OSError) as error:
        return failure(error)


# --- bots -----------------------------------------------------------------------------------------
async def new_games(run: Run) -> None:
    """A new bot's game every ``PROBE_EVERY_S``: connect, ``create-simulation`` and its
    ``ready`` (timed), then both seats joined by id and everything closed, so that the probe
    leaves nothing waiting to count against anyone."""
    for index in itertools.count():
        outcome, seconds = await new_game(run.tcp_port, honest_source(150, index))
        run.saw("new bot's create", outcome, seconds, outcome == "ready")
        await asyncio.sleep(PROBE_EVERY_S)


async def new_game(port: int, source: str) -> tuple[str, float]:
    started = time.perf_counter()
    writers: list[asyncio.StreamWriter] = []
    try:
        async with asyncio.timeout(ANSWER_WITHIN_S):
            reader, writer = await opened(source, port)
            writers.append(writer)
            writer.write(b'{"type":"create-simulation","game":"tavern"}\n')
            ready = await answer(reader)
            seconds = time.perf_counter() - started
            if ready.get("type") != "ready":
                return what_came(ready), seconds
            second = await opened(source, port)
            writers.append(second[1])
            simulation_id = ready["simulationId"]
            join = {"type": "join-simulation", "nick": "probe", "simulationId": simulation_id}
            for seat_writer in writers:
                seat_writer.write(orjson.dumps(join) + b"\n")
            await asyncio.gather(answer(reader), answer(second[0]))
            return "ready", seconds
    except (TimeoutError, OSError, ValueError) as error:
        return failure(error), time.perf_counter() - started
    finally:
        for seat_writer in writers:
            seat_writer.transport.abort()


async def rated_seeks(run: Run, bots: Sequence[LadderBot]) -> None:
    """Registered bots seeking rated Thud games, together, each again ``SEEK_PAUSE_S`` after
    its last seek was answered: each seek on a new connection, answered by its ``game-info``
    (paired: the connection is closed at once, the game left) or an error, or not paired
    within ``ANSWER_WITHIN_S``; a seek still waiting when the run ends is counted so."""
    await asyncio.gather(*(seeking(run, bot) for bot in bots))


async def seeking(run: Run, bot: LadderBot) -> None:
    what = f"rated seek by {bot.name} from {bot.source}"
    while True:
        started = time.perf_counter()
        try:
            outcome = await rated_seek(run.tcp_port, bot)
        except asyncio.CancelledError:
            waited = time.perf_counter() - started
            ended = "still waiting when the run ended"
            run.saw(what, ended, waited, waited < ANSWER_WITHIN_S / 2)
            raise
        run.saw(what, outcome, time.perf_counter() - started, outcome == PAIRED)
        await asyncio.sleep(SEEK_PAUSE_S)


async def rated_seek(port: int, bot: LadderBot) -> str:
    seek = {"type": "seek", "game": "thud", "bot": bot.name, "key": bot.key, "rated": True}
    writer: asyncio.StreamWriter | None = None
    try:
        async with asyncio.timeout(ANSWER_WITHIN_S):
            reader, writer = await opened(bot.source, port)
            writer.write(orjson.dumps(seek) + b"\n")
            found = await answer(reader)
        outcome = PAIRED if found.get("type") == "game-info" else what_came(found)
    except TimeoutError:
        outcome = f"not paired in {ANSWER_WITHIN_S:g} s"
    except (OSError, ValueError) as error:
        outcome = failure(error)
    finally:
        if writer is not None:
            writer.transport.abort()
    return outcome


# --- HTTP -----------------------------------------------------------------------------------------
def http_session() -> aiohttp.ClientSession:
    """A new connection for every request, as a balancer's or a monitor's check makes."""
    connector = aiohttp.TCPConnector(local_addr=(HTTP_SOURCE, 0), force_close=True)
    return aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=ANSWER_WITHIN_S)
    )


async def get(session: aiohttp.ClientSession, url: str) -> tuple[str, float]:
    """A GET's status, and whether its body is JSON (a bare 500 is not)."""
    started = time.perf_counter()
    try:
        async with session.get(url) as response:
            body = await response.read()
            status = str(response.status)
    except (TimeoutError, aiohttp.ClientError, OSError) as error:
        return failure(error), time.perf_counter() - started
    try:
        orjson.loads(body)
    except orjson.JSONDecodeError:
        status += ", not JSON"
    return status, time.perf_counter() - started


async def readiness(run: Run) -> None:
    """Every node's ``/readyz`` (directly: which nodes say they are ready), and through the
    balancer if there is one, every ``READY_EVERY_S``."""
    async with http_session() as session:
        while True:
            asking = {
                f"/readyz of {label}": f"http://127.0.0.1:{server.http_port}/readyz"
                for label, server in run.arena.servers.items()
                if label not in run.arena.stopped
            }
            if run.arena.balancer is not None:
                asking["/readyz through HAProxy"] = f"http://127.0.0.1:{run.http_port}/readyz"
            answers = await asyncio.gather(*(get(session, url) for url in asking.values()))
            for what, (outcome, seconds) in zip(asking, answers, strict=True):
                run.saw(what, outcome, seconds, outcome == "200")
            await asyncio.sleep(READY_EVERY_S)


async def records_api(run: Run, bot: str) -> None:
    """The records' API as a page asks it (through the balancer if there is one), every
    ``READY_EVERY_S``: the games, the ladder, a bot."""
    paths = ("/api/games?perPage=1", "/api/ladder?game=thud", f"/api/bots/{bot}")
    base = f"http://127.0.0.1:{run.http_port}"
    async with http_session() as session:
        while True:
            answers = await asyncio.gather(*(get(session, base + path) for path in paths))
            for path, (outcome, seconds) in zip(paths, answers, strict=True):
                good = outcome in ("200", "503")  # JSON: a 503 says what is away
                run.saw(f"GET {path.split('?')[0]}", outcome, seconds, good)
            await asyncio.sleep(READY_EVERY_S)
