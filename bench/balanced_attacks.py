"""Issue 30's attacks, as its attacker made them: three nodes on Redis with their records in
PostgreSQL, behind HAProxy running the checkout's shipped deploy/haproxy.cfg, honest pairs
playing through every attack (``bench/hostile.py issue30``; each by its name too).

Every attack here goes through the balancer's ports, as the honest players and probes do
(``bench/probes.py``: a page load, a new bot's game, registered bots' rated seeks, ``/readyz``,
the records' API); the attackers come from 127.0.1.x (``ATTACKER`` when the issue says "one
address"), in processes of their own (``bench/attackers.py``, ``bench/attackers_ladder.py``).
The registered bots the bench needs are put in the records, before the attack, by the
checkout's own code (``server.records.identities.add_bot``, as ``tavern bots add``).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import sys
import time
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import orjson
from redis.asyncio import Redis

from bench.attack import Act, Attack, Figures
from bench.common import addresses_for, percentile, sources, with_python_path
from bench.honest import HonestPlayers
from bench.probes import (
    LadderBot,
    answer,
    new_games,
    opened,
    page_loads,
    rated_seeks,
    readiness,
    records_api,
)
from server.cluster import keys

if TYPE_CHECKING:
    from bench.hostile import Run

ATTACKER = "127.0.1.1"  # the attacker's address, where the issue says "one address"
ROSTER_REFRESH_WAIT_S = 3.0  # for every node to read the registered bots again (every 1 s)
BEFORE_S = 3.0  # of the probes before the fault or attack an act makes itself
POSTGRES_DOWN_S = 10.0
REDIS_DOWN_S = 5.0
SIGTERM_AFTER_S = 1.0  # into the PostgreSQL outage
STOP_WAIT_S = 90.0  # for a node to exit after SIGTERM or SIGUSR1 before it is killed
SPAM_CONNECTIONS = 8  # the spammer's, each with as many challenges in flight as it may
ROSTER_WINDOW_S = 5.0  # the least of each window the roster's cost is measured over


def new_key() -> str:
    return "tvk_" + secrets.token_urlsafe(32)


HONEST_BOTS = tuple(
    LadderBot(f"Honest{number}", new_key(), f"127.0.0.{60 + number}") for number in range(1, 5)
)
SPAMMER = LadderBot("Spammer", new_key(), ATTACKER)
TARGET = LadderBot("Target", new_key(), "127.0.0.70")

# Run by the checkout under test, with its own code: the bots as ``tavern bots add`` keeps
# them, and ``fillers`` more sharing one hash (a hash costs some 50 ms; the rows are what count).
REGISTER = """
import sys, time
import orjson
from server.identity import RegisteredBot, hash_key, new_key
from server.records import Records
from server.records.identities import add_bot
url, named, fillers = sys.argv[1], orjson.loads(sys.argv[2]), int(sys.argv[3])
records = Records(url)
records.open_to_read()
db = records.backend.connect()
shared = hash_key(new_key())
db.execute("BEGIN")
for name, key in named.items():
    assert add_bot(db, RegisteredBot(name, hash_key(key))), name
for index in range(fillers):
    add_bot(db, RegisteredBot(f"roster{index:07d}", shared))
db.execute("COMMIT")
db.close()
"""


async def register(run: Run, bots: Sequence[LadderBot], fillers: int = 0) -> float:
    """``bots`` (and ``fillers`` more) in the arena's records; the seconds it took."""
    database = run.arena.database
    assert database is not None, "registered bots need the nodes' shared PostgreSQL"
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-c", REGISTER, database),
        orjson.dumps({bot.name: bot.key for bot in bots}).decode(),
        str(fillers),
        cwd=run.options.root,
        env=with_python_path(run.options.root),
        stderr=asyncio.subprocess.PIPE,
    )
    _, errors = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"registering bots failed: {errors.decode()[-2000:]}")
    return time.perf_counter() - started


async def register_ladder_bots(run: Run) -> Figures:
    """The prepare step of the attacks that need registered bots: the honest ones, the
    spammer and its target, known to every node."""
    bots = (*HONEST_BOTS, SPAMMER, TARGET)
    seconds = await register(run, bots)
    await asyncio.sleep(ROSTER_REFRESH_WAIT_S)
    return {"bots registered": len(bots), "seconds": round(seconds, 1)}


async def rest_of(run: Run, since: float) -> None:
    """Until ``--seconds`` after ``since``."""
    await asyncio.sleep(max(0.0, since + run.options.seconds - time.perf_counter()))


# --- item 7: per-address limits behind the balancer -----------------------------------------------
async def never_reading_pages(run: Run) -> Figures:
    """3,000 lobby pages that never read, from 30 addresses; a person loads the lobby every
    second meanwhile (``Too many pages`` must not hit them)."""
    run.background(page_loads(run))
    count = run.options.scaled(3000)
    return await run.attackers(
        "lobby-pages",
        count,
        port=run.http_port,
        pages=count,
        count_key="pages",
        sources=addresses_for(count, 100),
    )


async def creates_then_leave(run: Run) -> Figures:
    """300 creates from one address, then the creator leaves them waiting, empty; a new bot
    creates a game every second, during and after."""
    started = time.perf_counter()
    run.background(new_games(run))
    creates = run.options.scaled(300)
    figures = await run.attackers(
        "creates-then-leave", 1, port=run.tcp_port, creates=creates, sources=[ATTACKER]
    )
    await rest_of(run, started)
    return figures


async def wrong_keys(run: Run) -> Figures:
    """20 wrong keys for Honest1 from one address, while registered bots seek rated games
    round after round: three from addresses of their own, Honest1 from the attacker's own
    address with its right key."""
    started = time.perf_counter()
    first, *others = HONEST_BOTS
    seekers = [LadderBot(first.name, first.key, ATTACKER), *others]
    run.background(rated_seeks(run, seekers))
    run.phase = "before the wrong keys"
    await asyncio.sleep(BEFORE_S)
    run.phase = "attack"
    figures = await run.attackers(
        "wrong-keys", 1, port=run.tcp_port, bot=first.name, count=20, sources=[ATTACKER]
    )
    await rest_of(run, started)
    return figures


# --- item 8: idle half-sent HTTP requests ---------------------------------------------------------
async def half_sent_http(run: Run) -> Figures:
    """14,264 HTTP connections through HAProxy each holding a request head never finished; a
    new bot's game every second, and /readyz (each node's, and through HAProxy)."""
    run.background(new_games(run))
    run.background(readiness(run))
    count = run.options.scaled(14_264)
    return await run.attackers(
        "idle-http",
        count,
        port=run.http_port,
        connections=count,
        count_key="connections",
        sources=addresses_for(count, 1000),
    )


# --- items 4 to 6: the ladder ---------------------------------------------------------------------
async def challenge_spam(run: Run) -> Figures:
    """The registered Spammer challenging Target as fast as it can, on 8 connections; Target is
    present (a rated seek nobody else makes) and reads everything at once: it must stay
    connected, and get a bounded number of challenges."""
    target: Figures = {"challenges received": 0}
    presence = asyncio.create_task(present(run.tcp_port, TARGET, target))
    try:
        await asyncio.sleep(1.0)  # Target's seek is in: it is present
        figures = await run.attackers(
            "challenge-spam",
            1,
            port=run.tcp_port,
            bot=SPAMMER.name,
            key=SPAMMER.key,
            opponent=TARGET.name,
            connections=SPAM_CONNECTIONS,
            sources=[SPAMMER.source],
        )
    finally:
        presence.cancel()
        await asyncio.gather(presence, return_exceptions=True)
    target.setdefault("cut off by the arena", "no")
    figures.update({f"Target: {key}": value for key, value in target.items()})
    return figures


async def present(port: int, bot: LadderBot, seen: Figures) -> None:
    """``bot`` seeking a rated Thud game on one connection, reading every line as it comes:
    the challenges it is sent, what else, and whether (and how) the arena cut it off."""
    seek = {"type": "seek", "game": "thud", "bot": bot.name, "key": bot.key, "rated": True}
    reader, writer = await opened(bot.source, port)
    try:
        writer.write(orjson.dumps(seek) + b"\n")
        while True:
            found = await answer(reader)
            kind = str(found.get("type"))
            if kind == "challenge":
                seen["challenges received"] += 1
            elif kind == "closed with no answer":
                seen["cut off by the arena"] = "yes, closed"
                return
            else:
                what = f"{kind}: {found.get('message')}" if kind == "error" else kind
                seen[what] = seen.get(what, 0) + 1
    except ConnectionError as error:
        seen["cut off by the arena"] = f"yes, {type(error).__name__}"
    finally:
        writer.transport.abort()


async def seek_flood(run: Run) -> Figures:
    """3,000 guest seeks through HAProxy, from 30 addresses, each seeking again as soon as it
    is paired or refused (``--nicks one``: all under one nick, so that none may meet another
    and the pool stays full); /readyz of each node meanwhile (a node that misses its heartbeats
    shows there and in the honest games lost: ``Arena node lost``)."""
    run.background(readiness(run))
    count = run.options.scaled(3000)
    return await run.attackers(
        "seek-flood",
        count,
        ports=[run.tcp_port],
        game="thud",
        one_nick=run.options.nicks == "one",
        connections=count,
        count_key="connections",
        sources=addresses_for(count, 100),
    )


async def registration_flood(run: Run) -> Figures:
    """With ``"registration": "open"``: 100 addresses each registering new bots one after
    another as fast as they are answered."""
    run.background(readiness(run))
    return await run.attackers(
        "registration-flood",
        1,
        port=run.tcp_port,
        sources=sources("127.0.1", run.options.scaled(100)),
    )


async def roster_rows(run: Run) -> Figures:
    """What 200,000 registered bots cost every node: its CPU, memory and the honest replies
    over a window with the issue's few bots, then the 200,000 put in the records (by the
    checkout's own code) and, once every node has read them, over a window as long."""
    window = max(ROSTER_WINDOW_S, run.options.seconds / 2)
    empty = await measured_window(run, window)
    count = run.options.scaled(200_000)
    seconds = await register(run, (), fillers=count)
    await asyncio.sleep(ROSTER_REFRESH_WAIT_S)
    full = await measured_window(run, window)
    figures: Figures = {"bots put in the records": count, "seconds to put them": round(seconds)}
    for what in empty:
        figures[what] = f"{empty[what]} -> {full[what]}"
    return figures


async def measured_window(run: Run, seconds: float) -> Figures:
    """Each node's CPU (s/s) and RSS, and the honest replies' p50 and p99, over ``seconds``."""
    start = time.perf_counter()
    await asyncio.sleep(seconds)
    end = time.perf_counter()
    run.sampler.sample()
    latencies = run.honest.record.latencies_between(start, end)
    figures: Figures = {
        "honest reply p50 / p99 ms": (
            f"{percentile(latencies, 0.5) * 1000:.1f} / {percentile(latencies, 0.99) * 1000:.1f}"
        )
    }
    for label in run.arena.servers:
        at_end = run.sampler.at(label, end)
        rss = "-" if at_end is None else f"{at_end[0] / 2**20:,.0f}"
        figures[f"{label} CPU s/s"] = round(run.sampler.cpu(label, start, end) / (end - start), 2)
        figures[f"{label} RSS MiB"] = rss
    return figures


# --- item 10: wrong-typed values in Redis ---------------------------------------------------------
def wrong_type(key: str) -> Act:
    """An act that puts a value of the wrong type in one of the arena's Redis keys
    (``nodes``: ``tavern:nodes`` a list; ``held``: Honest1's ``tavern:held:honest1`` a string;
    ``seeks``: ``tavern:seeks:{thud}`` a string) for ``--seconds``, then takes it away (what a
    node rewrote meanwhile is left), while registered bots seek rated games and every node's
    /readyz is asked."""

    async def act(run: Run) -> Figures:
        assert run.arena.redis is not None
        run.background(readiness(run))
        run.background(rated_seeks(run, HONEST_BOTS))
        run.phase = "before the bad value"
        await asyncio.sleep(BEFORE_S)
        run.phase = "attack"
        async with (
            Redis.from_url(run.arena.redis.url) as redis,
            wrong_value(redis, key) as (name, right),
        ):
            await asyncio.sleep(run.options.seconds)
            found = await type_of(redis, name)
        run.sampler.sample()
        alive = [label for label in run.arena.servers if label not in run.sampler.exits]
        return {
            "key": name,
            f"its type at the end (right: {right})": found,
            "nodes running at the end": f"{len(alive)} of {len(run.arena.servers)}",
        }

    return act


async def type_of(redis: Redis, name: str) -> str:
    found = await redis.type(name)
    return found.decode() if isinstance(found, bytes) else str(found)


@contextlib.asynccontextmanager
async def wrong_value(redis: Redis, which: str) -> AsyncIterator[tuple[str, str]]:
    """The key ``which`` names given a value of the wrong type (its name and its right type
    are yielded); afterwards, still of the wrong type, it is deleted (and ``tavern:nodes``
    given back the node ids it held)."""
    members: set[bytes | str] = set()
    if which == "nodes":
        name, right = "tavern:nodes", "set"
        members = await redis.smembers(name)
        await redis.delete(name)
        await redis.rpush(name, "not-a-node-id")
    elif which == "held":
        name, right = f"tavern:held:{HONEST_BOTS[0].name.casefold()}", "hash"
        await redis.delete(name)
        await redis.set(name, "not a hash")
    else:
        name, right = keys.seeks_key("thud"), "zset"
        await redis.delete(name)
        await redis.set(name, "not a sorted set")
    try:
        yield name, right
    finally:
        if await type_of(redis, name) != right:
            await redis.delete(name)
            if which == "nodes" and members:
                await redis.sadd(name, *members)


# --- item 11: PostgreSQL and Redis stopped --------------------------------------------------------
async def postgres_outage(run: Run) -> Figures:
    """PostgreSQL stopped for 10 s: the records' API and /readyz asked throughout (through
    HAProxy, and each node's), a new bot's game every second."""
    arena = run.arena
    assert arena.postgres is not None
    run.phase = "before the outage"
    run.background(readiness(run))
    run.background(records_api(run, HONEST_BOTS[0].name))
    run.background(new_games(run))
    await asyncio.sleep(BEFORE_S)
    run.phase = "outage"
    down = time.perf_counter()
    await asyncio.to_thread(arena.postgres.stop)
    await asyncio.sleep(POSTGRES_DOWN_S)
    await asyncio.to_thread(arena.postgres.start)
    up = time.perf_counter()
    run.phase = "back"
    await rest_of(run, up)
    return {"seconds without PostgreSQL": round(up - down, 1)}


async def postgres_stop(run: Run) -> Figures:
    """A node stopped (SIGTERM) while PostgreSQL is down, timed: a fourth node, not behind
    HAProxy, one pair of bots of its own playing on it (not counted with the honest games);
    PostgreSQL is stopped, the node signalled a second later, and PostgreSQL started again
    only once the node has exited (or been killed, ``STOP_WAIT_S`` after the signal), so that
    what is timed is the stop's own bound, whatever the outage's length."""
    arena = run.arena
    assert arena.postgres is not None
    label = "extra node"
    extra = await arena.start(label)
    if extra is None:
        return {"the extra node": "did not start"}
    own = HonestPlayers("tavern", [extra.tcp_port], 1, run.options.think_s)
    own.start()
    run.phase = "before the outage"
    run.background(readiness(run))
    await asyncio.sleep(BEFORE_S)
    run.phase = "outage"
    down = time.perf_counter()
    await asyncio.to_thread(arena.postgres.stop)
    await asyncio.sleep(SIGTERM_AFTER_S)
    stopped = await stop_node(run, label, signal.SIGTERM)
    await asyncio.to_thread(arena.postgres.start)
    up = time.perf_counter()
    run.phase = "back"
    await own.stop()
    ends = own.record.outcomes(down, time.perf_counter())
    await rest_of(run, up)
    return {
        f"SIGTERM, {SIGTERM_AFTER_S:g} s into the outage": stopped,
        "seconds without PostgreSQL": round(up - down, 1),
        "its own pair's games finished / lost": f"{ends['finished']} / {ends['lost']}",
    }


async def stop_node(run: Run, label: str, how: signal.Signals) -> str:
    """Signal a node to stop (SIGTERM) or drain (SIGUSR1) and wait, at most ``STOP_WAIT_S``
    (then it is killed): how long it took. Its exit does not count against the recovery."""
    process = run.arena.servers[label].process
    run.arena.stopped.add(label)
    started = time.perf_counter()
    process.send_signal(how)
    try:
        async with asyncio.timeout(STOP_WAIT_S):
            code = await process.wait()
    except TimeoutError:
        process.kill()
        await process.wait()
        return f"still running {STOP_WAIT_S:g} s after {how.name}: killed"
    return f"exited {time.perf_counter() - started:.1f} s after {how.name}, code {code}"


async def redis_outage(run: Run) -> Figures:
    """Redis stopped for 5 s (and started again, empty, on its port): a new bot's game every
    second through HAProxy, and /readyz, before, during and after."""
    arena = run.arena
    assert arena.redis is not None
    run.background(readiness(run))
    run.background(new_games(run))
    run.phase = "before the outage"
    await asyncio.sleep(BEFORE_S)
    run.phase = "outage"
    down = time.perf_counter()
    await asyncio.to_thread(arena.redis.stop)
    await asyncio.sleep(REDIS_DOWN_S)
    await asyncio.to_thread(arena.redis.start)
    up = time.perf_counter()
    run.phase = "back"
    await rest_of(run, up)
    return {"seconds without Redis": round(up - down, 1)}


# --- item 12: a drain held by an empty simulation -------------------------------------------------
async def empty_drain(run: Run) -> Figures:
    """A simulation created on the third node and left by its creator, waiting, empty; then that
    node drained (SIGUSR1) while the honest games go on, and timed (killed after
    ``STOP_WAIT_S``); then started again on its ports, back behind HAProxy."""
    arena = run.arena
    label = list(arena.servers)[-1]
    node = arena.servers[label]
    reader, writer = await opened(ATTACKER, node.tcp_port)
    writer.write(b'{"type":"create-simulation","game":"tavern"}\n')
    left = await answer(reader)
    writer.transport.abort()
    run.phase = "draining"
    drained = await stop_node(run, label, signal.SIGUSR1)
    run.phase = "after the drain"
    started = time.perf_counter()
    again = await arena.start(f"{label}, started again", (node.tcp_port, node.http_port))
    await rest_of(run, started)
    return {
        "the simulation left waiting": str(left.get("type", "")),
        f"{label} drained": drained,
        "started again": "yes" if again is not None else "no",
    }


def balanced(name: str, what: str, act: Act, **more: Any) -> Attack:
    """An attack of issue 30's: always behind the balancer."""
    return Attack(name, what, act, balancer=True, **more)


ISSUE_30 = (
    balanced(
        "never-reading-pages",
        "3,000 lobby pages that never read, people loading the lobby (issue 30, item 7)",
        never_reading_pages,
    ),
    balanced(
        "creates-then-leave",
        "300 creates from one address, then it leaves; new bots create games (issue 30, item 7)",
        creates_then_leave,
    ),
    balanced(
        "wrong-keys",
        "20 wrong keys from one address; registered bots seek, one from it (issue 30, items 7, 9)",
        wrong_keys,
        prepare=register_ladder_bots,
    ),
    balanced(
        "half-sent-http",
        "14,264 HTTP requests never finished through HAProxy; new bots, /readyz (issue 30, item 8)",
        half_sent_http,
    ),
    balanced(
        "challenge-spam",
        "one bot challenging another as fast as it can (issue 30, item 4)",
        challenge_spam,
        prepare=register_ladder_bots,
    ),
    balanced("seek-flood", "3,000 guest seeks through HAProxy (issue 30, item 5)", seek_flood),
    balanced(
        "registration-flood",
        'registration "open", 100 addresses registering as fast as they can (item 6)',
        registration_flood,
        settings={"registration": "open"},
    ),
    balanced(
        "roster-rows",
        "200,000 registered bots: each node's CPU, memory, the replies (issue 30, item 6)",
        roster_rows,
    ),
    balanced(
        "wrong-type-nodes",
        "tavern:nodes a list in Redis (issue 30, item 10)",
        wrong_type("nodes"),
        prepare=register_ladder_bots,
    ),
    balanced(
        "wrong-type-held",
        "tavern:held:NAME a string in Redis, NAME seeking (issue 30, item 10)",
        wrong_type("held"),
        prepare=register_ladder_bots,
    ),
    balanced(
        "wrong-type-seeks",
        "tavern:seeks:{thud} a string in Redis, registered bots seeking (issue 30, item 10)",
        wrong_type("seeks"),
        prepare=register_ladder_bots,
    ),
    balanced(
        "postgres-outage",
        "PostgreSQL stopped for 10 s; the records' API and /readyz asked (issue 30, item 11)",
        postgres_outage,
        prepare=register_ladder_bots,
    ),
    balanced(
        "postgres-stop",
        "a node stopped (SIGTERM) while PostgreSQL is down, timed (issue 30, item 11)",
        postgres_stop,
    ),
    balanced("redis-outage", "Redis stopped for 5 s (issue 30, item 11)", redis_outage),
    balanced(
        "empty-drain",
        "a node drained holding only a simulation its creator left (issue 30, item 12)",
        empty_drain,
    ),
)
