"""This process's relay: one Redis subscriber per web process, created after fork."""

from __future__ import annotations

import os

from shared.config import get_settings
from shared.redis_client import redis_client
from web.relay import Relay

_relay: tuple[int, Relay] | None = None


def relay_for_process() -> Relay:
    """This process's relay, created on first use (a forked child gets its own)."""
    global _relay
    if _relay is None or _relay[0] != os.getpid():
        _relay = (os.getpid(), Relay(redis_client(get_settings())))
    return _relay[1]
