"""gunicorn settings: gevent workers hold many open WebSockets; warm-up after fork."""

from __future__ import annotations

import os
from typing import Any

from shared.config import WEB_BIND, WEB_WORKER_CONNECTIONS, WEB_WORKERS

bind = WEB_BIND.get(os.environ)
workers = int(WEB_WORKERS.get(os.environ))
worker_class = "gevent"
# 1,000 open sockets a process (docs/benchmarks.md, "1,000 open sockets on one web process") and
# room for the requests that open them.
worker_connections = int(WEB_WORKER_CONNECTIONS.get(os.environ))
timeout = 60
graceful_timeout = 10
accesslog = "-"
# The query string carries the single-use ticket: never log it.
access_log_format = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(M)sms'


# Every worker writes its metrics here and GET /metrics sums them (prometheus_client's
# multiprocess mode); set before any worker imports prometheus_client.
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    import tempfile

    os.environ["PROMETHEUS_MULTIPROC_DIR"] = _METRICS_DIR = tempfile.mkdtemp(
        prefix="become-assistant-metrics-")

    def on_exit(server: Any) -> None:
        """Remove the metrics files this server created."""
        import shutil

        shutil.rmtree(_METRICS_DIR, ignore_errors=True)


def child_exit(server: Any, worker: Any) -> None:
    """A dead worker's live gauges stop counting."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_starting(server: Any) -> None:
    """Refuse to start with unsafe settings: one plain sentence and exit 1, no traceback."""
    import sys

    from shared.config import require_app_secret, settings_from_env
    from shared.errors import ConfigError

    try:
        settings = settings_from_env()
        require_app_secret(settings)
    except ConfigError as exc:
        print(f"become-assistant web: {exc}", file=sys.stderr, flush=True)
        sys.exit(1)
    why = _contract_conflict(settings, "web")
    if why:
        print(f"become-assistant web: {why}", file=sys.stderr, flush=True)
        sys.exit(1)


def _contract_conflict(settings: Any, role: str) -> str | None:
    """Why this release cannot run beside the live workers (shared/contract_peers.py)."""
    import redis

    from shared import contract_peers
    from shared.redis_client import redis_client

    try:
        return contract_peers.conflict(redis_client(settings), role)
    except redis.RedisError:
        return None  # no Redis yet: nothing runs that could disagree


def post_worker_init(worker: Any) -> None:
    """Open the broker connection and the relay's subscription before the first user."""
    from web.process_relay import relay_for_process
    from web.queue import turn_queue

    try:
        turn_queue.warm_up()
    except Exception as exc:  # noqa: BLE001 - a cold broker must not stop the worker booting
        worker.log.warning("broker warm-up failed: %s", type(exc).__name__)
    relay_for_process().start()
    # A greenlet (gevent patches threading): on SIGTERM, open sockets are told to reconnect.
    import threading

    from web.drain import watch

    threading.Thread(target=watch, args=(lambda: worker.alive,), name="drain",
                     daemon=True).start()
    threading.Thread(target=_announce, args=(lambda: worker.alive,), name="contract",
                     daemon=True).start()


def _announce(alive: Any) -> None:
    """While this worker serves: the turn-request version it writes, for the workers' check."""
    import time

    import redis

    from shared import contract_peers
    from shared.config import get_settings
    from shared.redis_client import redis_client

    client = redis_client(get_settings())
    while alive():
        try:
            contract_peers.announce(client, "web")
        except redis.RedisError:
            pass
        for _ in range(50):
            if not alive():
                break
            time.sleep(0.2)
    try:
        contract_peers.withdraw(client, "web")
    except redis.RedisError:
        pass
