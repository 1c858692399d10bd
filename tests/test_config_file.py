"""Which settings, and so which records, a ``tavern`` command uses (issue 30, item 14): from any
folder every command finds the records the arena uses (``--config``, ``$TAVERN_CONFIG``,
``./config.json``, the installed arena's own), a relative ``database`` is relative to its
config's folder, and each command that opens the records says which it used."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import threading
import urllib.request
from pathlib import Path

import orjson
import pytest

from server.config import load_config
from tavern_cli.config_file import INSTALLED, SettingsFile, settings_file
from tests.conftest import ROOT
from tests.test_command_line import COMMAND_TIMEOUT_S, TAVERN

HOUSE = (
    "{python} -m bots.house_bot thud %s --simulation {simulation} --side {side} --port {port} "
    "--seed {seed}"
)


def test_the_settings_file_is_the_first_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed = tmp_path / "installed"
    installed.mkdir()
    (installed / "config.json").write_text("{}")
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    # A config.json beside the packages is the arena's only in a checkout (its pyproject.toml).
    nothing = SettingsFile(None, "built-in defaults: no config file found")
    assert settings_file(None, {}, installed) == nothing
    (installed / "pyproject.toml").write_text("")
    assert settings_file(None, {}, installed) == SettingsFile(
        installed / "config.json", "the installed arena's"
    )
    (here / "config.json").write_text("{}")
    assert settings_file(None, {}, installed) == SettingsFile(Path("config.json"), "./config.json")
    environ = {"TAVERN_CONFIG": "arena.json"}
    assert settings_file(None, environ, installed) == SettingsFile(
        Path("arena.json"), "$TAVERN_CONFIG"
    )
    given = Path("given.json")
    assert settings_file(given, environ, installed) == SettingsFile(given, "--config")
    assert INSTALLED == ROOT  # this checkout: the editable install make run and the tests use


def test_a_relative_database_is_relative_to_its_config_s_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "arena"
    folder.mkdir()
    config = folder / "config.json"
    for database, expected in (
        ("data/arena.db", str(folder / "data" / "arena.db")),
        ("/var/lib/tavern/arena.db", "/var/lib/tavern/arena.db"),
        ("postgresql://tavern@127.0.0.1:5432/tavern", "postgresql://tavern@127.0.0.1:5432/tavern"),
    ):
        config.write_text(json.dumps({"database": database}))
        assert load_config(config).database == expected
    # As make run reads it: ./config.json, its records ./data/arena.db, as before.
    config.write_text(json.dumps({"database": "data/arena.db"}))
    assert load_config(Path("arena/config.json")).database == "arena/data/arena.db"
    (tmp_path / "config.json").write_text(json.dumps({"database": "data/arena.db"}))
    assert load_config(Path("config.json")).database == "data/arena.db"


def run(*arguments: str, cwd: Path, environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TAVERN, *arguments],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )


def test_every_command_finds_the_arena_s_records_from_any_folder(tmp_path: Path) -> None:
    """The arena runs from its folder, as ``make run`` runs it; a tournament run from an
    organiser's folder with ``$TAVERN_CONFIG`` is on the running arena's /league, and ``tavern
    replay`` from a third folder finds its game; each says which records it used."""
    arena = tmp_path / "arena"
    organiser = tmp_path / "organiser"
    other = tmp_path / "other"
    for folder in (arena, organiser, other):
        folder.mkdir()
    settings = {"port": 0, "httpPort": 0, "database": "data/arena.db", "thud": {"turnLimit": 16}}
    (arena / "config.json").write_text(json.dumps(settings))
    records = arena / "data" / "arena.db"
    environ = {k: v for k, v in os.environ.items() if k != "TAVERN_CONFIG"}
    with_config = {**environ, "TAVERN_CONFIG": str(arena / "config.json")}
    spec = {
        "name": "Far Cup",
        "game": "thud",
        "seed": 3,
        "bots": [
            {"name": "D", "side": "dwarf", "command": HOUSE % "dwarf"},
            {"name": "T", "side": "troll", "command": HOUSE % "troll"},
        ],
    }
    (organiser / "cup.json").write_text(json.dumps(spec))
    said = f"tavern: records {records} (the database of {arena / 'config.json'}"
    with subprocess.Popen(
        [TAVERN, "serve"],
        cwd=arena,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as server:
        deadline = threading.Timer(COMMAND_TIMEOUT_S, server.kill)  # bounds the readlines
        deadline.start()
        try:
            assert server.stdout is not None and server.stderr is not None
            server.stdout.readline()  # bots connect to ...
            watch = server.stdout.readline().strip().rsplit(" ", 1)[-1]
            assert watch.startswith("http://127.0.0.1:"), watch
            assert server.stderr.readline() == f"{said}, ./config.json)\n"

            cup = run("tournament", "cup.json", cwd=organiser, environ=with_config)
            assert cup.returncode == 0, cup.stderr
            assert cup.stderr.splitlines()[0] == f"{said}, $TAVERN_CONFIG)"
            assert not (organiser / "data").exists()  # once, its records went here
            with urllib.request.urlopen(f"{watch}api/tournaments", timeout=10) as answer:
                listed = orjson.loads(answer.read())
            assert "far-cup" in json.dumps(listed)
        finally:
            deadline.cancel()
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=COMMAND_TIMEOUT_S)
    with sqlite3.connect(records) as db:
        (game_id,) = db.execute("SELECT id FROM games WHERE tournament_id = 'far-cup'").fetchone()
    replay = run("replay", game_id, "--turns", "1", cwd=other, environ=with_config)
    assert replay.returncode == 0, replay.stderr
    assert replay.stderr == f"{said}, $TAVERN_CONFIG)\n"
    assert replay.stdout.startswith(f"thud {game_id}, seed ")
    # Run from anywhere with no config at hand: the installed arena's own config.json's records
    # (this checkout's), named; a game file opens no records, and says nothing of them.
    away = run("replay", "nosuch1", cwd=other, environ=environ)
    assert away.returncode == 1
    assert away.stderr.splitlines()[0] == (
        f"tavern: records {ROOT / 'data' / 'arena.db'} (the database of {ROOT / 'config.json'}, "
        "the installed arena's)"
    )
    written = run("replay", game_id, "--output", "game.jsonl", cwd=other, environ=with_config)
    assert written.returncode == 0, written.stderr
    from_file = run("replay", "game.jsonl", "--turns", "1", cwd=other, environ=environ)
    assert (from_file.returncode, from_file.stderr) == (0, "")
    assert from_file.stdout == replay.stdout
