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


async def connect(urls: str, *, pool: int | None = None, **options: Any) -> Client:
    """A client of the arena's Redis (``options`` are redis-py's, for every connection): a
    cluster client if the first server that answers says it is a node of a Redis Cluster.
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
            return cluster
        if pool is None:
            return Redis.from_url(url, **options)
        wait = options.get("socket_timeout")
        return Redis.from_pool(
            BlockingConnectionPool.from_url(url, max_connections=pool, timeout=wait, **options)
        )
    raise failed


def server_url(client: Client, url: str, key: str) -> str:
    """The URL of the server that holds ``key`` (a cluster's node of its slot), with ``url``'s
    credentials and options: for a connection that must reach that server itself (a sharded
    channel's subscription)."""
    if isinstance(client, Redis):
        return url
    node = client.get_node_from_key(key)
    if node is None:  # the cluster has no server for the key's slot now
        raise RedisConnectionError(f"no server of the cluster holds {key!r}")
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    address = f"{node.host}:{node.port}"
    return urlunsplit(parts._replace(netloc=f"{credentials}@{address}" if credentials else address))


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
