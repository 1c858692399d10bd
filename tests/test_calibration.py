"""Clocks scaled by a worker's speed (issue 33, item 4, fishtest's way): the fixed benchmark
runs and gives a speed within its bounds, and a tournament with isolated bots on a machine
half as fast as the reference gives them twice the time; one without isolated bots keeps the
arena's clocks."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from server import calibration
from server.calibration import REFERENCE_S, SPEED_BOUNDS, benchmark_s, speed
from server.config import ArenaConfig
from server.records import Records
from server.tournament.runner import TournamentRunner
from server.tournament.spec import spec_from_mapping
from tests.test_tournament import house


def cup(folder: Path, isolated: bool) -> dict[str, object]:
    dwarf: dict[str, object] = {"name": "d", "side": "dwarf", "command": "python3 bot.py"}
    if isolated:
        (folder / "d").mkdir(exist_ok=True)
        dwarf["isolated"] = "d"
    limits = {"turn_timeout_ms": 1000, "clock": {"initialMs": 60_000, "incrementMs": 1000}}
    bots = [dwarf, house("thud", "troll", "troll")]
    return {"name": "c", "game": "thud", "limits": limits, "bots": bots}


def test_a_speed_is_the_reference_s_time_over_this_machine_s_within_its_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert benchmark_s() > 0  # the benchmark itself runs
    for measured, expected in (
        (REFERENCE_S * 2, 0.5),  # half as fast
        (REFERENCE_S / 3, 3.0),
        (REFERENCE_S * 100, SPEED_BOUNDS[0]),  # a measure past the bounds is held to them
        (REFERENCE_S / 100, SPEED_BOUNDS[1]),
    ):
        speed.cache_clear()
        monkeypatch.setattr(calibration, "benchmark_s", lambda measured=measured: measured)
        assert speed() == pytest.approx(expected)
    speed.cache_clear()


def test_isolated_bots_on_a_slower_machine_get_longer_clocks(tmp_path: Path) -> None:
    records = Records(tmp_path / "arena.db")
    config = ArenaConfig(turn_timeout_ms=5000)
    slow = TournamentRunner(spec_from_mapping(cup(tmp_path, True), tmp_path), config, records,
                            io.StringIO(), speed=0.5)  # fmt: skip
    assert (slow.config.turn_timeout_ms, slow.clock_scale) == (2000, 2.0)
    fast = TournamentRunner(spec_from_mapping(cup(tmp_path, True), tmp_path), config, records,
                            io.StringIO(), speed=2.0)  # fmt: skip
    assert fast.config.turn_timeout_ms == 500
    spec = spec_from_mapping(cup(tmp_path, False), tmp_path)
    connected = TournamentRunner(spec, config, records, io.StringIO(), speed=0.5)
    assert (connected.config.turn_timeout_ms, connected.clock_scale) == (1000, 1.0)
