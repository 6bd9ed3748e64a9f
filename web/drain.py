"""A web process asked to stop (SIGTERM, or a gunicorn reload) tells its streams to reconnect.

gunicorn's SIGTERM only flips its worker's `alive` flag; the worker then stops accepting and
waits graceful_timeout for open requests, which for a WebSocket is the whole turn. Instead,
every open socket is closed at once with RESTART_CLOSE (1012, "service restart") and every SSE
stream ends with a `reconnect` event: the panel and the CLI open a new connection straight
away, without their back-off, and resume after the last seq they have on another process (or
on the reloaded one). The turn itself runs in a worker and loses nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)
RESTART_CLOSE = 1012  # RFC 6455 registry: "service restart"
RESTART_REASON = "The server is restarting. Reconnect to resume."
WATCH_S = 0.2

draining = threading.Event()
_inboxes: set[Any] = set()
_lock = threading.Lock()


def register(inbox: Any) -> bool:
    """Tell this socket's inbox when the process drains; False if it already does."""
    with _lock:
        if draining.is_set():
            return False
        _inboxes.add(inbox)
        return True


def unregister(inbox: Any) -> None:
    """The socket closed."""
    with _lock:
        _inboxes.discard(inbox)


def start_draining() -> int:
    """Ask every open socket to close with RESTART_CLOSE; how many were asked."""
    with _lock:
        draining.set()
        inboxes = list(_inboxes)
        _inboxes.clear()
    for inbox in inboxes:
        inbox.put(("drain", None))
    return len(inboxes)


def watch(alive: Callable[[], bool]) -> None:
    """Drain once alive() turns false (gunicorn's worker.alive after SIGTERM)."""
    while alive():
        time.sleep(WATCH_S)
    asked = start_draining()
    log.info("stopping: %d open sockets told to reconnect", asked)
