"""Bot code the arena cannot trust, run under bubblewrap (Debian's ``bubblewrap``), speaking
over its stdin and stdout.

An isolated bot sees the system read-only (``/usr``, and the links to it of a merged ``/usr``),
its own folder read-only at the same path (nothing else of the machine's: no other bot's
files, no records, no home), a private ``/tmp`` (which is its home too), its own ``/proc``
and ``/dev``, and no network (``--unshare-all``: its own network namespace, with no interface
up, and its own pid, IPC, UTS and cgroup namespaces). ``--die-with-parent`` and the bot's
cgroups (``server.sandbox``, entered before bubblewrap starts) end every process of it with
its game, however it forked or whatever session it started (``--new-session`` also keeps it
off the runner's terminal). Its environment is only ``PATH``, ``HOME``, ``TMPDIR``, ``LANG``
and the ``TAVERN_*`` values of its game.

Having no network, it plays over its stdin and stdout, in the arena's line protocol as over
TCP: ``relay`` carries both ways between them and a connection to the arena of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from server.cancelling import stop_if_cancelled

BWRAP = "bwrap"
SYSTEM_LINKS = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")  # merged /usr's
SYSTEM_FILES = ("/etc/alternatives", "/etc/ld.so.cache", "/etc/localtime")
PATH = "/usr/local/bin:/usr/bin:/bin"
RELAY_BYTES = 65_536


class RepliesStamp(Protocol):
    """What a relay tells of the lines it carries, and what it lets change in the bot's: a
    hosted bot's worker stamps each of its moves with its CPU time (``server.hosted_worker``)."""

    def sent(self, line: bytes) -> None:
        """A line from the arena, as it goes to the bot."""

    def stamped(self, line: bytes) -> bytes:
        """A line of the bot's, as it goes to the arena."""


def missing() -> str | None:
    """Why no bot may run isolated here (bubblewrap is not installed), or None."""
    if shutil.which(BWRAP) is None:
        return "bubblewrap (bwrap) is not installed: isolated bots cannot run here"
    return None


def jailed(command: Sequence[str], folder: Path, environment: Mapping[str, str]) -> list[str]:
    """``command`` as bubblewrap runs it, isolated, in ``folder`` (see the module's text)."""
    folder = folder.resolve()
    argv = [BWRAP, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]
    argv += ["--ro-bind", "/usr", "/usr"]
    for name in SYSTEM_LINKS:
        path = Path("/", name)
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            argv += ["--ro-bind", str(path), str(path)]
    for name in SYSTEM_FILES:
        argv += ["--ro-bind-try", name, name]
    for java in sorted(Path("/etc").glob("java-*")):  # a JDK's configuration (its security)
        argv += ["--ro-bind", str(java), str(java)]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    argv += ["--ro-bind", str(folder), str(folder), "--chdir", str(folder)]
    settings = {"PATH": PATH, "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
    for name, value in {**settings, **environment}.items():
        argv += ["--setenv", name, value]
    return [*argv, "--", *command]


DRAIN_S = 2.0  # how long a killed bot's stdout may take to come to its end


async def killed(process: asyncio.subprocess.Process) -> None:
    """Kill the bot's process and wait for it, reading what it left on its stdout: a pipe the
    relay stopped reading (a line past its bound) would otherwise hold the wait for ever."""
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    if process.stdout is not None:
        with contextlib.suppress(TimeoutError, ValueError, OSError):
            async with asyncio.timeout(DRAIN_S):
                while await process.stdout.read(RELAY_BYTES):
                    pass
    await process.wait()


async def relay(process: asyncio.subprocess.Process, port: int) -> None:
    """``relay_on`` a connection of the bot's own to the arena on ``port``, closed after: the
    arena then sees the bot leave, as over TCP."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        await relay_on(process, reader, writer)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()


async def relay_on(
    process: asyncio.subprocess.Process,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    last: Callable[[bytes], bool] | None = None,
    stamp: RepliesStamp | None = None,
) -> bool:
    """Carry what the bot writes on stdout to its connection to the arena, and what the arena
    sends on it to the bot's stdin (line by line), until either side closes, or until the line
    ``last`` says is the last; then the bot's stdin is closed (the connection is the
    caller's). Returns whether that last line came. With ``stamp``, the bot's output is
    carried line by line, each as ``stamp`` makes it."""
    assert process.stdin is not None and process.stdout is not None
    bot_in, bot_out = process.stdin, process.stdout

    async def to_arena() -> None:
        if stamp is not None:
            while True:
                try:
                    line = await bot_out.readline()
                except ValueError:  # a line past the stream's bound: the bot's own fault, so
                    return  # it is heard no more (its seat stays, silent), never a lost relay
                if not line:
                    return
                writer.write(stamp.stamped(line))
                await writer.drain()
        while chunk := await bot_out.read(RELAY_BYTES):
            writer.write(chunk)
            await writer.drain()

    came: list[bytes] = []

    async def to_bot() -> None:
        while line := await reader.readline():
            if stamp is not None:
                stamp.sent(line)
            bot_in.write(line)
            await bot_in.drain()
            if last is not None and last(line):
                came.append(line)
                return

    try:
        directions = [asyncio.create_task(to_arena()), asyncio.create_task(to_bot())]
        try:
            await asyncio.wait(directions, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for direction in directions:
                direction.cancel()
            for direction in directions:
                with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError):
                    await direction
            stop_if_cancelled()  # the relay's own cancellation, if it was, is not swallowed
    finally:
        bot_in.close()
    return bool(came)
