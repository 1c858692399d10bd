"""The ladder (issue 22, items 2 and 4): the pairing policy in memory with a hand-wound clock;
seeks over real sockets that pair registered bots into rated games whose end moves both
ratings in the records once; seasons and bans as the organiser types them."""

from __future__ import annotations

import asyncio
import random
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from bots.sdk import BOT_KEY_VARIABLE, ArenaClient, bot_fields
from server.commands import read
from server.identity import new_key
from server.ladder import (
    MOST_LOOKS,
    REMATCH_AFTER_S,
    SLICE_PAIRS,
    TICK_S,
    WINDOW_BASE,
    Seeker,
    SeekPool,
    may_meet,
    pair_seekers,
    seated_in_order,
    window,
)
from server.records import Records
from server.records.identities import roster_kept
from server.records.ladder import rate
from tests.clock import FakeClock
from tests.conftest import RECEIVE_TIMEOUT_S, RawClient, serving_visor, test_config
from tests.test_command_line import tavern
from tests.test_identity import added, arena_on, asked
from tests.test_match import table
from tests.test_session import client

NOW = 1000.0


def seeker(
    name: str,
    rating: float = 25.0,
    since: float = NOW,
    last_opponent: str | None = None,
    had_first_seat: bool = False,
) -> Seeker:
    return Seeker(name, name, "thud", True, rating, since, last_opponent, had_first_seat)


# --- the policy, in memory -----------------------------------------------------------------------
def every_pair_tried(seekers: list[Seeker], now: float) -> list[tuple[Seeker, Seeker]]:
    """The policy as its docstring says it, each seeker against every later one: what
    ``pair_seekers`` must give, however it finds it."""
    waiting = sorted(seekers, key=lambda s: (s.since, s.id))
    taken: set[str] = set()
    pairs = []
    for index, one in enumerate(waiting):
        if one.id in taken:
            continue
        candidates = [
            other
            for other in waiting[index + 1 :]
            if other.id not in taken and may_meet(one, other, now)
        ]
        if candidates:
            best = min(candidates, key=lambda o: (abs(o.rating - one.rating), o.since, o.id))
            taken.update((one.id, best.id))
            pairs.append(seated_in_order(one, best))
    return pairs


def test_pairing_by_nearest_rating_gives_what_trying_every_pair_gives() -> None:
    """500 random crowds (two games, rated or not, ratings on a coarse grid so that distances
    tie, recent opponents, a bot seeking twice): the pairs are those of trying every pair."""
    rng = random.Random(22)
    for _ in range(500):
        bots = [f"b{n}" for n in range(rng.randint(1, 12))]
        crowd = [
            Seeker(
                id=f"s{n}",
                bot=rng.choice(bots),
                game=rng.choice(("thud", "tavern")),
                rated=rng.random() < 0.8,
                rating=25 + rng.randint(-8, 8) * 1.5,
                since=NOW - rng.choice((0, 1, 2, 5, 12, 60)),
                last_opponent=rng.choice([None, *bots]),
                had_first_seat=rng.random() < 0.5,
            )
            for n in range(rng.randint(0, 30))
        ]
        assert pair_seekers(crowd, NOW) == every_pair_tried(crowd, NOW)


def test_the_window_widens_with_the_wait_and_the_nearest_rating_is_chosen() -> None:
    far = [seeker("a", 25.0), seeker("b", 25.0 + WINDOW_BASE + 5)]
    assert pair_seekers(far, NOW) == []
    assert pair_seekers(far, NOW + 5) == [(far[0], far[1])]
    three = [seeker("a", 25.0, NOW - 1), seeker("far", 27.5), seeker("near", 25.5)]
    assert [(x.id, y.id) for x, y in pair_seekers(three, NOW)] == [("a", "near")]
    assert window(10_000) == window(100_000)  # capped


def test_other_games_rated_ness_and_the_bot_itself_never_meet() -> None:
    other_game = Seeker("g", "g", "tavern", True, 25.0, NOW)
    unrated = Seeker("u", "u", "thud", False, 25.0, NOW)
    same_bot = Seeker("a2", "A", "thud", True, 25.0, NOW)
    assert pair_seekers([seeker("a"), other_game, unrated, same_bot], NOW + 100) == []


def test_no_immediate_rematch_unless_both_waited_and_sides_alternate() -> None:
    a = seeker("a", last_opponent="b", had_first_seat=True)
    b = seeker("b", last_opponent="a")
    assert pair_seekers([a, b], NOW) == []
    assert pair_seekers([a, b], NOW + REMATCH_AFTER_S) == [(b, a)]  # b takes the first seat
    c = seeker("c", since=NOW + 1)
    assert pair_seekers([a, b, c], NOW + 1) == [(c, a)]  # a, first, meets c: a had seat 1


def test_the_pool_pairs_as_the_clock_goes_and_forgets_withdrawn_seeks() -> None:
    clock = FakeClock()
    met: list[tuple[str, str]] = []
    pool = SeekPool(clock, lambda x, y: met.append((x.id, y.id)))
    pool.add(seeker("a", 25.0, clock.now()))
    pool.add(seeker("gone", 45.0, clock.now()))
    pool.remove("gone")
    pool.add(seeker("b", 35.0, clock.now()))
    assert met == [] and clock.pending == 1
    clock.advance(10 * TICK_S)
    assert met == []
    clock.advance(8)  # the window has grown past 10 points
    assert met == [("a", "b")] and pool.seekers == {} and clock.pending == 0


def flood(count: int, bots: int, since: float = NOW) -> list[Seeker]:
    """``count`` guests' seeks at one rating, under ``bots`` names in turn, each name's last
    opponent the next name: none may meet another (its own name, or a rematch) for 10 s."""
    return [
        Seeker(f"s{n}", f"b{n % bots}", "thud", False, 25.0, since + n / 1000, f"b{(n + 1) % bots}")
        for n in range(count)
    ]


def test_a_pass_looks_at_a_bounded_number_of_seekers_for_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """3,000 seekers at one rating whom none may meet: each looks at ``MOST_LOOKS`` others at
    most (trying every other would be some 4.5 million looks), and a run of seeks of its own
    bot costs one look."""
    looks = 0

    def counted(a: Seeker, b: Seeker, now: float) -> bool:
        nonlocal looks
        looks += 1
        return may_meet(a, b, now)

    monkeypatch.setattr("server.ladder.may_meet", counted)
    crowd = flood(3000, bots=2)  # rematches: every look is a may_meet
    assert pair_seekers(crowd, NOW + 1) == []
    assert 3000 <= looks <= MOST_LOOKS * 3000
    looks = 0
    assert pair_seekers(flood(3000, bots=1), NOW + 1) == []  # one name: no look needs may_meet
    assert looks == 0
    # Once the rematch may be played, they pair as the policy says, the oldest first.
    pairs = pair_seekers(crowd, NOW + 14)
    assert len(pairs) == 1500 and {pairs[0][0].id, pairs[0][1].id} == {"s0", "s1"}


def test_a_pass_over_thousands_of_seekers_is_cut_into_slices_of_bounded_work() -> None:
    """5,000 seekers who may all meet: the pass is served a slice per callback of the clock
    (the event loop runs between two), each of ``SLICE_PAIRS`` pairs at most; a seeker who
    leaves between two slices is not met, and its partner waits for the next pass."""
    clock = FakeClock()
    met: list[tuple[str, str]] = []
    pool = SeekPool(clock, lambda x, y: met.append((x.id, y.id)))
    for n in range(5000):
        pool.add(Seeker(f"s{n:04}", f"b{n}", "thud", False, 25.0, clock.now() + n / 1000))
    assert clock.pending == 1  # one pass is due, however many came
    made: list[int] = []  # pairs made by each callback
    while len(met) < 2499:
        assert clock.step()
        made.append(len(met) - sum(made))
        if len(made) == 1:
            assert met[0] == ("s0000", "s0001")
            pool.remove("s4999")  # paired with s4998 in the pass's last slice
    assert made == [SLICE_PAIRS] * (len(made) - 1) + [2499 % SLICE_PAIRS]
    assert list(pool.seekers) == ["s4998"]
    assert clock.step() and not met[2499:]  # the pass's end: a slice that finds nothing more
    assert clock.pending == 1  # the next pass, in TICK_S


# --- real sockets, real records -------------------------------------------------------------------
def ratings_in(database: Path) -> dict[str, tuple[float, int, int, int]]:
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT bot, mu, games, wins, losses FROM ratings WHERE game = 'thud'")
        return {bot: (mu, games, wins, losses) for bot, mu, games, wins, losses in rows}


async def test_two_registered_bots_seek_meet_and_their_ratings_move_once(tmp_path: Path) -> None:
    database = tmp_path / "arena.db"
    keys = {name: added(str(database), name) for name in ("Grimli", "Ugluk")}
    async with arena_on(str(database)) as (arena, port):
        guest = await asked(port, {"type": "seek", "game": "thud", "rated": True})
        assert guest["message"] == "Invalid seek"
        clients = {name: await RawClient.connect(port) for name in keys}
        for name, client in clients.items():
            await client.send(
                {"type": "seek", "game": "thud", "bot": name, "key": keys[name], "rated": True}
            )
        infos = {name: await client.expect("game-info") for name, client in clients.items()}
        assert {info["side"] for info in infos.values()} == {"dwarf", "troll"}
        (match,) = arena.matches.values()
        assert match.options.rated
        await clients["Ugluk"].close()  # Ugluk leaves: it forfeits
        ended = await clients["Grimli"].receive()
        while ended["type"] not in ("win-game", "loss-game", "draw-game"):
            ended = await clients["Grimli"].receive()
        assert ended["type"] == "win-game"
        await clients["Grimli"].close()
    after = ratings_in(database)
    assert after["Grimli"][1:] == (1, 1, 0) and after["Ugluk"][1:] == (1, 0, 1)
    assert after["Grimli"][0] > 25 > after["Ugluk"][0]
    records = Records(database)
    records.open_to_read()
    with sqlite3.connect(database) as db:
        (game_id,) = db.execute("SELECT game_id FROM rating_history LIMIT 1").fetchone()
        assert db.execute("SELECT rated FROM games WHERE id = ?", (game_id,)).fetchone() == (1,)
    connection = records.backend.connect()
    assert not rate(connection, game_id, "thud", ("Grimli", "Ugluk"), 0)  # rated once only
    connection.close()
    assert ratings_in(database) == after


def test_rating_a_game_twice_changes_nothing_on_either_database(records_database: str) -> None:
    records = Records(records_database)
    records.open_to_read()
    db = records.backend.connect()
    try:
        db.execute(
            "INSERT INTO games (id, game, seed, settings, status, started_at) "
            "VALUES ('g1', 'thud', 1, '{}', 'finished', 0)"
        )
        assert rate(db, "g1", "thud", ("A", "B"), None)
        first = db.execute("SELECT bot, mu, sigma, draws FROM ratings ORDER BY bot").fetchall()
        assert not rate(db, "g1", "thud", ("A", "B"), 0)
        assert (
            db.execute("SELECT bot, mu, sigma, draws FROM ratings ORDER BY bot").fetchall() == first
        )
        assert [row[3] for row in first] == [1, 1]
    finally:
        db.close()


def rated(database: str, games: list[tuple[str, tuple[str, str], int | None]]) -> None:
    """Finished Thud games in the records, rated as the records' writer rates them."""
    records = Records(database)
    records.open_to_read()
    db = records.backend.connect()
    try:
        for game_id, bots, winner in games:
            db.execute(
                "INSERT INTO games (id, game, seed, settings, status, started_at) "
                "VALUES (?, 'thud', 1, '{}', 'finished', 0)",
                (game_id,),
            )
            rate(db, game_id, "thud", bots, winner)
    finally:
        db.close()


async def test_a_new_season_starts_afresh_and_a_banned_bot_may_not_seek(tmp_path: Path) -> None:
    database = str(tmp_path / "arena.db")
    key = added(database, "Grimli")
    rated(database, [("g1", ("Grimli", "Other"), 0)])
    season = tavern("ladder", "season", "spring", "--database", database)
    assert season.stdout == "tavern: season spring starts now\n"
    assert tavern("ladder", "season", "spring", "--database", database).returncode == 1
    assert tavern("ladder", "ban", "grimli", "--database", database).stdout == (
        "tavern: Grimli is banned\n"
    )
    seek = {"type": "seek", "game": "thud", "bot": "Grimli", "key": key, "rated": True}
    async with arena_on(database) as (arena, port):
        assert arena.roster.rating("thud", "Grimli") is None  # the new season knows nobody yet
        assert (await asked(port, seek))["message"] == "Bot banned"
    assert tavern("bots", "list", "--database", database).stdout == "Grimli  (banned)\n"
    assert tavern("ladder", "unban", "Grimli", "--database", database).returncode == 0
    async with arena_on(database) as (arena, port):
        client = await RawClient.connect(port)
        await client.send({"type": "seek", "game": "thud", "bot": "Grimli", "key": new_key()})
        assert (await client.receive())["message"] == "Invalid bot key"
        await client.send(seek)
        async with asyncio.timeout(RECEIVE_TIMEOUT_S):
            while not arena.seeks.seekers:
                await asyncio.sleep(0.01)
        (waiting,) = arena.seeks.seekers.values()
        assert (waiting.bot, waiting.rated) == ("Grimli", True)
        await client.close()
    with sqlite3.connect(database) as db:
        seasons = db.execute("SELECT season, bot FROM ratings ORDER BY bot").fetchall()
    assert seasons == [("1", "Grimli"), ("1", "Other")]  # the old table is kept


async def test_a_bot_holds_at_most_max_games_per_bot(tmp_path: Path) -> None:
    database = str(tmp_path / "arena.db")
    key = added(database, "Grimli")
    async with arena_on(database, max_games_per_bot=1) as (_, port):
        first = await RawClient.connect(port)
        join = {"type": "join-simulation", "game": "thud", "bot": "Grimli", "key": key}
        await first.send(join)
        await first.expect("game-info")
        refused = await asked(port, {**join, "type": "seek"})
        assert refused == {
            "type": "error",
            "message": "Too many games",
            "reason": "a bot may play 1 games at once",
        }
        await first.close()


# --- challenges ----------------------------------------------------------------------------------
async def test_a_challenge_is_accepted_declined_or_expires(tmp_path: Path) -> None:
    database = str(tmp_path / "arena.db")
    keys = {name: added(database, name) for name in ("Grimli", "Ugluk")}
    async with arena_on(database, challenge_timeout_ms=300) as (arena, port):
        ugluk, grimli = await RawClient.connect(port), await RawClient.connect(port)
        challenge = {
            "type": "challenge",
            "opponent": "ugluk",
            "game": "thud",
            "side": "troll",
            "rated": True,
            "bot": "Grimli",
            "key": keys["Grimli"],
        }
        # A name nobody registered is refused at once (issue 30, item 16); a registered bot
        # not connected is declined.
        assert await asked(port, {**challenge, "opponent": "Nobody"}) == {
            "type": "error",
            "message": "Unknown bot",
            "reason": "no bot named Nobody is registered",
        }
        await grimli.send(challenge)
        sent = await grimli.expect("challenge-sent")
        assert await grimli.expect("challenge-declined") == {
            "type": "challenge-declined",
            "challenge": sent["challenge"],
            "reason": "ugluk is not connected",
        }
        await ugluk.send({"type": "seek", "game": "thud", "bot": "Ugluk", "key": keys["Ugluk"]})
        async with asyncio.timeout(RECEIVE_TIMEOUT_S):
            while not arena.seeks.seekers:  # Ugluk is present once its seek waits
                await asyncio.sleep(0.01)
        await grimli.send({**challenge, "side": "goblin"})
        assert (await grimli.expect_error("Invalid challenge"))["reason"] == (
            '"side" must be one of: dwarf, troll'
        )
        # Declined, with a reason; then unanswered until it expires.
        for answer in ({"type": "decline", "reason": "busy"}, None):
            await grimli.send(challenge)
            sent = await grimli.expect("challenge-sent")
            offered = await ugluk.expect("challenge")
            assert offered == {
                "type": "challenge",
                "challenge": sent["challenge"],
                "from": "Grimli",
                "game": "thud",
                "rated": True,
                "side": "dwarf",
            }
            if answer is not None:
                await ugluk.send({**answer, "challenge": sent["challenge"]})
            declined = await grimli.expect("challenge-declined")
            reason = "busy" if answer else "no answer from ugluk within 0.3 s"
            assert declined == {
                "type": "challenge-declined",
                "challenge": sent["challenge"],
                "reason": reason,
            }
        await ugluk.send({"type": "accept", "challenge": sent["challenge"]})
        await ugluk.expect_error("Unknown challenge")
        await grimli.send(challenge)
        sent = await grimli.expect("challenge-sent")
        await ugluk.expect("challenge")
        await ugluk.send({"type": "accept", "challenge": sent["challenge"]})
        assert (await ugluk.expect("game-info"))["side"] == "dwarf"
        assert (await grimli.expect("game-info"))["side"] == "troll"
        (match,) = arena.matches.values()
        assert match.options.rated and arena.seeks.seekers == {}
        await ugluk.close()
        await grimli.close()


async def answers_to(
    client: RawClient, messages: list[dict[str, Any]], most: int = 100
) -> list[dict[str, Any]]:
    """Send these at once, and read what comes back (at most ``most``) until the answer to a
    last request that only this client's own requests come before (an ``Unknown challenge``)."""
    marker = {"type": "decline", "challenge": "none"}
    await client.send_raw(b"".join(orjson.dumps(m) + b"\n" for m in [*messages, marker]))
    answers: list[dict[str, Any]] = []
    for _ in range(most + 1):
        answer = await client.receive()
        if answer.get("message") == "Unknown challenge":
            return answers
        answers.append(answer)
    raise AssertionError("no end of the answers")


def kinds(answers: list[dict[str, Any]]) -> Counter[str]:
    return Counter(str(answer.get("message", answer["type"])) for answer in answers)


async def test_a_flood_of_challenges_is_refused_to_its_senders_never_sent_to_its_target(
    tmp_path: Path,
) -> None:
    """Before (issue 30, item 4), every challenge reached its target, ``messageGapMs`` apart:
    a flood piled up in the target's send buffer until the arena dropped the target (11,737 in
    15 s did). Now a sender has at most 5 waiting for an answer, its target at most 8: the
    target, reading promptly, is sent 8 of 60, stays, and accepts one. (A short message gap
    here: the senders' own answers, after their keys' checks, are paced too.)"""
    database = str(tmp_path / "arena.db")
    keys = {name: added(database, name) for name in ("Grimli", "Third", "Ugluk")}
    caps = {"max_open_challenges_per_bot": 5, "max_open_challenges_to_bot": 8}
    async with arena_on(database, message_gap_ms=5, **caps) as (_, port):
        ugluk = await RawClient.connect(port)
        await ugluk.send({"type": "create-simulation", "bot": "Ugluk", "key": keys["Ugluk"]})
        await ugluk.expect("ready")  # present, for challenges
        floods, senders = {}, {}
        for name in ("Grimli", "Third"):
            challenge = {"type": "challenge", "opponent": "ugluk", "game": "tavern"}
            challenge |= {"bot": name, "key": keys[name]}
            senders[name] = await RawClient.connect(port)
            floods[name] = await answers_to(senders[name], 30 * [challenge])
        assert kinds(floods["Grimli"]) == {"challenge-sent": 5, "Too many challenges": 25}
        refused = next(a for a in floods["Grimli"] if a["type"] == "error")
        assert refused["reason"] == "at most 5 challenges of one bot wait for an answer at once"
        assert kinds(floods["Third"]) == {"challenge-sent": 30, "challenge-declined": 27}
        declined = next(a for a in floods["Third"] if a["type"] == "challenge-declined")
        assert declined["reason"] == (
            "ugluk has 8 challenges waiting for its answer: try again later"
        )
        offered = await answers_to(ugluk, [])
        assert Counter(answer["from"] for answer in offered) == {"Grimli": 5, "Third": 3}
        await ugluk.send({"type": "accept", "challenge": offered[-1]["challenge"]})
        assert (await ugluk.expect("game-info"))["team"] == "team2"
        assert (await senders["Third"].expect("game-info"))["team"] == "team1"
        for client in (ugluk, *senders.values()):
            await client.close()


# --- the API -------------------------------------------------------------------------------------
async def test_the_ladder_and_a_bot_s_page_are_read_from_the_records(tmp_path: Path) -> None:
    database = str(tmp_path / "arena.db")
    key = added(database, "Grimli")
    rated(database, [("g1", ("Grimli", "Ugluk"), 0), ("g2", ("Grimli", "Ugluk"), None)])
    async with (
        serving_visor(test_config(), database) as served,
        roster_kept(served.records.roster_changes, served.records, served.arena.roster),
        aiohttp.ClientSession(served.url) as http,
    ):
        present = await RawClient.connect(served.tcp_port)
        await present.send({"type": "seek", "game": "thud", "bot": "Grimli", "key": key})
        async with asyncio.timeout(RECEIVE_TIMEOUT_S):
            while not served.arena.seeks.seekers:
                await asyncio.sleep(0.01)
        async with http.get("/api/ladder?game=thud") as response:
            ladder = await response.json()
        assert (ladder["game"], ladder["season"], ladder["seasons"]) == ("thud", "1", ["1"])
        assert [
            (b["bot"], b["games"], b["wins"], b["draws"], b["online"]) for b in ladder["bots"]
        ] == [
            ("Grimli", 2, 1, 1, True),
            ("Ugluk", 2, 0, 1, False),
        ]
        async with http.get("/api/bots/grimli") as response:
            page = await response.text()
        bot = orjson.loads(page)
        assert (bot["bot"], bot["banned"], bot["online"]) == ("Grimli", False, True)
        assert [game["gameId"] for game in bot["history"]] == ["g2", "g1"]
        # Each game with its opponent's rating as it began: Ugluk's own row of that game.
        ugluk = served.arena.roster.rating("thud", "Ugluk")
        first_loss = bot["history"][1]
        assert (first_loss["opponentMu"], first_loss["opponentMuAt"]) == (25.0, "start")
        assert bot["history"][0]["opponentMuAt"] == "start"
        assert bot["history"][0]["opponentMu"] < 25.0  # Ugluk had lost g1
        # Were Ugluk's row of a game lost, its rating now is given, and said to be so.
        db = served.records.backend.connect()
        try:
            db.execute("DELETE FROM rating_history WHERE game_id = 'g1' AND bot = 'Ugluk'")
        finally:
            db.close()
        async with http.get("/api/bots/grimli") as response:
            lost = (await response.json())["history"][1]
        assert (lost["opponentMu"], lost["opponentMuAt"]) == (ugluk, "now")
        assert bot["headToHead"] == [
            {"opponent": "Ugluk", "game": "thud", "wins": 1, "losses": 0, "draws": 1}
        ]
        assert key not in page and "scrypt" not in page
        for path, status in (("/api/bots/Nobody", 404), ("/api/ladder?game=chess", 400)):
            async with http.get(path) as response:
                assert response.status == status
        async with http.get("/api/ladder?game=thud&season=9") as response:
            assert response.status == 404
        await present.close()


async def test_the_python_sdk_seeks_with_the_key_from_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = str(tmp_path / "arena.db")
    keys = {name: added(database, name) for name in ("Grimli", "Ugluk")}
    monkeypatch.delenv(BOT_KEY_VARIABLE, raising=False)
    with pytest.raises(ValueError, match="set TAVERN_BOT_KEY"):
        bot_fields("Grimli")
    async with arena_on(database) as (_, port):
        clients = [await ArenaClient.connect("127.0.0.1", port) for _ in keys]
        monkeypatch.setenv(BOT_KEY_VARIABLE, keys["Grimli"])
        grimli = asyncio.create_task(clients[0].seek(bot="Grimli"))
        ugluk = asyncio.create_task(clients[1].seek(bot="Ugluk", key=keys["Ugluk"]))
        infos = await asyncio.gather(grimli, ugluk)
        assert {info["side"] for info in infos} == {"dwarf", "troll"}
        for client in clients:
            await client.close()


class OtherNodes:
    """The arena's other nodes as a session sees them: seeks kept, seats asked for kept."""

    def __init__(self) -> None:
        self.seeks: list[Seeker] = []
        self.asked: list[str] = []

    def seek(self, seeker: Seeker, taker: object) -> None:
        self.seeks.append(seeker)

    def unseek(self, seeker_id: str) -> None:
        self.seeks = [seeker for seeker in self.seeks if seeker.id != seeker_id]

    def seat(self, peer: object, simulation_id: str, *rest: object) -> AskedSeat:
        self.asked.append(simulation_id)
        return AskedSeat()


class AskedSeat:
    playing = True

    def submit(self, message: object) -> None:
        """Never called here."""

    def leave(self) -> None:
        """Never called here."""


async def test_a_seek_paired_elsewhere_whose_opponent_left_goes_back_to_the_pool() -> None:
    async with table() as tables:
        nodes = OtherNodes()
        tables.arena.elsewhere = nodes  # type: ignore[assignment]
        session, channel = client(tables)
        session.handle(read({"type": "seek", "game": "thud", "nick": "guest"}))
        (first,) = nodes.seeks
        session.ladder.paired_elsewhere("abc1234")
        assert nodes.asked == ["abc1234"] and nodes.seeks == [first]
        session.routing.remote_refused("Wrong simulation ID", None)  # its opponent left meanwhile
        assert channel.errors() == []
        assert [seeker.bot for seeker in nodes.seeks] == ["guest", "guest"]
