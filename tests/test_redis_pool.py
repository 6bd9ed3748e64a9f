"""One bounded Redis pool per process: a burst of concurrent callers (a gevent web process
with a thousand sockets) waits for a free connection instead of opening one each, and a
caller that waits too long gets a plain ConnectionError (which the callers turn into a 503)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable

import pytest
import redis

from assistant_cli import stack
from shared.config import settings_from_env
from shared.redis_client import redis_client
from tests.conftest import ALLOC

REDIS_URL = ALLOC.redis_url("test_redis_pool")


def _burst(n: int, call: Callable[[], object]) -> list[BaseException]:
    """Run call from n threads released at once; the errors they raised."""
    gate = threading.Barrier(n)
    errors: list[BaseException] = []

    def run() -> None:
        gate.wait()
        try:
            call()
        except redis.RedisError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def _named(name: str) -> int:
    """How many connections named `name` Redis holds open now."""
    observer = redis.Redis.from_url(REDIS_URL)
    try:
        return sum(1 for c in observer.client_list() if c.get("name") == name)
    finally:
        observer.close()


def test_a_burst_past_the_pool_waits_instead_of_failing(services: stack.Supervisor) -> None:
    # 150 callers each holding a connection for 0.1 s: redis-py's default pool (100 at most,
    # not blocking) raised "Too many connections" for the 101st at once.
    name = f"pool-{uuid.uuid4().hex[:8]}"
    settings = settings_from_env({"ASSISTANT_PROFILE": "test",
                                  "ASSISTANT_REDIS_URL": f"{REDIS_URL}?client_name={name}"})
    client = redis_client(settings)
    key = f"ba:test:{name}"
    started = time.monotonic()
    errors = _burst(150, lambda: client.blpop([key], timeout=0.1))
    assert errors == []
    # At most 64 at once: 150 callers in at least three waves of 0.1 s.
    assert time.monotonic() - started >= 0.2
    assert 0 < _named(name) <= settings.redis_max_connections == 64


def test_a_caller_that_cannot_get_a_connection_in_time_gets_a_plain_error(
        services: stack.Supervisor) -> None:
    name = f"pool-{uuid.uuid4().hex[:8]}"
    settings = settings_from_env({"ASSISTANT_PROFILE": "test",
                                  "ASSISTANT_REDIS_URL": f"{REDIS_URL}?client_name={name}",
                                  "ASSISTANT_REDIS_MAX_CONNECTIONS": "4",
                                  "ASSISTANT_REDIS_POOL_TIMEOUT_S": "0.2"})
    client = redis_client(settings)
    errors = _burst(12, lambda: client.blpop([f"ba:test:{name}"], timeout=1))
    assert errors and all(isinstance(e, redis.ConnectionError) for e in errors)
    assert _named(name) <= 4


def test_the_pool_size_is_validated() -> None:
    from shared.errors import ConfigError

    with pytest.raises(ConfigError):
        settings_from_env({"ASSISTANT_PROFILE": "test", "ASSISTANT_REDIS_MAX_CONNECTIONS": "2"})
