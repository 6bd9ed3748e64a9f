"""One Redis connection pool per process."""

from __future__ import annotations

from functools import lru_cache

import redis

from shared.config import Settings


@lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5,
                                health_check_interval=30)


def redis_client(settings: Settings) -> redis.Redis:
    """The shared client for settings.redis_url."""
    return _client(settings.redis_url)
