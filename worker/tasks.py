"""Thin Celery tasks: deserialize, call the plain pipeline function."""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import shared_task

from shared.celery_config import TURN_TASK
from shared.config import get_settings
from shared.errors import AssistantError
from shared.frames import FrameLog
from shared.redis_client import redis_client
from worker.db import corpus_connection
from worker.emit import TurnEmitter
from worker.pipeline.turn import run_turn
from worker.pipeline.types import TurnRequest

log = logging.getLogger(__name__)


@shared_task(name=TURN_TASK, ignore_result=True)
def answer_turn(payload: dict[str, Any]) -> None:
    """Run one turn; its frames go to the turn's log and channel, never as a task result."""
    started = time.monotonic()
    settings = get_settings()
    turn = str(payload.get("turn", ""))
    emit = TurnEmitter(FrameLog(redis_client(settings), turn, settings.replay_ttl_s), started)
    try:
        req = TurnRequest.from_json(payload)
    except AssistantError as exc:
        log.warning("turn %s: malformed payload", turn)
        emit.error(exc.code, exc.public_message)
        return
    run_turn(req, settings, lambda: corpus_connection(settings), emit)  # type: ignore[arg-type,return-value]
    log.info("turn %s finished after %d frames", turn, emit.seq)
