"""Bot identities (issue 22, item 1): `tavern bots` keeps names and salted hashes of their keys;
a registered name is played only with its key; wrong keys are refused and paced per address;
a key is never logged, recorded or echoed.

The check is tested in memory with a hand-wound clock; the command as a user types it; and a
real arena on its records with bots on real sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from server import identity
from server.arena import Arena
from server.commands import Command, read
from server.errors import BotError, Rejected
from server.games.base import JsonObject
from server.identity import (
    KEY_BURST,
    KEY_REFILL_S,
    MAX_WAITING_CHECKS,
    AddressPacer,
    RegisteredBot,
    Roster,
    hash_key,
    key_matches,
    new_key,
)
from server.ladder import Seeker, pair_seekers
from server.records import recording
from server.records.identities import roster_kept
from server.session import Session, carry_out
from server.tcp import TcpServer
from tests.clock import FakeClock
from tests.conftest import RawClient, test_config
from tests.test_command_line import tavern
from tests.test_match import Table, table
from tests.test_session import client

ADDRESS = "127.0.0.1"


# --- in memory -----------------------------------------------------------------------------------
def test_a_key_is_kept_as_a_salted_scrypt_hash_with_its_parameters() -> None:
    key = new_key()
    stored, again = hash_key(key), hash_key(key)
    assert stored != again  # a salt of its own each time
    assert stored.startswith("scrypt$16384$8$1$") and key not in stored
    assert key_matches(key, stored) and key_matches(key, again)
    assert not key_matches(key[:-1] + ("A" if key[-1] != "A" else "B"), stored)
    assert not key_matches(key, "")  # a revoked key matches nothing


def roster_with(clock: FakeClock, *names: str) -> tuple[Roster, dict[str, str]]:
    roster = Roster(clock)
    keys = {name: new_key() for name in names}
    roster.update([RegisteredBot(name, hash_key(key)) for name, key in keys.items()])
    return roster, keys


async def refusal(roster: Roster, fields: JsonObject, address: str = ADDRESS) -> Rejected:
    with pytest.raises(Rejected) as refused:
        await roster.identify(fields, address)
    return refused.value


async def test_a_registered_name_is_played_only_with_its_key() -> None:
    roster, keys = roster_with(FakeClock(), "Grimli")
    assert await roster.identify({"bot": "Grimli", "key": keys["Grimli"]}, ADDRESS) == "Grimli"
    assert await roster.identify({"nick": "someone"}, ADDRESS) is None  # a free nick
    wrong = await refusal(roster, {"bot": "Grimli", "key": new_key()})  # a guessed key
    missing = await refusal(roster, {"bot": "Grimli"})
    unknown = await refusal(roster, {"bot": "Nobody", "key": keys["Grimli"]})
    assert wrong.message == missing.message == unknown.message == BotError.INVALID_BOT_KEY
    for case in ({"nick": "Grimli"}, {"nick": "grimLI"}):  # a guest taking the name, any case
        assert (await refusal(roster, case)).message == BotError.NAME_REGISTERED
    for rejected in (wrong, missing, unknown):
        assert keys["Grimli"] not in str(rejected)
    roster.close()


# Issue 30, item 3: a guest was refused Thorin and thorin but accepted as each of these.
LOOK_ALIKES = (
    " Thorin",
    "Thorin ",
    "Thorin\u200b",  # a zero-width space
    "Th\u03bfrin",  # a Greek omicron
    "\uff34horin",  # a full-width T
    "\u1e6ahorin",  # a T with a dot above
    "Thorin\t",
    "Thor\u0131n",  # a dotless i
)
UNLIKE = ("Thorin II", "Thorinson", "Thrain", "Thor", "Dwarf 1", "Ann", "Ѳорин")


async def test_look_alikes_of_a_registered_name_are_neither_nicks_nor_registered() -> None:
    roster, _ = roster_with(FakeClock(), "Thorin", "Bob", "Grimli")
    roster.registration_open = True
    for nick in LOOK_ALIKES:
        for kind in ("join-simulation", "create-simulation", "seek"):
            refused = await refusal(roster, {"type": kind, "game": "thud", "nick": nick})
            assert (refused.message, refused.reason) in (
                (
                    BotError.NAME_REGISTERED,
                    f"{nick!r} looks like the registered bot 'Thorin': give its bot and key, "
                    "or another nick",
                ),
                (
                    BotError.INVALID_JOIN,
                    "a nick may not hold control or invisible characters "
                    f"(U+{ord(nick[-1]):04X} at {len(nick)})",
                ),
            ), nick
        with pytest.raises(Rejected) as refused_name:
            await roster.register(nick, f"10.0.0.{len(nick)}")
        assert refused_name.value.message in (BotError.BOT_NAME_TAKEN, BotError.INVALID_BOT_NAME)
    for nick in UNLIKE:
        assert await roster.identify({"type": "seek", "nick": nick}, ADDRESS) is None
    for name in ("B0b", "Grirnli", "bob"):  # look-alikes within a registered name's letters
        with pytest.raises(Rejected) as taken:
            await roster.register(name, ADDRESS)
        assert taken.value.message == BotError.BOT_NAME_TAKEN, name
    assert (await roster.register("Thorin2", ADDRESS))[0] == "Thorin2"
    roster.close()


def test_a_bot_never_meets_a_look_alike_of_itself_in_the_pool() -> None:
    seekers = [Seeker(str(n), name, "thud", False, 25.0, 0.0) for n, name in enumerate(LOOK_ALIKES)]
    assert not pair_seekers([Seeker("x", "Thorin", "thud", False, 25.0, 0.0), *seekers], 1.0)
    assert pair_seekers([Seeker("y", "Thrain", "thud", False, 25.0, 0.0), *seekers[:1]], 1.0)


async def test_registrations_are_held_to_the_arena_s_budget() -> None:
    """Issue 30, item 6: past ``registrationsPerHour`` the arena refuses registrations, from
    every address, and says when to try again; the bucket fills again with time."""
    clock = FakeClock()
    roster = Roster(clock, registration_open=True, registrations_per_hour=3)
    for number in range(3):
        await roster.register(f"Bot{number}", f"10.0.0.{number}")
    with pytest.raises(Rejected) as refused:
        await roster.register("Late", "10.0.1.1")
    assert refused.value.message == BotError.REGISTRATION_CLOSED
    assert refused.value.reason == (
        "the arena takes at most 3 registrations an hour: try again in 1200 s"
    )
    clock.advance(1199)
    with pytest.raises(Rejected):
        await roster.register("Late", "10.0.1.2")
    clock.advance(1)
    assert await roster.register("Late", "10.0.1.3")
    roster.close()


async def test_a_right_key_after_wrong_ones_waits_for_a_token_and_is_let_in() -> None:
    """Issue 30, item 9: after five wrong keys from an address its right key is not refused:
    it waits for a token of the address's bucket, then is checked and let in; a key verified
    before is let in at once; other addresses are not paced."""
    clock = FakeClock()
    roster, keys = roster_with(clock, "Grimli", "Ugluk")
    right = {"bot": "Grimli", "key": keys["Grimli"]}
    assert await roster.identify({"bot": "Ugluk", "key": keys["Ugluk"]}, ADDRESS) == "Ugluk"
    for _ in range(KEY_BURST):
        assert (await refusal(roster, {"bot": "Grimli", "key": "guess"})).reason == (
            "no bot 'Grimli' with this key"
        )
    waiting = asyncio.create_task(roster.identify(right, ADDRESS))
    await until(lambda: clock.pending)  # it waits for the token, refused nothing
    assert not waiting.done()
    assert await roster.identify({"bot": "Ugluk", "key": keys["Ugluk"]}, ADDRESS) == "Ugluk"
    assert await roster.identify(right, "127.0.0.2") == "Grimli"  # another address: at once
    clock.advance(KEY_REFILL_S / 2)
    await asyncio.sleep(0.01)
    assert not waiting.done()
    clock.advance(KEY_REFILL_S / 2)
    assert await waiting == "Grimli"
    for _ in range(KEY_BURST + 1):  # a right key costs nothing; now verified, it never waits
        assert await roster.identify(right, ADDRESS) == "Grimli"
    await refusal(roster, {"bot": "Grimli", "key": "guess"})  # the token the wait left
    guess = asyncio.create_task(roster.identify({"bot": "Grimli", "key": "guess"}, ADDRESS))
    await until(lambda: clock.pending)  # a wrong key waits as well, then is refused
    clock.advance(KEY_REFILL_S)
    with pytest.raises(Rejected) as refused:
        await guess
    assert refused.value.message == BotError.INVALID_BOT_KEY
    roster.close()


async def test_checks_in_flight_at_once_are_paced_as_if_one_after_another() -> None:
    """Guesses sent at once, on many connections, are checked one after another, a token
    each: the burst at once, then one per refill; past ``MAX_WAITING_CHECKS`` waiting, a check
    is refused with when to try again. Right keys sent at once are let in as many as may wait,
    the others when they try again."""
    clock = FakeClock()
    roster, keys = roster_with(clock, "Grimli")
    guesses = [
        asyncio.create_task(roster.identify({"bot": "Grimli", "key": new_key()}, ADDRESS))
        for _ in range(MAX_WAITING_CHECKS + 4)
    ]

    def answered(message: str) -> int:
        return sum(
            1
            for guess in guesses
            if guess.done()
            and isinstance(guess.exception(), Rejected)
            and getattr(guess.exception(), "message", None) == message
        )

    await until(lambda: answered(BotError.INVALID_BOT_KEY) == KEY_BURST and clock.pending)
    assert answered(BotError.TOO_MANY_KEY_CHECKS) == 4
    reasons = {
        str(getattr(guess.exception(), "reason", None))
        for guess in guesses[MAX_WAITING_CHECKS:]  # the last ones found the line full
    }
    assert reasons == {
        f"{MAX_WAITING_CHECKS} key checks from this address wait already: try again in 1 s"
    }
    for checked in range(KEY_BURST + 1, KEY_BURST + 4):
        clock.advance(KEY_REFILL_S)
        await until(lambda: answered(BotError.INVALID_BOT_KEY) == checked)  # noqa: B023
        await asyncio.sleep(0.01)
        assert answered(BotError.INVALID_BOT_KEY) == checked  # one a refill, no more
    for guess in guesses:
        guess.cancel()
    await asyncio.gather(*guesses, return_exceptions=True)
    right = {"bot": "Grimli", "key": keys["Grimli"]}
    starting = [roster.identify(right, "127.0.0.2") for _ in range(MAX_WAITING_CHECKS + 4)]
    names = await asyncio.gather(*starting, return_exceptions=True)
    assert names[:MAX_WAITING_CHECKS] == ["Grimli"] * MAX_WAITING_CHECKS
    assert {getattr(name, "message", None) for name in names[MAX_WAITING_CHECKS:]} == {
        BotError.TOO_MANY_KEY_CHECKS
    }
    assert await roster.identify(right, "127.0.0.2") == "Grimli"  # tried again: at once
    roster.close()


async def test_scrypt_runs_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key is hashed on the roster's threads, never the event loop's: other games go on."""
    roster, keys = roster_with(FakeClock(), "Grimli")
    threads: list[str] = []

    def matching(key: str, stored: str) -> bool:
        threads.append(threading.current_thread().name)
        return key_matches(key, stored)

    monkeypatch.setattr(identity, "key_matches", matching)
    for _ in range(2):  # verified once, then remembered
        assert await roster.identify({"bot": "Grimli", "key": keys["Grimli"]}, ADDRESS)
    roster.close()
    assert len(threads) == 1 and threads[0].startswith("scrypt")


async def test_a_session_carries_out_what_came_during_a_key_check_in_order() -> None:
    """A keyed join, then a guest's join: the second waits for the first's check, and is then
    refused as a second game (one per connection); a client that leaves during a check is
    answered nothing; past 64 messages held, the client is refused."""
    async with table() as tables:
        key = new_key()
        tables.arena.roster.update([RegisteredBot("Grimli", hash_key(key))])
        session, channel = client(tables)
        hand(
            tables,
            session,
            read({"type": "join-simulation", "game": "thud", "bot": "Grimli", "key": key}),
        )
        hand(tables, session, read({"type": "join-simulation", "game": "thud", "nick": "guest"}))
        assert channel.messages == [] and channel.seats == 0  # the check is on its thread
        await until(lambda: channel.seats == 1 and channel.messages)
        assert channel.errors() == [BotError.ALREADY_IN_A_GAME]
        (match,) = tables.arena.matches.values()
        assert [seat.bot for seat in match.view().players if seat is not None] == ["Grimli"]
        assert tables.arena.bot_games("Grimli") == 1
        gone, heard = client(tables)
        hand(tables, gone, read({"type": "seek", "game": "thud", "bot": "Grimli", "key": key}))
        gone.closed()
        flooding, flooded = client(tables)
        hand(tables, flooding, read({"type": "seek", "game": "thud", "bot": "Grimli", "key": key}))
        for _ in range(65):
            hand(tables, flooding, read({"type": "player-turn"}))
        assert flooded.refused == [BotError.TOO_MANY_MESSAGES]
        flooding.closed()  # as the front end does on a refusal
        await until(lambda: not (gone.keys.checking or flooding.keys.checking))
        assert heard.messages == flooded.messages == []
        assert tables.arena.bot_games("Grimli") == 1  # neither seek was carried out
        session.closed()  # its seat is given up before the start: it holds nothing
        assert tables.arena.bot_games("Grimli") == 0


async def until(check: Callable[[], object]) -> None:
    """Wait (a few seconds at most) for what the roster's threads and the loop finish."""
    async with asyncio.timeout(5):
        while not check():
            await asyncio.sleep(0.005)


def test_the_pacer_forgets_only_full_buckets_when_it_holds_too_many() -> None:
    clock = FakeClock()
    pacer = AddressPacer(clock, burst=2, refill_s=1.0)
    pacer.spend_now("a")
    clock.advance(5)
    pacer.spend_now("b")
    pacer._forget_full()
    assert set(pacer._buckets) == {"b"}
    assert pacer.wait_now("b") == 0 and pacer.wait_now("a") == 0


async def test_registration_is_the_organiser_s_unless_open() -> None:
    clock = FakeClock()
    closed = Roster(clock)
    with pytest.raises(Rejected) as refused:
        await closed.register("Grimli", ADDRESS)
    assert refused.value.message == BotError.REGISTRATION_CLOSED
    opened = Roster(clock, registration_open=True)
    kept: list[RegisteredBot] = []
    opened.keep = kept.append
    name, key = await opened.register("Grimli", ADDRESS)
    assert name == "Grimli" and [bot.name for bot in kept] == ["Grimli"]
    assert key not in kept[0].key_hash and key_matches(key, kept[0].key_hash)
    assert await opened.identify({"bot": "grimli", "key": key}, ADDRESS) == "Grimli"
    for bad, text in (
        ("GRIMLI", BotError.BOT_NAME_TAKEN),
        ("no spaces", BotError.INVALID_BOT_NAME),
    ):
        with pytest.raises(Rejected) as refused:
            await opened.register(bad, ADDRESS)
        assert refused.value.message == text
    opened.close()


# --- the command and a real arena ----------------------------------------------------------------
def added(database: str, name: str, command: str = "add") -> str:
    run = tavern("bots", command, name, "--database", database)
    assert run.returncode == 0, run
    first, key = run.stdout.splitlines()
    assert first == f"bot {name}: its key, shown only now (set TAVERN_BOT_KEY to it):"
    return key


@contextlib.asynccontextmanager
async def arena_on(database: str, **settings: object) -> AsyncIterator[tuple[Arena, int]]:
    """An arena on these records, its roster kept from them, bots on a real TCP port."""
    arena = Arena(test_config(**settings))
    async with (
        recording(arena.listeners, database) as records,
        roster_kept(records.roster_changes, records, arena.roster),
        arena.running(),
        TcpServer(arena).serving() as tcp,
    ):
        assert tcp.port is not None
        yield arena, tcp.port


async def asked(port: int, message: dict[str, object]) -> dict[str, object]:
    client = await RawClient.connect(port)
    try:
        await client.send(message)
        return await client.receive()
    finally:
        await client.close()


async def test_the_organiser_s_bots_play_under_their_names_and_nobody_else_does(
    records_database: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    key = added(records_database, "Grimli")
    assert tavern("bots", "add", "grimli", "--database", records_database).returncode == 1
    alike = tavern("bots", "add", "Grirnli", "--database", records_database)
    assert alike.returncode == 1 and "Grirnli looks like Grimli" in alike.stderr
    listed = tavern("bots", "list", "--database", records_database)
    assert listed.stdout == "Grimli\n"
    async with arena_on(records_database) as (arena, port):
        join = {"type": "join-simulation", "game": "thud", "bot": "Grimli"}
        wrong = await asked(port, {**join, "key": new_key()})
        assert wrong == {
            "type": "error",
            "message": "Invalid bot key",
            "reason": "no bot 'Grimli' with this key",
        }
        guest = await asked(port, {"type": "join-simulation", "game": "thud", "nick": "Grimli"})
        assert guest["message"] == "Name registered"
        for look_alike in ("Gr\u0131mli", " Grimli", "Grim\u200bli", "\uff27rimli"):
            for kind in ("join-simulation", "seek", "create-simulation"):
                impostor = await asked(port, {"type": kind, "game": "thud", "nick": look_alike})
                assert impostor["message"] in ("Name registered", "Invalid join"), impostor
        closed = await asked(port, {"type": "register", "bot": "Other"})
        assert closed["message"] == "Registration closed"
        client = await RawClient.connect(port)
        await client.send({**join, "key": key, "nick": "impostor"})
        await client.expect("game-info")
        (match,) = arena.matches.values()
        seat = next(player for player in match.view().players if player is not None)
        assert (seat.bot, seat.nick) == ("Grimli", "Grimli")
        await client.close()
    rotated = added(records_database, "Grimli", "rotate")
    assert tavern("bots", "revoke", "Nobody", "--database", records_database).returncode == 1
    async with arena_on(records_database) as (arena, port):
        old = await asked(port, {**join, "key": key})
        assert old["message"] == "Invalid bot key"
        assert (await asked(port, {**join, "key": rotated}))["type"] == "game-info"
    revoked = tavern("bots", "revoke", "GRIMLI", "--database", records_database)
    assert revoked.stdout == "tavern: the key of Grimli is revoked\n"
    async with arena_on(records_database) as (arena, port):
        assert (await asked(port, {**join, "key": rotated}))["message"] == "Invalid bot key"
    logged = caplog.text + "".join(str(record.args) for record in caplog.records)
    assert key not in logged and rotated not in logged
    if not records_database.startswith("postgresql"):
        for path in Path(records_database).parent.glob(Path(records_database).name + "*"):
            if path.is_file():
                stored = path.read_bytes()
                assert key.encode() not in stored and rotated.encode() not in stored


async def test_a_bot_registers_itself_where_registration_is_open(tmp_path: Path) -> None:
    database = str(tmp_path / "arena.db")
    async with arena_on(database, registration="open") as (_, port):
        answer = await asked(port, {"type": "register", "bot": "Selfmade"})
        assert answer["type"] == "registered" and answer["bot"] == "Selfmade"
        key = answer["key"]
        assert isinstance(key, str)
        taken = await asked(port, {"type": "register", "bot": "selfmade"})
        assert taken["message"] == "Bot name taken"
        joined = await asked(
            port, {"type": "join-simulation", "game": "thud", "bot": "Selfmade", "key": key}
        )
        assert joined["type"] == "game-info"
    assert tavern("bots", "list", "--database", database).stdout == "Selfmade\n"
    assert key.encode() not in (tmp_path / "arena.db").read_bytes()


async def test_a_right_key_after_wrong_ones_from_its_address_is_let_in_over_tcp(
    tmp_path: Path,
) -> None:
    """Issue 30, item 9, on a real socket: a broken bot's wrong keys from the same address
    delay the right key by a refill, and it plays."""
    database = str(tmp_path / "arena.db")
    key = added(database, "Grimli")
    join = {"type": "join-simulation", "game": "thud", "bot": "Grimli"}
    async with arena_on(database) as (_, port):
        for _ in range(KEY_BURST + 1):  # the last one waits for its token, then is refused
            assert (await asked(port, {**join, "key": new_key()}))["message"] == "Invalid bot key"
        started = time.monotonic()
        assert (await asked(port, {**join, "key": key}))["type"] == "game-info"
        assert time.monotonic() - started > KEY_REFILL_S / 2  # it waited for a token


def hand(tables: Table, session: Session, command: Command | Rejected) -> None:
    """What a front end does: the command handed over, and the check it asks for spawned."""
    carry_out(tables.arena, session, session.handle(command))
