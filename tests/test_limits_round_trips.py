"""The per-message limit checks cost one Redis round trip each: check_message (every window, in
one script), acquire and release of the in-flight slot. bench/limits_cost.py times them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from assistant_cli import stack
from shared.config import settings_from_env
from shared.errors import RateLimited
from shared.limits import Leases, Limiter
from tests.conftest import redis_url

SENDS = [0]


class CountingConnection(redis.Connection):
    """Counts what is sent: a script call or a whole pipeline is one send, one round trip."""

    def send_packed_command(self, *args: Any, **kwargs: Any) -> None:
        SENDS[0] += 1
        super().send_packed_command(*args, **kwargs)


@pytest.fixture()
def counted(services: stack.Supervisor) -> Iterator[tuple[Limiter, Leases]]:
    url = redis_url(5)
    settings = settings_from_env({"ASSISTANT_PROFILE": "test", "ASSISTANT_REDIS_URL": url,
                                  "ASSISTANT_USER_MESSAGE_LIMIT": "2/hour",
                                  "ASSISTANT_DAILY_QUESTION_CAP": "4"})
    client = redis.Redis(connection_pool=redis.ConnectionPool.from_url(
        url, connection_class=CountingConnection))
    client.flushdb()
    limiter, leases = Limiter(settings, client), Leases(settings, client)
    limiter.check_message("warm-up", "hi")  # scripts loaded once per Redis
    leases.acquire("warm-up", "t0", "p")
    leases.release("t0")
    try:
        yield limiter, leases
    finally:
        client.flushdb()


def sends(fn: Any) -> int:
    before = SENDS[0]
    fn()
    return SENDS[0] - before


def test_a_message_costs_three_round_trips_all_told(counted: tuple[Limiter, Leases]) -> None:
    limiter, leases = counted
    assert sends(lambda: limiter.check_message("alice", "How does it work?")) == 1
    assert sends(lambda: leases.acquire("alice", "t1", "p")) == 1
    assert sends(lambda: leases.release("t1")) == 1


def test_the_one_script_refuses_without_consuming_anything(
        counted: tuple[Limiter, Leases]) -> None:
    limiter, _ = counted
    limiter.check_message("bob", "one")
    limiter.check_message("bob", "two")
    with pytest.raises(RateLimited) as refused:
        limiter.check_message("bob", "three")
    assert 3590 <= refused.value.retry_after <= 3600
    assert "2 messages" in refused.value.public_message
    # The daily cap (4, shared by everyone) holds the warm-up and bob's two: bob's refused
    # third took nothing from it, so carol gets the last one, then the cap refuses her.
    limiter.check_message("carol", "one")
    with pytest.raises(RateLimited) as daily:
        limiter.check_message("carol", "two")
    assert "a day" in daily.value.public_message
