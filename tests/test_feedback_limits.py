"""POST /feedback: rate-limited per address, at most one pending task per
turn on a queue of its own (never `turns`), and a comment PostgreSQL cannot store refused with
422. The web app runs in-process on a real Redis, its tasks go to a real broker there; no
worker consumes that database, so the broker's queues show exactly what was sent."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from flask.testing import FlaskClient

from assistant_cli import stack
from shared import keys
from shared.auth import mint_access_token, user_hash
from shared.celery_config import TURN_QUEUE
from shared.config import settings_from_env
from tests.conftest import ALLOC, TEST_ENV, VAR, ensure_session_redis
from web import create_app

URL = ALLOC.redis_url("test_feedback_limits")
ENV = {**TEST_ENV, "ASSISTANT_REDIS_URL": URL, "ASSISTANT_CLIENT_REQUEST_LIMIT": "10/minute"}
SECRET = ENV["ASSISTANT_APP_JWT_SECRET"]
PATH = "/api/v1/assistant/feedback"


@pytest.fixture(scope="module")
def broker() -> Iterator[redis.Redis]:
    """A database of this session's Redis (the app's limits, keys and broker), emptied."""
    sup = stack.Supervisor(VAR / "log")
    ensure_session_redis(sup)
    client = redis.Redis.from_url(URL)
    try:
        yield client
    finally:
        client.flushdb()
        sup.stop_all()


@pytest.fixture()
def app(broker: redis.Redis) -> Iterator[FlaskClient]:
    broker.flushdb()
    yield create_app({"SETTINGS": settings_from_env(ENV), "TESTING": True}).test_client()
    broker.flushdb()


def own_turn(client: redis.Redis, user: str) -> str:
    """A turn of this user, as the web tier records one."""
    turn = uuid.uuid4().hex
    client.set(keys.turn_owner(turn), user_hash(user), ex=600)
    return turn


def post(app: FlaskClient, user: str, body: dict[str, Any] | str) -> Any:
    data = body if isinstance(body, str) else json.dumps(body)
    return app.post(PATH, data=data, content_type="application/json",
                    headers={"Authorization": f"Bearer {mint_access_token(user, SECRET)}"})


def test_a_burst_of_feedback_is_limited_and_sends_one_task_per_turn(
        app: FlaskClient, broker: redis.Redis) -> None:
    turn = own_turn(broker, "fb-burst")
    replies = [post(app, "fb-burst", {"turn": turn, "rating": "up" if i % 2 else "down",
                                      "comment": f"take {i}"}) for i in range(30)]
    statuses = [r.status_code for r in replies]
    assert statuses == [202] * 10 + [429] * 20, statuses
    assert "Too many requests from your address" in replies[-1].get_json()["error"]["message"]
    # The ratings replace each other in Redis; one task reads whichever is last.
    assert broker.llen("feedback") == 1, "one pending feedback task per turn"
    assert broker.llen(TURN_QUEUE) == 0, "feedback never waits in front of turns"
    stored = json.loads(broker.get(keys.turn_feedback(turn)))
    assert stored["comment"] == "take 9" and stored["rating"] == 1


def test_the_limit_comes_before_any_redis_read_of_the_turn(app: FlaskClient,
                                                          broker: redis.Redis) -> None:
    for _ in range(10):
        post(app, "fb-first", {"turn": "0" * 32, "rating": "up"})  # not their turn: 404
    turn = own_turn(broker, "fb-first")
    refused = post(app, "fb-first", {"turn": turn, "rating": "up"})
    assert refused.status_code == 429, refused.get_json()
    assert not broker.exists(keys.turn_feedback(turn)) and broker.llen("feedback") == 0


@pytest.mark.parametrize("comment", ["nul \\u0000 inside", "lone \\ud800 surrogate",
                                     "lone low \\udc00", "bell \\u0007"])
def test_a_comment_the_database_cannot_store_is_refused_with_422(
        app: FlaskClient, broker: redis.Redis, comment: str) -> None:
    turn = own_turn(broker, "fb-bad")
    reply = post(app, "fb-bad", f'{{"turn": "{turn}", "rating": "down", "comment": "{comment}"}}')
    assert reply.status_code == 422, reply.get_json()
    assert reply.get_json()["error"]["message"] == ("The comment contains characters that "
                                                    "cannot be used.")
    assert not broker.exists(keys.turn_feedback(turn)) and broker.llen("feedback") == 0


def test_an_ordinary_comment_with_line_breaks_and_czech_is_accepted(
        app: FlaskClient, broker: redis.Redis) -> None:
    turn = own_turn(broker, "fb-ok")
    reply = post(app, "fb-ok", {"turn": turn, "rating": "down",
                                "comment": "Příliš krátké.\n\tChybí krok 3 😀"})
    assert reply.status_code == 202, reply.get_json()
    assert json.loads(broker.get(keys.turn_feedback(turn)))["comment"] == (
        "Příliš krátké.\n\tChybí krok 3 😀")


def test_a_rating_given_while_the_task_saves_another_is_not_lost(broker: redis.Redis) -> None:
    from shared.feedback import Feedback, load, settle, store

    broker.flushdb()
    turn = uuid.uuid4().hex
    first, second = Feedback(turn, "u", 1, "good"), Feedback(turn, "u", -1, "on second thought")
    assert store(broker, first, 600) is True  # no task pending: the caller sends one
    saved = load(broker, turn)  # the task reads it ...
    assert store(broker, second, 600) is False  # ... a new rating waits for that same task
    assert saved == first and settle(broker, first) is False, "the newer rating is kept"
    assert load(broker, turn) == second
    assert settle(broker, second) is True
    assert not broker.exists(keys.turn_feedback(turn), keys.turn_feedback_task(turn))
    assert store(broker, first, 600) is True, "after it, a new rating sends a new task"


def test_the_feedback_task_ensures_the_schema_once_per_process(
        services: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    from shared import traces
    from shared.config import get_settings
    from shared.feedback import Feedback, store
    from shared.redis_client import redis_client
    from worker import tasks

    settings = get_settings()  # the test environment, as the task reads it
    turn = uuid.uuid4().hex
    with psycopg.connect(settings.assistant_dsn, autocommit=True) as conn:
        traces.ensure_schema(conn)
        traces.save(conn, traces.Trace(turn=turn, user_hash="u", attempt=1))
    calls: list[object] = []
    real = traces.ensure_schema
    monkeypatch.setattr(traces, "ensure_schema", lambda conn: (calls.append(conn), real(conn)))
    monkeypatch.setattr(tasks, "_trace_schema_ready", False)
    client = redis_client(settings)
    for rating in (1, -1, 1):
        store(client, Feedback(turn, "u", rating, f"rated {rating}"), 600)
        tasks.save_feedback(turn)
    assert len(calls) == 1, f"the schema was ensured {len(calls)} times"
    with psycopg.connect(settings.assistant_dsn, autocommit=True) as conn:
        row = conn.execute("SELECT feedback, feedback_comment FROM traces WHERE turn = %s",
                           (turn,)).fetchone()
    assert row == (1, "rated 1")
    assert not client.exists(keys.turn_feedback(turn), keys.turn_feedback_task(turn))
