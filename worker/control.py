"""While a turn runs: renew its lease (so a dead worker is noticed) and watch for cancel."""

from __future__ import annotations

import logging
import os
import socket
import threading
from types import TracebackType

import redis

from shared import turns

log = logging.getLogger(__name__)
TICK_S = 0.5


class TurnControl:
    """A background thread per running turn: lease renewal and the cancel flag."""

    def __init__(self, client: redis.Redis, turn: str, attempt: int, lease_s: float) -> None:
        self._client = client
        self.turn = turn
        self._lease_s = lease_s
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{attempt}"
        self.cancelled = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"turn-{turn[:8]}", daemon=True)

    def __enter__(self) -> TurnControl:
        turns.hold_lease(self._client, self.turn, self.holder, self._lease_s)
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        try:
            turns.release_lease(self._client, self.turn)
        except redis.RedisError:
            log.warning("turn %s: could not release its lease", self.turn)

    def _run(self) -> None:
        ticks = 0
        renew_every = max(1, int(self._lease_s / 3 / TICK_S))
        while not self._stop.wait(TICK_S):
            ticks += 1
            try:
                if turns.cancel_requested(self._client, self.turn):
                    self.cancelled.set()
                if ticks % renew_every == 0:
                    turns.hold_lease(self._client, self.turn, self.holder, self._lease_s)
            except redis.RedisError:
                log.warning("turn %s: Redis unreachable from the turn control", self.turn)
