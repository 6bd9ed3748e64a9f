"""A bug in a step on the real stack: web server, Redis, Celery worker, PostgreSQL and
the scripted model, with a bug put into the worker (tests/fault_inject/sitecustomize.py). The
client gets one plain error frame at once, or, for a bug in a check, the done frame with its
answer; the web tier never re-runs the attempt (a re-run's `restart` drops the answer a person
has already read); the worker's log names the turn and the exception's type, never its text."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from simple_websocket import Client

from assistant_cli import stack
from assistant_cli.client import ask, ws_url
from shared import keys
from tests.conftest import ALLOC, REPO, VAR, Stack, scripted_roles, set_script, start_stack
from tests.wsutil import app_token, get_ticket

NAME = "faultinj"
INJECTOR = REPO / "tests" / "fault_inject" / "sitecustomize.py"
SECRET = "injected-words-that-must-not-be-logged-5521"  # the injected exceptions' text
PLAIN = "Something went wrong on our side. Please try again."
WEB_PORT, REDIS_URL = ALLOC.port("fault_stack (faultinj)"), ALLOC.redis_url("fault_stack (faultinj)")


@pytest.fixture(scope="module")
def fault_stack(services: stack.Supervisor, scripted_llm: str) -> Iterator[Stack]:
    # Read, not imported: importing it here would put the bug into this process too.
    assert f'SECRET = "{SECRET}"' in INJECTOR.read_text()
    path = os.pathsep.join([str(INJECTOR.parent), str(REPO)])
    s = start_stack(services, NAME, WEB_PORT, {
        "ASSISTANT_REDIS_URL": REDIS_URL, **scripted_roles(scripted_llm),
        "PYTHONPATH": path})
    try:
        yield s
    finally:
        s.sup.stop_all()


def _replayed(s: Stack, turn: str, token: str) -> list[dict[str, Any]]:
    """The turn's whole log as a resuming client gets it."""
    ws = Client.connect(ws_url(s.base_url, get_ticket(s.base_url, token)))
    try:
        ws.send(json.dumps({"type": "resume", "turn": turn, "after": 0}))
        out: list[dict[str, Any]] = []
        while not out or out[-1]["type"] not in ("done", "error"):
            raw = ws.receive(timeout=20)
            assert raw is not None, out
            frame = json.loads(raw)
            if frame["type"] != "ping":
                out.append(frame)
        return out
    finally:
        ws.close()


def _worker_log() -> str:
    return (VAR / "log" / f"{NAME}-worker.log").read_text(errors="replace")


def _no_rerun(s: Stack, turn: str, token: str, frames: list[dict[str, Any]]) -> None:
    """Past the worker's lease and the watchdog's look, nothing was re-run."""
    time.sleep(s.settings.turn_lease_s + 4)
    again = _replayed(s, turn, token)
    assert [f["type"] for f in again] == [f["type"] for f in frames[1:]], again
    assert "restart" not in [f["type"] for f in again]
    client = redis.Redis.from_url(s.env["ASSISTANT_REDIS_URL"])
    assert not client.exists(keys.turn_rerun(turn)), "the web tier re-ran the turn"
    assert not client.exists(keys.turn_started(turn, 2))


def test_a_bug_in_a_step_reaches_the_client_as_one_plain_error_frame(
        fault_stack: Stack, scripted_llm: str) -> None:
    set_script(scripted_llm, ["Never ", "sent."])
    token = app_token(fault_stack, "fault-prompt")
    frames, last = ask(fault_stack.base_url, token, "INJECT-PROMPT: how does the search work?",
                       timeout_s=60)
    frames = [f for f in frames if f["type"] != "ping"]
    assert (last["type"], last.get("code"), last.get("message")) == ("error", 500, PLAIN), last
    # At once: the error follows the steps that ran, with no re-run (`restart`) between.
    assert [f["type"] for f in frames] == ["accepted"] + ["event"] * (len(frames) - 2) + [
        "error"], frames
    assert [f["step"] for f in frames[1:-1]] == ["language", "retrieve", "prompt"]
    assert "restart" not in [f["type"] for f in frames] and "token" not in [
        f["type"] for f in frames]
    assert SECRET not in json.dumps(frames)
    turn = frames[0]["turn"]
    _no_rerun(fault_stack, turn, token, frames)
    log = _worker_log()
    assert f"turn {turn}: unexpected InjectedBug in step prompt" in log
    assert SECRET not in log and "Traceback" not in log
    assert f"turn {turn} attempt 2" not in log


def test_a_bug_in_a_check_keeps_the_streamed_answer(fault_stack: Stack,
                                                    scripted_llm: str) -> None:
    chunks = ["BM25 ranks ", "passages by words [1]", ", 42 of them."]
    set_script(scripted_llm, chunks)
    token = app_token(fault_stack, "fault-checks")
    frames, done = ask(fault_stack.base_url, token, "INJECT-CHECKS: how does the search work?",
                       timeout_s=60)
    frames = [f for f in frames if f["type"] != "ping"]
    assert done["type"] == "done", done
    assert done["answer"] == "".join(chunks) == "".join(
        f["text"] for f in frames if f["type"] == "token")
    assert done["checks"]["numbers"] == {"valid": None, "unavailable": True}
    assert done["checks"]["citations"] == {"valid": True, "cited": [1], "invalid": []}
    turn = frames[0]["turn"]
    _no_rerun(fault_stack, turn, token, frames)
    log = _worker_log()
    assert f"turn {turn}: the numbers check raised InjectedBug" in log
    assert SECRET not in log and f"turn {turn} attempt 2" not in log
