"""Single-use, short-lived WebSocket tickets bound to a user, kept in Redis by hash."""

from __future__ import annotations

import secrets

import redis

from shared import keys
from shared.errors import Unauthorized, Unavailable


def issue_ticket(client: redis.Redis, user: str, ttl_s: int) -> str:
    """A new ticket for user, valid once within ttl_s seconds."""
    ticket = secrets.token_urlsafe(32)
    try:
        client.set(keys.ticket(ticket), user, ex=ttl_s)
    except redis.RedisError as exc:
        raise Unavailable("redis unavailable for tickets") from exc
    return ticket


def consume_ticket(client: redis.Redis, ticket: str) -> str:
    """The ticket's user; the ticket is gone afterwards (GETDEL), so it cannot be reused."""
    if not ticket or len(ticket) > 128:
        raise Unauthorized("missing or malformed ticket")
    try:
        user = client.getdel(keys.ticket(ticket))
    except redis.RedisError as exc:
        raise Unavailable("redis unavailable for tickets") from exc
    if user is None:
        raise Unauthorized("unknown, used or expired ticket")
    return user.decode() if isinstance(user, bytes) else str(user)
