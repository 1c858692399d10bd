"""Loading and validating config.json, and the command line's overrides."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from server.config import ArenaConfig, ConfigError, config_from_mapping, load_config
from tavern_cli.cli import build_parser, config_for

ROOT = Path(__file__).resolve().parent.parent


def test_shipped_config_has_the_original_keys_and_values() -> None:
    raw = orjson.loads((ROOT / "config.json").read_bytes())
    for key, value in {
        "port": 9000,
        "httpPort": 8080,
        "width": 21,
        "height": 21,
        "botsPerPlayer": 5,
        "pointsToWin": 3,
    }.items():
        assert raw[key] == value
    assert raw["positions"]["team1"]["barrel"] == {"x": 8, "y": 10}
    config = load_config(ROOT / "config.json")
    assert config == ArenaConfig()


def positions_with_barrel(x: int, y: int) -> dict[str, object]:
    return {
        "team1": {"barrel": {"x": x, "y": y}, "bots": []},
        "team2": {"barrel": {"x": 5, "y": 5}, "bots": []},
    }


@pytest.mark.parametrize(
    ("raw", "key", "problem"),
    [
        ({"port": "9000"}, "'port'", "integer"),
        ({"port": 70000}, "'port'", "between"),
        ({"width": True}, "'width'", "integer"),
        ({"pointsToWin": 0}, "'pointsToWin'", "between"),
        ({"turnTimeoutMs": -1}, "'turnTimeoutMs'", "between"),
        ({"prot": 9000}, "'prot'", "unknown key"),
        ({"host": ""}, "'host'", "non-empty string"),
        ({"redis": "localhost:6379"}, "'redis'", "redis://"),
        ({"redis": 6379}, "'redis'", "non-empty string"),
        ({"nodeHeartbeatMs": 1000, "nodeTtlMs": 1500}, "'nodeTtlMs'", "twice"),
        ({"botsPerPlayer": 6}, "'positions.team1.bots'", "botsPerPlayer"),
        ({"positions": {"team1": {}}}, "'positions'", "team1"),
        (
            {
                "positions": {
                    "team1": {"barrel": {"x": 0, "y": 10}, "bots": []},
                    "team2": {"barrel": {"x": 5, "y": 5}, "bots": []},
                }
            },
            "'positions.team1.barrel'",
            "edge",
        ),
        (
            {
                "positions": {
                    "team1": {"barrel": {"x": 30, "y": 10}, "bots": []},
                    "team2": {"barrel": {"x": 5, "y": 5}, "bots": []},
                }
            },
            "'positions.team1.barrel.x'",
            "between",
        ),
    ],
)
def test_bad_values_name_the_key(raw: dict[str, object], key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as error:
        config_from_mapping(raw)
    assert key in str(error.value)
    assert problem in str(error.value)


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
    config = config_from_mapping({"botsPerPlayer": 2})
    assert [len(team.bots) for team in config.positions] == [2, 2]


def test_flags_override_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"port": 9100, "httpPort": 8100, "host": "127.0.0.1"}')
    args = build_parser().parse_args(["serve", "--config", str(path), "--port", "9200"])
    config = config_for(args)
    assert (config.port, config.http_port, config.host) == (9200, 8100, "127.0.0.1")


def test_redis_from_the_file_or_the_command_line(tmp_path: Path) -> None:
    assert ArenaConfig().redis is None  # the default: one process, no Redis
    path = tmp_path / "config.json"
    path.write_text('{"redis": "redis://10.0.0.5:6379/0", "nodeTtlMs": 5000}')
    args = build_parser().parse_args(["serve", "--config", str(path)])
    assert config_for(args).redis == "redis://10.0.0.5:6379/0"
    assert config_for(args).node_ttl_ms == 5000
    flagged = ["serve", "--config", str(path), "--redis", "redis://:pw@10.0.0.6:6379/2"]
    assert config_for(build_parser().parse_args(flagged)).redis == "redis://:pw@10.0.0.6:6379/2"
    with pytest.raises(ConfigError, match="'redis'"):
        config_for(build_parser().parse_args(["serve", "--config", str(path), "--redis", "x"]))


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
