"""Flower with a Host check: `python -m assistant_cli.flower_guard <celery flower options>`.

Flower has no login and listens on loopback, but a page on another name whose DNS answer
turns into 127.0.0.1 (DNS rebinding) could still read it with the operator's browser. Every
request whose Host is not a loopback name gets 421 before any Flower handler runs.
"""

from __future__ import annotations

import sys
from typing import Any

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def host_name(host: str) -> str:
    """The name of a Host header without its port: "[::1]:5555" -> "::1"."""
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def guard() -> None:
    """Make Flower's application answer 421 to a Host that is not loopback."""
    import tornado.web
    from flower.app import Flower

    plain = Flower.find_handler

    def find_handler(self: Flower, request: Any, **kwargs: Any) -> Any:
        if host_name(request.host or "").lower() not in LOOPBACK_HOSTS:
            return self.get_handler_delegate(request, tornado.web.ErrorHandler,
                                             {"status_code": 421})
        return plain(self, request, **kwargs)

    Flower.find_handler = find_handler


def main() -> None:
    """Run `celery -A worker.celery_app flower ...` with the guard in place."""
    from celery.__main__ import main as celery_main

    guard()
    sys.argv = ["celery", "-A", "worker.celery_app", "flower", *sys.argv[1:]]
    celery_main()


if __name__ == "__main__":
    main()
