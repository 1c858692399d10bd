"""The ``tavern`` command's own checks, as a user meets them: every number and every file a
command line gives is checked before anything starts, and a mistake is one line naming the flag
and exit status 2, never a traceback; the installed command prints its help."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from server.config import ConfigError, config_from_mapping
from tests.conftest import ROOT
from tests.services import RedisServer, free_port

TAVERN = str(Path(sys.executable).parent / "tavern")  # the command the package installs
COMMAND_TIMEOUT_S = 60
WANDERER = "{python} -m bots.house_bot tavern wanderer --simulation {simulation} --port {port}"


def tavern(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """The command as a user types it. One that does not stop by itself (a server that started
    when it should have refused) is killed at the time limit, and shows as exit status -9."""
    with subprocess.Popen(
        [TAVERN, *arguments],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            out, err = process.communicate(timeout=COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def refused(run: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused command line printed (exit status 2, nothing else said)."""
    assert (run.returncode, run.stdout) == (2, ""), run
    assert run.stderr.count("\n") == 1, run.stderr
    return run.stderr.rstrip("\n")


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        (
            ["serve", "--port", "70000"],
            "tavern serve: argument --port: must be between 0 and 65535, got 70000",
        ),
        (
            ["serve", "--http-port", "99999"],
            "tavern serve: argument --http-port: must be between 0 and 65535, got 99999",
        ),
        (
            ["serve", "--port", "-1"],
            "tavern serve: argument --port: must be between 0 and 65535, got -1",
        ),
        (
            ["serve", "--port", "90o0"],
            "tavern serve: argument --port: must be an integer, got '90o0'",
        ),
        (
            ["tournament", "cup.toml", "--workers", "-1"],
            "tavern tournament: argument --workers: must be between 0 and 256, got -1",
        ),
        (
            ["worker", "--claim-timeout-ms", "10"],
            "tavern worker: argument --claim-timeout-ms: must be between 300 and 86400000, got 10",
        ),
        (
            ["validate", "--game", "thud", "--side", "dwarf", "--games", "0", "--", "bot"],
            "tavern validate: argument --games: must be between 1 and 1000, got 0",
        ),
        (
            ["validate", "--game", "thud", "--side", "dwarf", "--turn-timeout-ms", "0", "--", "b"],
            "tavern validate: argument --turn-timeout-ms: must be between 1 and 3600000, got 0",
        ),
        (
            ["play", "tavern", WANDERER, WANDERER, "--seed", "-1"],
            "tavern play: argument --seed: must be between 0 and 9007199254740991, got -1",
        ),
        (
            ["play", "tavern", WANDERER, WANDERER, "--turns", "0"],
            "tavern play: argument --turns: must be between 1 and 1000000, got 0",
        ),
        (
            ["replay", "abcdefg", "--turns", "5-2"],
            "tavern replay: argument --turns: turns '5-2': need 0 <= A <= B",
        ),
    ],
)
def test_every_number_on_a_command_line_is_checked_before_anything_starts(
    arguments: list[str], line: str
) -> None:
    assert refused(tavern(*arguments)) == line


@pytest.mark.parametrize(
    ("flag", "key", "value"), [("--port", "port", 70000), ("--http-port", "httpPort", -5)]
)
def test_a_flag_that_sets_a_config_key_is_held_to_the_config_s_range_and_words(
    flag: str, key: str, value: int
) -> None:
    with pytest.raises(ConfigError) as from_the_file:
        config_from_mapping({key: value})
    from_the_flag = refused(tavern("serve", flag, str(value)))
    assert from_the_flag.removeprefix(f"tavern serve: argument {flag}: ") == str(
        from_the_file.value
    ).removeprefix(f"key {key!r}: ")


def test_files_to_write_are_checked_before_anything_starts_and_no_folder_is_made(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "missing"
    cup = tmp_path / "cup.json"
    cup.write_text(json.dumps({"name": "cup", "game": "tavern", "bots": []}))
    source = tmp_path / "arena.db"
    source.write_bytes(b"")
    play = ["play", "tavern", WANDERER, WANDERER, "--turns", "5"]
    for arguments, flag in (
        ([*play, "--output", str(missing / "game.jsonl")], "tavern play: argument --output"),
        ([*play, "--database", str(missing / "kept.db")], "tavern play: argument --database"),
        (
            ["tournament", str(cup), "--database", str(missing / "a.db")],
            "tavern tournament: argument --database",
        ),
        (
            ["tournament", str(cup), "--log", str(missing / "t.log")],
            "tavern tournament: argument --log",
        ),
        (["worker", "--database", str(missing / "a.db")], "tavern worker: argument --database"),
        (["worker", "--log", str(missing / "w.log")], "tavern worker: argument --log"),
        (
            ["records", "copy", str(source), str(missing / "copy.db")],
            "tavern records copy: argument TO",
        ),
    ):
        assert refused(tavern(*arguments)) == f"{flag}: there is no folder {missing}"
        assert not missing.exists()
    folder = refused(tavern(*play, "--output", str(tmp_path)))
    assert folder == f"tavern play: argument --output: {tmp_path} is a folder, not a file"


def test_a_missing_program_is_named_as_the_command_names_it() -> None:
    run = tavern("play", "tavern", WANDERER, "nosuchprog --port {port} --side {side}")
    assert refused(run) == "tavern: bot 2: the program nosuchprog is not on the PATH"
    run = tavern("play", "tavern", "./bots/nosuch.sh {port}", WANDERER)
    assert refused(run) == f"tavern: bot 1: there is no program ./bots/nosuch.sh (in {ROOT})"


def test_the_installed_command_prints_its_help() -> None:
    """The installed command runs the parser whose every command's help tests/test_cli_help.py
    checks, word for word and as plain text."""
    run = tavern("--help")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: tavern [-h]")


def test_the_config_s_own_records_folder_is_still_made(tmp_path: Path) -> None:
    """Only a flag's file must be in a folder that exists: the records file a config names
    (``data/arena.db`` by default) has its folder made, as ``make run`` needs."""
    records = tmp_path / "data" / "arena.db"
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"database": str(records), "port": 0, "httpPort": 0}))
    with subprocess.Popen(
        [TAVERN, "serve", "--config", str(config)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        deadline = threading.Timer(COMMAND_TIMEOUT_S, process.kill)  # bounds the readline
        deadline.start()
        try:
            assert process.stdout is not None
            first = process.stdout.readline()
            assert first.startswith("tavern: bots connect to 127.0.0.1:"), first
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=COMMAND_TIMEOUT_S) == 0
        finally:
            deadline.cancel()
            if process.poll() is None:
                process.kill()
    assert records.is_file()


def test_a_host_that_does_not_exist_is_named_not_an_unknown_error(tmp_path: Path) -> None:
    """``--host nonsense.invalid`` once ended in ``Unknown error -2``."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"database": str(tmp_path / "arena.db")}))
    run = tavern(
        "serve",
        "--config",
        str(config),
        "--host",
        "nonsense.invalid",
        "--port",
        "0",
        "--http-port",
        "0",
    )
    assert run.returncode == 2, run
    assert "Traceback" not in run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert "no address 'nonsense.invalid' here" in last, last
    assert "--host" in last


def test_records_that_are_away_are_said_in_one_line_without_the_password(tmp_path: Path) -> None:
    """A PostgreSQL that is not running once ended every command in psycopg's traceback."""
    port = free_port()  # a port where nothing listens
    away = f"postgresql://tavern:secret@127.0.0.1:{port}/arena"
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"database": away, "port": 0, "httpPort": 0}))
    cup = tmp_path / "cup.json"
    bots = [{"name": name, "command": WANDERER} for name in ("a", "b")]
    cup.write_text(json.dumps({"name": "cup", "game": "tavern", "bots": bots}))
    for arguments in (
        ["serve", "--config", str(config)],
        ["replay", "abc", "--database", away],
        ["tournament", str(cup), "--database", away, "--log", str(tmp_path / "cup.log")],
        ["worker", "--redis", "redis://127.0.0.1:1/0", "--database", away],
    ):
        run = tavern(*arguments, cwd=tmp_path)
        assert run.returncode == 1, run
        assert "Traceback" not in run.stderr and "secret" not in run.stderr, run.stderr
        last = run.stderr.strip().splitlines()[-1]
        assert last.startswith(
            f"tavern: cannot open the records at postgresql://tavern:***@127.0.0.1:{port}/arena: "
        ), last


def test_a_redis_that_refuses_a_node_is_said_in_one_line(
    tmp_path: Path, redis: RedisServer
) -> None:
    """A database index Redis does not have will not mend itself: ``serve`` says so and stops
    (a Redis that is away is waited for instead)."""
    config = tmp_path / "config.json"
    url = f"redis://:secret@127.0.0.1:{redis.port}/99"
    config.write_text(json.dumps({"database": str(tmp_path / "a.db"), "port": 0, "httpPort": 0}))
    run = tavern("serve", "--config", str(config), "--redis", url, cwd=tmp_path)
    assert run.returncode == 2, run
    assert "Traceback" not in run.stderr and "secret" not in run.stderr, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(f"tavern: Redis at redis://:***@127.0.0.1:{redis.port}/99 refused"), last


def test_tavern_house_names_its_players_and_an_arena_that_is_not_there() -> None:
    """``tavern house`` (the lobby's command to copy) says what went wrong in one line."""
    unknown = tavern("house", "thud", "pusher", "--simulation", "abc1234")
    assert (unknown.returncode, unknown.stderr) == (
        2,
        "tavern: thud's house players are dwarf, troll, random, not 'pusher'\n",
    )
    port = free_port()  # a port where nothing listens
    away = tavern("house", "tavern", "pusher", "--port", str(port))
    assert (away.returncode, away.stderr) == (1, f"tavern: no arena answers at 127.0.0.1:{port}\n")
