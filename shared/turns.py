"""Turn state in Redis shared by the web tier and the worker: leases, cancel, re-run, replay."""

from __future__ import annotations

from typing import Any

import redis

from shared import keys
from shared.turn_request import ContractError, TurnRequest

MAX_ATTEMPTS = 2


def claim_attempt(client: redis.Redis, turn: str, attempt: int, ttl_s: int) -> bool:
    """True for the first worker to start this attempt; a duplicate delivery gets False."""
    return bool(client.set(keys.turn_started(turn, attempt), "1", nx=True, ex=ttl_s))


def started(client: redis.Redis, turn: str, attempt: int) -> bool:
    """Whether a worker has started this attempt."""
    return bool(client.exists(keys.turn_started(turn, attempt)))


def hold_lease(client: redis.Redis, turn: str, holder: str, lease_s: float) -> None:
    """Set or renew the running worker's lease."""
    client.set(keys.turn_lease(turn), holder, px=int(lease_s * 1000))


def lease_holder(client: redis.Redis, turn: str) -> str | None:
    """Who holds the turn's lease, or None when no live worker does."""
    value = client.get(keys.turn_lease(turn))
    return value.decode() if isinstance(value, bytes) else value


def release_lease(client: redis.Redis, turn: str) -> None:
    """Drop the lease at the end of a turn."""
    client.delete(keys.turn_lease(turn))


def request_cancel(client: redis.Redis, turn: str, ttl_s: int) -> None:
    """Ask the worker to stop the turn."""
    client.set(keys.turn_cancel(turn), "1", ex=ttl_s)


def cancel_requested(client: redis.Redis, turn: str) -> bool:
    """Whether the client asked to stop."""
    return bool(client.exists(keys.turn_cancel(turn)))


def store_request(client: redis.Redis, request: TurnRequest, ttl_s: int) -> None:
    """Store the turn's request for its worker (and a re-run); the user's text lives here for
    ttl_s at most, and never in task arguments."""
    client.set(keys.turn_request(request.turn), request.dumps(), ex=ttl_s)


def load_request(client: redis.Redis, turn: str) -> TurnRequest:
    """The turn's request; ContractError when it expired or does not read as one."""
    raw: Any = client.get(keys.turn_request(turn))
    if raw is None:
        raise ContractError(f"turn request of {turn} is gone (expired or never stored)")
    return TurnRequest.loads(raw)


def request_stored(client: redis.Redis, turn: str) -> bool:
    """Whether the turn's request is still there (a re-run needs it)."""
    return bool(client.exists(keys.turn_request(turn)))


def claim_rerun(client: redis.Redis, turn: str, ttl_s: int) -> bool:
    """True for the one web process allowed to re-run a turn whose worker died."""
    return bool(client.set(keys.turn_rerun(turn), "1", nx=True, ex=ttl_s))
