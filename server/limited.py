"""Run a command under CPU-time and memory limits: ``python -m server.limited CPU_S MEM_MB -- CMD``.

Tournaments start every bot through this, so the limits are set in the bot's own process
before it runs (``preexec_fn`` is unsafe in a process with threads, which the arena has).
"""

from __future__ import annotations

import os
import resource
import sys


def main(argv: list[str]) -> None:
    cpu_seconds, memory_mb, separator, *command = argv
    if separator != "--" or not command:
        sys.exit("usage: python -m server.limited CPU_SECONDS MEMORY_MB -- COMMAND...")
    cpu = int(cpu_seconds)
    memory = int(memory_mb) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
