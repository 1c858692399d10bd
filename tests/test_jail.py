"""Bots isolated under bubblewrap (server/jail.py, issue 33, item 3): a tournament in which real
bot programs, each in a folder of its own, try to get out: open a socket, read another bot's
file and the records, write outside their tmp, fork without end, fill memory, sleep past their
game, leave a process in a session of its own. Each is stopped, its game's record names it as
the bot's fault, and an isolated bot that plays honestly plays its game through the relay
beside them, to its end."""

from __future__ import annotations

import asyncio
import io
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from playwright.async_api import expect

from server.bot_versions import Version, version_of, zipped_folder
from server.config import config_from_mapping
from server.jail import jailed, killed, relay_on
from server.league import tables
from server.records import Records
from server.records.backends import backend_for
from server.records.queries import GameFilter
from server.records.versions import store_version
from server.sandbox import MAX_PROCESSES
from server.tournament.runner import TournamentRunner
from server.tournament.spec import TournamentError, spec_from_mapping
from tests.browser import chromium_pages
from tests.test_bot_versions import arena_with, command
from tests.test_identity import added
from tests.test_tournament import ROOT, house

JAILED = ROOT / "tests" / "bots" / "jailed.py"
MEMORY_MB = 256


def jailed_bot(folder: Path, kind: str, *arguments: str) -> dict[str, Any]:
    """An isolated dwarf of ``kind`` (tests/bots/jailed.py), alone in a folder of its own."""
    own = folder / kind
    own.mkdir()
    shutil.copy(JAILED, own / "jailed.py")
    (own / "secret.txt").write_text(f"the secret of {kind}\n")
    command = ["{python}", "jailed.py", kind, *arguments]
    return {"name": kind, "side": "dwarf", "isolated": str(own), "command": command}


def uploaded_honest(folder: Path, database: Path | str, bot: str, pause_s: float = 0.0) -> Version:
    """tests/bots/jailed.py's honest Thud bot, uploaded as the registered ``bot``'s version
    (waiting ``pause_s`` before its second move)."""
    return uploaded(folder, database, "honest", bot, activate=False, arguments=f" {pause_s}")


def uploaded(
    folder: Path,
    database: Path | str,
    kind: str,
    bot: str = "Grimli",
    activate: bool = True,
    arguments: str = "",
) -> Version:
    """tests/bots/jailed.py of ``kind``, uploaded as ``bot``'s version (active, by default)."""
    source = folder / f"{bot.casefold()}-{kind}"
    source.mkdir()
    shutil.copy(JAILED, source / "jailed.py")
    version = version_of(zipped_folder(source), f"python3 jailed.py {kind}{arguments}")
    assert store_version(backend_for(str(database)), bot, version, activate=activate)
    return version


def escaped_processes() -> list[str]:
    """The processes left running by the ``setsid`` bot, if any got out."""
    left = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if cmdline.read_bytes() == b"sleep\x004321.5\x00":
                left.append(cmdline.parent.name)
        except OSError:
            continue
    return left


async def test_isolated_bots_that_try_to_get_out_are_stopped_and_lose_by_their_fault(
    tmp_path: Path,
) -> None:
    bots_folder = tmp_path / "bots"
    bots_folder.mkdir()
    records_path = tmp_path / "arena.db"
    other_bot = bots_folder / "honest" / "secret.txt"
    cup = {
        "name": "jail",
        "game": "thud",
        "seed": 3,
        "parallel": 2,
        # Charged their CPU, they may take three times as long on the wall clock: a bot that
        # never answers its first turn holds its game 3 x 1.5 + 0.5 s.
        "limits": {"turn_timeout_ms": 1000, "startup_ms": 1500, "memory_mb": MEMORY_MB},
        "bots": [
            house("thud", "troll", "troll"),
            jailed_bot(bots_folder, "honest"),
            jailed_bot(bots_folder, "socket", "{port}"),
            jailed_bot(bots_folder, "read", str(other_bot), str(records_path)),
            jailed_bot(bots_folder, "write"),
            jailed_bot(bots_folder, "forkbomb"),
            jailed_bot(bots_folder, "memory"),
            jailed_bot(bots_folder, "sleep"),
            jailed_bot(bots_folder, "setsid"),
        ],
    }
    spec = spec_from_mapping(cup, ROOT)
    config = config_from_mapping({"thud": {"turnLimit": 30}})
    records = Records(records_path)
    await asyncio.to_thread(records.open)
    try:
        async with asyncio.timeout(240):
            results = await TournamentRunner(spec, config, records, io.StringIO()).run()
        assert len(results) == 8
        page = await asyncio.to_thread(records.games, GameFilter(tournament=spec.id))
        games = {}
        for summary in page["games"]:
            record = await asyncio.to_thread(records.game, summary["id"])
            assert record is not None
            games[record["players"][0]["bot"]] = record
    finally:
        await asyncio.to_thread(records.close)

    def stderr(bot: str) -> str:
        return str(games[bot]["players"][0]["stderr"])

    for bot, record in games.items():
        assert "ESCAPED" not in stderr(bot), (bot, stderr(bot))
        if bot != "honest":  # every other dwarf lost, by its own fault
            assert record["result"]["winner"] == "troll", (bot, record["result"])
    # The honest one played through the relay, to the game's end (30 plies).
    honest = games["honest"]
    assert honest["result"]["reason"] not in ("Turn timeout", "Player disconnected")
    assert honest["turnCount"] == 30, honest["result"]
    assert honest["players"][0]["exit"].endswith("at the end of the game")
    # Each of its moves is kept with the CPU its processes used for it (in its cgroup).
    cpu = [turn["action"].get("cpuMs") for turn in honest["turns"] if turn["seat"] == "dwarf"]
    assert len(cpu) == 15 and all(isinstance(ms, int) and 0 <= ms < 1000 for ms in cpu), cpu
    # No network: not even the arena's port on the loopback.
    assert stderr("socket").count("ATTACK socket: blocked") == 2
    assert "Network is unreachable" in stderr("socket")
    # Neither another bot's files nor the records are there to read.
    assert stderr("read").count("ATTACK read: blocked") == 2
    assert "No such file or directory" in stderr("read")
    # Its own folder and the system are read-only; its tmp is its own to write.
    assert stderr("write").count("ATTACK write: blocked") == 2
    assert "Read-only file system" in stderr("write")
    assert "wrote in its home, /tmp, its own tmp" in stderr("write")
    assert not (bots_folder / "write" / "written").exists()
    for bot in ("socket", "read", "write", "setsid"):
        assert games[bot]["players"][0]["exit"] == "exited with code 1", games[bot]["players"]
        assert games[bot]["result"]["reason"] == "Player disconnected"
    # A fork bomb stops at the process limit, and the bot loses on time.
    assert "ATTACK forkbomb: blocked after" in stderr("forkbomb")
    blocked_after = int(stderr("forkbomb").split("blocked after ")[1].split()[0])
    assert blocked_after < MAX_PROCESSES
    assert games["forkbomb"]["result"]["reason"] == "Turn timeout"
    # Filling memory in four processes, each within its own address space's limit: the whole
    # bot is killed at its limit, counted over all of them.
    assert games["memory"]["players"][0]["exit"] == f"killed: memory limit ({MEMORY_MB} MB)"
    # A bot that sleeps past its turn loses on time, and is stopped with its game.
    assert games["sleep"]["result"]["reason"] == "Turn timeout"
    # The process started in a session of its own went with its bot.
    assert "started a process in a session of its own" in stderr("setsid")
    assert escaped_processes() == []
    # The league counts each fault against its bot.
    dwarfs = {standing.bot: standing for standing in tables(results)["dwarf"]}
    assert {bot for bot, standing in dwarfs.items() if standing.crashes} >= {
        "socket", "read", "write", "setsid", "memory"
    }  # fmt: skip


def test_an_isolated_bot_needs_a_folder_of_its_own(tmp_path: Path) -> None:
    cup = {
        "name": "jail",
        "game": "thud",
        "bots": [
            house("thud", "troll", "troll"),
            {"name": "x", "command": "python3 bot.py", "isolated": "nowhere", "side": "dwarf"},
        ],
    }
    try:
        spec_from_mapping(cup, tmp_path)
    except TournamentError as error:
        assert "key 'bots[1].isolated'" in str(error) and "is not a folder" in str(error)
    else:
        raise AssertionError("a missing folder was taken")


async def test_a_hosted_bot_plays_its_active_version_from_the_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its files and run command uploaded (as ``tavern bots upload`` keeps them), a hosted bot
    in a tournament plays its active version: unpacked once into the machine's cache of
    versions, run isolated in it, charged its CPU time (its move after a wait longer than its
    turn's time is in time)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    database = tmp_path / "arena.db"
    key = added(str(database), "Grimli")
    version = uploaded_honest(tmp_path, database, "Grimli", pause_s=2.2)
    cup = {
        "name": "hosted",
        "game": "thud",
        "seed": 5,
        "limits": {"turn_timeout_ms": 2000, "startup_ms": 5000},
        "bots": [
            house("thud", "troll", "troll"),
            {"name": "Grimli", "hosted": "Grimli", "side": "dwarf"},
        ],
    }
    spec = spec_from_mapping(cup, tmp_path)
    records = Records(database)
    await asyncio.to_thread(records.open)
    try:
        config = config_from_mapping({"thud": {"turnLimit": 20}})
        async with asyncio.timeout(120):
            (result,) = await TournamentRunner(spec, config, records, io.StringIO()).run()
        record = await asyncio.to_thread(records.game, result.game_id)
    finally:
        await asyncio.to_thread(records.close)
    assert record is not None and record["turnCount"] == 20, record and record["result"]
    assert not any(turn["timedOut"] for turn in record["turns"])
    assert record["players"][0]["exit"].endswith("at the end of the game")
    cached = tmp_path / "cache" / "tavern" / "versions"
    assert [folder.name for folder in cached.iterdir()] == [version.content_hash]
    # Its owner reads its logs with its key, on the arena; the organiser from the records.
    async with arena_with(database) as served, aiohttp.ClientSession() as http:
        url = f"{served.url}/api/bots/grimli/logs"
        async with http.post(url, json={"key": key, "games": 5}) as response:
            assert response.status == 200
            logs = await response.json()
        async with http.post(url, json={"key": "tvk_wrong"}) as response:
            assert response.status == 403
        (game,) = logs["games"]
        assert (logs["bot"], game["id"], game["seat"]) == ("Grimli", result.game_id, "dwarf")
        assert game["exit"].endswith("at the end of the game")
        assert len(game["turns"]) == 10 and all(t["cpuMs"] >= 0 for t in game["turns"])
        code, out, errors = await command(
            [sys.executable, "-m", "tavern_cli", "bots", "logs", "grimli", "--database",
             str(database)], None,
        )  # fmt: skip
        assert code == 0, errors
        assert out.startswith(f"{result.game_id} (thud, dwarf): ")
        assert "  turn 1: " in out and " ms CPU" in out
        # And on its page, with its key typed in (kept nowhere).
        async with chromium_pages(served.url) as pages:
            page = await pages.open("/bots/Grimli", connected=False)
            await page.fill("#logs-key", key)
            await page.click("#logs button[type=submit]")
            # (its answer may wait its turn behind the key checks of the page's address)
            status = page.locator("#logs-status")
            await expect(status).to_have_text("Its last game.", timeout=30_000)
            entry = page.locator(f'#logs-list > li[data-game="{result.game_id}"]')
            await expect(entry).to_contain_text("thud as dwarf")
            await expect(entry.locator(".turn-logs > li")).to_have_count(10)
            await expect(entry.locator(".turn-logs > li").first).to_contain_text("ms CPU")
            await expect(page.locator("#logs-key")).to_have_value("")


@pytest.mark.parametrize(
    ("source", "text", "build", "run"),
    [
        ("bot.py", 'print("ready")', None, ["python3", "bot.py"]),
        ("bot.js", 'console.log("ready")', None, ["node", "bot.js"]),
        ("bot.rb", 'puts "ready"', None, ["ruby", "bot.rb"]),
        ("Bot.java", 'class Bot { public static void main(String[] a) '
         '{ System.out.println("ready"); } }', None, ["java", "Bot.java"]),
        ("bot.c", '#include <stdio.h>\nint main(void) { puts("ready"); return 0; }\n',
         ["gcc", "-o", "bot", "bot.c"], ["./bot"]),
        ("main.go", 'package main\nimport "fmt"\nfunc main() { fmt.Println("ready") }\n',
         ["go", "build", "-o", "bot", "main.go"], ["./bot"]),
    ],
)  # fmt: skip
def test_the_toolchains_docs_hosting_lists_run_isolated(
    tmp_path: Path, source: str, text: str, build: list[str] | None, run: list[str]
) -> None:
    """Each language of docs/hosting.md's table runs under bubblewrap as a version would: the
    system's own program, the bot's files read-only in its folder."""
    (tmp_path / source).write_text(text)
    if build is not None:
        subprocess.run(build, cwd=tmp_path, check=True, timeout=60)
    ran = subprocess.run(
        jailed(run, tmp_path, {}), capture_output=True, text=True, timeout=60, check=False
    )
    assert (ran.returncode, ran.stdout) == (0, "ready\n"), ran.stderr


class PassingStamp:
    """A relay's stamp that changes nothing (what a worker's does is tested on the ladder)."""

    def sent(self, line: bytes) -> None:
        """Nothing to note."""

    def stamped(self, line: bytes) -> bytes:
        return line


async def test_a_bot_line_past_the_relay_s_bound_silences_the_bot_not_the_relay() -> None:
    """A hosted bot that writes a line longer than its worker reads is heard no more, by its
    own fault (it then loses on time): the relay ends as if it had exited, and the connection
    to the arena stays the worker's (closed, it would void the game as a worker lost)."""
    heard: list[bytes] = []

    async def arena_side(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heard.append(await reader.read())
        writer.close()

    server = await asyncio.start_server(arena_side, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    flood = "import sys, time; print('x' * 100_000, flush=True); time.sleep(30)"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", flood, limit=4096,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        async with asyncio.timeout(10):
            assert await relay_on(process, reader, writer, None, PassingStamp()) is False
        assert not writer.is_closing()  # the connection is still the worker's
        writer.close()
        async with asyncio.timeout(10):
            while not heard:  # the arena's side reads to the end of the connection
                await asyncio.sleep(0.01)
        assert heard == [b""]  # nothing of the flood reached the arena
    finally:
        async with asyncio.timeout(10):
            await killed(process)  # its stdout left full: read to its end, or the wait hangs
        server.close()
        await server.wait_closed()
