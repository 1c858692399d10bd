"""The starter kits in Go (bots/go), Java (bots/java), C (bots/c), Ruby (bots/ruby) and PHP
(bots/php): each builds, and plays whole games of both games on a real arena, against the house
players and against each other. Each of them, and the Node.js Tavern bot (bots/js/tavern-bot.js),
seeks a rated game on the ladder under a registered name with its key from TAVERN_BOT_KEY, and
when the arena answers `Too many key checks` connects again and seeks again instead of ending.

Every game must end with a result, and a kit must never have a move rejected nor time out. A kit
must also show that it plays: in Tavern it scores and beats a random walker, in Thud it kills and
beats a random player. The kits implement the same strategy, so against the same opponent and
seed they must all play exactly the same game: a check of each kit's JSON handling against the
others'. A scripted server checks that each reply names the turn it answers and that error lines
do not stop a kit.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from bots import sdk
from server.games import GAMES
from server.games.base import Outcome, SeatClock
from server.games.tavern.ends import TavernEnd
from server.identity import new_key
from server.match import Match
from server.match_events import SeatsChanged, TurnPlayed, Update
from server.match_options import MatchOptions
from tests.conftest import ROOT, Running, serving, test_config
from tests.test_identity import added, arena_on

KITS = ("go", "java", "c", "ruby", "php")
SEEKING_KITS = ("js", *KITS)
GAME_TIMEOUT_S = 120
TAVERN_TURNS = 300  # room for several points, and a game stays under a second or two
ENDS = ("win-game", "loss-game", "draw-game")
PACED = "Too many key checks"
KitCommand = Callable[[str], list[str]]


# --- building ---------------------------------------------------------------------------------


def build_js(out: Path) -> list[str]:
    """Nothing to build: Node.js runs the file."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("the Node.js bot needs Node.js: `make test` installs nodejs")
    return [node, str(ROOT / "bots" / "js" / "tavern-bot.js")]


def build_go(out: Path) -> list[str]:
    go = shutil.which("go")
    if go is None:
        pytest.fail("the Go starter kit needs Go: `make test` installs golang-go")
    binary = out / "go-bot"
    # No third-party modules: the build must never reach for the module proxy.
    env = {**os.environ, "GOPROXY": "off"}
    if not any(name in env for name in ("GOCACHE", "XDG_CACHE_HOME", "HOME")):
        env["GOCACHE"] = str(out / "go-cache")  # go build needs a cache somewhere
    compile_kit([go, "vet", "."], ROOT / "bots" / "go", env)
    compile_kit([go, "build", "-o", str(binary), "."], ROOT / "bots" / "go", env)
    return [str(binary)]


def build_java(out: Path) -> list[str]:
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        pytest.fail("the Java starter kit needs a JDK: `make test` installs default-jdk-headless")
    source = ROOT / "bots" / "java" / "Bot.java"
    compile_kit([javac, "-Xlint:all", "-Werror", "-d", str(out), str(source)], ROOT, None)
    return [java, "-cp", str(out), "Bot"]


def build_c(out: Path) -> list[str]:
    """With the kit's own Makefile, as its README says, every warning an error."""
    make, pkg_config = shutil.which("make"), shutil.which("pkg-config")
    if shutil.which("cc") is None or make is None or pkg_config is None:
        pytest.fail("the C starter kit needs cc, make and pkg-config: `make test` installs them")
    found = subprocess.run([pkg_config, "--exists", "jansson"], check=False, timeout=60)
    if found.returncode != 0:
        pytest.fail("the C starter kit needs Jansson: `make test` installs libjansson-dev")
    binary = out / "c-bot"
    compile_kit([make, f"BOT={binary}", "CFLAGS=-O2 -Werror"], ROOT / "bots" / "c", None)
    return [str(binary)]


def build_ruby(out: Path) -> list[str]:
    """Ruby compiles as it loads: `ruby -wc` checks the syntax, and it must warn of nothing."""
    ruby = shutil.which("ruby")
    if ruby is None:
        pytest.fail("the Ruby starter kit needs Ruby: `make test` installs ruby")
    source = ROOT / "bots" / "ruby" / "bot.rb"
    warnings = compile_kit([ruby, "-wc", str(source)], out, None)
    assert warnings == "", warnings
    return [ruby, "-w", str(source)]


def build_php(out: Path) -> list[str]:
    """PHP compiles as it loads: `php -l` checks the syntax; the kit turns every warning into an
    error of its own when it runs."""
    php = shutil.which("php")
    if php is None:
        pytest.fail("the PHP starter kit needs PHP: `make test` installs php-cli")
    source = ROOT / "bots" / "php" / "bot.php"
    done = subprocess.run(
        [php, "-l", str(source)], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "No syntax errors" in done.stdout, done
    return [php, str(source)]


def compile_kit(command: list[str], cwd: Path, env: dict[str, str] | None) -> str:
    """Runs a build step that must succeed; what it wrote on stderr."""
    done = subprocess.run(
        command, check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}"
    return done.stderr


BUILDERS: dict[str, Callable[[Path], list[str]]] = {
    "js": build_js,
    "go": build_go,
    "java": build_java,
    "c": build_c,
    "ruby": build_ruby,
    "php": build_php,
}


@pytest.fixture(scope="session")
def kit_command(tmp_path_factory: pytest.TempPathFactory) -> KitCommand:
    """Builds a kit once per session, inside the first test that asks for it (so that a missing
    toolchain fails that test instead of erroring its setup); gives the command that runs it."""
    built: dict[str, list[str]] = {}

    def command(kit: str) -> list[str]:
        if kit not in built:
            built[kit] = BUILDERS[kit](tmp_path_factory.mktemp(f"kit-{kit}"))
        return built[kit]

    return command


# --- playing ----------------------------------------------------------------------------------


@dataclass
class Watcher:
    """Every match the arena plays, with its turns."""

    arena: Running
    simulations: dict[str, Match] = field(default_factory=dict)
    # By match: each turn's seat, action and whether it timed out.
    turns: dict[str, list[tuple[int, Any, bool]]] = field(default_factory=dict)

    def __call__(self, update: Update) -> None:
        if isinstance(update, SeatsChanged):
            match = self.arena.matches.get(update.view.match_id)
            if match is not None:
                self.simulations[match.id] = match
        if isinstance(update, TurnPlayed):
            result = update.result
            self.turns.setdefault(result.match_id, []).append(
                (result.seat, result.action, result.timed_out)
            )


@dataclass
class Game:
    simulation: Match
    outputs: list[tuple[int, str, str]]  # each process's exit code, stdout and stderr

    def scores(self) -> dict[str, int]:
        return dict(self.simulation.codec.scores(self.simulation.state))


@pytest.fixture
async def kits_arena() -> AsyncIterator[tuple[Running, Watcher]]:
    config = test_config()
    for game in GAMES:  # every game's: Thud's games stay short too
        config = config.with_turn_limit(game, TAVERN_TURNS)
    async with serving(config) as arena:
        watcher = Watcher(arena)
        arena.listeners.append(watcher)
        yield arena, watcher


async def run(command: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *command, cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        async with asyncio.timeout(GAME_TIMEOUT_S):
            out, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def kit_args(kit: list[str], port: int, game: str, *extra: str) -> list[str]:
    return [*kit, "--port", str(port), "--game", game, "--nick", "kit", *extra]


def house_args(game: str, name: str, port: int, simulation: str, side: str, seed: int) -> list[str]:
    return [sys.executable, "-m", "bots.house_bot", game, name, "--simulation", simulation,
            "--side", side, "--port", str(port), "--seed", str(seed)]  # fmt: skip


def check_finished(game: Game, watcher: Watcher, kit_seats: list[int]) -> None:
    """The game has a result, every process saw it and exited, and the kit's seats played every
    turn with no rejected move and no timeout."""
    simulation = game.simulation
    assert simulation.outcome is not None
    for code, out, err in game.outputs:
        assert code == 0, (out, err)
        assert out.strip().splitlines()[-1].split()[0] in ENDS, out
        assert "server error" not in err, err
    for seat in kit_seats:
        occupant = simulation.seats[seat]
        assert occupant is not None
        assert occupant.errors == 0, occupant.last_error
        assert occupant.replies > 0
        assert not any(s == seat and late for s, _, late in watcher.turns[simulation.id])


async def kit_against_house(
    arena: Running, kit: list[str], game: str, kit_seat: int, house: str, seed: int
) -> Game:
    """One game between a kit and a house player (by id); Tavern seats go by joining order."""
    assert arena.tcp_port is not None
    port = arena.tcp_port
    simulation = arena.arena.open(game, MatchOptions(seed=seed))
    seat_names = simulation.codec.seat_names
    extra = ["--simulation", simulation.id]
    if game == "thud":
        extra += ["--side", seat_names[kit_seat]]
    kit_command = kit_args(kit, port, game, *extra)
    house_command = house_args(game, house, port, simulation.id, seat_names[1 - kit_seat], seed)
    first, second = (kit_command, house_command) if kit_seat == 0 else (house_command, kit_command)
    first_task = asyncio.create_task(run(first))
    async with asyncio.timeout(30):
        await simulation.wait_seated(0)
    outputs = await asyncio.gather(first_task, run(second))
    async with asyncio.timeout(10):
        await simulation.done.wait()
    return Game(simulation, list(outputs))


@pytest.mark.parametrize("kit", KITS)
async def test_kit_plays_tavern_against_the_house_and_scores(
    kit: str, kit_command: KitCommand, kits_arena: tuple[Running, Watcher]
) -> None:
    arena, watcher = kits_arena
    command = kit_command(kit)
    points = 0
    for kit_seat, house, seed in ((0, "pusher", 1), (1, "pusher", 2), (1, "wanderer", 3)):
        game = await kit_against_house(arena, command, "tavern", kit_seat, house, seed)
        check_finished(game, watcher, [kit_seat])
        points += game.scores()[f"team{kit_seat + 1}"]
        if house == "wanderer":  # a random walker cannot stop a bot that pushes on purpose
            assert game.simulation.outcome == Outcome(kit_seat, TavernEnd.POINTS_TO_WIN)
    assert points > 3  # more than the win against the wanderer: it scores against the pusher


@pytest.mark.parametrize("kit", KITS)
async def test_kit_plays_thud_on_both_sides_against_the_house_and_kills(
    kit: str, kit_command: KitCommand, kits_arena: tuple[Running, Watcher]
) -> None:
    arena, watcher = kits_arena
    command = kit_command(kit)
    # The house troll beats every dwarf here, the house dwarf included: that game only has to
    # be played out cleanly.
    for kit_seat, house, seed in ((0, "troll", 1), (0, "random", 3), (1, "dwarf", 4)):
        game = await kit_against_house(arena, command, "thud", kit_seat, house, seed)
        check_finished(game, watcher, [kit_seat])
        scores = game.scores()
        kills = 8 - scores["trolls"] // 4 if kit_seat == 0 else 32 - scores["dwarfs"]
        if house == "random":
            assert game.simulation.outcome is not None
            assert game.simulation.outcome.winner == kit_seat, scores
        if house != "troll":
            assert kills > 0, scores


@pytest.mark.parametrize(("waits", "joins"), [("go", "java"), ("c", "ruby"), ("php", "go")])
async def test_the_kits_play_each_other_by_random_join(
    waits: str, joins: str, kit_command: KitCommand, kits_arena: tuple[Running, Watcher]
) -> None:
    """Without --simulation: one kit waits in a new simulation, the other joins it (Thud: the
    free side)."""
    arena, watcher = kits_arena
    assert arena.tcp_port is not None
    first, second = kit_command(waits), kit_command(joins)
    for game_name, first_extra in (("tavern", []), ("thud", ["--side", "dwarf"])):
        first_task = asyncio.create_task(
            run(kit_args(first, arena.tcp_port, game_name, *first_extra))
        )
        async with asyncio.timeout(30):
            while not any(s.codec.name == game_name for s in watcher.simulations.values()):
                await asyncio.sleep(0.01)
            (simulation,) = [s for s in watcher.simulations.values() if s.codec.name == game_name]
            await simulation.wait_seated(0)
        outputs = await asyncio.gather(first_task, run(kit_args(second, arena.tcp_port, game_name)))
        async with asyncio.timeout(10):
            await simulation.done.wait()
        check_finished(Game(simulation, list(outputs)), watcher, [0, 1])
        ends = sorted(out.strip().splitlines()[-1].split()[0] for _, out, _ in outputs)
        assert ends in (["loss-game", "win-game"], ["draw-game", "draw-game"])
        assert "as team1" in outputs[0][1] or "as dwarf" in outputs[0][1]


async def test_every_kit_plays_the_same_moves(
    kit_command: KitCommand, kits_arena: tuple[Running, Watcher]
) -> None:
    """The same strategy in every kit: the same opponent and seed give the same game."""
    arena, watcher = kits_arena
    for game_name, kit_seat, house, seed in (("tavern", 0, "pusher", 7), ("thud", 1, "dwarf", 8)):
        turns = []
        for kit in KITS:
            game = await kit_against_house(
                arena, kit_command(kit), game_name, kit_seat, house, seed
            )
            check_finished(game, watcher, [kit_seat])
            turns.append(watcher.turns[game.simulation.id])
        assert len(turns[0]) > 20
        for kit, played in zip(KITS[1:], turns[1:], strict=True):
            assert played == turns[0], kit


# --- errors -----------------------------------------------------------------------------------


async def scripted_game(kit: list[str], game_name: str) -> tuple[int, str, str]:
    """A one-connection server that plays a few lines by hand: an error and a ping before a
    turn, errors after the kit's move and the same position again as the next turn, then a
    loss. The kit must ask for pings and answer each at once; each move must be valid and name
    the turn it answers."""
    game = GAMES[game_name].codec_for(test_config().game_settings[game_name])
    rules = game.rules
    moves: list[Any] = []
    answered: list[Any] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async def send(message: Any) -> None:
            writer.write(orjson.dumps(message) + b"\n")
            await writer.drain()

        async def receive() -> Any:
            async with asyncio.timeout(30):
                return orjson.loads(await reader.readline())

        join = await receive()
        assert join["type"] == "join-simulation" and join["game"] == game_name, join
        assert join.get("pings") is True, join
        players = [game.player_from_join(join), game.player_from_join({"nick": "other"})]
        state = rules.initial_state(players)
        clock = SeatClock(10_000, 30_000, 3, 10_000)
        await send(game.game_info_message("abc1234", 0, 1, "token", clock))
        await send({"type": "error", "message": "Turn timeout", "reason": "you passed"})
        for number in (5, 6):
            await send({"type": "ping", "id": 40 + number})
            pong = await receive()
            assert pong == {"type": "pong", "id": 40 + number}, pong
            await send(game.turn_message(state, 0, number, 10_000))
            reply = await receive()
            answered.append(reply.get("turn"))
            moves.append(rules.check(state, 0, game.candidate(reply)))  # if invalid: raises
            await send({"type": "error", "message": "Invalid turn", "reason": "scripted"})
            await send({"type": "error", "message": "Stale turn", "reason": "scripted"})
        await send(game.end_message(state, Outcome(1, TavernEnd.TURN_LIMIT), 0))
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        result = await run(kit_args(kit, port, game_name, "--simulation", "abc1234"))
    assert len(moves) == 2
    assert answered == [5, 6]
    return result


@pytest.mark.parametrize("kit", KITS)
async def test_kit_names_its_turns_survives_error_lines_and_a_failed_join(
    kit: str, kit_command: KitCommand, kits_arena: tuple[Running, Watcher]
) -> None:
    command = kit_command(kit)
    for game_name in ("tavern", "thud"):
        code, out, err = await scripted_game(command, game_name)
        assert code == 0, (out, err)
        assert out.strip().splitlines()[-1].startswith("loss-game"), out
        assert "Turn timeout" in err and "Invalid turn" in err and "Stale turn" in err
    # A join that fails ends the bot instead of leaving it waiting for a game.
    arena, _ = kits_arena
    assert arena.tcp_port is not None
    code, out, err = await run(kit_args(command, arena.tcp_port, "thud", "--simulation", "0000000"))
    assert code == 1
    assert "Wrong simulation ID" in err


# --- the ladder -------------------------------------------------------------------------------


def seek_args(kit: str, command: list[str], port: int, bot: str) -> list[str]:
    """A kit seeking a rated Tavern game under ``bot`` (the Node.js bot plays only Tavern)."""
    game = [] if kit == "js" else ["--game", "tavern"]
    return [*command, "--port", str(port), *game, "--seek", "--bot", bot]


def with_key(key: str) -> dict[str, str]:
    """The kit's environment: the key only there, never on its command line."""
    return {**os.environ, "TAVERN_BOT_KEY": key}


@pytest.mark.parametrize("kit", SEEKING_KITS)
async def test_kit_seeks_a_rated_game_with_its_key_from_the_environment(
    kit: str, kit_command: KitCommand, tmp_path: Path
) -> None:
    """Two registered bots, both this kit, seek: they are paired and play a rated game to its
    end under their names, which the records keep; a wrong key is refused and ends the kit."""
    command = kit_command(kit)
    database = str(tmp_path / "arena.db")
    keys = {name: added(database, name) for name in ("Grimli", "Ugluk")}
    settings = test_config().with_turn_limit("tavern", TAVERN_TURNS).game_settings
    async with arena_on(database, game_settings=settings) as (_, port):
        wrong = new_key()
        code, out, err = await run(seek_args(kit, command, port, "Grimli"), with_key(wrong))
        assert code != 0, (out, err)
        assert "Invalid bot key" in err
        assert wrong not in out + err
        outputs = await asyncio.gather(
            *(run(seek_args(kit, command, port, name), with_key(key)) for name, key in keys.items())
        )
    for (code, out, err), key in zip(outputs, keys.values(), strict=True):
        assert code == 0, (out, err)
        assert out.strip().splitlines()[-1].split(":")[0].split()[0] in ENDS, out
        assert key not in out + err
    with sqlite3.connect(database) as db:
        (game_id, status) = db.execute("SELECT id, status FROM games WHERE rated = 1").fetchone()
        nicks = db.execute("SELECT nick FROM seats WHERE game_id = ?", (game_id,)).fetchall()
        rated = db.execute("SELECT bot, games FROM ratings WHERE game = 'tavern'").fetchall()
    assert status == "finished"
    assert sorted(nick for (nick,) in nicks) == ["Grimli", "Ugluk"]
    assert sorted(rated) == [("Grimli", 1), ("Ugluk", 1)]


async def paced_then_played(kit: str, command: list[str]) -> tuple[int, str, str]:
    """A one-connection-at-a-time server that answers the first seek `Too many key checks`
    (as an arena whose address's key checks are all waiting does), then, on the connection the
    kit makes again, the same seek with game-info and a loss. Checks it got the same seek twice."""
    game = GAMES["tavern"].codec_for(test_config().game_settings["tavern"])
    seeks: list[Any] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async def send(message: Any) -> None:
            writer.write(orjson.dumps(message) + b"\n")
            await writer.drain()

        try:
            async with asyncio.timeout(30):
                seeks.append(orjson.loads(await reader.readline()))
                if len(seeks) == 1:
                    reason = "16 key checks from this address wait already: try again in 1 s"
                    await send({"type": "error", "message": PACED, "reason": reason})
                    await reader.read()  # until the kit hangs up
                    return
                players = [game.player_from_join({}), game.player_from_join({"nick": "other"})]
                state = game.rules.initial_state(players)
                clock = SeatClock(10_000, 30_000, 3, 10_000)
                await send(game.game_info_message("abc1234", 0, 1, "token", clock))
                await send(game.end_message(state, Outcome(1, TavernEnd.TURN_LIMIT), 0))
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        key = new_key()
        code, out, err = await run(seek_args(kit, command, port, "Grimli"), with_key(key))
    assert len(seeks) == 2 and seeks[0] == seeks[1], seeks
    assert seeks[0]["type"] == "seek" and seeks[0]["key"] == key
    assert key not in out + err
    return code, out, err


@pytest.mark.parametrize("kit", SEEKING_KITS)
async def test_kit_connects_and_seeks_again_when_its_key_checks_are_paced(
    kit: str, kit_command: KitCommand
) -> None:
    """Issue 30, item 9: `Too many key checks` is the arena asking to try again later, not a
    wrong key: the kit says so, waits, connects again, seeks again and plays."""
    code, out, err = await paced_then_played(kit, kit_command(kit))
    assert code == 0, (out, err)
    assert "Too many key checks" in err and "trying again in 1 s" in err, err
    assert out.strip().splitlines()[-1].split(":")[0].split()[0] == "loss-game", out


async def test_the_sdk_seeks_again_when_its_key_checks_are_paced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Python SDK sends its seek again on the same connection, backing off; a wrong key
    still raises."""
    monkeypatch.setattr(sdk, "RETRY_FIRST_S", 0.01)
    asked: list[Any] = []
    paced = {"type": "error", "message": "Too many key checks", "reason": "try again in 1 s"}
    answers = [paced, paced, {"type": "game-info", "side": "dwarf"}]
    answers.append({"type": "error", "message": "Invalid bot key", "reason": "no bot"})

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with asyncio.timeout(30):
            for answer in answers:
                asked.append(orjson.loads(await reader.readline()))
                writer.write(orjson.dumps(answer) + b"\n")
                await writer.drain()
            await reader.read()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        async with await sdk.ArenaClient.connect("127.0.0.1", port) as client:
            info = await client.seek(game="thud", bot="Grimli", key="tvk_right")
            assert info["side"] == "dwarf"
            with pytest.raises(sdk.ArenaError) as refused:
                await client.seek(game="thud", bot="Grimli", key="tvk_wrong")
    assert refused.value.message == "Invalid bot key"
    assert [message["key"] for message in asked] == ["tvk_right"] * 3 + ["tvk_wrong"]
