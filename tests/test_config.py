"""Loading and validating config.json, and the command line's overrides."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from server.arena import Arena
from server.config import (
    ArenaConfig,
    ConfigError,
    config_from_mapping,
    load_config,
    without_password,
)
from server.games import GAMES
from tavern_cli.cli import build_parser, config_for
from tavern_cli.config_file import SettingsFile

ROOT = Path(__file__).resolve().parent.parent


ORIGINAL_CONFIG = {  # the original server's server/config.json, every key at the top level
    "port": 9000,
    "httpPort": 8080,
    "width": 21,
    "height": 21,
    "botsPerPlayer": 5,
    "pointsToWin": 3,
    "positions": {
        "team1": {
            "barrel": {"x": 8, "y": 10},
            "bots": [{"x": x, "y": 18} for x in (4, 7, 10, 13, 16)],
        },
        "team2": {
            "barrel": {"x": 11, "y": 10},
            "bots": [{"x": x, "y": 2} for x in (4, 7, 10, 13, 16)],
        },
    },
}


def test_shipped_config_has_a_section_for_each_game_with_the_original_values() -> None:
    raw = orjson.loads((ROOT / "config.json").read_bytes())
    assert (raw["port"], raw["httpPort"]) == (9000, 8080)
    assert set(GAMES) <= set(raw)
    for key in ("width", "height", "botsPerPlayer", "pointsToWin", "positions"):
        assert raw["tavern"][key] == ORIGINAL_CONFIG[key]
    config = load_config(ROOT / "config.json")
    # Its records file, data/arena.db, is in its own folder, from wherever it is read.
    assert config == ArenaConfig(database=str(ROOT / "data" / "arena.db"))


def test_the_original_servers_config_still_reads() -> None:
    assert config_from_mapping(ORIGINAL_CONFIG) == ArenaConfig()
    changed = config_from_mapping({**ORIGINAL_CONFIG, "width": 17, "pointsToWin": 5})
    tavern = Arena(changed).codec("tavern")
    assert tavern.view.board_size() == (17, 21)
    assert tavern.counting_rules()["pointsToWin"] == 5
    # The original's keys are Tavern's: Thud keeps its own settings.
    assert changed.game_settings["thud"] == ArenaConfig().game_settings["thud"]


def test_a_games_section_sets_that_game_and_wins_over_the_top_level() -> None:
    config = config_from_mapping({"pointsToWin": 5, "tavern": {"pointsToWin": 7}})
    assert Arena(config).codec("tavern").counting_rules()["pointsToWin"] == 7
    # The arena's older top-level turnLimit is every game's; a section's is its game's.
    config = config_from_mapping({"turnLimit": 200, "thud": {"turnLimit": 100}})
    arena = Arena(config)
    assert arena.codec("tavern").counting_rules()["turnLimit"] == 200
    assert arena.codec("thud").counting_rules()["turnLimit"] == 100
    # Thud's engine ends every game by its 500th ply.
    assert config_from_mapping({"thud": {"turnLimit": 900}}).game_settings["thud"] == {}


def test_a_section_mixes_with_the_top_level_keys() -> None:
    positions = {
        "team1": {"barrel": {"x": 3, "y": 4}, "bots": [{"x": 1, "y": 8}]},
        "team2": {"barrel": {"x": 5, "y": 4}, "bots": [{"x": 1, "y": 1}]},
    }
    raw = {"width": 9, "height": 9, "tavern": {"botsPerPlayer": 1, "positions": positions}}
    settings = config_from_mapping(raw).game_settings["tavern"]
    assert (settings["width"], settings["height"], settings["positions"]) == (9, 9, positions)


def positions_with_barrel(x: int, y: int) -> dict[str, object]:
    """One dwarf a team, team1's barrel at (x, y)."""
    return {
        "team1": {"barrel": {"x": x, "y": y}, "bots": [{"x": 1, "y": 1}]},
        "team2": {"barrel": {"x": 5, "y": 5}, "bots": [{"x": 2, "y": 2}]},
    }


@pytest.mark.parametrize(
    ("raw", "key", "problem"),
    [
        ({"port": "9000"}, "'port'", "integer"),
        ({"port": 70000}, "'port'", "between"),
        ({"width": True}, "'width'", "integer"),
        ({"pointsToWin": 0}, "'pointsToWin'", "between"),
        ({"tavern": {"pointsToWin": 0}}, "'tavern.pointsToWin'", "between"),
        ({"turnLimit": 0}, "'turnLimit'", "between"),
        ({"thud": {"turnLimit": "500"}}, "'thud.turnLimit'", "integer"),
        ({"turnTimeoutMs": -1}, "'turnTimeoutMs'", "between"),
        ({"prot": 9000}, "'prot'", "unknown key"),
        ({"tavern": {"prot": 9000}}, "'tavern.prot'", "unknown key"),
        ({"thud": {"width": 21}}, "'thud.width'", "unknown key"),
        ({"thud": 500}, "'thud'", "must be an object"),
        ({"host": ""}, "'host'", "non-empty string"),
        ({"redis": "localhost:6379"}, "'redis'", "redis://"),
        ({"redis": 6379}, "'redis'", "a URL or a non-empty list of URLs"),
        ({"redis": []}, "'redis'", "a URL or a non-empty list of URLs"),
        ({"redis": ["redis://a:1", "b:2"]}, "'redis'", "got 'b:2'"),
        ({"nodeHeartbeatMs": 1000, "nodeTtlMs": 1500}, "'nodeTtlMs'", "twice"),
        ({"nodeName": "Node-1"}, "'nodeName'", "lowercase letters and digits"),
        ({"nodeName": "n" * 17}, "'nodeName'", "1 to 16"),
        ({"balancers": "127.0.0.2"}, "'balancers'", "must be a list"),
        ({"balancers": ["127.0.0.2", "haproxy.local"]}, "'balancers'", "'haproxy.local' is not"),
        ({"balancers": [7]}, "'balancers'", "7 is not an IP address"),
        ({"balancers": ["10.0.0.0/33"]}, "'balancers'", "not an IP address or network"),
        ({"botsPerPlayer": 6}, "'positions'", "botsPerPlayer"),
        ({"tavern": {"botsPerPlayer": 6}}, "'positions'", "botsPerPlayer"),
        ({"positions": {"team1": {}}}, "'positions'", "team1"),
        (
            {"botsPerPlayer": 1, "positions": positions_with_barrel(0, 10)},
            "'positions'",
            "team1's barrel",
        ),
        ({"botsPerPlayer": 1, "positions": positions_with_barrel(8, 20)}, "'positions'", "edge"),
        (
            {"botsPerPlayer": 1, "positions": positions_with_barrel(30, 10)},
            "'positions.team1.barrel.x'",
            "between",
        ),
        (
            {"tavern": {"botsPerPlayer": 1, "positions": positions_with_barrel(8, -1)}},
            "'tavern.positions.team1.barrel.y'",
            "between",
        ),
    ],
)
def test_bad_values_name_the_key(raw: dict[str, object], key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as error:
        config_from_mapping(raw)
    assert key in str(error.value)
    assert problem in str(error.value)


def test_balancers_are_addresses_or_networks_and_none_by_default() -> None:
    assert config_from_mapping({}).balancers == ()
    raw = {"balancers": ["127.0.0.2", "10.1.2.3/16", "::1"]}
    assert config_from_mapping(raw).balancers == ("127.0.0.2/32", "10.1.0.0/16", "::1/128")


def test_pieces_on_the_same_cell_are_refused() -> None:
    positions = {
        "team1": {"barrel": {"x": 8, "y": 10}, "bots": [{"x": 8, "y": 10}]},
        "team2": {"barrel": {"x": 11, "y": 10}, "bots": [{"x": 1, "y": 1}]},
    }
    with pytest.raises(ConfigError, match="same cell"):
        config_from_mapping({"botsPerPlayer": 1, "positions": positions})


def test_unreadable_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{nope")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_config(broken)


def test_fewer_bots_per_player_uses_the_first_positions() -> None:
    positions = config_from_mapping({"botsPerPlayer": 2}).game_settings["tavern"]["positions"]
    assert [len(positions[team]["bots"]) for team in ("team1", "team2")] == [2, 2]


def test_flags_override_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"port": 9100, "httpPort": 8100, "host": "127.0.0.1"}')
    args = build_parser().parse_args(["serve", "--config", str(path), "--port", "9200"])
    config, settings = config_for(args)
    assert (config.port, config.http_port, config.host) == (9200, 8100, "127.0.0.1")
    assert settings == SettingsFile(path, "--config")


def test_redis_from_the_file_or_the_command_line(tmp_path: Path) -> None:
    assert ArenaConfig().redis is None  # the default: one process, no Redis
    path = tmp_path / "config.json"
    path.write_text('{"redis": "redis://10.0.0.5:6379/0", "nodeTtlMs": 5000}')
    args = build_parser().parse_args(["serve", "--config", str(path)])
    assert config_for(args)[0].redis == "redis://10.0.0.5:6379/0"
    assert config_for(args)[0].node_ttl_ms == 5000
    flagged = ["serve", "--config", str(path), "--redis", "redis://:pw@10.0.0.6:6379/2"]
    assert config_for(build_parser().parse_args(flagged))[0].redis == "redis://:pw@10.0.0.6:6379/2"
    with pytest.raises(ConfigError, match="'redis'"):
        config_for(build_parser().parse_args(["serve", "--config", str(path), "--redis", "x"]))
    # A Redis Cluster by several of its servers: a list in the file, commas on the command line.
    path.write_text('{"redis": ["redis://10.0.0.5:7000/0", "redis://:pw@10.0.0.6:7000/0"]}')
    listed = config_for(build_parser().parse_args(["serve", "--config", str(path)]))[0].redis
    assert listed == "redis://10.0.0.5:7000/0,redis://:pw@10.0.0.6:7000/0"
    assert without_password(listed or "") == "redis://10.0.0.5:7000/0,redis://:***@10.0.0.6:7000/0"


def test_bad_config_stops_start_up_with_the_key(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"pointsToWin": "three"}')
    result = subprocess.run(
        [sys.executable, "-m", "tavern_cli", "serve", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 2
    assert "'pointsToWin'" in result.stderr
    assert "integer" in result.stderr
