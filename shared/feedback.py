"""A rating on an answer, handed from the web tier to the worker by turn id (never in task args).

The web tier stores it under keys.turn_feedback(turn); the worker's feedback task, whose only
argument is the turn id, reads it, puts it on the trace and deletes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import redis

from shared import keys


@dataclass(frozen=True)
class Feedback:
    """The turn owner's thumbs up (+1) or down (-1) and optional comment."""

    turn: str
    user: str  # hashed
    rating: int
    comment: str = ""


def store(client: redis.Redis, fb: Feedback, ttl_s: int) -> None:
    """Keep the rating for the worker (a later rating of the same turn replaces it)."""
    client.set(keys.turn_feedback(fb.turn), json.dumps(
        {"user": fb.user, "rating": fb.rating, "comment": fb.comment}), ex=ttl_s)


def load(client: redis.Redis, turn: str) -> Feedback | None:
    """The stored rating of a turn, or None when it is gone or not one."""
    raw: Any = client.get(keys.turn_feedback(turn))
    try:
        data = json.loads(raw) if raw else None
        if not isinstance(data, dict) or data.get("rating") not in (1, -1):
            return None
        return Feedback(turn, str(data["user"]), int(data["rating"]), str(data.get("comment", "")))
    except (ValueError, KeyError):
        return None


def forget(client: redis.Redis, turn: str) -> None:
    """Drop a rating once it is on the trace."""
    client.delete(keys.turn_feedback(turn))
