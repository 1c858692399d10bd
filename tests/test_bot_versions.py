"""Hosted bots' versions (issue 33, item 1): an upload read into a normalized archive and its
hash within stated bounds (server/bot_versions.py), kept in the records on SQLite and
PostgreSQL (server/records/versions.py), uploaded by its owner over HTTP with its key or by the
organiser (``tavern bots upload``), and unpacked once by a worker."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import stat
import sys
import time
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from playwright.async_api import FilePayload, expect

import visor.bot_versions
from server.bot_versions import (
    MAX_FILES,
    VersionRefused,
    unpacked,
    version_of,
    zipped_folder,
)
from server.records import Records
from server.records.backends import backend_for, transacted
from server.records.identities import roster_kept
from server.records.versions import claim_trial, keep_trial, store_version
from tests.browser import chromium_pages
from tests.conftest import Served, serving_visor, test_config
from tests.test_identity import added

ROOT = Path(__file__).resolve().parent.parent
BOT = {"bot.py": b"print('hello')\n", "lib/moves.py": b"MOVES = []\n"}


def zipped(
    files: dict[str, bytes], reverse: bool = False, when: tuple[int, ...] = (2024, 5, 1, 12, 0, 0)
) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(files, reverse=reverse):
            info = zipfile.ZipInfo(name, when)  # type: ignore[arg-type]
            archive.writestr(info, files[name])
    return buffer.getvalue()


def test_the_same_files_make_the_same_version_however_they_were_zipped() -> None:
    first = version_of(zipped(BOT), "python3 bot.py")
    second = version_of(zipped(BOT, reverse=True, when=(2021, 1, 2, 3, 4, 6)), " python3 bot.py ")
    assert first.content_hash == second.content_hash and first.archive == second.archive
    assert (first.files, first.unpacked_bytes) == (2, sum(map(len, BOT.values())))
    assert version_of(zipped(BOT), "python3 lib/moves.py").content_hash != first.content_hash
    changed = version_of(zipped({**BOT, "bot.py": b"print('bye')\n"}), "python3 bot.py")
    assert changed.content_hash != first.content_hash


@pytest.mark.parametrize(
    ("files", "run", "said"),
    [
        ({"../escape.py": b"x"}, "python3 bot.py", "is not a relative path"),
        ({"/etc/passwd": b"x"}, "python3 bot.py", "is not a relative path"),
        ({"a/./b.py": b"x"}, "python3 bot.py", "is not a relative path"),
        ({}, "python3 bot.py", "holds no file"),
        (BOT, "", "run command must be"),
        (BOT, "x" * 501, "run command must be"),
        ({f"f{i}": b"" for i in range(MAX_FILES + 1)}, "python3 bot.py", "more than 2000 files"),
    ],
)
def test_an_upload_that_is_no_version_is_refused_saying_why(
    files: dict[str, bytes], run: str, said: str
) -> None:
    with pytest.raises(VersionRefused, match=said):
        version_of(zipped(files), run)


def test_links_duplicates_and_what_is_no_zip_are_refused() -> None:
    with pytest.raises(VersionRefused, match="not a zip archive"):
        version_of(b"PK not really", "python3 bot.py")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        link = zipfile.ZipInfo("bot.py")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
    with pytest.raises(VersionRefused, match="not a regular file"):
        version_of(buffer.getvalue(), "python3 bot.py")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive, pytest.warns(UserWarning, match="Duplicate"):
        archive.writestr("bot.py", "a")
        archive.writestr("bot.py", "b")
    with pytest.raises(VersionRefused, match="twice"):
        version_of(buffer.getvalue(), "python3 bot.py")


def test_a_version_is_unpacked_once_read_only(tmp_path: Path) -> None:
    version = version_of(zipped(BOT), "python3 bot.py")
    folder = unpacked(version.archive, version.content_hash, tmp_path / "cache")
    assert folder.name == version.content_hash
    assert (folder / "lib" / "moves.py").read_bytes() == BOT["lib/moves.py"]
    assert not os.access(folder / "bot.py", os.W_OK) or os.geteuid() == 0
    assert stat.S_IMODE((folder / "bot.py").stat().st_mode) == 0o555
    assert stat.S_IMODE(folder.stat().st_mode) == 0o555
    assert unpacked(b"not read again", version.content_hash, tmp_path / "cache") == folder
    assert [path.name for path in (tmp_path / "cache").iterdir()] == [version.content_hash]
    # A folder zipped by the command line makes the same version as its zip.
    source = tmp_path / "source"
    (source / "lib").mkdir(parents=True)
    for name, data in BOT.items():
        (source / name).write_bytes(data)
    assert version_of(zipped_folder(source), "python3 bot.py").content_hash == version.content_hash


def test_versions_in_the_records_first_active_then_candidates_unless_forced(
    records_database: str,
) -> None:
    added(records_database, "Grimli")
    backend = backend_for(records_database)
    first = version_of(zipped(BOT), "python3 bot.py")
    second = version_of(zipped({**BOT, "bot.py": b"print(2)\n"}), "python3 bot.py")
    third = version_of(zipped({**BOT, "bot.py": b"print(3)\n"}), "python3 bot.py")
    stored = store_version(backend, "grimli", first, activate=False)
    assert stored is not None and (stored.bot, stored.number, stored.state, stored.added) == (
        "Grimli", 1, "active", True,
    )  # fmt: skip
    stored = store_version(backend, "Grimli", second, activate=False, games=("thud",))
    assert stored is not None and (stored.number, stored.state) == (2, "candidate")
    again = store_version(backend, "Grimli", second, activate=False)
    assert again is not None and (again.number, again.added) == (2, False)
    stored = store_version(backend, "Grimli", third, activate=True)
    assert stored is not None and (stored.number, stored.state) == (3, "active")
    assert store_version(backend, "Nobody", first, activate=False) is None
    records = Records(records_database)
    records.open_to_read()
    listed = records.bot_versions("GRIMLI")
    assert [(v["number"], v["state"]) for v in listed] == [
        (3, "active"), (2, "candidate"), (1, "retired"),
    ]  # fmt: skip
    assert listed[0]["hash"] == third.content_hash and "archive" not in listed[0]
    assert records.version_archive(first.content_hash) == (first.archive, "python3 bot.py")
    assert records.active_version("grimli") == (third.content_hash, "python3 bot.py")
    # The games each plays: version 2 Thud only, the others every game.
    assert [v["games"] for v in listed] == [[], ["thud"], []]
    assert records.active_hosted("tavern") == [("Grimli", third.content_hash, "python3 bot.py")]
    # A hosted worker of a game it plays takes the candidate to try it; no other worker takes
    # it until the one that did is taken for lost.
    now = time.time()
    for game, at, taken in (
        ("tavern", now, None),
        ("thud", now, ("Grimli", 2)),
        ("thud", now + 1, None),
        ("thud", now + 3601, ("Grimli", 2)),
    ):
        with transacted(backend) as db:
            assert claim_trial(db, game, at, 3600.0) == taken


@contextlib.asynccontextmanager
async def arena_with(database: Path) -> AsyncIterator[Served]:
    """An arena and its visor on ``database``, its roster kept from the records."""
    async with (
        serving_visor(test_config(), database) as served,
        roster_kept(served.records.roster_changes, served.records, served.arena.roster),
    ):
        yield served


def form(key: str, run: str, archive: bytes, activate: bool = False) -> aiohttp.FormData:
    data = aiohttp.FormData()
    data.add_field("key", key)
    data.add_field("run", run)
    data.add_field("activate", "1" if activate else "0")
    data.add_field("archive", archive, filename="bot.zip", content_type="application/zip")
    return data


async def test_its_owner_uploads_a_version_with_its_key_and_nobody_else_can(
    tmp_path: Path,
) -> None:
    database = tmp_path / "arena.db"
    key = added(str(database), "Grimli")
    async with arena_with(database) as served, aiohttp.ClientSession() as http:
        url = f"{served.url}/api/bots/Grimli/versions"
        async with http.post(url, data=form(key, "python3 bot.py", zipped(BOT))) as response:
            assert response.status == 201
            answer = await response.json()
        assert (answer["bot"], answer["number"], answer["state"], answer["files"]) == (
            "Grimli", 1, "active", 2,
        )  # fmt: skip
        assert key not in str(answer)
        wrong = form("tvk_wrong", "python3 bot.py", zipped(BOT))
        async with http.post(url, data=wrong) as response:
            assert response.status == 403
            assert "Invalid bot key" in (await response.json())["error"]
        bad = form(key, "python3 bot.py", zipped({"../x": b""}))
        async with http.post(url, data=bad) as response:
            assert response.status == 400
            assert "not a relative path" in (await response.json())["error"]
        async with http.post(url, data=b"plain") as response:
            assert response.status == 400
        unknown = form(key, "python3 bot.py", zipped(BOT))
        unknown.add_field("games", "thud,chess")
        async with http.post(url, data=unknown) as response:
            assert response.status == 400
            assert "no game 'chess'" in (await response.json())["error"]
        async with http.get(url) as response:
            listed = (await response.json())["versions"]
        assert [(v["number"], v["state"], v["hash"]) for v in listed] == [
            (1, "active", answer["hash"])
        ]
        # The command line, with the bot's key, through the arena; then as the organiser.
        source = tmp_path / "source"
        source.mkdir()
        (source / "bot.py").write_text("print(2)\n")
        upload = [sys.executable, "-m", "tavern_cli", "bots", "upload", "Grimli", str(source)]
        upload += ["--run", "python3 bot.py", "--database", str(database)]
        code, out, errors = await command([*upload, "--arena", served.url, "--game", "thud"], key)
        assert code == 0, errors
        assert out.startswith("Grimli version 2: 1 files, candidate, hash ")
        async with http.get(url) as response:
            assert [v["games"] for v in (await response.json())["versions"]] == [["thud"], []]
        code, out, errors = await command([*upload, "--arena", served.url], "tvk_wrong")
        assert code == 1 and "Invalid bot key" in errors
        code, out, errors = await command([*upload, "--activate"], None)
        assert code == 0, errors
        assert out.startswith("Grimli version 2 (uploaded before): 1 files, active")


async def command(arguments: list[str], key: str | None) -> tuple[int, str, str]:
    """A ``tavern`` command run beside the arena (``key``: its TAVERN_BOT_KEY, or none)."""
    environment = {name: value for name, value in os.environ.items() if name != "TAVERN_BOT_KEY"}
    if key is not None:
        environment["TAVERN_BOT_KEY"] = key
    process = await asyncio.create_subprocess_exec(
        *arguments, env=environment, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(60):
        out, errors = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), errors.decode()


async def test_the_owner_uploads_from_the_bot_s_page_and_the_page_keeps_no_key(
    tmp_path: Path,
) -> None:
    database = tmp_path / "arena.db"
    key = added(str(database), "Grimli")
    async with arena_with(database) as served, chromium_pages(served.url) as pages:
        pages.http_errors_expected = True  # the wrong key's upload is answered 403
        page = await pages.open("/bots/Grimli", connected=False)
        await expect(page.locator("#no-versions")).to_be_visible()
        archive: FilePayload = {
            "name": "grimli.zip",
            "mimeType": "application/zip",
            "buffer": zipped(BOT),
        }
        for typed, said in (
            ("tvk_wrong", "Not uploaded: Invalid bot key"),
            (key, "Version 1: 2 files, active."),
        ):
            await page.fill("#upload-key", typed)
            await page.fill("#upload-run", "python3 bot.py")
            await page.fill("#upload-games", "thud")
            await page.set_input_files("#upload-archive", archive)
            await page.click("#upload button[type=submit]")
            await expect(page.locator("#upload-status")).to_contain_text(said)
            await expect(page.locator("#upload-key")).to_have_value("")
        rows = page.locator("#versions-body tr")
        await expect(rows).to_have_count(1)
        await expect(rows.first).to_have_attribute("data-state", "active")
        await expect(rows.first.locator("code").first).to_have_text("python3 bot.py")
        await expect(rows.first.locator('td[data-col="games"]')).to_have_text("thud")
        # A version tried against the active one shows its match (tavern bots try keeps it).
        trial = {"games": 12, "wins": 9, "draws": 1, "losses": 2, "elo": 201.3, "eloError": 150.2}
        await asyncio.to_thread(
            keep_trial, backend_for(database), "grimli", 1, {**trial, "verdict": "H1"}, False,
            "thud", 0.0,
        )  # fmt: skip
        await page.reload()
        await expect(page.locator('#versions-body td[data-col="trial"]')).to_have_text(
            "stronger: 9–1–2 in 12, Elo +201.3 ± 150.2"
        )
        kept = await page.evaluate(
            "[localStorage.length, sessionStorage.length, document.cookie, document.body.innerText]"
        )
        assert kept[:3] == [0, 0, ""] and key not in kept[3]
        # On a phone the form fits the screen.
        phone = await pages.open("/bots/Grimli", 390, 844, connected=False)
        await expect(phone.locator("#versions-body tr")).to_have_count(1)
        assert await phone.evaluate(
            "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
        )


async def test_uploads_past_the_bound_at_once_are_answered_503(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each upload is read into memory: past ``UPLOADS_AT_ONCE`` being read, the next is told
    to come back at once (here the bound is 0: every upload is past it)."""
    database = tmp_path / "arena.db"
    key = added(str(database), "Grimli")
    monkeypatch.setattr(visor.bot_versions, "UPLOADS_AT_ONCE", 0)
    async with arena_with(database) as served, aiohttp.ClientSession() as http:
        url = f"{served.url}/api/bots/Grimli/versions"
        async with http.post(url, data=form(key, "python3 bot.py", zipped(BOT))) as response:
            assert response.status == 503
            assert "try again" in (await response.json())["error"]
