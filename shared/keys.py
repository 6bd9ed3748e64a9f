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


def turn_request(turn: str) -> str:
    """The turn's TurnRequest (shared/turn_request.py): the worker reads it by turn id, and a
    turn whose worker died is re-run once from it."""
    return f"{PREFIX}turn:{turn}:request"


def turn_feedback(turn: str) -> str:
    """A rating of the turn's answer, waiting for the worker to put it on the trace."""
    return f"{PREFIX}turn:{turn}:feedback"


def turn_feedback_task(turn: str) -> str:
    """Set while a feedback task of the turn is queued or running: one pending task a turn."""
    return f"{PREFIX}turn:{turn}:feedback-task"


def turn_rerun(turn: str) -> str:
    """Claimed by whichever web process re-runs a turn, so only one does."""
    return f"{PREFIX}turn:{turn}:rerun"


def turn_abandoned(turn: str) -> str:
    """Claimed by the web process that ends a turn nobody runs any more."""
    return f"{PREFIX}turn:{turn}:abandoned"


def _pseudonym(value: str) -> str:
    # User ids and client addresses never appear in key names, only a hash of them.
    return hashlib.sha256(f"become-assistant:limits:{value}".encode()).hexdigest()[:32]


RATE_PREFIX = f"{PREFIX}rate"
"""Prefix the `limits` storage puts before its own key names.

A rate-limit key reads `ba:rate:LIMITER/<scope...>/<amount>/<multiples>/<unit>`; the scope parts
come from the rate_* functions below and `limits` appends the rest.
"""


def rate_client(client_addr: str) -> tuple[str, ...]:
    """Scope of the per-client-address request limit (a moving-window list in `limits`)."""
    return ("addr", _pseudonym(client_addr))


def rate_health(client_addr: str) -> tuple[str, ...]:
    """Scope of the per-address limit on public /healthz calls."""
    return ("health", _pseudonym(client_addr))


def rate_client_message(client_addr: str) -> tuple[str, ...]:
    """Scope of the per-client-address message limit."""
    return ("addr-msg", _pseudonym(client_addr))


def streams_user(user: str) -> str:
    """Sorted set of a user's open event streams (member: stream id, score: lease deadline)."""
    return f"{PREFIX}streams:{_pseudonym(user)}"


def sockets_user(user: str) -> str:
    """Sorted set of a user's open WebSockets (member: socket id, score: lease deadline, ms)."""
    return f"{PREFIX}sockets:user:{_pseudonym(user)}"


def sockets_address(bucket: str) -> str:
    """Sorted set of the open WebSockets of one client address bucket, like sockets_user."""
    return f"{PREFIX}sockets:addr:{_pseudonym(bucket)}"


def rate_user(user: str) -> tuple[str, ...]:
    """Scope of the per-user message limit."""
    return ("user", _pseudonym(user))


RATE_GLOBAL: tuple[str, ...] = ("global",)
RATE_DAILY: tuple[str, ...] = ("daily",)


def slots_user(user: str) -> str:
    """Sorted set of one user's in-flight turns, scored by lease deadline (ms, Redis clock)."""
    return f"{PREFIX}slots:user:{_pseudonym(user)}"


def slots_process(process_id: str) -> str:
    """Sorted set of the in-flight turns one web process serves, scored by lease deadline."""
    return f"{PREFIX}slots:proc:{process_id}"


SLOTS_ALL = f"{PREFIX}slots:all"
"""Sorted set of every in-flight turn in the cluster, scored by lease deadline."""


def slot_holder(turn: str) -> str:
    """Hash naming the user and process sets a turn's slot sits in (for renew and release)."""
    return f"{PREFIX}turn:{turn}:slot"
