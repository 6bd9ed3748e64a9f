"""Single-use, short-lived WebSocket tickets bound to a user, kept in Redis by hash.

A ticket also carries the user's app token, so the socket can read the user's project with
their own access. The token is stored encrypted with a key derived from the ticket itself:
what Redis holds is useless without the ticket, which only the client has.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass, field

import redis
from cryptography.fernet import Fernet, InvalidToken

from shared import keys
from shared.errors import Unauthorized, Unavailable


@dataclass(frozen=True)
class TicketGrant:
    """Who a consumed ticket was for, and their app token (kept in memory only)."""

    user: str
    app_token: str = field(repr=False)
    # The app token's `exp`: the socket serves the user only until then, so a signed-out or
    # expired token does not keep a socket answering (docs/security.md).
    expires_at: float = 0.0


def _cipher(ticket: str) -> Fernet:
    key = hashlib.sha256(b"become-assistant ticket key\0" + ticket.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def issue_ticket(client: redis.Redis, user: str, app_token: str, ttl_s: int,
                 expires_at: float) -> str:
    """A new ticket for user, valid once within ttl_s seconds, for a token valid until
    expires_at."""
    ticket = secrets.token_urlsafe(32)
    sealed = _cipher(ticket).encrypt(app_token.encode()).decode()
    record = {"user": user, "token": sealed, "exp": expires_at}
    try:
        client.set(keys.ticket(ticket), json.dumps(record), ex=ttl_s)
    except redis.RedisError as exc:
        raise Unavailable("redis unavailable for tickets") from exc
    return ticket


def consume_ticket(client: redis.Redis, ticket: str) -> TicketGrant:
    """The ticket's grant; the ticket is gone afterwards (GETDEL), so it cannot be reused."""
    if not ticket or len(ticket) > 128:
        raise Unauthorized("missing or malformed ticket")
    try:
        raw = client.getdel(keys.ticket(ticket))
    except redis.RedisError as exc:
        raise Unavailable("redis unavailable for tickets") from exc
    if raw is None:
        raise Unauthorized("unknown, used or expired ticket")
    try:
        data = json.loads(raw)
        token = _cipher(ticket).decrypt(data["token"].encode()).decode()
        expires_at = float(data["exp"])
    except (ValueError, KeyError, TypeError, InvalidToken):
        raise Unauthorized("unreadable ticket") from None
    return TicketGrant(str(data["user"]), token, expires_at)
