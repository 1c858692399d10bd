"""The arena's Redis, one server or a Redis Cluster, through redis-py's public clients.

The config's ``redis`` names one server or a cluster by any of its nodes (several addresses,
comma-separated, are tried in turn until one answers). Whether it is a cluster is asked of
the server (``INFO cluster``), so the same URL serves both: ``connect`` returns redis-py's
``Redis`` for one server and its ``RedisCluster`` for a cluster, which take the same commands
as long as each multi-key command and script stays in one hash slot (``server.cluster.keys``).
The few places where the two clients differ are here. Imported only by an arena on Redis.
"""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

from redis.asyncio import BlockingConnectionPool, Redis, RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

Client = Redis | RedisCluster

# Connections a cluster client opens to each of its servers at most.
CLUSTER_CONNECTIONS_PER_SERVER = 1024


def addresses(urls: str) -> list[str]:
    """The addresses of a config's ``redis``: one URL, or several separated by commas."""
    return [url.strip() for url in urls.split(",") if url.strip()]


async def connect(urls: str, *, pool: int | None = None, **options: Any) -> tuple[Client, str]:
    """A client of the arena's Redis (``options`` are redis-py's, for every connection), and
    the URL that answered: a cluster client if the first server that answers says it is a
    node of a Redis Cluster.
    ``pool``: at most this many connections to one server, a command waiting for a free one
    up to ``socket_timeout`` (a cluster client's pool per server is larger, and refuses a
    command past it rather than make it wait). Raises what the last address raised if none
    answers."""
    failed: Exception = RedisConnectionError(f"no Redis address in {urls!r}")
    for url in addresses(urls):
        probe = Redis.from_url(url, **options)
        try:
            info: dict[str, Any] = await probe.info("cluster")
        except (RedisError, OSError) as error:
            failed = error
            continue
        finally:
            await probe.aclose()
        if info.get("cluster_enabled"):
            cluster = RedisCluster.from_url(
                url, max_connections=CLUSTER_CONNECTIONS_PER_SERVER, **options
            )
            try:
                await cluster.initialize()
            except BaseException:
                await cluster.aclose()
                raise
            return cluster, url
        if pool is None:
            return Redis.from_url(url, **options), url
        wait = options.get("socket_timeout")
        blocking = BlockingConnectionPool.from_url(
            url, max_connections=pool, timeout=wait, **options
        )
        return Redis.from_pool(blocking), url
    raise failed


class Servers:
    """Which server holds a key, by its URL (``url``'s credentials and options, the address
    of the key's slot's server on a cluster): for connections that must reach that server
    themselves (a sharded channel's subscription, commands written on a connection of one's
    own)."""

    def __init__(self, client: Client, url: str) -> None:
        self.client = client
        self.url = url
        self._urls: dict[str, str] = {}  # a cluster's server names ("host:port"): their URLs

    def of(self, key: str) -> str:
        if isinstance(self.client, Redis):
            return self.url
        node = self.client.get_node_from_key(key)
        if node is None:  # the cluster has no server for the key's slot now
            raise RedisConnectionError(f"no server of the cluster holds {key!r}")
        url = self._urls.get(node.name)
        if url is None:
            parts = urlsplit(self.url)
            credentials = parts.netloc.rpartition("@")[0]
            address = f"{node.host}:{node.port}"
            netloc = f"{credentials}@{address}" if credentials else address
            url = self._urls[node.name] = urlunsplit(parts._replace(netloc=netloc))
        return url


async def read_many(client: Client, keys: list[str]) -> list[bytes | None]:
    """The values of string keys (None where absent): one MGET, or on a cluster one per slot."""
    if not keys:
        return []
    # (bytes or None: the clients decode no responses)
    if isinstance(client, Redis):
        return cast(list[bytes | None], await client.mget(keys))
    return cast(list[bytes | None], await client.mget_nonatomic(keys))


async def run_id(client: Client, key: str) -> str:
    """The run id of the server holding ``key``: another one once that server restarted."""
    if isinstance(client, Redis):
        info: Any = await client.info("server")
    else:
        info = await client.info("server", target_nodes=client.get_node_from_key(key))
    return str(info["run_id"])
