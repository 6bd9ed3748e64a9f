"""A worker writes a short-lived heartbeat key while it runs, so /healthz can see it cheaply."""

from __future__ import annotations

import logging
import threading
from typing import Any

import redis
from celery.signals import worker_ready, worker_shutdown

from shared import keys
from shared.config import get_settings
from shared.redis_client import redis_client

INTERVAL_S = 5
TTL_S = 15
_stop = threading.Event()
log = logging.getLogger(__name__)


def _beat(hostname: str) -> None:
    client = redis_client(get_settings())
    while not _stop.is_set():
        try:
            client.set(keys.worker_heartbeat(hostname), "1", ex=TTL_S)
        except redis.RedisError:
            log.warning("heartbeat: Redis unreachable")
        _stop.wait(INTERVAL_S)


@worker_ready.connect
def _start(sender: Any = None, **_: Any) -> None:
    hostname = getattr(sender, "hostname", "worker")
    threading.Thread(target=_beat, args=(hostname,), name="heartbeat", daemon=True).start()


@worker_shutdown.connect
def _stop_beat(sender: Any = None, **_: Any) -> None:
    _stop.set()
    try:
        redis_client(get_settings()).delete(keys.worker_heartbeat(getattr(sender, "hostname", "")))
    except redis.RedisError:
        pass
