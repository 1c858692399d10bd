"""A hosted bot's version: its files, its run command and a content hash (issue 33, item 1).

An upload is a zip archive (the command line makes one of a folder). It is read whole, within
stated bounds, into a normalized archive: its regular files only, sorted by path, with fixed
times and modes, so that the same files make the same bytes and the same hash whoever zipped
them and however. The hash (SHA-256, hex) is of that normalized archive and of the run command:
a version is both. Paths are relative, of printable characters, never ``..``; links, devices
and folders of their own are not kept (a folder is where its files are).

Workers unpack a version into a cache folder named by its hash (``unpacked``), once: a version
never changes, so the folder is reused for every game of it.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from server.games import GAMES

MAX_ARCHIVE_BYTES = 16 * 1024 * 1024  # an upload, zipped
MAX_UNPACKED_BYTES = 64 * 1024 * 1024  # its files together
MAX_FILES = 2000
MAX_PATH_CHARS = 200
MAX_RUN_CHARS = 500
FIXED_TIME = (2020, 1, 1, 0, 0, 0)  # every entry's time in a normalized archive


class VersionRefused(ValueError):
    """An upload that is not a version: the message says why, for its author."""


def games_named(text: str) -> tuple[str, ...]:
    """The games an upload names, comma-separated (none: every game); raises
    ``VersionRefused`` for a game the arena does not host."""
    games = tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    unknown = [game for game in games if game not in GAMES]
    if unknown:
        raise VersionRefused(f"no game {unknown[0][:40]!r}: {', '.join(sorted(GAMES))}")
    return games


@dataclass(frozen=True, slots=True)
class Version:
    """A version as uploaded: its normalized archive, run command and hash."""

    archive: bytes
    run: str
    content_hash: str
    files: int
    unpacked_bytes: int


def version_of(upload: bytes, run: str) -> Version:
    """The version an uploaded zip archive and run command make; raises ``VersionRefused``."""
    run = run.strip()
    if not run or len(run) > MAX_RUN_CHARS or not run.isprintable():
        raise VersionRefused(f"the run command must be 1 to {MAX_RUN_CHARS} printable characters")
    if len(upload) > MAX_ARCHIVE_BYTES:
        raise VersionRefused(f"the archive is over {MAX_ARCHIVE_BYTES // 2**20} MiB")
    try:
        source = zipfile.ZipFile(io.BytesIO(upload))
        entries = source.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise VersionRefused(f"not a zip archive: {error}") from None
    files: dict[str, bytes] = {}
    total = 0
    for entry in entries:
        if entry.is_dir():
            continue
        kind = stat.S_IFMT(entry.external_attr >> 16)  # 0 where the zip says nothing of it
        if kind and kind != stat.S_IFREG:
            raise VersionRefused(f"{entry.filename!r} is not a regular file (a link?)")
        path = _checked_path(entry.filename)
        if path in files:
            raise VersionRefused(f"{path!r} is in the archive twice")
        if len(files) >= MAX_FILES:
            raise VersionRefused(f"more than {MAX_FILES} files")
        total += entry.file_size
        if total > MAX_UNPACKED_BYTES:
            raise VersionRefused(f"its files are over {MAX_UNPACKED_BYTES // 2**20} MiB")
        try:
            data = source.read(entry)
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as error:
            raise VersionRefused(f"{path!r} does not read: {error}") from None
        if len(data) != entry.file_size:
            raise VersionRefused(f"{path!r} is not the size the archive says")
        files[path] = data
    if not files:
        raise VersionRefused("the archive holds no file")
    archive = _normalized(files)
    digest = hashlib.sha256(archive)
    digest.update(b"\0run\0" + run.encode())
    return Version(archive, run, digest.hexdigest(), len(files), total)


def zipped_folder(folder: Path) -> bytes:
    """A folder's regular files as a zip archive (links and the like are left out)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink():
                archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


def unpacked(archive: bytes, content_hash: str, cache: Path) -> Path:
    """The folder of a version's files in ``cache`` (made once, named by its hash): readable
    and executable by all, nothing writable."""
    folder = cache / content_hash
    if folder.is_dir():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=cache))
    try:
        with zipfile.ZipFile(io.BytesIO(archive)) as source:
            for entry in source.infolist():
                target = scratch / _checked_path(entry.filename)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(source.read(entry))
                target.chmod(0o555)
        for directory in [scratch, *(p for p in scratch.rglob("*") if p.is_dir())]:
            directory.chmod(0o555)
        try:
            os.rename(scratch, folder)  # another process may have made it meanwhile
        except OSError:
            if not folder.is_dir():
                raise
    finally:
        if scratch.exists():
            for directory in [scratch, *(p for p in scratch.rglob("*") if p.is_dir())]:
                directory.chmod(0o755)
            shutil.rmtree(scratch, ignore_errors=True)
    return folder


def versions_cache() -> Path:
    """Where this machine keeps the versions it has played (``XDG_CACHE_HOME``'s way)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tavern" / "versions"


def _checked_path(name: str) -> str:
    path = PurePosixPath(name)
    if (
        not name
        or len(name) > MAX_PATH_CHARS
        or path.is_absolute()
        or "\\" in name
        or any(part in ("", ".", "..") for part in name.split("/"))
        or not name.isprintable()
    ):
        raise VersionRefused(f"{name[:MAX_PATH_CHARS]!r} is not a relative path of its own")
    return str(path)


def _normalized(files: dict[str, bytes]) -> bytes:
    """The files as one canonical zip archive: sorted, fixed times, every file readable and
    executable (a compiled bot runs as uploaded, whatever the zip said of its modes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            info = zipfile.ZipInfo(path, FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (stat.S_IFREG | 0o755) << 16
            archive.writestr(info, files[path])
    return buffer.getvalue()
