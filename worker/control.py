"""While a turn runs: renew its lease (so a dead worker is noticed) and watch for cancel."""

from __future__ import annotations

import logging
import os
import socket
import threading
from types import TracebackType

import redis

from shared import turns
from shared.errors import Unavailable
from shared.limits import Leases

log = logging.getLogger(__name__)
TICK_S = 0.5


class TurnControl:
    """A background thread per running turn: lease renewal and the cancel flag."""

    def __init__(self, client: redis.Redis, turn: str, attempt: int, lease_s: float,
                 slots: Leases | None = None) -> None:
        self._client = client
        self._slots = slots
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
        if self._slots is not None:
            self._slots.release(self.turn)

    def _run(self) -> None:
        ticks = 0
        renew_every = max(1, int(self._lease_s / 3 / TICK_S))
        slot_every = max(1, int(self._slots.renew_every_s / TICK_S)) if self._slots else 0
        while not self._stop.wait(TICK_S):
            ticks += 1
            try:
                if turns.cancel_requested(self._client, self.turn):
                    self.cancelled.set()
                if ticks % renew_every == 0:
                    turns.hold_lease(self._client, self.turn, self.holder, self._lease_s)
                if self._slots is not None and ticks % slot_every == 0:
                    # The user's in-flight slot lives as long as a worker runs the turn.
                    self._slots.renew(self.turn)
            except (redis.RedisError, Unavailable):
                log.warning("turn %s: Redis unreachable from the turn control", self.turn)
