"""A worker writes a short-lived heartbeat key while it runs, so /healthz can see it cheaply,
and announces the turn-request versions it reads; one that cannot read what the live web
servers write refuses to start (shared/contract_peers.py)."""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any

import redis
from celery.signals import worker_init, worker_ready, worker_shutdown

from shared import contract_peers, keys
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
            contract_peers.announce(client, "worker")
        except redis.RedisError:
            log.warning("heartbeat: Redis unreachable")
        _stop.wait(INTERVAL_S)


@worker_init.connect
def _check_contract(**_: Any) -> None:
    """Refuse to start beside web servers whose turn requests this release cannot read."""
    try:
        why = contract_peers.conflict(redis_client(get_settings()), "worker")
    except redis.RedisError:
        return  # no Redis yet: the worker waits for its broker as before
    if why:
        print(f"become-assistant worker: {why}", file=sys.stderr, flush=True)
        raise SystemExit(1)


@worker_ready.connect
def _start(sender: Any = None, **_: Any) -> None:
    hostname = getattr(sender, "hostname", "worker")
    threading.Thread(target=_beat, args=(hostname,), name="heartbeat", daemon=True).start()


@worker_shutdown.connect
def _stop_beat(sender: Any = None, **_: Any) -> None:
    _stop.set()
    try:
        client = redis_client(get_settings())
        client.delete(keys.worker_heartbeat(getattr(sender, "hostname", "")))
        contract_peers.withdraw(client, "worker")
    except redis.RedisError:
        pass
