"""Numbered frames of one turn, appended to its replay log and published live."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import redis

from shared import frame_types as frames
from shared.frame_types import Done, Frame
from shared.frames import Frame as LoggedFrame
from shared.frames import FrameLog, NotNext, TurnClosed

# How long an append is retried while Redis does not answer: a Sentinel failover (the
# primary called down after a second, a replica promoted) takes two to three seconds here.
RETRY_S = 10.0
INTERRUPTED = "The answer was interrupted. Please ask again."


class FrameSink(Protocol):
    """Where a turn's frames go: shared.frames.FrameLog (Redis), or a list in a test."""

    turn: str

    def append(self, frame: dict[str, Any], seq_if_lost: int | None = None,
               expect: int | None = None) -> int:
        """Record one frame; its seq (`expect`: the seq it must get, else NotNext)."""
        ...

    def last(self) -> LoggedFrame | None:
        """The newest frame."""
        ...


class FramesLost(TurnClosed):
    """Redis lost frames of this turn that were already published (a failover to a replica
    that had not received them): the turn was ended with an error frame."""


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
        self._sent = False  # whether this attempt has appended a frame yet
        self._gave_up = False
        # The innermost step an exception left, for the log line of a bug (never the text).
        self.failed_step: str | None = None

    def _send(self, frame: Frame) -> None:
        # Raises TurnClosed when the turn has already ended (ended by the web tier, which
        # found no worker in time) or Redis lost it: the attempt has nobody to answer.
        self.seq = self._append(frame)

    def _append(self, frame: Frame) -> int:
        """Append a frame as the next one after the last this attempt sent, retried while
        Redis fails over. The log must number it self.seq + 1: if an append whose reply was
        lost had landed, the log's newest frame is this one (taken as sent); if the log is
        behind, frames clients may have seen are gone, and the turn ends with an error frame
        rather than going on with a hole in its text (raises FramesLost)."""
        expect = self.seq + 1 if self._sent else None
        # Once Redis has stayed away for RETRY_S, the frames that follow (the step's event,
        # the error frame) are tried once each, not RETRY_S more each.
        deadline = time.monotonic() + (0 if self._gave_up else RETRY_S)
        while True:
            try:
                seq = self._log.append(frame, expect=expect)
                self._sent = True
                return seq
            except NotNext:
                newest = self._log.last()
                if newest is not None and newest.seq == expect and \
                        newest.text == FrameLog.text(newest.seq, frame):
                    return newest.seq  # the lost reply's append had landed
                self._end_lost()
            except (redis.ConnectionError, redis.TimeoutError):
                if time.monotonic() > deadline:
                    self._gave_up = True
                    raise
                time.sleep(0.25)

    def _end_lost(self) -> None:
        self.finished = True
        try:
            self.seq = self._log.append(frames.error(self.turn, None, 503, INTERRUPTED))
        except TurnClosed:
            pass
        raise FramesLost("frames lost with a Redis failover")

    def restart(self, attempt: int) -> None:
        """Tell clients the answer starts over (a re-run after a worker died): drop its text."""
        self._send(frames.restart(self.turn, attempt))

    def token(self, text: str) -> None:
        """Next piece of the answer."""
        self._send(frames.token(self.turn, text))

    @contextmanager
    def step(self, name: str) -> Iterator[dict[str, Any]]:
        """Time a pipeline step and emit it as an `event` frame (docs/spec/behaviour.md B-4)."""
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
