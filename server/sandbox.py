"""Each tournament bot in cgroups of its own, so that its limits hold for all its processes.

Resource limits (``RLIMIT_CPU``, ``RLIMIT_AS``) hold per process: a bot that forks gets the
limits again in every child (nine processes of a 256 MB bot used 1,283 MB; a 3 s bot used 7.8 s
of CPU in children), and a child that calls ``setsid`` escapes a kill of the process group. A
cgroup holds every descendant of the process put in it, whatever they do. So each bot gets:

* a group in a **cgroup v2** hierarchy (pure v2 at ``/sys/fs/cgroup``, or the ``unified`` mount
  of a hybrid layout), under the runner's own cgroup: it groups the bot's processes, counts
  their CPU time (``cpu.stat``, there without any controller) and kills them all at once
  (``cgroup.kill``, or ``SIGKILL`` to every pid in ``cgroup.procs`` before Linux 5.14);
* a **memory** limit on the whole group: v2 ``memory.max`` (with ``memory.oom.group``) where
  the memory controller is enabled for the runner's groups, else the v1 memory controller's
  ``memory.limit_in_bytes`` in a group of its own, else none (a warning says what is missing;
  ``RLIMIT_AS`` per process remains);
* a **process** limit, ``MAX_PROCESSES`` at once (a fork bomb stops there): v2 ``pids.max``
  where the pids controller is enabled for the runner's groups, else the v1 pids controller's
  in a group of its own, else none.

The bot's launcher (``server.limited``) writes its own pid into the groups' ``cgroup.procs``
before it runs the bot, so everything the bot starts is inside from the first instruction. The
CPU limit is the runner's to enforce: it reads the group's usage every ``POLL_S`` and kills the
group once it is over. The folders are removed when the bot and the runner are done.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
from dataclasses import dataclass, field
from pathlib import Path

POLL_S = 0.05  # how often a bot's exit, CPU time and memory kills are checked
MAX_PROCESSES = 256  # a bot's processes and threads at once (pids.max)
GONE_WAIT_S = 2.0  # how long a killed group may take to empty before its folder is left
MOUNTS = Path("/proc/self/mounts")
OWN_CGROUPS = Path("/proc/self/cgroup")


@dataclass(frozen=True, slots=True)
class Hierarchies:
    """Where this process sits in the cgroup hierarchies: the folders it may make groups in."""

    v2: Path | None  # this process's cgroup in the v2 hierarchy
    v1_memory: Path | None  # its group in the v1 memory hierarchy
    v1_pids: Path | None = None  # its group in the v1 pids hierarchy


def find_hierarchies(mounts: str, own: str) -> Hierarchies:
    """Read ``/proc/self/mounts`` and ``/proc/self/cgroup`` (their texts)."""
    v2_mount = None
    v1_mounts: dict[str, Path] = {}  # of the v1 controllers used: memory, pids
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        kind, mount, options = fields[2], Path(fields[1]), fields[3].split(",")
        if kind == "cgroup2" and v2_mount is None:
            v2_mount = mount
        elif kind == "cgroup":
            for controller in {"memory", "pids"}.intersection(options):
                v1_mounts.setdefault(controller, mount)
    v2 = None
    v1: dict[str, Path] = {}
    for line in own.splitlines():
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        relative = path.lstrip("/")
        if number == "0" and not controllers and v2_mount is not None:
            v2 = v2_mount / relative
        for controller in controllers.split(","):
            if controller in v1_mounts:
                v1[controller] = v1_mounts[controller] / relative
    return Hierarchies(v2, v1.get("memory"), v1.get("pids"))


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _write(path: Path, text: str) -> bool:
    try:
        path.write_text(text)
    except OSError:
        return False
    return True


def _counter(text: str, key: str) -> int:
    """A ``key value`` line of a cgroup file such as ``cpu.stat`` or ``memory.events``."""
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


def _mkdir(path: Path) -> bool:
    try:
        path.mkdir()
    except OSError:
        return False
    return True


def _pids(folder: Path) -> list[int]:
    return [int(pid) for pid in _read(folder / "cgroup.procs").split()]


class BotGroup:
    """The cgroups of one bot: ``procs`` are the files its launcher writes its pid into."""

    def __init__(
        self,
        v2: Path | None,
        v1_memory: Path | None,
        memory_v2: bool,
        v1_pids: Path | None = None,
    ) -> None:
        self.v2 = v2
        self.v1_memory = v1_memory
        self.memory_v2 = memory_v2
        self.folders = [folder for folder in (v2, v1_memory, v1_pids) if folder is not None]
        self.procs = [folder / "cgroup.procs" for folder in self.folders]

    @property
    def groups_processes(self) -> bool:
        return bool(self.procs)

    def cpu_seconds(self) -> float | None:
        """CPU time used by every process the bot ran, or None where it is not counted."""
        if self.v2 is None:
            return None
        return _counter(_read(self.v2 / "cpu.stat"), "usage_usec") / 1e6

    def out_of_memory(self) -> bool:
        """Has the kernel killed a process of the group for going over its memory limit?"""
        if self.memory_v2 and self.v2 is not None:
            return _counter(_read(self.v2 / "memory.events"), "oom_kill") > 0
        if self.v1_memory is not None:
            return _counter(_read(self.v1_memory / "memory.oom_control"), "oom_kill") > 0
        return False

    def kill(self) -> None:
        """SIGKILL every process of the group, however far it went (new sessions included)."""
        if self.v2 is not None and _write(self.v2 / "cgroup.kill", "1"):
            return
        for folder in self.folders:
            for pid in _pids(folder):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    async def remove(self) -> None:
        """Kill what is left in the group, wait for it to be gone, then remove the folders."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + GONE_WAIT_S
        while any(_pids(folder) for folder in self.folders) and loop.time() < deadline:
            self.kill()  # again: a process may have forked while the first kill went round
            await asyncio.sleep(0.01)
        for folder in self.folders:
            with contextlib.suppress(OSError):
                folder.rmdir()


@dataclass(slots=True)
class Sandbox:
    """The runner's folders in the cgroup hierarchies; each bot gets a group in them."""

    v2: Path | None = None  # the runner's folder in the v2 hierarchy
    memory_v2: bool = False  # whether the bots' v2 groups have memory.max
    pids_v2: bool = False  # whether they have pids.max
    v1_memory: Path | None = None  # the runner's folder in the v1 memory hierarchy
    v1_pids: Path | None = None  # and in the v1 pids hierarchy
    warning: str | None = None  # what is missing, in a sentence, when something is
    groups: list[BotGroup] = field(default_factory=list)
    # The folders of runners that are gone, removed with this runner's (``_take_over_gone``).
    gone: list[Path] = field(default_factory=list)

    @classmethod
    def create(cls, hierarchies: Hierarchies | None = None) -> Sandbox:
        """Make the runner's folders where the machine lets it, and say what it could not."""
        if hierarchies is None:
            hierarchies = find_hierarchies(_read(MOUNTS), _read(OWN_CGROUPS))
        name = f"tavern-{os.getpid()}-{secrets.token_hex(4)}"
        sandbox = cls()
        if hierarchies.v2 is not None and _mkdir(hierarchies.v2 / name):
            sandbox.v2 = hierarchies.v2 / name
            enabled = _read(sandbox.v2 / "cgroup.controllers").split()
            control = sandbox.v2 / "cgroup.subtree_control"
            sandbox.memory_v2 = "memory" in enabled and _write(control, "+memory")
            sandbox.pids_v2 = "pids" in enabled and _write(control, "+pids")
        v1 = hierarchies.v1_memory
        if not sandbox.memory_v2 and v1 is not None and _mkdir(v1 / name):
            sandbox.v1_memory = v1 / name
        pids = hierarchies.v1_pids
        if not sandbox.pids_v2 and pids is not None and _mkdir(pids / name):
            sandbox.v1_pids = pids / name
        sandbox.warning = _missing(sandbox, hierarchies)
        sandbox._take_over_gone(hierarchies)
        return sandbox

    def _take_over_gone(self, hierarchies: Hierarchies) -> None:
        """The folders that runners gone without removing them left beside this one's (one
        killed with SIGKILL cleans up nothing): what runs in their bots' groups still (a
        process a bot started, which outlives it) is killed now, and the folders are removed
        with this runner's own. A runner is gone when its pid, in the folder's name, is."""
        for parent in (hierarchies.v2, hierarchies.v1_memory, hierarchies.v1_pids):
            if parent is None:
                continue
            for folder in parent.glob("tavern-*-*"):
                pid = folder.name.split("-")[1]
                if not pid.isdigit() or _running(int(pid)):
                    continue
                for bot in _subfolders(folder):
                    v2, v1 = (bot, None) if parent == hierarchies.v2 else (None, bot)
                    group = BotGroup(v2, v1, memory_v2=False)
                    group.kill()
                    self.groups.append(group)
                self.gone.append(folder)

    def group(self, name: str, memory_mb: int) -> BotGroup:
        """A bot's own groups, its memory limit set on them."""
        v2 = self.v2 / name if self.v2 is not None and _mkdir(self.v2 / name) else None
        v1 = None
        if self.v1_memory is not None and _mkdir(self.v1_memory / name):
            v1 = self.v1_memory / name
        pids = None
        if self.v1_pids is not None and _mkdir(self.v1_pids / name):
            pids = self.v1_pids / name
        limit = str(memory_mb * 1024 * 1024)
        if v2 is not None and self.memory_v2:
            _write(v2 / "memory.max", limit)
            _write(v2 / "memory.swap.max", "0")
            _write(v2 / "memory.oom.group", "1")
        if v2 is not None and self.pids_v2:
            _write(v2 / "pids.max", str(MAX_PROCESSES))
        if v1 is not None:
            _write(v1 / "memory.limit_in_bytes", limit)
            _write(v1 / "memory.memsw.limit_in_bytes", limit)  # where swap is counted
        if pids is not None:
            _write(pids / "pids.max", str(MAX_PROCESSES))
        group = BotGroup(v2, v1, self.memory_v2, pids)
        self.groups.append(group)
        return group

    async def close(self) -> None:
        """Remove every bot's groups that are left, then the runner's folders."""
        for group in self.groups:
            await group.remove()
        self.groups.clear()
        for folder in (self.v2, self.v1_memory, self.v1_pids, *self.gone):
            if folder is not None:
                with contextlib.suppress(OSError):
                    folder.rmdir()


def _subfolders(folder: Path) -> list[Path]:
    """The groups in a group (none if it is gone meanwhile: another runner removed it)."""
    try:
        return sorted(path for path in folder.iterdir() if path.is_dir())
    except OSError:
        return []


def _running(pid: int) -> bool:
    """Is there a process of that pid, not a zombie?"""
    stat = _read(Path(f"/proc/{pid}/stat"))
    return bool(stat) and stat.rsplit(")", 1)[1].split()[0] != "Z"


def _missing(sandbox: Sandbox, hierarchies: Hierarchies) -> str | None:
    """What the bots' limits lack on this machine, in a sentence; None when nothing does."""
    if sandbox.v2 is not None and (sandbox.memory_v2 or sandbox.v1_memory is not None):
        return None
    if sandbox.v2 is None:
        where = (
            f"cannot make a cgroup in {hierarchies.v2}"
            if hierarchies.v2 is not None
            else "no cgroup v2 hierarchy is mounted"
        )
        if sandbox.v1_memory is not None:
            return (
                f"{where}: CPU limits hold per process (RLIMIT_CPU); memory limits and the "
                "kill at the end hold for the whole bot (cgroup v1 memory controller)"
            )
        return (
            f"{where}, nor in a cgroup v1 memory hierarchy: CPU and memory limits hold per "
            "process (RLIMIT_CPU, RLIMIT_AS), and a bot's process that starts a session of its "
            "own can outlive the bot"
        )
    return (
        f"the memory controller is not enabled for {sandbox.v2.parent} (in its parent's "
        "cgroup.subtree_control) and no cgroup v1 memory controller is usable: memory limits "
        "hold per process (RLIMIT_AS)"
    )
