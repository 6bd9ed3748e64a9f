"""One bounded Redis connection pool per process.

A gevent web process runs a greenlet per socket; with an unbounded pool every concurrent
Redis call opens a connection of its own, so a burst of a thousand sockets opens a thousand
connections at once. A BlockingConnectionPool keeps at most redis_max_connections: a call
that finds none free waits up to redis_pool_timeout_s, then fails with a ConnectionError,
which callers already turn into a plain "try again shortly" (503).
"""

from __future__ import annotations

from functools import lru_cache

import redis

from shared.config import Settings


@lru_cache(maxsize=4)
def _client(url: str, max_connections: int, timeout_s: float) -> redis.Redis:
    pool = redis.BlockingConnectionPool.from_url(
        url, max_connections=max_connections, timeout=timeout_s, socket_connect_timeout=2,
        socket_timeout=5, health_check_interval=30)
    return redis.Redis(connection_pool=pool)


def redis_client(settings: Settings) -> redis.Redis:
    """The shared client for settings.redis_url."""
    return _client(settings.redis_url, settings.redis_max_connections,
                   settings.redis_pool_timeout_s)
