"""The beat schedule, as data: what runs when."""

from __future__ import annotations

from celery.schedules import crontab

from shared.celery_config import CORPUS_QUEUE, CORPUS_REBUILD_TASK

BEAT_SCHEDULE = {
    "corpus-rebuild-nightly": {
        "task": CORPUS_REBUILD_TASK,
        "schedule": crontab(minute=17, hour=3),
        "options": {"queue": CORPUS_QUEUE},
    },
}
