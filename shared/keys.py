"""Every Redis key and channel the assistant uses, in one place."""

from __future__ import annotations

import hashlib

PREFIX = "ba:"


def ticket(ticket_value: str) -> str:
    """A WebSocket ticket, stored under its hash so the key never holds the ticket itself."""
    return f"{PREFIX}ticket:{hashlib.sha256(ticket_value.encode()).hexdigest()}"


def turn_channel(turn: str) -> str:
    """Pub/sub channel a turn's frames are published on."""
    return f"{PREFIX}turn:{turn}:live"


def turn_log(turn: str) -> str:
    """Redis Stream holding every frame of a turn, for replay after a reconnect."""
    return f"{PREFIX}turn:{turn}:log"


def turn_owner(turn: str) -> str:
    """Which (hashed) user a turn belongs to, so only they can resume it."""
    return f"{PREFIX}turn:{turn}:owner"


def worker_heartbeat(hostname: str) -> str:
    """Liveness of one Celery worker, refreshed while it runs."""
    return f"{PREFIX}worker:{hostname}"


WORKER_HEARTBEAT_PATTERN = f"{PREFIX}worker:*"
CORPUS_REBUILD_LOCK = f"{PREFIX}lock:corpus-rebuild"
