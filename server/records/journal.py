"""The journal: the records' writes the database could not take, kept in a local file until it
can (``server.records.writer``), so that an outage of PostgreSQL, or an SQLite file locked by
another process, loses no record.

Each process that writes records keeps its own file, ``OWNER.journal`` in the journal's folder
(``recordsJournal``), created at the first write it cannot commit and locked (``flock``) for as
long as the process runs. A file whose lock can be taken is a stopped process's: the next
process to open the same records from that folder writes it into the database, and deletes it
(``orphans``). Its header names the database, so that a journal is never written elsewhere.

A file is a header line, then entries appended one after the other, each one batch of writes:
``MAGIC``, the payload's length and its CRC-32 (4 bytes each, big-endian), then the payload
(the writes as JSON). Each append is followed by ``fdatasync`` before the batch counts as
kept, so an acknowledged write survives a crash of the process or of the machine. A crash in
the middle of an append leaves a torn last entry, which a reader finds short (or failing its
checksum) and skips (it was never acknowledged); an entry in the middle whose checksum does
not match is skipped, and the reader goes on at the next ``MAGIC``, so one damaged entry costs
only itself. A file found damaged is kept aside (``.damaged``) for its owner to look at, not
deleted.

The file's bound is its writer's (``server.records.backlog``: past it, batches wait in
memory, and from three quarters of it on the arena opens no new game).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import mmap
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

log = logging.getLogger(__name__)

VERSION = 1
TITLE = b"tavern records journal %d " % VERSION  # then the header's JSON and a newline
MAGIC = b"\xe2\x96\x88J"  # four bytes that open each entry
FRAME = struct.Struct(">II")  # the payload's length and CRC-32
HEAD = len(MAGIC) + FRAME.size
SUFFIX = ".journal"


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry read back: its payload, and where the next one starts."""

    payload: bytes
    end: int


class Damaged(Exception):
    """A journal that cannot be read as one (another version, another database's)."""


def header(database: str, owner: str) -> bytes:
    return TITLE + orjson.dumps({"database": database, "owner": owner}) + b"\n"


class JournalFile:
    """One journal file, open and locked: appended to by its process, or read back by any."""

    def __init__(self, path: Path, descriptor: int, start: int) -> None:
        self.path = path
        self.descriptor = descriptor
        self.start = start  # where the first entry starts (after the header)
        self.size = os.fstat(descriptor).st_size
        self.skipped: list[str] = []  # what the reading found damaged, in words

    # --- reading -----------------------------------------------------------------------------
    def entry(self, offset: int) -> Entry | None:
        """The first whole entry from ``offset`` on (None at the end, or at a torn last entry);
        damage on the way is noted in ``skipped`` and read past."""
        while offset < self.size:
            head = os.pread(self.descriptor, HEAD, offset)
            if len(head) == HEAD and head.startswith(MAGIC):
                length, checksum = FRAME.unpack_from(head, len(MAGIC))
                end = offset + HEAD + length
                if end > self.size:  # an append cut short by a crash: never acknowledged
                    self.skipped.append(f"a torn last entry of {self.size - offset} bytes")
                    return None
                payload = os.pread(self.descriptor, length, offset + HEAD)
                if zlib.crc32(payload) == checksum:
                    return Entry(payload, end)
                if end == self.size:  # the last append, its data not all on disk at a crash
                    self.skipped.append(f"a torn last entry of {self.size - offset} bytes")
                    return None
            elif self.size - offset < HEAD and MAGIC.startswith(head[: len(MAGIC)]):
                self.skipped.append(f"a torn last entry of {self.size - offset} bytes")
                return None
            following = self._next_magic(offset + 1)
            self.skipped.append(f"{following - offset} damaged bytes at {offset}")
            offset = following
        return None

    def _next_magic(self, offset: int) -> int:
        """Where the next entry may start (the end of the file if no ``MAGIC`` follows)."""
        if offset >= self.size:
            return self.size
        with mmap.mmap(self.descriptor, self.size, access=mmap.ACCESS_READ) as mapped:
            found = mapped.find(MAGIC, offset)
        return self.size if found < 0 else found

    @property
    def damaged(self) -> bool:
        """Damage other than a torn last entry (which a crash leaves, and which lost nothing
        acknowledged)."""
        return any(not note.startswith("a torn last") for note in self.skipped)

    # --- appending ---------------------------------------------------------------------------
    def append(self, payload: bytes) -> None:
        """Append one entry and make it durable; a failed append (a full disk) is undone, so
        the file never holds a torn entry of this process's."""
        frame = MAGIC + FRAME.pack(len(payload), zlib.crc32(payload)) + payload
        try:
            written = os.pwrite(self.descriptor, frame, self.size)
            if written != len(frame):
                raise OSError(f"wrote {written} of {len(frame)} bytes")
            os.fdatasync(self.descriptor)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self.descriptor, self.size)
            raise
        self.size += len(frame)

    def clear(self) -> None:
        """Everything in it is written: keep the header only."""
        os.ftruncate(self.descriptor, self.start)
        os.fdatasync(self.descriptor)
        self.size = self.start

    def close(self, delete: bool) -> None:
        """Close it (which releases its lock), deleting it first if ``delete``."""
        if delete:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        os.close(self.descriptor)


def create(folder: Path, database: str, owner: str) -> JournalFile:
    """This process's journal file, new and locked."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{owner}{SUFFIX}"
    descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        first = header(database, owner)
        os.write(descriptor, first)
        os.fsync(descriptor)
        directory = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(directory)  # the new file's name survives a crash too
        finally:
            os.close(directory)
    except BaseException:
        os.close(descriptor)
        path.unlink()
        raise
    return JournalFile(path, descriptor, len(first))


def orphans(folder: Path, database: str, mine: str, said: set[Path]) -> Iterator[JournalFile]:
    """The journals of stopped processes of these records, each locked while it is handled
    (the caller closes each). A journal of another database is left alone, and said so once
    (``said``: the paths said so already)."""
    if not folder.is_dir():
        return
    for path in sorted(folder.glob(f"*{SUFFIX}")):
        if path.name == f"{mine}{SUFFIX}":
            continue
        try:
            opened = _locked(path, database)
        except (OSError, Damaged) as error:
            if path not in said:
                said.add(path)
                log.warning("records: the journal %s is left alone: %s", path, error)
            continue
        if opened is not None:
            yield opened


def _locked(path: Path, database: str) -> JournalFile | None:
    """The file, locked, if its process is gone (None if it runs, or the file went away)."""
    try:
        descriptor = os.open(path, os.O_RDWR)
    except FileNotFoundError:  # written and deleted by another process meanwhile
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # its process runs
        os.close(descriptor)
        return None
    try:
        if os.fstat(descriptor).st_ino != os.stat(path).st_ino:
            raise FileNotFoundError(path)  # deleted and made again meanwhile
        start, found = _read_header(descriptor)
        if found != database:
            raise Damaged(f"it holds the writes of another database ({found})")
    except FileNotFoundError:
        os.close(descriptor)
        return None
    except BaseException:
        os.close(descriptor)
        raise
    return JournalFile(path, descriptor, start)


def _read_header(descriptor: int) -> tuple[int, str]:
    """Where the entries start, and the database the file is of."""
    first = os.pread(descriptor, 4096, 0).partition(b"\n")
    if not first[1] or not first[0].startswith(TITLE):
        raise Damaged(f"not a journal of version {VERSION}: {first[0][:60]!r}")
    try:
        database = orjson.loads(first[0][len(TITLE) :])["database"]
    except (orjson.JSONDecodeError, KeyError, TypeError) as error:
        raise Damaged(f"its header does not read: {error}") from None
    return len(first[0]) + 1, str(database)
