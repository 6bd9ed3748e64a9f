"""Agent and hybrid modes (docs/spec/behaviour.md B-20) against the real web tier, Redis, Celery
worker, PostgreSQL and the demo BeCoMe app; the scripted OpenAI-compatible server plays the model,
tool calls included.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from simple_websocket import Client

from assistant_cli.client import http_json, ws_url
from demo_app.seed import CAFETERIA_MENU, DEMO_USERS, FLOOD_PLAN, OFFICE_MOVE
from shared import keys
from shared.config import Settings
from shared.errors import BadRequest
from shared.redis_client import redis_client
from shared.turn_request import TurnRequest
from tests.conftest import ALLOC, CHAT_PORT, Stack, scripted_roles, start_stack
from tests.sseutil import sse_frames
from tests.test_panel_browser import (
    LAST_TURN,
    Panel,
    browser,  # noqa: F401 - the module-scoped fixture
    screenshot,
)
from tests.test_turn_streaming import receive, tokens_after_last_restart, trace_row
from tests.wsutil import app_token, get_ticket
from web.handoff import build_request
from web.protocol import Ask, parse_ask
from worker.pipeline.agent import MAX_TOOL_CALLS, choose_mode
from worker.pipeline.tools import tool_schemas

ALICE, BOB = DEMO_USERS["alice@example.com"], DEMO_USERS["bob@example.com"]
SEARCH = {"name": "search_docs", "arguments": {"query": "How does the search work?"}}
FINAL = ["The search ", "ranks passages ", "with BM25 [1]", " and vectors [2]."]
SSE_ASK = "/api/v1/assistant/chat/stream"
AGENT_PORT, AGENT_REDIS = ALLOC.port("agent_stack"), ALLOC.redis_url("agent_stack")
LOCAL_PORT = ALLOC.port("agent-local stack")
LOCAL_REDIS = ALLOC.redis_url("agent-local stack")


@pytest.fixture(scope="module")
def agent_stack(services: Any, scripted_llm: str, demo_app: str) -> Iterator[Stack]:
    """The dev profile (per-turn mode override), tools on for the scripted model, the demo app."""
    s = start_stack(services, "agent", AGENT_PORT, {
        "ASSISTANT_PROFILE": "dev",
        "ASSISTANT_REDIS_URL": AGENT_REDIS,
        "ASSISTANT_APP_API_URL": demo_app,
        "ASSISTANT_ANSWER_TOOLS": "on",
        "ASSISTANT_MODE": "agent",  # the panel sends no mode; the tests' asks name theirs
        # Instant scripted embeddings: a test can make a search fail at the embedding call.
        "ASSISTANT_EMBEDDING_BASE_URL": f"{scripted_llm}/v1",
        **scripted_roles(scripted_llm),
    })
    try:
        yield s
    finally:
        s.sup.stop_all()


def script(base: str, chunks: list[str] | None = None, **kwargs: Any) -> None:
    status, _ = http_json("POST", f"{base}/_script", {"chunks": chunks or FINAL, **kwargs})
    assert status == 200


def received(base: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(decision requests, final requests) the scripted model got."""
    _, requests = http_json("GET", f"{base}/_requests")
    chats = [r["body"] for r in requests if "messages" in r["body"]]
    return [b for b in chats if b.get("tools")], [b for b in chats if not b.get("tools")]


def open_ws(stack: Stack, user: str) -> Client:
    return Client.connect(ws_url(stack.base_url, get_ticket(stack.base_url,
                                                            app_token(stack, user))))


def ask(stack: Stack, message: str, mode: str | None = "agent", user: str = "tester",
        project_id: str | None = None) -> list[dict[str, Any]]:
    """Every frame of one turn over the WebSocket (pings left out); mode None sends none."""
    ws = open_ws(stack, user)
    try:
        ws.send(json.dumps({"type": "ask", "message": message, "project_id": project_id,
                            **({"mode": mode} if mode else {})}))
        frames = [receive(ws, 60)]
        while frames[-1]["type"] not in ("done", "error"):
            frames.append(receive(ws, 60))
    finally:
        ws.close()
    return [f for f in frames if f["type"] != "ping"]


def tool_events(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in frames if f["type"] == "event" and f.get("step") == "tool"]


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def test_two_tools_then_the_final_answer_streams(agent_stack: Stack, scripted_llm: str) -> None:
    script(scripted_llm, tool_rounds=[
        [SEARCH], [{"name": "search_docs", "arguments": {"query": "BM25 ranking"}}]])
    frames = ask(agent_stack, "How does the search work?")
    done = frames[-1]
    assert done["type"] == "done" and done["mode"] == "agent"
    assert done["tools"] == {"calls": 2, "cut": False}
    events = tool_events(frames)
    assert [(e["tool"], e["ok"]) for e in events] == [("search_docs", True)] * 2
    assert events[0]["args"] == {"query": "How does the search work?"}
    assert all(e["chars"] > 0 and e["ms"] >= 0 for e in events)
    tokens = [f["text"] for f in frames if f["type"] == "token"]
    assert tokens == FINAL and done["answer"] == "".join(FINAL)
    # The tokens come after the last tool step: the final call is the one that streams.
    assert frames.index(events[-1]) < next(i for i, f in enumerate(frames)
                                           if f["type"] == "token")
    decisions, finals = received(scripted_llm)
    assert len(decisions) == 3 and len(finals) == 1
    assert all(d["tool_choice"] == "auto" and not d.get("stream") for d in decisions)
    assert {t["function"]["name"] for t in decisions[0]["tools"]} == {
        "search_docs", "list_my_projects", "read_project", "read_result", "read_opinions"}
    final = finals[0]
    assert final["stream"] is True and "tools" not in final and "tool_choice" not in final
    # The final prompt holds every passage the tools returned, numbered as the sources are.
    assert len(done["sources"]) >= 2
    for source in done["sources"]:
        assert f"[{source['n']}] {source['title']}" in final["messages"][0]["content"]
    assert done["checks"]["citations"] == {"valid": True, "cited": [1, 2], "invalid": []}


def test_passage_numbers_stay_stable_across_searches(agent_stack: Stack,
                                                     scripted_llm: str) -> None:
    script(scripted_llm, tool_rounds=[[SEARCH], [SEARCH]])
    done = ask(agent_stack, "How does the search work?")[-1]
    decisions, _ = received(scripted_llm)
    first, second = tool_messages(decisions[-1])
    assert first == second and first.startswith("[1] ")
    assert [s["n"] for s in done["sources"]] == list(range(1, len(done["sources"]) + 1))
    assert len(done["sources"]) == first.count("<passage>")


def test_final_citations_and_numbers_are_checked_against_tool_passages(
        agent_stack: Stack, scripted_llm: str) -> None:
    script(scripted_llm, tool_rounds=[[SEARCH]])
    ask(agent_stack, "How does the search work?")
    decisions, _ = received(scripted_llm)
    passages = tool_messages(decisions[-1])[0]
    count = passages.count("<passage>")
    script(scripted_llm, [f"See [{count}] and [{count + 1}]; it took 987654 ms."],
           tool_rounds=[[SEARCH]])
    done = ask(agent_stack, "How does the search work?")[-1]
    assert done["checks"]["citations"]["invalid"] == [count + 1]
    assert done["checks"]["citations"]["cited"] == [count, count + 1]
    assert done["checks"]["numbers"]["unconfirmed"] == ["987654"]
    # No tool call at all: nothing to cite, so [1] points at no passage.
    script(scripted_llm, ["Without sources [1]."])
    done = ask(agent_stack, "How does the search work?")[-1]
    assert done["sources"] == [] and done["checks"]["citations"]["invalid"] == [1]


def test_the_fifth_call_in_one_reply_gets_a_limit_error(agent_stack: Stack,
                                                         scripted_llm: str) -> None:
    script(scripted_llm, tool_rounds=[[SEARCH] * (MAX_TOOL_CALLS + 1)])
    frames = ask(agent_stack, "How does the search work?")
    events = tool_events(frames)
    assert [e["ok"] for e in events] == [True] * MAX_TOOL_CALLS + [False]
    assert events[-1]["error"] == "limit"
    assert any(f.get("step") == "tool_limit" for f in frames)
    done = frames[-1]
    assert done["type"] == "done" and done["tools"] == {"calls": MAX_TOOL_CALLS, "cut": True}
    decisions, finals = received(scripted_llm)
    assert len(decisions) == 1 and len(finals) == 1  # cut: no decision after the limit


def test_a_model_that_never_stops_asking_is_cut_and_still_answers(agent_stack: Stack,
                                                                   scripted_llm: str) -> None:
    script(scripted_llm, tool_forever=SEARCH)
    frames = ask(agent_stack, "How does the search work?")
    assert len(tool_events(frames)) == MAX_TOOL_CALLS
    decisions, finals = received(scripted_llm)
    assert len(decisions) == MAX_TOOL_CALLS and len(finals) == 1
    done = frames[-1]
    assert done["type"] == "done" and done["answer"] == "".join(FINAL)
    assert done["tools"]["cut"] is True


@pytest.mark.parametrize("call, error, says", [
    ({"name": "delete_everything", "arguments": {}}, "unknown_tool", "There is no tool"),
    ({"name": "search_docs", "arguments": "{not json"}, "bad_arguments", "not valid JSON"),
    ({"name": "search_docs", "arguments": {"query": 5}}, "bad_arguments", "non-empty string"),
    ({"name": "search_docs", "arguments": "[1, 2]"}, "bad_arguments", "JSON object"),
    ({"name": "read_project", "arguments": {"id": "x" * 65}}, "bad_arguments", "too long"),
    # The embedding server fails during the search (the next one works again).
    ({"name": "search_docs", "arguments": {"query": "vectors"}, "fail": 1}, "tool_failed",
     "the tool failed"),
])
def test_tool_errors_are_recoverable(agent_stack: Stack, scripted_llm: str,
                                     call: dict[str, Any], error: str, says: str) -> None:
    script(scripted_llm, tool_rounds=[[call], [SEARCH]], embeddings_fail=call.pop("fail", 0))
    frames = ask(agent_stack, "How does the search work?")
    events = tool_events(frames)
    assert [(e["ok"], e.get("error")) for e in events] == [(False, error), (True, None)]
    decisions, _ = received(scripted_llm)
    assert tool_messages(decisions[1])[0].startswith("Error: ")
    assert says in tool_messages(decisions[1])[0]
    done = frames[-1]
    assert done["type"] == "done" and done["tools"]["calls"] == 2 and done["sources"]
    assert "Traceback" not in json.dumps(frames)


def test_a_tool_never_reads_another_users_project(agent_stack: Stack,
                                                  scripted_llm: str) -> None:
    script(scripted_llm, tool_rounds=[[
        {"name": "list_my_projects", "arguments": {}},
        {"name": "read_project", "arguments": {"id": FLOOD_PLAN}},
        {"name": "read_opinions", "arguments": {"id": FLOOD_PLAN}}],
        [{"name": "read_project", "arguments": {"id": OFFICE_MOVE}}]])
    frames = ask(agent_stack, "Compare my projects", user=BOB)
    events = tool_events(frames)
    assert [(e["tool"], e["ok"], e.get("error")) for e in events] == [
        ("list_my_projects", True, None), ("read_project", False, "not_found"),
        ("read_opinions", False, "not_found"), ("read_project", True, None)]
    decisions, finals = received(scripted_llm)
    listed, refused, refused2 = tool_messages(decisions[-1])
    assert OFFICE_MOVE in listed and CAFETERIA_MENU in listed and FLOOD_PLAN not in listed
    assert refused == refused2 == "Error: No project with this id among the user's projects."
    final = finals[0]["messages"][0]["content"]
    assert "Office move budget" in final and "<project-data>" in final
    everything = json.dumps(decisions + finals)
    assert "Regional flood plan" not in everything and "@example.com" not in everything
    assert frames[-1]["type"] == "done"


def test_the_turn_request_carries_read_data_never_the_token(agent_stack: Stack,
                                                            scripted_llm: str) -> None:
    script(scripted_llm, ["Fine [1]."])
    token = app_token(agent_stack, BOB)
    frames = ask(agent_stack, "What is our project about?", user=BOB, project_id=OFFICE_MOVE)
    stored = redis_client(agent_stack.settings).get(keys.turn_request(frames[0]["turn"]))
    assert stored is not None
    text = stored.decode()
    assert token not in text and token.split(".")[-1] not in text
    assert TurnRequest.loads(text).mode == "agent"
    data = json.loads(text)["tool_data"]
    assert set(data["read"]) == {OFFICE_MOVE, CAFETERIA_MENU}
    assert FLOOD_PLAN not in text


def test_hybrid_gives_passages_and_summary_up_front_and_opinions_through_tools(
        agent_stack: Stack, scripted_llm: str) -> None:
    script(scripted_llm, tool_rounds=[[{"name": "read_opinions", "arguments": {"id": OFFICE_MOVE}},
                                       {"name": "read_project", "arguments": {"id": OFFICE_MOVE}}]])
    frames = ask(agent_stack, "Who gave the highest estimate?", mode="hybrid", user=BOB,
                 project_id=OFFICE_MOVE)
    steps = [f["step"] for f in frames if f["type"] == "event"]
    assert steps.index("retrieve") < steps.index("project") < steps.index("plan")
    decisions, finals = received(scripted_llm)
    opening = decisions[0]["messages"][0]["content"]
    assert "Office move budget" in opening and "[1] " in opening
    assert "Expert 1:" not in opening  # opinions only through the tool
    assert "Expert 1:" in tool_messages(decisions[1])[0]
    final = finals[0]["messages"][0]["content"]
    assert "Expert 1:" in final
    assert final.count("Project name: Office move budget") == 2  # summary + opinions, once each
    done = frames[-1]
    assert done["mode"] == "hybrid" and done["sources"]


def test_tool_steps_are_in_the_trace(agent_stack: Stack, scripted_llm: str) -> None:
    script(scripted_llm, tool_rounds=[[SEARCH]])
    frames = ask(agent_stack, "How does the search work?")
    row = trace_row(agent_stack, frames[0]["turn"], "steps")
    assert row is not None
    tools = [s for s in row[0] if s["step"] == "tool"]
    assert tools and tools[0]["tool"] == "search_docs" and tools[0]["chars"] > 0
    # The query is the user's words: without ASSISTANT_TRACE_TEXT only its length is kept.
    assert tools[0]["args"] == {"query_chars": len("How does the search work?")}


def test_a_server_that_refuses_tools_falls_back_to_workflow(agent_stack: Stack,
                                                           scripted_llm: str) -> None:
    script(scripted_llm, tools_status=400)
    done = ask(agent_stack, "How does the search work?")[-1]
    assert done["type"] == "done" and done["mode"] == "workflow"
    assert "fell back to workflow" in done["mode_note"] and done["sources"]


def test_a_local_model_without_tools_falls_back_in_the_done_frame(agent_stack: Stack) -> None:
    req = TurnRequest(turn="t", user="u", message="m", language="en", mode="agent")
    local = Settings(answer_tools="auto")  # the default local SmolLM2-135M role
    assert choose_mode(req, local)[0] == "workflow"
    assert "SmolLM2-135M-Instruct cannot" in (choose_mode(req, local)[1] or "")
    assert choose_mode(req, Settings(answer_tools="on")) == ("agent", None)
    # The web tier resolves the server's mode into the request; the worker reads it there.
    hybrid = build_request(Settings(assistant_mode="hybrid"), "", "t", "u",
                           Ask("m"), "en")
    assert choose_mode(hybrid, Settings(answer_tools="on"))[0] == "hybrid"


def test_the_mode_override_is_only_for_dev() -> None:
    ask_frame = {"message": "How does the search work?", "mode": "agent"}
    assert parse_ask(ask_frame, Settings(profile="dev")).mode == "agent"
    with pytest.raises(BadRequest, match="mode override"):
        parse_ask(ask_frame, Settings(profile="test"))
    with pytest.raises(BadRequest, match="bad mode"):
        parse_ask({**ask_frame, "mode": "tools"}, Settings(profile="dev"))
    assert parse_ask({"message": "Hi?"}, Settings(profile="test")).mode is None


@pytest.mark.parametrize("mode", ["workflow", "agent", "hybrid"])
def test_each_mode_resumes_mid_final_answer_over_ws(agent_stack: Stack, scripted_llm: str,
                                                    mode: str) -> None:
    chunks = [f"Word{i} " for i in range(20)] + ["end [1]."]
    script(scripted_llm, chunks, delay_s=0.04, tool_rounds=[[SEARCH]])
    ws = open_ws(agent_stack, "tester")
    ws.send(json.dumps({"type": "ask", "message": "How does the search work?", "mode": mode}))
    seen = [receive(ws)]
    while sum(f["type"] == "token" for f in seen) < 4:
        seen.append(receive(ws))
    ws.close()
    turn, last = seen[0]["turn"], seen[-1]["seq"]
    ws2 = open_ws(agent_stack, "tester")
    try:
        ws2.send(json.dumps({"type": "resume", "turn": turn, "after": last}))
        rest = [receive(ws2)]
        while rest[-1]["type"] not in ("done", "error"):
            rest.append(receive(ws2))
    finally:
        ws2.close()
    frames = [f for f in seen + rest if f["type"] != "ping"]
    assert [f["seq"] for f in frames] == list(range(len(frames)))
    done = frames[-1]
    assert done["type"] == "done" and done["mode"] == mode
    assert tokens_after_last_restart(frames) == done["answer"] == "".join(chunks)
    assert bool(tool_events(frames)) == (mode != "workflow")


@pytest.mark.parametrize("mode", ["workflow", "agent", "hybrid"])
def test_each_mode_resumes_mid_final_answer_over_sse(agent_stack: Stack, scripted_llm: str,
                                                     mode: str) -> None:
    chunks = [f"Word{i} " for i in range(20)] + ["end [1]."]
    script(scripted_llm, chunks, delay_s=0.04, tool_rounds=[[SEARCH]])
    token = app_token(agent_stack)
    first: list[tuple[str | None, dict[str, Any]]] = []
    stream = sse_frames(agent_stack.base_url, "POST", SSE_ASK, token,
                        body={"message": "How does the search work?", "mode": mode})
    for item in stream:
        first.append(item)
        if sum(f["type"] == "token" for _, f in first) >= 4:
            break
    stream.close()
    turn = first[0][1]["turn"]
    rest = list(sse_frames(agent_stack.base_url, "GET",
                           f"/api/v1/assistant/turns/{turn}/events", token,
                           last_event_id=int(first[-1][0] or 0)))
    frames = [f for _, f in first + rest if f["type"] != "ping"]
    assert [f["seq"] for f in frames] == list(range(len(frames)))
    assert frames[-1]["type"] == "done" and frames[-1]["mode"] == mode
    assert tokens_after_last_restart(frames) == frames[-1]["answer"] == "".join(chunks)


@pytest.mark.browser
def test_the_panel_timeline_shows_tool_steps(agent_stack: Stack, scripted_llm: str,
                                             browser: Any) -> None:  # noqa: F811 - fixture
    script(scripted_llm, tool_rounds=[[SEARCH, {"name": "delete_everything", "arguments": {}}]])
    token = json.dumps(app_token(agent_stack))
    p = Panel(browser, agent_stack,
              init_script=f"window.localStorage.setItem('become_token', {token});")
    try:
        p.ask("How does the search work?")
        p.wait_done()
        page = p.page
        page.locator(f"{LAST_TURN} .ba-steps summary").click()
        tool = page.locator(f"{LAST_TURN} .ba-step-tool")
        assert tool.count() == 1
        text = tool.text_content() or ""
        assert "Tool call (search_docs: How does the search work?, " in text
        assert re.search(r"\d+ characters\)", text)
        failed = page.locator(f"{LAST_TURN} .ba-step-tool-error").text_content() or ""
        assert "delete_everything" in failed and "error: unknown_tool" in failed
        assert "The model chooses tools" in (page.locator(f"{LAST_TURN} .ba-steps")
                                         .text_content() or "")
        assert p.answer_text() == "".join(FINAL)
        screenshot(page, "panel-agent-tool-steps.png")
        assert not p.errors
    finally:
        p.close()


def test_the_scripted_server_shapes_tool_calls_like_the_api(scripted_llm: str) -> None:
    """Streamed and non-streamed tool calls read the same through the OpenAI client."""
    import openai

    client = openai.OpenAI(base_url=f"{scripted_llm}/v1", api_key="x", max_retries=0)
    call = {"name": "search_docs", "arguments": {"query": "BM25 ranking"}}
    kwargs: Any = {"model": "scripted", "tools": tool_schemas(), "tool_choice": "auto",
                   "messages": [{"role": "user", "content": "Hi?"}]}
    script(scripted_llm, tool_rounds=[[call], [call]])
    message = client.chat.completions.create(**kwargs).choices[0].message
    assert message.tool_calls and message.content is None
    plain = [(c.function.name, c.function.arguments) for c in message.tool_calls]
    pieces: dict[int, list[str]] = {}
    finish = None
    for chunk in client.chat.completions.create(stream=True, **kwargs):
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for d in choice.delta.tool_calls or []:
                entry = pieces.setdefault(d.index, ["", ""])
                entry[0] += d.function.name or "" if d.function else ""
                entry[1] += d.function.arguments or "" if d.function else ""
    assert [tuple(v) for v in pieces.values()] == plain == [
        ("search_docs", json.dumps(call["arguments"]))]
    assert finish == "tool_calls"
    assert client.chat.completions.create(**kwargs).choices[0].message.content == "READY"


@pytest.mark.realmodel
def test_the_local_smollm2_server_makes_no_tool_calls(services: Any) -> None:
    """Why a local answer role falls back to workflow: llama-cpp-python's server with
    SmolLM2's own chat template takes `tools` but answers `tool_choice: auto` in plain text."""
    import openai

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{CHAT_PORT}/v1", api_key="x",
                           max_retries=0, timeout=120)
    resp = client.chat.completions.create(
        model="SmolLM2-135M-Instruct", tools=tool_schemas(), tool_choice="auto",
        temperature=0, max_tokens=24,
        messages=[{"role": "system", "content": "Call search_docs to find the answer."},
                  {"role": "user", "content": "How does the search work?"}])
    assert not resp.choices[0].message.tool_calls
    assert resp.choices[0].finish_reason != "tool_calls"


def test_agent_mode_on_a_local_role_runs_as_workflow_and_says_so(
        services: Any, scripted_llm: str) -> None:
    """ASSISTANT_MODE=agent with the default `auto` tools and a local answer role."""
    st = start_stack(services, "agent-local", LOCAL_PORT, {
        "ASSISTANT_REDIS_URL": LOCAL_REDIS, "ASSISTANT_MODE": "agent",
        **scripted_roles(scripted_llm)})
    try:
        script(scripted_llm, tool_rounds=[[SEARCH]])
        frames = ask(st, "How does the search work?", mode=None)
    finally:
        st.sup.stop_all()
    done = frames[-1]
    assert done["type"] == "done" and done["mode"] == "workflow" and done["sources"]
    assert done["mode_note"] == ("agent mode needs an answer model that can call tools; "
                                 "scripted cannot here, so this turn used workflow.")
    decisions, finals = received(scripted_llm)
    assert decisions == [] and len(finals) == 1
    assert not tool_events(frames)


def test_numbers_read_through_a_project_tool_ground_the_answer(agent_stack: Stack,
                                                               scripted_llm: str) -> None:
    read = [{"name": "read_opinions", "arguments": {"id": OFFICE_MOVE}}]
    script(scripted_llm, tool_rounds=[read])
    ask(agent_stack, "Who estimated highest?", user=BOB)
    decisions, _ = received(scripted_llm)
    peaks = re.findall(r"peak ([\d.]+)", tool_messages(decisions[-1])[0])
    assert peaks
    answer = [f"The highest peak entered is {max(peaks, key=float)} [1]."]
    script(scripted_llm, answer, tool_rounds=[read])
    done = ask(agent_stack, "Who estimated highest?", user=BOB)[-1]
    assert done["checks"]["numbers"] == {"valid": True, "unconfirmed": [], "checked": 1}
    # The same answer without the tool call has nothing to ground the number on.
    script(scripted_llm, answer)
    done = ask(agent_stack, "Who estimated highest?", user=BOB)[-1]
    assert done["checks"]["numbers"]["unconfirmed"] == [max(peaks, key=float)]
