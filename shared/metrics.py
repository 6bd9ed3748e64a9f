"""Prometheus metrics of the web tier and the worker (prometheus_client).

Under gunicorn every worker process writes to PROMETHEUS_MULTIPROC_DIR (set by
web/gunicorn_conf.py) and a scrape sums them; the Celery worker is one process and serves its
own registry. Queue depth and in-flight slots are read from Redis at scrape time, so every
process reports the same cluster-wide figures.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import redis
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import REGISTRY, Collector

__all__ = ["REGISTRY"]

from shared import checks, keys

TURNS = Counter("assistant_turns", "Turns ended by a worker, by outcome and error code",
                ["outcome", "code"])
TURN_STARTS = Counter("assistant_turn_starts", "Asks at the web tier: accepted or refused "
                      "(rate, busy, unavailable, invalid)", ["result"])
FIRST_TOKEN = Histogram("assistant_first_token_seconds", "Time from task start to the first "
                        "answer token", buckets=(0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 60, 90))
ANSWER = Histogram("assistant_answer_seconds", "Time from task start to the final frame",
                   buckets=(0.5, 1, 2, 4, 8, 15, 30, 60, 90, 120, 180))
CHECK_FLAGS = Counter("assistant_check_flags", "Answers a check flagged ("
                      + ", ".join(checks.NAMES) + "; <name>_unavailable: could not run)",
                      ["check"])
TOOL_CALLS = Counter("assistant_tool_calls", "Tool calls made by agent turns", ["tool", "result"])
REBUILDS = Counter("assistant_rebuilds", "Corpus rebuilds by result (built, unchanged, "
                   "skipped, failed)", ["result"])
FEEDBACK = Counter("assistant_feedback", "Thumbs on answers from the panel, by rating",
                   ["rating"])
OPEN_SOCKETS = Gauge("assistant_open_sockets", "Open assistant WebSockets",
                     multiprocess_mode="livesum")


class RedisStateCollector(Collector):
    """Queue depth per Celery queue and in-flight slots, read from Redis at scrape time."""

    def __init__(self, client: redis.Redis, queues: tuple[str, ...]) -> None:
        self._client = client
        self._queues = queues

    def collect(self) -> Iterator[GaugeMetricFamily]:
        depth = GaugeMetricFamily("assistant_queue_depth", "Tasks waiting per Celery queue",
                                  labels=["queue"])
        slots = GaugeMetricFamily("assistant_inflight_slots",
                                  "In-flight turn slots held (all processes)")
        up = GaugeMetricFamily("assistant_redis_up", "1 when Redis answered this scrape")
        try:
            pipe = self._client.pipeline(transaction=False)
            for q in self._queues:
                pipe.llen(q)
            # Slot scores are lease deadlines in ms on the Redis clock; lapsed ones don't count.
            pipe.time()
            got: list[Any] = pipe.execute()
            sec, usec = got[-1]
            live = self._client.zcount(keys.SLOTS_ALL, int(sec) * 1000 + int(usec) // 1000,
                                       "+inf")
        except redis.RedisError:
            up.add_metric([], 0)
            yield up
            return
        for q, n in zip(self._queues, got[:-1], strict=False):
            depth.add_metric([q], int(n))
        slots.add_metric([], int(live))
        up.add_metric([], 1)
        yield from (depth, slots, up)


def render(state: Collector | None = None) -> tuple[bytes, str]:
    """The text exposition of this process (or of all gunicorn workers) plus `state`."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = CollectorRegistry()
        registry.register(Forward(REGISTRY))
    if state is not None:
        registry.register(state)
    return generate_latest(registry), CONTENT_TYPE_LATEST


class Forward(Collector):
    """The default registry's metrics inside a per-scrape registry."""

    def __init__(self, source: CollectorRegistry) -> None:
        self._source = source

    def collect(self) -> Iterator[Any]:
        return iter(self._source.collect())


def observe_turn(outcome: str, code: int | None, first_token_s: float | None,
                 started: float, flags: list[str]) -> None:
    """Record one finished turn attempt."""
    TURNS.labels(outcome, str(code or "")).inc()
    if first_token_s is not None:
        FIRST_TOKEN.observe(first_token_s)
    ANSWER.observe(time.monotonic() - started)
    for check in flags:
        CHECK_FLAGS.labels(check).inc()
