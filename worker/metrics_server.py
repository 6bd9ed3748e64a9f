"""The worker's Prometheus endpoint: 127.0.0.1:ASSISTANT_WORKER_METRICS_PORT, started when the
worker is ready (never on another interface: operators scrape it from the same host)."""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import worker_ready
from prometheus_client import CollectorRegistry, start_http_server

from shared import metrics
from shared.celery_config import QUEUES
from shared.config import get_settings
from shared.redis_client import redis_client

log = logging.getLogger(__name__)


def registry() -> CollectorRegistry:
    """This process's metrics plus queue depth and in-flight slots from Redis."""
    settings = get_settings()
    reg = CollectorRegistry()
    reg.register(metrics.Forward(metrics.REGISTRY))
    reg.register(metrics.RedisStateCollector(redis_client(settings), QUEUES))
    return reg


@worker_ready.connect
def _start(sender: Any = None, **_: Any) -> None:
    port = get_settings().worker_metrics_port
    if port:
        start_http_server(port, addr="127.0.0.1", registry=registry())
        log.info("metrics on http://127.0.0.1:%d/metrics", port)
