"""A rating on an answer, handed from the web tier to the worker by turn id (never in task args).

The web tier stores it under keys.turn_feedback(turn); the worker's feedback task, whose only
argument is the turn id, reads it, puts it on the trace and deletes it. A turn has at most one
pending task (keys.turn_feedback_task): a rating given while one waits replaces the stored one,
and that task reads whichever is there when it runs.
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


# A task lost on the way (a worker killed while it ran) frees the turn for a new one by then.
PENDING_TTL_S = 120


def _encode(fb: Feedback) -> str:
    return json.dumps({"user": fb.user, "rating": fb.rating, "comment": fb.comment})


def store(client: redis.Redis, fb: Feedback, ttl_s: int) -> bool:
    """Keep the rating for the worker (a later rating of the same turn replaces it); True when
    no task of the turn is pending, so the caller sends one."""
    pipe = client.pipeline(transaction=True)
    pipe.set(keys.turn_feedback(fb.turn), _encode(fb), ex=ttl_s)
    pipe.set(keys.turn_feedback_task(fb.turn), "1", nx=True, ex=PENDING_TTL_S)
    return bool(pipe.execute()[1])


# KEYS: the stored rating, the pending-task flag. ARGV: the rating as saved. Drops both when
# the stored rating is still the one saved; else keeps them (a newer one came meanwhile, and
# the web tier sent no task for it because this one was pending).
_SETTLE_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 1
end
return 0
"""


def settle(client: redis.Redis, fb: Feedback) -> bool:
    """After fb is on the trace: forget it and end the turn's pending task, unless a newer
    rating replaced it meanwhile (False: the task saves that one too)."""
    script = client.register_script(_SETTLE_LUA)
    return bool(script(keys=[keys.turn_feedback(fb.turn), keys.turn_feedback_task(fb.turn)],
                       args=[_encode(fb)]))


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
    """Drop a turn's rating and its pending-task flag (the rating cannot be saved)."""
    client.delete(keys.turn_feedback(turn), keys.turn_feedback_task(turn))
