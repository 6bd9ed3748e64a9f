"""Celery tasks of the corpus jobs: thin wrappers; the lock lives in locked_build."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from corpus_jobs.build import LOCK_TIMEOUT_S, locked_build
from corpus_jobs.manifest import load_manifest
from shared.celery_config import CORPUS_REBUILD_TASK
from shared.config import get_settings
from shared.metrics import REBUILDS

log = logging.getLogger(__name__)


@shared_task(name=CORPUS_REBUILD_TASK, ignore_result=True, time_limit=LOCK_TIMEOUT_S,
             soft_time_limit=LOCK_TIMEOUT_S - 60)
def rebuild_corpus(force: bool = False) -> dict[str, Any]:
    """Rebuild the index unless another rebuild runs; a no-op when nothing changed."""
    settings = get_settings()
    try:
        report = locked_build(settings, load_manifest(settings.corpus_manifest), force=force)
    except Exception:
        REBUILDS.labels("failed").inc()
        raise
    if report is None:
        log.info("corpus rebuild skipped: another rebuild is running")
        REBUILDS.labels("skipped").inc()
        return {"skipped": True}
    REBUILDS.labels("unchanged" if report.no_op else "built").inc()
    log.info("corpus rebuild: version=%s no_op=%s passages=%d embedded=%d",
             report.version, report.no_op, report.passages, report.embedded)
    return {"version": report.version, "no_op": report.no_op}
