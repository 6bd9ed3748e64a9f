"""A message's limit checks cost two Redis round trips all told: its admission (the address's
request window, the in-flight caps and every message window, in one script) and the slot's
release. bench/limits_cost.py times them. A followed turn's watchdog looks in one round trip
too (it made five, one after the other, every silent second)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from assistant_cli import stack
from shared.config import settings_from_env
from shared.errors import RateLimited
from shared.limits import Admission, Leases, Limiter
from tests.conftest import ALLOC

SENDS = [0]
REDIS_URL = ALLOC.redis_url("test_limits_round_trips")  # flushed by its tests


class CountingConnection(redis.Connection):
    """Counts what is sent: a script call or a whole pipeline is one send, one round trip."""

    def send_packed_command(self, *args: Any, **kwargs: Any) -> None:
        SENDS[0] += 1
        super().send_packed_command(*args, **kwargs)


@pytest.fixture()
def counted(services: stack.Supervisor) -> Iterator[tuple[Limiter, Leases, Admission]]:
    url = REDIS_URL
    settings = settings_from_env({"ASSISTANT_PROFILE": "test", "ASSISTANT_REDIS_URL": url,
                                  "ASSISTANT_USER_MESSAGE_LIMIT": "2/hour",
                                  "ASSISTANT_DAILY_QUESTION_CAP": "4"})
    client = redis.Redis(connection_pool=redis.ConnectionPool.from_url(
        url, connection_class=CountingConnection))
    client.flushdb()
    limiter, leases = Limiter(settings, client), Leases(settings, client)
    admission = Admission(limiter, leases, client)
    admission.admit("warm-up", "hi", "t00", "p")  # scripts loaded once per Redis
    leases.release("t00")
    client.flushdb()  # the scripts stay loaded; the windows start empty
    try:
        yield limiter, leases, admission
    finally:
        client.flushdb()


def sends(fn: Any) -> int:
    before = SENDS[0]
    fn()
    return SENDS[0] - before


def test_a_message_costs_two_round_trips_all_told(
        counted: tuple[Limiter, Leases, Admission]) -> None:
    _, leases, admission = counted
    assert sends(lambda: admission.admit("alice", "How does it work?", "t1", "p", "en",
                                         "192.0.2.1", "192.0.2.1")) == 1
    assert sends(lambda: leases.release("t1")) == 1


def test_the_admission_script_refuses_without_consuming_anything(
        counted: tuple[Limiter, Leases, Admission]) -> None:
    _, leases, admission = counted
    admission.admit("dave", "one", "d1", "p")
    leases.release("d1")
    admission.admit("dave", "two", "d2", "p")
    leases.release("d2")
    with pytest.raises(RateLimited) as refused:
        admission.admit("dave", "three", "d3", "p")
    assert 3590 <= refused.value.retry_after <= 3600
    assert "2 messages" in refused.value.public_message
    assert leases.renew("d3") is False  # the refused turn holds no slot
    # Daily cap 4 holds dave's two: his refused third took nothing, so erin gets the last two.
    admission.admit("erin", "one", "e1", "p")
    admission.admit("erin", "two", "e2", "p")
    with pytest.raises(RateLimited) as daily:
        admission.admit("frank", "one", "f1", "p")
    assert "a day" in daily.value.public_message


def test_the_watchdog_looks_in_one_round_trip_and_not_while_frames_flow(
        services: stack.Supervisor) -> None:
    import time
    import uuid

    from shared import keys
    from shared.frames import Frame, FrameLog
    from web.follow import WATCH_S, TurnFollower

    url = REDIS_URL
    settings = settings_from_env({"ASSISTANT_PROFILE": "test", "ASSISTANT_REDIS_URL": url})
    client = redis.Redis(connection_pool=redis.ConnectionPool.from_url(
        url, connection_class=CountingConnection))
    turn = uuid.uuid4().hex
    client.set(keys.turn_started(turn, 1), "1", ex=60)  # a live turn: started and leased
    client.set(keys.turn_lease(turn), "worker", ex=60)
    worker_log = FrameLog(redis.Redis.from_url(url), turn, 60)
    worker_log.append({"type": "accepted", "turn": turn})
    follower = TurnFollower(client, settings, turn, last=0)
    follower.watch()  # scripts and connection warmed
    assert sends(follower.watch) == 0  # it looked less than WATCH_S ago
    follower._heard -= WATCH_S
    assert sends(follower.watch) == 1  # catch-up, log head, flags and lease in one pipeline
    worker_log.append({"type": "token", "turn": turn, "text": "x"})
    follower._heard = time.monotonic() - WATCH_S
    got: list[Frame] = []
    assert sends(lambda: got.extend(follower.watch())) == 1
    assert [f.seq for f in got] == [1]
