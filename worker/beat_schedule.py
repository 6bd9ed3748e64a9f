"""The beat schedule, as data: what runs when."""

from __future__ import annotations

from celery.schedules import crontab

from shared.celery_config import CORPUS_QUEUE, CORPUS_REBUILD_TASK, TRACE_PRUNE_TASK, TURN_QUEUE

BEAT_SCHEDULE = {
    "corpus-rebuild-nightly": {
        "task": CORPUS_REBUILD_TASK,
        "schedule": crontab(minute=17, hour=3),
        "options": {"queue": CORPUS_QUEUE},
    },
    "traces-prune-daily": {
        "task": TRACE_PRUNE_TASK,
        "schedule": crontab(minute=41, hour=2),
        "options": {"queue": TURN_QUEUE},
    },
}
