"""Real Redis and PostgreSQL servers for the tests, from Debian's packages, on loopback.

Each starts on an ephemeral port in a temporary folder and is stopped (and its folder removed)
when the test is done. PostgreSQL refuses to run as root, so when the tests run as root (as CI
does) its cluster belongs to the unprivileged `postgres` user that Debian's package creates.
A missing server is a failure, never a skip: `make test` installs both.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

from server import redis_client

START_TIMEOUT_S = 30.0
POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")


# Under pytest-xdist (`make test`), each worker ("gw0", "gw1", ...) hands out ports from a block
# of its own below the kernel's ephemeral range (32768 and up on Linux), so that a port one
# worker was given, and released for a server to bind, is never the next port the kernel gives
# another worker's server or outgoing connection, nor one the other worker hands out.
WORKER_PORTS_START = 20_000
WORKER_PORTS = 500  # per worker: a test run asks for far fewer before wrapping round


def _worker_ports() -> Iterator[int] | None:
    """This xdist worker's ports, round and round; None outside xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return None
    first = WORKER_PORTS_START + int(worker[2:]) * WORKER_PORTS
    return itertools.cycle(range(first, first + WORKER_PORTS))


_PORTS = _worker_ports()


def free_port() -> int:
    """A loopback port that nothing listens on at the moment of asking: the kernel's choice,
    or under xdist the next port of this worker's block that binds."""
    if _PORTS is None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port: int = probe.getsockname()[1]
            return port
    for candidate in itertools.islice(_PORTS, WORKER_PORTS):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", candidate))
            except OSError:
                continue  # taken, or still in TIME_WAIT from an earlier test
            return candidate
    raise RuntimeError(f"no free port in this worker's block of {WORKER_PORTS}")


def _wait_for_port(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port} within {START_TIMEOUT_S} s")


def _stop(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@dataclass
class RedisServer:
    """A `redis-server` process; `restart()` stops it and starts it again on the same port. With
    ``bus_port``, a server of a Redis Cluster (`RedisCluster`), its cluster bus there."""

    port: int
    folder: Path
    process: subprocess.Popen[bytes] | None = None
    bus_port: int | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        executable = shutil.which("redis-server")
        if executable is None:
            raise RuntimeError("redis-server is not installed (make test installs it)")
        self.process = subprocess.Popen(
            [
                executable,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(self.folder),
                "--logfile", str(self.folder / "redis.log"),
                *self._cluster_options(),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        _wait_for_port(self.port, self.process, "redis-server")

    def _cluster_options(self) -> list[str]:
        if self.bus_port is None:
            return []
        return [
            "--cluster-enabled", "yes",
            "--cluster-port", str(self.bus_port),
            "--cluster-config-file", str(self.folder / "nodes.conf"),
        ]  # fmt: skip

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)
            self.process = None

    def kill(self) -> None:
        """Stop it as a crash would (SIGKILL)."""
        if self.process is not None:
            _stop(self.process, signal.SIGKILL)
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@dataclass
class RedisCluster:
    """A Redis Cluster of three masters (no replicas), made with `redis-cli --cluster create`;
    ``url`` names it by its first server, as a node's config may."""

    servers: list[RedisServer]

    @property
    def url(self) -> str:
        return self.servers[0].url

    def create(self) -> None:
        addresses = [f"127.0.0.1:{server.port}" for server in self.servers]
        create = ["--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"]
        self._cli(*create)
        self._wait_until_ok()

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def start(self) -> None:
        """Every server started again: the cluster comes back from each one's nodes.conf, with
        its slots and no data (as after a restart without persistence)."""
        for server in self.servers:
            server.start()
        self._wait_until_ok()

    def restart(self) -> None:
        self.stop()
        self.start()

    def _wait_until_ok(self) -> None:
        """Until every server knows every slot's server."""
        deadline = time.monotonic() + START_TIMEOUT_S
        for server in self.servers:
            while b"cluster_state:ok" not in self._cli("-p", str(server.port), "cluster", "info"):
                if time.monotonic() > deadline:
                    raise RuntimeError("the Redis Cluster did not come up")
                time.sleep(0.05)

    @staticmethod
    def _cli(*arguments: str) -> bytes:
        executable = shutil.which("redis-cli")
        if executable is None:
            raise RuntimeError("redis-cli is not installed (make test installs it)")
        done = subprocess.run(
            [executable, *arguments], check=True, capture_output=True, timeout=START_TIMEOUT_S
        )
        return done.stdout


@contextlib.contextmanager
def redis_cluster() -> Iterator[RedisCluster]:
    with contextlib.ExitStack() as stack:
        servers = []
        for _ in range(3):
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tavern-rc-")))
            server = RedisServer(free_port(), folder, bus_port=free_port())
            server.start()
            stack.callback(server.stop)
            servers.append(server)
        cluster = RedisCluster(servers)
        cluster.create()
        yield cluster


@contextlib.asynccontextmanager
async def redis_store(url: str) -> AsyncIterator[redis_client.Client]:
    """A client of the arena's Redis as the nodes make it (a cluster's, for a cluster)."""
    client, _ = await redis_client.connect(url)
    try:
        yield client
    finally:
        await client.aclose()


@contextlib.contextmanager
def redis_server() -> Iterator[RedisServer]:
    with tempfile.TemporaryDirectory(prefix="tavern-redis-") as folder:
        server = RedisServer(free_port(), Path(folder))
        server.start()
        try:
            yield server
        finally:
            server.stop()


@dataclass
class PostgresServer:
    """A PostgreSQL cluster of its own, with one database `tavern` for the user `tavern`."""

    port: int
    folder: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgresql://tavern@127.0.0.1:{self.port}/tavern"

    def database_url(self, name: str) -> str:
        """A URL to another database of the cluster (see `create_database`)."""
        return f"postgresql://tavern@127.0.0.1:{self.port}/{name}"

    def create_database(self, name: str) -> str:
        """Create an empty database and return its URL: one per test keeps tests apart."""
        self._psql(f'CREATE DATABASE "{name}" OWNER tavern')
        return self.database_url(name)

    def _psql(self, sql: str) -> None:
        subprocess.run(
            [str(POSTGRES_BIN / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "tavern",
             "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qc", sql],
            check=True, capture_output=True, timeout=START_TIMEOUT_S,
        )  # fmt: skip

    @staticmethod
    def _owner() -> tuple[int | None, int | None, list[int] | None]:
        """User, group and extra groups to run PostgreSQL's programs as: `postgres` under root."""
        if os.geteuid() != 0:
            return None, None, None
        owner = pwd.getpwnam("postgres")
        return owner.pw_uid, owner.pw_gid, []

    def start(self) -> None:
        if not (POSTGRES_BIN / "postgres").exists():
            raise RuntimeError("PostgreSQL 15 is not installed (make test installs it)")
        user, group, extra_groups = self._owner()
        data = self.folder / "data"
        if not data.exists():
            subprocess.run(
                [str(POSTGRES_BIN / "initdb"), "-D", str(data), "-U", "tavern",
                 "--auth=trust", "--encoding=UTF8", "--no-sync"],
                check=True, capture_output=True, timeout=120,
                user=user, group=group, extra_groups=extra_groups,
            )  # fmt: skip
        self.process = subprocess.Popen(
            [str(POSTGRES_BIN / "postgres"), "-D", str(data), "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.folder}",
             "-c", "fsync=off", "-c", "max_connections=200"],
            stdout=subprocess.DEVNULL,
            stderr=(self.folder / "postgres.log").open("ab"),
            user=user, group=group, extra_groups=extra_groups,
        )  # fmt: skip
        _wait_for_port(self.port, self.process, "postgres")
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            ready = subprocess.run(
                [str(POSTGRES_BIN / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                capture_output=True, check=False,
            )  # fmt: skip
            if ready.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("postgres did not become ready")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process, signal.SIGINT)  # a fast shutdown
            self.process = None

    def kill(self) -> None:
        if self.process is not None:
            _stop(self.process, signal.SIGKILL)
            self.process = None


@contextlib.contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    with tempfile.TemporaryDirectory(prefix="tavern-postgres-") as folder:
        path = Path(folder)
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(path, owner.pw_uid, owner.pw_gid)
        server = PostgresServer(free_port(), path)
        server.start()
        try:
            yield server
        finally:
            server.stop()
