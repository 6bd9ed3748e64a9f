"""Wire protocol v1 frames and the per-turn frame log (Redis Stream + pub/sub)."""

from __future__ import annotations

import json
from typing import Any

import redis

from shared import keys

TERMINAL_TYPES = frozenset({"done", "error"})


def encode(frame: dict[str, Any]) -> str:
    """Serialise a frame compactly (it is sent as-is to clients)."""
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":"))


def error_frame(turn: str | None, seq: int | None, code: int, message: str,
                **extra: Any) -> dict[str, Any]:
    """An error frame with a status-like code and a plain sentence."""
    frame: dict[str, Any] = {"type": "error", "turn": turn, "seq": seq, "code": code,
                             "message": message}
    frame.update(extra)
    return frame


class FrameLog:
    """Appends a turn's frames to its replay stream and publishes them live, in one round trip."""

    def __init__(self, client: redis.Redis, turn: str, ttl_s: int) -> None:
        self._client = client
        self.turn = turn
        self._ttl = ttl_s
        self._log = keys.turn_log(turn)
        self._channel = keys.turn_channel(turn)

    def append(self, frame: dict[str, Any]) -> None:
        """Record and publish one frame (which already carries its seq)."""
        data = encode(frame)
        pipe = self._client.pipeline(transaction=False)
        # Publish first: live listeners get the frame without waiting for the stream append.
        # A reader that resumes in between finds it in the log at its next catch-up (gaps
        # are filled from the log), so nothing is lost.
        pipe.publish(self._channel, data)
        pipe.xadd(self._log, {"f": data})
        pipe.expire(self._log, self._ttl)
        pipe.execute()

    def intact(self) -> bool:
        """Whether the log still starts with the turn's first frame (seq 0); a Redis that
        restarted without its data has no log, or only frames written after the restart."""
        entries: Any = self._client.xrange(self._log, count=1)
        if not entries:
            return False
        fields = entries[0][1]
        return bool(json.loads(fields.get(b"f") or fields.get("f")).get("seq") == 0)

    def frames_after(self, after_seq: int) -> list[dict[str, Any]]:
        """Every logged frame with seq greater than after_seq, in order."""
        out = []
        entries: Any = self._client.xrange(self._log)
        for _id, fields in entries:
            frame = json.loads(fields.get(b"f") or fields.get("f"))
            if frame.get("seq", -1) > after_seq:
                out.append(frame)
        return out
