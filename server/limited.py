"""Run a bot under its limits: ``python -m server.limited CPU_S MEM_MB [--cgroup PROCS]... -- CMD``.

Tournaments start every bot through this, so that everything is set in the bot's own process
before it runs (``preexec_fn`` is unsafe in a process with threads, which the arena has): it
enters the bot's cgroups (each ``--cgroup`` is a ``cgroup.procs`` file, see server/sandbox.py),
so that every process the bot starts is counted and killed with it, then sets ``RLIMIT_CPU`` and
``RLIMIT_AS`` as a second line of defence, then replaces itself with the bot's command.
"""

from __future__ import annotations

import os
import resource
import sys

USAGE = "usage: python -m server.limited CPU_SECONDS MEMORY_MB [--cgroup PROCS]... -- COMMAND..."
CANNOT_ENTER = 126  # the shell's codes: could not run the command, command not found
NOT_FOUND = 127


def launcher(cpu_seconds: int, memory_mb: int, procs: list[str], command: list[str]) -> list[str]:
    """The command line that runs ``command`` through this launcher, in the cgroups whose
    ``cgroup.procs`` files are ``procs``."""
    cgroups = [argument for path in procs for argument in ("--cgroup", path)]
    limits = [str(cpu_seconds), str(memory_mb)]
    return [sys.executable, "-m", "server.limited", *limits, *cgroups, "--", *command]


def main(argv: list[str]) -> None:
    if "--" not in argv or len(argv) < 3:
        sys.exit(USAGE)
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    if not command or len(options) % 2 or options[2::2] != ["--cgroup"] * (len(options) // 2 - 1):
        sys.exit(USAGE)
    cpu = int(options[0])
    memory = int(options[1]) * 1024 * 1024
    for procs in options[3::2]:
        try:
            with open(procs, "w") as file:
                file.write(str(os.getpid()))
        except OSError as error:
            print(f"tavern: cannot enter the bot's cgroup {procs}: {error}", file=sys.stderr)
            sys.exit(CANNOT_ENTER)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    try:
        os.execvp(command[0], command)
    except OSError as error:
        print(f"tavern: cannot run {command[0]!r}: {error.strerror}", file=sys.stderr)
        sys.exit(NOT_FOUND if isinstance(error, FileNotFoundError) else CANNOT_ENTER)


if __name__ == "__main__":
    main(sys.argv[1:])
