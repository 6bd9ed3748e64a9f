"""A worker asked to stop (SIGTERM: Celery's warm shutdown) finishes the turns it runs.

Celery stops consuming at its next look (up to a couple of seconds: a task already fetched
still arrives, and worker/tasks.py hands such a turn back to the queue unstarted, so the
worker takes no new turn), and waits for the running ones; each of those ends by itself within the answer limit (the pipeline's answer_timeout_s,
an error frame 504 at worst). A turn stuck past that (a model call that ignores its timeout)
must not hold the deploy: DRAIN_MARGIN_S later the process exits as a SIGKILL would, its
turns' leases lapse, and the web tier re-runs them on another worker (worker/tasks.py).
compose's stop_grace_period for workers is longer than this (docker/compose.yaml).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from celery.signals import worker_shutting_down

from shared.config import get_settings

log = logging.getLogger(__name__)
DRAIN_MARGIN_S = 5.0
_stopping = False  # set inside the signal handler: a plain flag, no lock


def stopping() -> bool:
    """Whether this worker was asked to stop (a turn task it receives now is handed back)."""
    return _stopping


def drain_limit_s() -> float:
    """How long a stopping worker gives its running turns."""
    return get_settings().answer_timeout_s + DRAIN_MARGIN_S


def _drain(sig: Any) -> None:
    limit = drain_limit_s()
    log.info("stopping (%s): no new turns; running turns get up to %.0f s", sig, limit)
    threading.Event().wait(limit)
    log.warning("stopping: turns still running after %.0f s; exiting, they are re-run "
                "elsewhere", limit)
    logging.shutdown()
    os._exit(1)


@worker_shutting_down.connect
def _on_shutting_down(sig: Any = None, how: Any = None, **_: Any) -> None:
    # Called inside the signal handler: set the flag, start the thread (it logs, not this).
    global _stopping
    _stopping = True
    if how == "Warm":
        threading.Thread(target=_drain, args=(sig,), name="drain", daemon=True).start()
