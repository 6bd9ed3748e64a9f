"""One bounded Redis connection pool per process: the one factory every Redis user goes through.

A gevent web process runs a greenlet per socket; with an unbounded pool every concurrent
Redis call opens a connection of its own, so a burst of a thousand sockets opens a thousand
connections at once. A BlockingConnectionPool keeps at most redis_max_connections: a call
that finds none free waits up to redis_pool_timeout_s, then fails with a ConnectionError,
which callers already turn into a plain "try again shortly" (503).

With a sentinel:// URL (shared/redis_url.py) the pool asks the Sentinels for the primary
before each new connection (redis-py's SentinelConnectionPool): after a failover, idle
connections to the old primary are dropped, a command on a dead one fails and is retried by
the client's Retry on a new connection, which finds the promoted replica. Pub/sub, the replay
logs, tickets and limits all use this pool, so they all follow the switch; the broker follows
it through kombu's own sentinel transport (shared/celery_config.py).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import redis
from redis.sentinel import Sentinel, SentinelConnectionPool

from shared.config import Settings
from shared.redis_url import sentinel_target

_TIMEOUTS: dict[str, Any] = {"socket_connect_timeout": 2, "socket_timeout": 5}


class BlockingSentinelPool(SentinelConnectionPool, redis.BlockingConnectionPool):
    """A Sentinel-managed pool that is also bounded: waits for a free connection (up to
    `timeout`) rather than opening one more."""


@lru_cache(maxsize=4)
def _client(url: str, max_connections: int, timeout_s: float) -> redis.Redis:
    target = sentinel_target(url)
    if target is None:
        pool = redis.BlockingConnectionPool.from_url(
            url, max_connections=max_connections, timeout=timeout_s, health_check_interval=30,
            **_TIMEOUTS)
        return redis.Redis(connection_pool=pool)
    # The Sentinels answer fast or not at all: a short timeout moves on to the next one.
    sentinels = Sentinel(list(target.sentinels),
                         sentinel_kwargs={"socket_connect_timeout": 1, "socket_timeout": 1})
    client: redis.Redis = sentinels.master_for(
        target.service, connection_pool_class=BlockingSentinelPool,
        max_connections=max_connections, timeout=timeout_s, health_check_interval=30,
        db=target.db, username=target.username, password=target.password, **_TIMEOUTS)
    return client


def redis_client(settings: Settings) -> redis.Redis:
    """The shared client for settings.redis_url."""
    return _client(settings.redis_url, settings.redis_max_connections,
                   settings.redis_pool_timeout_s)
