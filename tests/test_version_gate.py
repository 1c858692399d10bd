"""A hosted bot's new version gated by SPRT (issue 33, item 5): a hosted worker, by itself,
plays each new candidate against the active version (``tavern bots try`` does it by hand), each
isolated; a stronger one becomes active, the worker plays it on the ladder, and the bot's rating
moves by the Elo measured (not afresh); a weaker one stays a candidate; the result is kept with
the version."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from server.bot_versions import version_of, zipped_folder
from server.records import Records
from server.records.backends import backend_for, transaction
from server.records.ladder import current_season
from server.records.versions import store_version
from tavern_cli.version_gate import MU_PER_ELO
from tests.test_hosted_ladder import hosted_worker
from tests.test_identity import added, arena_on
from tests.test_jail import JAILED

ROOT = Path(__file__).resolve().parent.parent


def upload(folder: Path, database: Path, kind: str, activate: bool) -> str:
    """tests/bots/jailed.py of ``kind`` as Grimli's next version; its hash."""
    source = folder / f"grimli-{kind}"
    source.mkdir()
    shutil.copy(JAILED, source / "jailed.py")
    version = version_of(zipped_folder(source), f"python3 jailed.py {kind}")
    assert store_version(backend_for(str(database)), "Grimli", version, activate=activate)
    return version.content_hash


def tried(database: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    """``tavern bots try``, H1 a version 100 Elo stronger: a clear winner decides in a dozen
    games (the default, 10 Elo, needs some hundred even when every game is won)."""
    return subprocess.run(
        [sys.executable, "-m", "tavern_cli", "bots", "try", "Grimli", "thud", "--games", "40",
         "--concurrency", "4", "--sprt", "0", "100", "--database", str(database)],
        cwd=ROOT, capture_output=True, text=True, timeout=240, check=False,
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
    )  # fmt: skip


async def tried_by_a_worker(database: Path, cache: Path, version: str) -> str:
    """A hosted worker (its trials decided at 100 Elo, as ``tried``) on an arena, until it plays
    ``version`` on the ladder; its log."""
    trial = ("--sprt", "0", "100", "--trial-games", "40")
    async with (
        arena_on(str(database)) as (_, port),
        hosted_worker(database, port, cache, *trial) as (log, _),
    ):
        async with asyncio.timeout(180):
            while f"plays Grimli (version {version[:12]})" not in log.read_text():
                await asyncio.sleep(0.2)
    return log.read_text()


def test_a_stronger_version_replaces_the_active_one_with_its_rating_moved(
    tmp_path: Path,
) -> None:
    database = tmp_path / "arena.db"
    added(str(database), "Grimli")
    upload(tmp_path, database, "write", activate=False)  # version 1, active: it never plays
    stronger = upload(tmp_path, database, "honest", activate=False)  # version 2, a candidate
    db = backend_for(str(database)).connect()
    try:
        with transaction(db):
            db.execute(
                "INSERT INTO ratings (game, season, bot, mu, sigma, games, wins, losses, draws, "
                "last_game_id, last_played_at) VALUES ('thud', ?, 'Grimli', 20.0, 2.0, 30, 10, "
                "20, 0, 'x', 0)",
                (current_season(db),),
            )
    finally:
        db.close()
    # A hosted worker tries it by itself, then plays it on the ladder.
    log = asyncio.run(tried_by_a_worker(database, tmp_path / "cache", stronger))
    assert "worker tries Grimli's version 2" in log
    records = Records(database)
    records.open_to_read()
    versions = records.bot_versions("Grimli")
    assert [(v["number"], v["state"]) for v in versions] == [(2, "active"), (1, "retired")]
    trial = versions[0]["sprt"]
    assert trial["verdict"] == "H1" and trial["wins"] == trial["games"] > 0, trial
    table = records.ladder("thud", None)
    assert table is not None
    (rating,) = table["bots"]
    assert rating["mu"] == pytest.approx(20.0 + trial["elo"] * MU_PER_ELO)
    assert rating["games"] == 30  # the bot's record, not a fresh one

    # A weaker one stays a candidate, its result kept with it.
    upload(tmp_path, database, "socket", activate=False)  # version 3
    ran = tried(database, tmp_path / "cache")
    assert ran.returncode == 0, ran.stderr
    assert "not stronger: stays a candidate" in ran.stdout, ran.stdout
    versions = records.bot_versions("Grimli")
    assert [(v["number"], v["state"]) for v in versions] == [
        (3, "candidate"), (2, "active"), (1, "retired"),
    ]  # fmt: skip
    assert versions[0]["sprt"]["verdict"] == "H0"
    (unmoved,) = records.ladder("thud", None)["bots"]  # type: ignore[index]
    assert unmoved["mu"] == rating["mu"]
    listed = subprocess.run(
        [sys.executable, "-m", "tavern_cli", "bots", "versions", "Grimli", "--database",
         str(database)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert listed[0].split()[:2] == ["3", "candidate"] and "(tried: H0, Elo -" in listed[0]
    assert listed[1].split()[:2] == ["2", "active"] and "(tried: H1, Elo +400.0)" in listed[1]
