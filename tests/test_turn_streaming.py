"""Resume, SSE, cancel, keep-alives, time limits, sources off, traces: against the real web
server, Redis, Celery worker and PostgreSQL, with the scripted model for exact output."""

from __future__ import annotations

import json
from typing import Any

import psycopg
from simple_websocket import Client

from assistant_cli.client import ask, ws_url
from tests.conftest import Stack, set_script
from tests.sseutil import sse_frames
from tests.wsutil import app_token, get_ticket

CHUNKS = [f"Word{i} " for i in range(30)] + ["with a source [1]", " and", " [2]."]
SSE_ASK = "/api/v1/assistant/chat/stream"


def open_ws(stack: Stack, user: str = "tester") -> Client:
    base = stack.base_url
    return Client.connect(ws_url(base, get_ticket(base, app_token(stack, user))))


def receive(ws: Client, timeout: float = 30) -> dict[str, Any]:
    raw = ws.receive(timeout=timeout)
    assert raw is not None, "no frame in time"
    return json.loads(raw)


def until_terminal(ws: Client, frames: list[dict[str, Any]], timeout: float = 30) -> None:
    while frames[-1]["type"] not in ("done", "error"):
        frames.append(receive(ws, timeout))


def trace_row(stack: Stack, turn: str, columns: str) -> Any:
    """The turn's trace row (written just after the done frame), waiting briefly for it."""
    from tests.conftest import wait_for

    found: list[Any] = []

    def check() -> bool:
        with psycopg.connect(stack.settings.assistant_dsn) as conn:
            row = conn.execute(f"SELECT {columns} FROM traces WHERE turn = %s", (turn,)
                               ).fetchone()
        if row is not None:
            found.append(row)
        return row is not None

    wait_for(check, 10)
    return found[0] if found else None


def tokens_after_last_restart(frames: list[dict[str, Any]]) -> str:
    text = ""
    for f in frames:
        if f["type"] == "restart":
            text = ""
        elif f["type"] == "token":
            text += f["text"]
    return text


def test_resume_after_a_dropped_socket_gives_the_rest_exactly(scripted_stack: Stack,
                                                               scripted_llm: str) -> None:
    set_script(scripted_llm, CHUNKS, delay_s=0.05)
    ws = open_ws(scripted_stack)
    ws.send(json.dumps({"type": "ask", "message": "How does the search work?"}))
    seen = [receive(ws)]
    while sum(f["type"] == "token" for f in seen) < 5:
        seen.append(receive(ws))
    ws.close()  # mid-stream; the turn goes on in the worker
    turn, last = seen[0]["turn"], seen[-1]["seq"]
    ws2 = open_ws(scripted_stack)
    try:
        ws2.send(json.dumps({"type": "resume", "turn": turn, "after": last}))
        rest = [receive(ws2)]
        until_terminal(ws2, rest)
    finally:
        ws2.close()
    frames = seen + rest
    frames = [f for f in frames if f["type"] != "ping"]
    frames = [f for f in frames if f["type"] != "ping"]
    assert [f["seq"] for f in frames] == list(range(len(frames))), "no gap, no duplicate"
    done = frames[-1]
    assert done["type"] == "done"
    assert tokens_after_last_restart(frames) == done["answer"] == "".join(CHUNKS)


def test_resume_is_refused_for_another_user_and_unknown_turns(scripted_stack: Stack,
                                                               scripted_llm: str) -> None:
    set_script(scripted_llm, ["Short [1]."])
    frames, _ = ask(scripted_stack.base_url, app_token(scripted_stack, "alice"), "Hello there?")
    ws = open_ws(scripted_stack, "mallory")
    try:
        for turn in (frames[0]["turn"], "0" * 32):
            ws.send(json.dumps({"type": "resume", "turn": turn, "after": 0}))
            err = receive(ws)
            assert err["type"] == "error" and err["code"] == 404
    finally:
        ws.close()


def test_sse_turn_and_resume_with_last_event_id(scripted_stack: Stack,
                                                scripted_llm: str) -> None:
    set_script(scripted_llm, CHUNKS, delay_s=0.03)
    token = app_token(scripted_stack)
    first = list(sse_frames(scripted_stack.base_url, "POST", SSE_ASK, token,
                            body={"message": "How does the search work?"}, stop_after=8))
    assert [int(i) for i, _ in first] == [f["seq"] for _, f in first] == list(range(8))
    turn = first[0][1]["turn"]
    rest = list(sse_frames(scripted_stack.base_url, "GET",
                           f"/api/v1/assistant/turns/{turn}/events", token,
                           last_event_id=int(first[-1][0])))
    frames = [f for _, f in first + rest]
    frames = [f for f in frames if f["type"] != "ping"]
    assert [f["seq"] for f in frames] == list(range(len(frames)))
    assert frames[-1]["type"] == "done"
    assert tokens_after_last_restart(frames) == frames[-1]["answer"] == "".join(CHUNKS)


def test_sse_refuses_bad_requests_with_plain_errors(scripted_stack: Stack) -> None:
    import urllib.error
    import urllib.request

    req = urllib.request.Request(scripted_stack.base_url + SSE_ASK, data=b"{}", method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=10)
        raise AssertionError("expected 401")
    except urllib.error.HTTPError as exc:
        assert exc.code == 401 and json.loads(exc.read())["error"]["code"] == 401


def test_cancel_stops_the_turn(scripted_stack: Stack, scripted_llm: str) -> None:
    set_script(scripted_llm, [f"w{i} " for i in range(200)], delay_s=0.05)
    ws = open_ws(scripted_stack)
    try:
        ws.send(json.dumps({"type": "ask", "message": "How does the search work?"}))
        frames = [receive(ws)]
        while sum(f["type"] == "token" for f in frames) < 3:
            frames.append(receive(ws))
        ws.send(json.dumps({"type": "cancel", "turn": frames[0]["turn"]}))
        until_terminal(ws, frames, timeout=10)
    finally:
        ws.close()
    assert frames[-1]["type"] == "error" and frames[-1]["code"] == 499
    assert sum(f["type"] == "token" for f in frames) < 150, "it stopped well before the end"


def test_sse_cancel_stops_the_turn_and_refuses_other_users(scripted_stack: Stack,
                                                            scripted_llm: str) -> None:
    from tests.wsutil import http_json

    set_script(scripted_llm, [f"w{i} " for i in range(200)], delay_s=0.05)
    token = app_token(scripted_stack)
    stream = sse_frames(scripted_stack.base_url, "POST", SSE_ASK, token,
                        body={"message": "How does the search work?"}, timeout=20)
    frames = [next(stream)[1]]
    while sum(f["type"] == "token" for f in frames) < 3:
        frames.append(next(stream)[1])
    turn = frames[0]["turn"]
    path = f"/api/v1/assistant/turns/{turn}/cancel"
    other = app_token(scripted_stack, "someone-else")
    status, body = http_json("POST", scripted_stack.base_url + path,
                             headers={"Authorization": f"Bearer {other}"})
    assert status == 404 and "not running" in body["error"]["message"]
    status, body = http_json("POST", scripted_stack.base_url + path,
                             headers={"Authorization": f"Bearer {token}"})
    assert (status, body) == (202, {"ok": True})
    frames += [f for _, f in stream]
    assert frames[-1]["type"] == "error" and frames[-1]["code"] == 499
    assert sum(f["type"] == "token" for f in frames) < 150, "it stopped well before the end"


def test_second_ask_while_one_runs_is_refused_and_the_first_completes(
        scripted_stack: Stack, scripted_llm: str) -> None:
    set_script(scripted_llm, CHUNKS, delay_s=0.02)
    ws = open_ws(scripted_stack)
    try:
        ws.send(json.dumps({"type": "ask", "message": "How does the search work?"}))
        frames = [receive(ws)]
        ws.send(json.dumps({"type": "ask", "message": "And another?"}))
        others = []
        while frames[-1]["type"] not in ("done",):
            f = receive(ws)
            (others if f.get("turn") is None else frames).append(f)
        assert any(o["type"] == "error" and o["code"] == 429 for o in others)
        assert frames[-1]["answer"] == "".join(CHUNKS)
    finally:
        ws.close()


def test_stalled_model_gives_an_error_frame_in_time_with_pings(strict_stack: Stack,
                                                                scripted_llm: str) -> None:
    import time

    set_script(scripted_llm, ["never"], stall_s=20)
    started = time.monotonic()
    frames, last = ask(strict_stack.base_url, app_token(strict_stack), "How does search work?",
                       timeout_s=30)
    elapsed = time.monotonic() - started
    assert last["type"] == "error" and last["code"] == 504
    assert elapsed < 3 + 4, f"first-token limit is 3 s; took {elapsed:.1f}s"
    assert any(f["type"] == "ping" for f in frames), "keep-alives while silent"


def test_slow_tokens_get_keepalives_and_still_complete(strict_stack: Stack,
                                                       scripted_llm: str) -> None:
    set_script(scripted_llm, ["slow ", "but ", "sure."], delay_s=1.6)
    frames, done = ask(strict_stack.base_url, app_token(strict_stack), "How does search work?")
    assert done["type"] == "done" and done["answer"] == "slow but sure."
    assert sum(f["type"] == "ping" for f in frames) >= 2


def test_trace_is_written_without_text_or_secrets(scripted_stack: Stack,
                                                  scripted_llm: str) -> None:
    set_script(scripted_llm, ["Traced [1]."])
    token = app_token(scripted_stack, "trace-user")
    frames, done = ask(scripted_stack.base_url, token, "A private question about search?")
    row = trace_row(scripted_stack, frames[0]["turn"], "*")
    assert row is not None
    with psycopg.connect(scripted_stack.settings.assistant_dsn) as conn:
        cols = [d.name for d in conn.execute("SELECT * FROM traces LIMIT 0").description]
    record = dict(zip(cols, row, strict=True))
    assert record["outcome"] == "done" and record["index_version"] == done["index"]
    assert record["message"] is None and record["answer"] is None
    assert record["user_hash"] != "trace-user" and len(record["source_ids"]) == 3
    steps = [s["step"] for s in record["steps"]]
    assert {"language", "retrieve", "prompt", "generate", "checks"} <= set(steps)
    # The checks reach the database as the done frame has them (their verdicts: harness tests).
    assert record["checks"] == done["checks"]
    dumped = json.dumps(record, default=str)
    assert token not in dumped and "private question" not in dumped
