"""The web -> worker seam end to end: what the web tier stores is what the worker reads.

Real Redis, Celery worker and PostgreSQL (the scripted stack); the scripted model answers.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from celery import Celery

from assistant_cli.client import ask
from shared import keys, turns
from shared.auth import user_hash
from shared.celery_config import TURN_QUEUE, TURN_TASK, celery_config
from shared.frames import FrameLog
from shared.redis_client import redis_client
from shared.turn_request import TurnRequest
from tests.conftest import Stack, set_script
from tests.wsutil import app_token


def run_stored(stack: Stack, req: TurnRequest, timeout_s: float = 60) -> list[dict[str, Any]]:
    """Store a request as the handoff does, send its ids to the worker, return its frames."""
    client = redis_client(stack.settings)
    turns.store_request(client, req, 120)
    frame_log = FrameLog(client, req.turn, 120)
    frame_log.append({"type": "accepted", "turn": req.turn})
    sender = Celery("handoff-test")
    sender.conf.update(celery_config(stack.settings))
    sender.send_task(TURN_TASK, args=[req.turn, 1], queue=TURN_QUEUE, task_id=req.turn)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not any(
            f.terminal for f in frame_log.frames_after(-1)):
        time.sleep(0.1)
    return [f.fields() for f in frame_log.frames_after(-1)]


def test_the_worker_takes_the_language_from_the_request_and_never_guesses_again(
        scripted_stack: Stack, scripted_llm: str) -> None:
    set_script(scripted_llm, ["Vyhledávání řadí pasáže [1]."])
    # A Czech question the web tier marked English: the worker must not detect it again.
    req = TurnRequest(turn=uuid.uuid4().hex, user=user_hash("handoff"),
                      message="Jak funguje vyhledávání v dokumentaci?", language="en",
                      mode="workflow")
    frames = run_stored(scripted_stack, req)
    done = frames[-1]
    assert done["type"] == "done", frames[-3:]
    assert done["language"] == "en"
    steps = [f for f in frames if f["type"] == "event" and f.get("step") == "language"]
    assert [f["language"] for f in steps] == ["en"], steps
    assert not [f for f in frames if f.get("step") == "translate"], "no Czech search path"


def test_what_the_web_tier_stores_is_the_contract_with_the_language_it_detected(
        scripted_stack: Stack, scripted_llm: str) -> None:
    set_script(scripted_llm, ["Vyhledávání řadí pasáže [1]."])
    frames, done = ask(scripted_stack.base_url, app_token(scripted_stack, "handoff-cs"),
                       "Jak funguje vyhledávání v dokumentaci?", timeout_s=60,
                       history=[{"role": "user", "content": "Ahoj"}])
    stored = redis_client(scripted_stack.settings).get(keys.turn_request(frames[0]["turn"]))
    assert stored is not None
    req = TurnRequest.loads(stored)
    assert json.loads(stored)["version"] == 1
    assert (req.language, req.mode, req.user) == ("cs", "workflow", user_hash("handoff-cs"))
    assert req.message == "Jak funguje vyhledávání v dokumentaci?"
    assert [(m.role, m.content) for m in req.history] == [("user", "Ahoj")]
    assert 0 < redis_client(scripted_stack.settings).ttl(keys.turn_request(req.turn)) <= \
        scripted_stack.settings.replay_ttl_s
    assert done["type"] == "done" and done["language"] == "cs"


def test_feedback_travels_by_turn_id_and_lands_on_the_trace(scripted_stack: Stack,
                                                            scripted_llm: str) -> None:
    import threading

    from assistant_cli.client import http_json
    from shared.celery_config import FEEDBACK_TASK
    from tests.conftest import wait_for
    from tests.test_security_review import _capture_task_events, record_events
    from tests.test_turn_streaming import trace_row

    set_script(scripted_llm, ["Fine [1]."])
    token = app_token(scripted_stack, "handoff-fb")
    _, done = ask(scripted_stack.base_url, token, "How does the search work?", timeout_s=60)
    assert trace_row(scripted_stack, done["turn"], "turn") is not None
    events: list[dict[str, Any]] = []
    stop = threading.Event()
    thread = _capture_task_events(scripted_stack.env["ASSISTANT_REDIS_URL"], stop, events)
    time.sleep(1.5)  # the receiver's queue is bound before the task is sent
    comment = "too short, handoff-fb-8812"
    status, body = http_json("POST", scripted_stack.base_url + "/api/v1/assistant/feedback",
                             {"turn": done["turn"], "rating": "down", "comment": f" {comment} "},
                             headers={"Authorization": f"Bearer {token}"})
    assert (status, body) == (202, {"ok": True})
    key = keys.turn_feedback(done["turn"])
    client = redis_client(scripted_stack.settings)
    # The worker reads the stored rating by turn id, puts it on the trace, then drops it.
    assert wait_for(lambda: trace_row(scripted_stack, done["turn"], "feedback")[0] == -1, 15)
    assert wait_for(lambda: not client.exists(key), 15)
    stop.set()
    thread.join(10)
    record_events(events)
    assert trace_row(scripted_stack, done["turn"], "feedback, feedback_comment") == (-1, comment)
    sent = [e for e in events if e.get("type") == "task-sent" and e.get("name") == FEEDBACK_TASK]
    assert sent, f"no feedback task-sent event among {len(events)}"
    assert {e.get("queue") for e in sent} == {"feedback"}, "ratings never wait among turns"
    assert sent[-1]["args"] == repr((done["turn"],)), sent[-1]
    for e in events:
        assert comment not in json.dumps(e, default=str), e
