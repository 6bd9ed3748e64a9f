"""The Celery application `celery -A worker.celery_app` points at; configuration only."""

from __future__ import annotations

from celery import Celery

from shared.celery_config import celery_config
from shared.config import get_settings
from worker.beat_schedule import BEAT_SCHEDULE

app = Celery("become_assistant")
app.conf.update(celery_config(get_settings()))
app.conf.include = ["worker.tasks", "corpus_jobs.tasks"]
app.conf.beat_schedule = BEAT_SCHEDULE

import worker.heartbeat  # noqa: E402,F401  (connects worker signals)
import worker.metrics_server  # noqa: E402,F401
import worker.shutdown  # noqa: E402,F401  (a SIGTERM's drain limit)
