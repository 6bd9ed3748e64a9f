"""A full turn over the WebSocket through the real web server, Redis, Celery worker and
PostgreSQL, with the scripted model standing in for an external one (exact output)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from simple_websocket import Client

from assistant_cli import stack
from assistant_cli.client import ask, ws_url
from assistant_cli.run import Plan, start_processes
from shared.auth import mint_access_token
from shared.config import INSECURE_DEV_SECRET
from tests.conftest import ALLOC, DEMO_TOKENS, VAR, Stack, set_script, stack_env
from tests.wsutil import app_token, get_ticket, http_json, upgrade_status

# Its own database: on the scripted stack's, its tickets and contract would meet that stack's.
TICKET_WEB_PORT = ALLOC.port("short_ticket_web")
TICKET_REDIS_URL = ALLOC.redis_url("short_ticket_web")


def frames_of(stack: Stack, message: str, **kwargs: Any) -> list[dict[str, Any]]:
    frames, _ = ask(stack.base_url, app_token(stack), message, timeout_s=60, **kwargs)
    return frames


def test_full_turn_frames_are_gapless_and_tokens_equal_the_answer(
        scripted_stack: Stack, scripted_llm: str) -> None:
    chunks = ["BM25 ranks ", "passages by words [1]", ". Vectors rank meaning [2]."]
    set_script(scripted_llm, chunks)
    frames = frames_of(scripted_stack, "How does the search work?")
    assert frames[0]["type"] == "accepted" and frames[0]["seq"] == 0
    turn = frames[0]["turn"]
    assert all(f["turn"] == turn for f in frames)
    frames = [f for f in frames if f["type"] != "ping"]
    assert [f["seq"] for f in frames] == list(range(len(frames)))
    done = frames[-1]
    assert done["type"] == "done"
    tokens = [f["text"] for f in frames if f["type"] == "token"]
    assert tokens == chunks
    assert "".join(tokens) == done["answer"]
    assert done["checks"]["citations"] == {"valid": True, "cited": [1, 2], "invalid": []}
    # Three passages, one entry per section: this question's top three hold two
    # pieces of "How the search works", listed (and numbered) once.
    assert 2 <= len(done["sources"]) <= 3
    assert len({(s["source"], s["section"]) for s in done["sources"]}) == len(done["sources"])
    assert [s["n"] for s in done["sources"]] == list(range(1, len(done["sources"]) + 1))
    assert {"title", "section", "excerpt", "score"} <= set(done["sources"][0])
    assert done["index"] and done["usage"]["completion_tokens"] == 3
    steps = [f["step"] for f in frames if f["type"] == "event"]
    assert steps[:3] == ["language", "retrieve", "prompt"] and "first_token" in steps
    assert done["timing"]["first_token_ms"] is not None


def test_model_failure_before_first_token_is_a_clean_refusal(scripted_stack: Stack,
                                                             scripted_llm: str) -> None:
    set_script(scripted_llm, ["never sent"], status=500)
    frames = frames_of(scripted_stack, "How does the search work?")
    last = frames[-1]
    assert last["type"] == "error" and last["code"] == 503
    assert not [f for f in frames if f["type"] == "token"]
    assert "scripted failure" not in last["message"] and "Error" not in last["message"]


def test_bad_frames_get_errors_and_the_socket_stays_usable(scripted_stack: Stack,
                                                           scripted_llm: str) -> None:
    set_script(scripted_llm, ["Fine [1]."])
    base = scripted_stack.base_url
    ws = Client.connect(ws_url(base, get_ticket(base, app_token(scripted_stack))))
    try:
        replies = []
        for raw in ["not json", "[1, 2]", json.dumps({"type": "dance"}),
                    json.dumps({"type": "ask", "message": ""}),
                    json.dumps({"type": "ask", "message": 42}),
                    json.dumps({"type": "ask", "message": "x" * 4001}),
                    json.dumps({"type": "ask", "message": "hi", "history": "nope"})]:
            ws.send(raw)
            replies.append(json.loads(ws.receive(timeout=10)))
        assert [r["type"] for r in replies] == ["error"] * 7
        assert [r["code"] for r in replies] == [422, 422, 422, 422, 422, 413, 422]
        ws.send(json.dumps({"type": "ask", "message": "How does the search work?"}))
        while True:
            frame = json.loads(ws.receive(timeout=30))
            if frame["type"] in ("done", "error"):
                break
        assert frame["type"] == "done" and frame["answer"] == "Fine [1]."
    finally:
        ws.close()


@pytest.mark.parametrize("case", ["no ticket", "unknown ticket", "reused ticket",
                                  "foreign origin"])
def test_refused_before_the_upgrade(scripted_stack: Stack, case: str) -> None:
    base = scripted_stack.base_url
    ticket = get_ticket(base, app_token(scripted_stack))
    headers = {}
    path = f"/api/v1/assistant/ws?ticket={ticket}"
    if case == "no ticket":
        path = "/api/v1/assistant/ws"
    elif case == "unknown ticket":
        path = "/api/v1/assistant/ws?ticket=made-up"
    elif case == "reused ticket":
        assert upgrade_status(base, path)[0] == 101
    elif case == "foreign origin":
        headers = {"Origin": "https://evil.example"}
    status, body = upgrade_status(base, path, headers)
    assert status == (403 if case == "foreign origin" else 401)
    error = json.loads(body)["error"]
    assert error["code"] == status and "Traceback" not in body.decode()


@pytest.mark.parametrize("header, status", [
    (None, 401), ("Bearer nonsense", 401), ("Basic abc", 401)])
def test_ticket_endpoint_needs_a_valid_app_token(scripted_stack: Stack, header: str | None,
                                                 status: int) -> None:
    headers = {"Authorization": header} if header else {}
    got, body = http_json("POST", f"{scripted_stack.base_url}/api/v1/assistant/tickets",
                          headers=headers)
    assert got == status and body["error"]["message"] == "Please sign in again."


def test_ticket_lifetime_is_short_by_default(scripted_stack: Stack) -> None:
    status, body = http_json("POST", f"{scripted_stack.base_url}/api/v1/assistant/tickets",
                             headers={"Authorization": f"Bearer {app_token(scripted_stack)}"})
    assert status == 201 and 0 < body["expires_in"] <= 60 and len(body["ticket"]) >= 32


@pytest.fixture(scope="module")
def short_ticket_web(services: stack.Supervisor) -> Iterator[str]:
    """A web server alone (no worker: only tickets and upgrades are exercised) whose tickets
    live one second (ASSISTANT_TICKET_TTL_S=1); its base URL."""
    web_port = TICKET_WEB_PORT
    sup = stack.Supervisor(VAR / "log")
    try:
        start_processes(sup, Plan(var_dir=VAR, name="ticket-ttl", web_bind=f"127.0.0.1:{web_port}",
                                  web_workers=1, worker=False, beat=False, flower=False),
                        env=stack_env({"ASSISTANT_REDIS_URL": TICKET_REDIS_URL, **DEMO_TOKENS,
                                       "ASSISTANT_TICKET_TTL_S": "1"}))
        yield f"http://127.0.0.1:{web_port}"
    finally:
        sup.stop_all()


def test_ticket_is_single_use_and_short_lived(short_ticket_web: str) -> None:
    token = mint_access_token("ticket-user", INSECURE_DEV_SECRET)
    status, body = http_json("POST", f"{short_ticket_web}/api/v1/assistant/tickets",
                             headers={"Authorization": f"Bearer {token}"})
    assert status == 201 and body["expires_in"] == 1 and len(body["ticket"]) >= 32
    path = f"/api/v1/assistant/ws?ticket={body['ticket']}"
    assert upgrade_status(short_ticket_web, path)[0] == 101  # first use, within its second
    assert upgrade_status(short_ticket_web, path)[0] == 401, "a second use is refused"
    # Unused but past its lifetime: refused too.
    late = get_ticket(short_ticket_web, token)
    time.sleep(1.5)
    status, refused = upgrade_status(short_ticket_web, f"/api/v1/assistant/ws?ticket={late}")
    assert status == 401 and json.loads(refused)["error"]["message"] == "Please sign in again."


def test_unknown_route_and_bad_method_are_plain_json(scripted_stack: Stack) -> None:
    status, body = http_json("GET", f"{scripted_stack.base_url}/nope")
    assert status == 404 and body == {"error": {"code": 404, "message": "Not found."}}
    status, body = http_json("GET", f"{scripted_stack.base_url}/api/v1/assistant/tickets")
    assert status == 405


def test_the_socket_never_negotiates_compression(scripted_stack: Stack) -> None:
    # permessage-deflate keeps a zlib compressor and decompressor for every socket (about
    # 300 kB); browsers always offer it, and simple-websocket accepts whatever is offered.
    import http.client
    from urllib.parse import urlparse

    u = urlparse(scripted_stack.base_url)
    ticket = get_ticket(scripted_stack.base_url, app_token(scripted_stack))
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    try:
        conn.request("GET", f"/api/v1/assistant/ws?ticket={ticket}", headers={
            "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Extensions": "permessage-deflate; client_max_window_bits"})
        resp = conn.getresponse()
        assert resp.status == 101
        assert resp.getheader("Sec-WebSocket-Extensions") is None
    finally:
        conn.close()
