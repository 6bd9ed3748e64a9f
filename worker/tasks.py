"""Thin Celery tasks: deserialize, call the plain pipeline function.

Delivery semantics of a turn: Celery delivers each attempt at most once (acks on receipt, so a
killed worker's turn is never silently redelivered an hour later). A turn id + attempt number
makes the task idempotent (a duplicate delivery does nothing). The running worker holds a
short lease in Redis; when a worker dies mid-turn the lease expires, and the web tier watching
the turn re-runs it once (attempt 2, announced to the client with a `restart` frame) or, if
that also fails, ends the turn with an error frame. Never silence.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from celery import shared_task

from shared import feedback, metrics, traces, turns
from shared.celery_config import FEEDBACK_TASK, TRACE_PRUNE_TASK, TURN_TASK
from shared.checks import flags as check_flags
from shared.config import Settings, get_settings
from shared.frames import FrameLog, TurnClosed
from shared.limits import Leases
from shared.redis_client import redis_client
from shared.turn_request import ContractError
from worker import shutdown
from worker.control import TurnControl
from worker.db import corpus_connection
from worker.emit import TurnEmitter
from worker.pipeline.tools import TOOL_NAMES
from worker.pipeline.turn import TurnDeps, run_turn

log = logging.getLogger(__name__)
_trace_schema_ready = False


@shared_task(name=TURN_TASK, ignore_result=True, acks_late=False)
def answer_turn(turn: str, attempt: int = 1) -> None:
    """Run one attempt of a turn, read from its stored TurnRequest; its frames go to the
    turn's log and channel. The task's arguments are ids only, never the user's text."""
    started = time.monotonic()
    settings = get_settings()
    client = redis_client(settings)
    if not isinstance(turn, str) or not turn or isinstance(attempt, bool) or not isinstance(
            attempt, int):
        log.warning("turn task with bad arguments; dropped")
        return
    if shutdown.stopping():
        # Fetched after SIGTERM: unstarted and unclaimed, so another worker takes it (the
        # pause keeps this worker from fetching it straight back until its consumer stops).
        time.sleep(0.1)
        answer_turn.apply_async((turn, attempt))
        log.info("turn %s attempt %d: this worker is stopping; handed back", turn, attempt)
        return
    if not turns.claim_attempt(client, turn, attempt, settings.replay_ttl_s):
        log.info("turn %s attempt %d: already started elsewhere; skipped", turn, attempt)
        return
    emit = TurnEmitter(FrameLog(client, turn, settings.replay_ttl_s), started,
                       on_step=flower_step)
    try:
        if attempt > 1:
            emit.restart(attempt)
        try:
            req = turns.load_request(client, turn)
        except ContractError as exc:
            # Names the version or field at fault (never the user's text): a web tier and a
            # worker of different releases show up here.
            log.warning("turn %s: %s", turn, exc)
            emit.error(exc.code, exc.public_message)
            return
    except TurnClosed:
        log.info("turn %s attempt %d: already ended; skipped", turn, attempt)
        return
    trace = traces.Trace(turn=turn, user_hash=req.user, attempt=attempt)
    try:
        with TurnControl(client, turn, attempt, settings.turn_lease_s,
                         Leases(settings, client)) as control:
            deps = TurnDeps(settings, lambda: corpus_connection(settings),
                            cancelled=control.cancelled)
            run_turn(req, deps, emit, trace)
    except TurnClosed:
        # Ended without this attempt (the web tier gave up on it) or lost with Redis' data.
        log.info("turn %s attempt %d: its log takes no more frames; stopped", turn, attempt)
        trace.outcome = "error"
    finally:
        observe(trace, started)
    save_trace(settings, trace)
    log.info("turn %s attempt %d: %s after %d frames", turn, attempt, trace.outcome, emit.seq)


def flower_step(name: str) -> None:
    """Show the running step in Flower: a custom task event whose type becomes the task's
    state there (RETRIEVE, GENERATE, ...). Monitoring never delays or fails a turn."""
    try:
        answer_turn.send_event(f"task-{name}", retry=False, step=name)
    except Exception:  # noqa: BLE001 - any failure of the event bus is ignored here
        log.debug("step event not sent")


def observe(trace: traces.Trace, started: float) -> None:
    """Metrics of a finished attempt (an attempt that raised counts as `crashed`)."""
    first = next((s["start_ms"] / 1000 for s in trace.steps if s.get("step") == "first_token"),
                 None)
    # A check that could not run (a bug inside it) is counted apart, never as a flag.
    flags = check_flags(trace.checks)
    outcome = "crashed" if trace.outcome == "running" else trace.outcome
    metrics.observe_turn(outcome, trace.error_code, first, started, flags)
    for step in trace.steps:
        if step.get("step") == "tool":
            # The model names the tool: anything but ours is one label, not a new series.
            name = step.get("tool") if step.get("tool") in TOOL_NAMES else "unknown"
            result = "ok" if step.get("ok") else "limit" if step.get("error") == "limit" \
                else "error"
            metrics.TOOL_CALLS.labels(name, result).inc()


@contextmanager
def assistant_db(settings: Settings) -> Iterator[psycopg.Connection]:
    """A connection to the assistant's database whose traces table exists (ensured once per
    process: three ALTER TABLEs on every task would cost a round trip each)."""
    global _trace_schema_ready
    with psycopg.connect(settings.assistant_dsn, autocommit=True, connect_timeout=3) as conn:
        if not _trace_schema_ready:
            traces.ensure_schema(conn)
            _trace_schema_ready = True
        yield conn


def save_trace(settings: Settings, trace: traces.Trace) -> None:
    """Store the trace; a trace failure never fails the turn."""
    try:
        with assistant_db(settings) as conn:
            traces.save(conn, trace)
    except psycopg.Error as exc:
        log.warning("turn %s: trace not saved (%s)", trace.turn, type(exc).__name__)


@shared_task(name=FEEDBACK_TASK, bind=True, ignore_result=True, max_retries=5)
def save_feedback(self: Any, turn: str) -> None:
    """A person's stored rating of an answer onto its trace (retried while the trace is not
    saved); the task's argument is the turn id only. The turn's one pending task: it saves
    the latest rating, also one given while it ran."""
    settings = get_settings()
    client = redis_client(settings)
    for _ in range(5):
        fb = feedback.load(client, str(turn))
        if fb is None:
            feedback.forget(client, str(turn))
            log.warning("turn %s: feedback gone before it was saved", turn)
            return
        with assistant_db(settings) as conn:
            saved = traces.save_feedback(conn, fb.turn, fb.user, fb.rating, fb.comment)
        if not saved:
            if self.request.retries >= self.max_retries:
                feedback.forget(client, fb.turn)
                log.warning("turn %s: feedback dropped (no trace)", turn)
                return
            raise self.retry(countdown=2)
        if feedback.settle(client, fb):
            log.info("turn %s: feedback %+d", turn, fb.rating)
            return
    raise self.retry(countdown=2)  # rated again and again while saving: later, once more


@shared_task(name=TRACE_PRUNE_TASK, ignore_result=True)
def prune_traces() -> int:
    """Delete traces older than 14 days (beat, daily)."""
    with assistant_db(get_settings()) as conn:
        deleted = traces.prune(conn)
    log.info("pruned %d traces", deleted)
    return deleted
