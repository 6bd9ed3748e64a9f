"""Enqueue turns by task name: the web tier never imports the pipeline or its model clients."""

from __future__ import annotations

from celery import Celery
from flask import Flask

from shared.celery_config import (
    FEEDBACK_QUEUE,
    FEEDBACK_TASK,
    TURN_QUEUE,
    TURN_TASK,
    celery_config,
)
from shared.config import Settings


class TurnQueue:
    """A send-only Celery client."""

    def __init__(self) -> None:
        self._celery: Celery | None = None
        self._first_token_timeout_s = 90.0

    def init_app(self, app: Flask) -> None:
        """Configure from the app's settings."""
        settings: Settings = app.config["SETTINGS"]
        self._first_token_timeout_s = settings.first_token_timeout_s
        self._celery = Celery("become_assistant_web")
        self._celery.conf.update(celery_config(settings))
        app.extensions["turn_queue"] = self

    def warm_up(self) -> None:
        """Open the broker connection now, not on the first user's turn (~40-100 ms)."""
        assert self._celery is not None
        with self._celery.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1)

    def enqueue(self, turn: str, attempt: int) -> None:
        """Send one attempt of a turn to the turns queue, expiring at the first-token limit.

        Only ids travel: the worker reads the TurnRequest the handoff stored under the turn's
        id, so what the user typed, their history and their project's text never appear in
        the broker, task events or Flower.
        """
        assert self._celery is not None
        self._celery.send_task(
            TURN_TASK, args=[turn, attempt], queue=TURN_QUEUE, task_id=turn,
            argsrepr=repr((turn, attempt)), kwargsrepr="{}",
            # By then the web tier has ended the turn with an error frame (or nobody waits):
            # a worker that takes it later after a backlog drops it instead of calling a model.
            expires=self._first_token_timeout_s)

    def feedback(self, turn: str) -> None:
        """Ask the worker to put the turn's stored rating (shared/feedback.py) on its trace."""
        assert self._celery is not None
        self._celery.send_task(FEEDBACK_TASK, args=[turn], queue=FEEDBACK_QUEUE,
                               argsrepr=repr((turn,)), kwargsrepr="{}")


turn_queue = TurnQueue()
