"""Stopping a running turn: the same request from a WebSocket frame and from HTTP (SSE)."""

from __future__ import annotations

import redis

from shared import turns
from shared.config import Settings
from shared.errors import NotFound, Unavailable
from web.follow import owns


def cancel_turn(client: redis.Redis, settings: Settings, user: str, turn: object) -> None:
    """Ask the worker to stop a turn of this user (it answers with an error frame 499)."""
    if not owns(client, user, turn):
        raise NotFound("unknown turn", public_message="This answer is not running.")
    assert isinstance(turn, str)  # owns() accepts only a non-empty string
    try:
        turns.request_cancel(client, turn, settings.replay_ttl_s)
    except redis.RedisError as exc:
        raise Unavailable("cancel failed") from exc
