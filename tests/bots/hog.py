"""A Thud bot that joins, then does what a tournament's limits must stop, for the sandbox tests.

    python tests/bots/hog.py KIND --simulation ID --port N --side S [--children N] [--mb N]

KIND is ``memory`` (forks ``--children`` processes that each fill ``--mb`` MB, then sleep),
``cpu`` (forks ``--children`` processes that burn CPU and report their CPU time on stderr),
``setsid`` (forks a process that starts a session of its own and sleeps, then crashes) or
``stderr`` (writes ``--mb`` MB to stderr, then ``LAST_LINE``, then exits with 1). The bot itself
never answers a turn.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

from bots.sdk import ArenaClient

LAST_LINE = "the last line of this bot's stderr"


def child(work: str, megabytes: int) -> None:
    """A forked process's work; it never returns to the parent's event loop."""
    try:
        if work == "memory":
            kept = b"\x01" * (megabytes * 1024 * 1024)  # every page written, so resident
            print(f"child {os.getpid()} holds {len(kept) >> 20} MB", file=sys.stderr, flush=True)
            time.sleep(60)
        elif work == "cpu":
            reported = 0.0
            while True:
                used = time.process_time()
                if used - reported >= 0.05:
                    print(f"child {os.getpid()} cpu {used:.2f}", file=sys.stderr, flush=True)
                    reported = used
        elif work == "setsid":
            os.setsid()
            print(f"escaped pid {os.getpid()}", file=sys.stderr, flush=True)
            time.sleep(60)
    finally:
        os._exit(0)


async def main(args: argparse.Namespace) -> None:
    async with await ArenaClient.connect("127.0.0.1", args.port) as client:
        await client.join(args.simulation, nick=f"hog {args.kind}", game="thud", side=args.side)
        if args.kind == "stderr":
            block = b"x" * 1023 + b"\n"
            for _ in range(args.mb * 1024):
                sys.stderr.buffer.write(block)
            sys.stderr.buffer.write(f"{LAST_LINE}\n".encode())
            sys.stderr.flush()
            sys.exit(1)
        children = 1 if args.kind == "setsid" else args.children
        for _ in range(children):
            if os.fork() == 0:
                child(args.kind, args.mb)
        if args.kind == "setsid":
            await asyncio.sleep(0.5)  # the escaped process has said its pid
            raise RuntimeError("this bot crashes, leaving its escaped process behind")
        while True:
            await client.receive()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["memory", "cpu", "setsid", "stderr"])
    parser.add_argument("--simulation", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--side", required=True)
    parser.add_argument("--children", type=int, default=3)
    parser.add_argument("--mb", type=int, default=0)
    asyncio.run(main(parser.parse_args()))
