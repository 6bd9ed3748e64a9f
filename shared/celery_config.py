"""Celery settings shared by the web tier (which only sends by name) and the worker."""

from __future__ import annotations

from typing import Any

from shared.config import Settings
from shared.redis_url import sentinel_target

TURN_TASK = "turn.answer"
TURN_QUEUE = "turns"
CORPUS_REBUILD_TASK = "corpus.rebuild"
TRACE_PRUNE_TASK = "traces.prune"
FEEDBACK_TASK = "turn.feedback"
CORPUS_QUEUE = "corpus"
# Ratings wait here, never in front of turns (a burst of them must not delay an answer).
FEEDBACK_QUEUE = "feedback"
QUEUES = (TURN_QUEUE, CORPUS_QUEUE, FEEDBACK_QUEUE)


def celery_config(settings: Settings) -> dict[str, Any]:
    """JSON only, explicit queues, prefetch 1; time limits under the visibility timeout."""
    hard_limit = int(settings.answer_timeout_s + 60)
    broker_url = settings.redis_url
    transport: dict[str, Any] = {"visibility_timeout": hard_limit * 4}
    target = sentinel_target(settings.redis_url)
    if target is not None:
        # kombu's sentinel transport: one sentinel:// URL per Sentinel, the primary's name in
        # master_name; it asks them for the primary on every (re)connection.
        broker_url = target.kombu_url()
        transport.update(master_name=target.service,
                         sentinel_kwargs={"socket_connect_timeout": 1, "socket_timeout": 1})
    return {
        "broker_url": broker_url,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": transport,
        "task_serializer": "json",
        "accept_content": ["json"],
        "result_serializer": "json",
        "task_ignore_result": True,
        "result_backend": None,
        "task_default_queue": TURN_QUEUE,
        "task_routes": {TURN_TASK: {"queue": TURN_QUEUE}, FEEDBACK_TASK: {"queue": FEEDBACK_QUEUE},
                        CORPUS_REBUILD_TASK: {"queue": CORPUS_QUEUE}},
        "worker_prefetch_multiplier": 1,
        "task_time_limit": hard_limit,
        "task_soft_time_limit": int(settings.answer_timeout_s + 30),
        "worker_send_task_events": True,
        "task_send_sent_event": True,
        "timezone": "UTC",
    }
