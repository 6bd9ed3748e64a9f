"""Numbered frames of one turn, appended to its replay log and published live."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from shared import frame_types as frames
from shared.frame_types import Done, Frame


class FrameSink(Protocol):
    """Where a turn's frames go: shared.frames.FrameLog (Redis), or a list in a test."""

    turn: str

    def append(self, frame: dict[str, Any], seq_if_lost: int | None = None) -> int:
        """Record one frame; its seq."""
        ...


class TurnEmitter:
    """Sends a turn's frames; the log numbers them (the web tier's `accepted` is seq 0), so a
    re-run continues where the dead attempt stopped without reading the log first."""

    def __init__(self, log: FrameSink, started: float | None = None,
                 on_step: Callable[[str], None] | None = None) -> None:
        self._log = log
        self._on_step = on_step
        self.turn = log.turn
        self.seq = 0  # the last frame's seq, as the log numbered it
        self.started = started if started is not None else time.monotonic()
        self.steps: list[dict[str, Any]] = []
        self.finished = False
        # The innermost step an exception left, for the log line of a bug (never the text).
        self.failed_step: str | None = None

    def _send(self, frame: Frame) -> None:
        # Raises TurnClosed when the turn has already ended (ended by the web tier, which
        # found no worker in time) or Redis lost it: the attempt has nobody to answer.
        self.seq = self._log.append(frame)

    def restart(self, attempt: int) -> None:
        """Tell clients the answer starts over (a re-run after a worker died): drop its text."""
        self._send(frames.restart(self.turn, attempt))

    def token(self, text: str) -> None:
        """Next piece of the answer."""
        self._send(frames.token(self.turn, text))

    @contextmanager
    def step(self, name: str) -> Iterator[dict[str, Any]]:
        """Time a pipeline step and emit it as an `event` frame (B-4)."""
        start = time.monotonic()
        detail: dict[str, Any] = {}
        if self._on_step is not None:
            self._on_step(name)
        try:
            yield detail
        except BaseException:
            self.failed_step = self.failed_step or name
            raise
        finally:
            record = {"step": name, "start_ms": round((start - self.started) * 1000, 1),
                      "ms": round((time.monotonic() - start) * 1000, 1), **detail}
            self.steps.append(record)
            self._send(frames.event(self.turn, **record))

    def mark(self, name: str) -> None:
        """A point event (e.g. first token) with its time since the turn started."""
        start_ms = round((time.monotonic() - self.started) * 1000, 1)
        record: dict[str, Any] = {"step": name, "start_ms": start_ms, "ms": 0.0}
        self.steps.append(record)
        self._send(frames.event(self.turn, **record))

    def done(self, fields: Done) -> None:
        """The terminal success frame."""
        self.finished = True
        self._send(frames.done(self.turn, fields))

    def error(self, code: int, message: str) -> None:
        """The terminal error frame (plain sentence, no internal text)."""
        self.finished = True
        self._send(frames.error(self.turn, None, code, message))
