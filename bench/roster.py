"""What a node's copy of the registered bots costs it with many of them (issue 30, item 6).

    python bench/roster.py [--bots 0 200000] [--seconds 20] [--against DIR ...]

For each number of ``--bots``: a fresh PostgreSQL database (a cluster of its own on loopback)
made by the server's own migrations, that many registered bots written straight into its
``bots`` table (one real scrypt hash for all: a node reads names and hashes, never checks them
here), then one ``tavern serve`` node on it. Once the node listens (it has read the roster), it
idles ``--seconds``: what it spends then is what keeping its roster fresh costs (no game, no
bot). Printed per node: its CPU seconds per second, its memory (RSS) and PostgreSQL's CPU
seconds per second meanwhile. ``--against DIR``: the same for the server of another checkout
(a ``git worktree`` of an older commit, run with this interpreter), each on a database made by
its own code; this checkout's is measured too, first.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import (
    ROOT,
    cluster_cpu_seconds,
    known_settings,
    tavern_serve,
    with_python_path,
)
from bench.versus import git_head
from server.identity import hash_key, new_key
from tests.services import PostgresServer, postgres_server

WARM_UP_S = 3.0  # after the node listens: the first refreshes, the interpreter settled


def migrated(root: Path, url: str) -> None:
    """The database brought to the schema of the checkout at ``root``, by its own code."""
    script = "import sys; from server.records import Records; Records(sys.argv[1]).open_to_read()"
    subprocess.run(
        [sys.executable, "-c", script, url],
        cwd=root,
        env=with_python_path(root),
        check=True,
        timeout=300,
    )


def register(url: str, count: int) -> None:
    """``count`` bots in ``bots``, in one COPY (the columns every schema with bots has)."""
    stored = hash_key(new_key())
    now = time.time()
    rows = io.StringIO()
    for number in range(count):
        name = f"bot{number:06d}"
        rows.write(f"{name}\t{name}\t{stored}\t{now}\t{now}\n")
    with (
        psycopg.connect(url) as db,
        db.cursor() as cursor,
        cursor.copy(
            "COPY bots (name, folded, key_hash, created_at, changed_at) FROM STDIN"
        ) as copy,
    ):
        copy.write(rows.getvalue())


async def measure(
    cluster: PostgresServer, root: Path, bots: int, seconds: float, number: int
) -> dict[str, float]:
    url = cluster.create_database(f"roster_bench_{number}")
    migrated(root, url)
    register(url, bots)
    assert cluster.process is not None
    with tempfile.TemporaryDirectory(prefix="tavern-bench-") as scratch:
        path = Path(scratch) / "config.json"
        settings = {"port": 0, "httpPort": 0, "database": url}
        path.write_bytes(orjson.dumps(known_settings(root, settings)))
        async with tavern_serve(path, root=root) as node:
            await asyncio.sleep(WARM_UP_S)
            node_before = node.cpu_seconds()
            postgres_before = cluster_cpu_seconds(cluster.process.pid)
            await asyncio.sleep(seconds)
            node_cpu = node.cpu_seconds() - node_before
            postgres_cpu = cluster_cpu_seconds(cluster.process.pid) - postgres_before
            return {
                "node": node_cpu / seconds,
                "postgres": postgres_cpu / seconds,
                "rss_mib": node.rss_bytes() / (1 << 20),
            }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bots", type=int, nargs="+", default=[0, 200_000])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--against", type=Path, nargs="*", default=[])
    args = parser.parse_args()
    checkouts = [ROOT, *(path.resolve() for path in args.against)]
    number = 0
    with postgres_server() as cluster:
        for root in checkouts:
            for bots in args.bots:
                number += 1
                found = await measure(cluster, root, bots, args.seconds, number)
                print(
                    f"{git_head(root)}: {bots:>7} bots: node {found['node']:.3f} CPU s/s, "
                    f"{found['rss_mib']:.0f} MiB; PostgreSQL {found['postgres']:.3f} CPU s/s",
                    flush=True,
                )


if __name__ == "__main__":
    asyncio.run(main())
