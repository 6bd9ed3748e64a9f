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


def turn_lease(turn: str) -> str:
    """Held (and renewed) by the worker running a turn; gone when that worker dies."""
    return f"{PREFIX}turn:{turn}:lease"


def turn_started(turn: str, attempt: int) -> str:
    """Set once when a worker claims an attempt (makes the task idempotent)."""
    return f"{PREFIX}turn:{turn}:started:{attempt}"


def turn_cancel(turn: str) -> str:
    """Set by the web tier when the client asks to stop the turn."""
    return f"{PREFIX}turn:{turn}:cancel"


def turn_payload(turn: str) -> str:
    """The task payload, kept so a turn whose worker died can be re-run once."""
    return f"{PREFIX}turn:{turn}:payload"


def turn_rerun(turn: str) -> str:
    """Claimed by whichever web process re-runs a turn, so only one does."""
    return f"{PREFIX}turn:{turn}:rerun"


def turn_abandoned(turn: str) -> str:
    """Claimed by the web process that ends a turn nobody runs any more."""
    return f"{PREFIX}turn:{turn}:abandoned"
