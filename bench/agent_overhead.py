"""Time to the first token of the final answer per mode (docs/spec/behaviour.md B-20), with instant
scripted models.

The scripted chat and embedding servers answer at once, so the times are ours: the decision
calls (`tools`, `tool_choice`), the tools (a search is a real pgvector + BM25 retrieval), the
events, and the final streamed call. Cases: workflow; hybrid and agent with 0, 1, 2 and 4
`search_docs` calls (4 = a model that never stops asking, cut at the limit). The overhead per
tool call is (agent with k calls - agent with 0 calls) / k, at p50.

Run: .venv/bin/python -m bench.agent_overhead --turns 100
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from simple_websocket import Client

from assistant_cli.client import http_json, ws_url
from tests import conftest
from tests.wsutil import app_token, get_ticket

SEARCH = {"name": "search_docs", "arguments": {"query": "How does the search work?"}}
CASES: list[tuple[str, str, int]] = [("workflow", "workflow", 0), ("hybrid, 0 calls", "hybrid", 0),
                                     ("hybrid, 1 call", "hybrid", 1),
                                     ("agent, 0 calls", "agent", 0), ("agent, 1 call", "agent", 1),
                                     ("agent, 2 calls", "agent", 2),
                                     ("agent, 4 calls (cut)", "agent", 4)]


def pct(values: list[float], q: float) -> float:
    """The q-quantile, in ms."""
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] * 1000


def script(scripted: str, calls: int) -> None:
    """The next turn's model: `calls` searches (4 = never stops asking), then one token."""
    body: dict[str, Any] = {"chunks": ["Instant [1]."]}
    if calls >= 4:
        body["tool_forever"] = SEARCH
    else:
        body["tool_rounds"] = [[SEARCH]] * calls
    status, _ = http_json("POST", f"{scripted}/_script", body)
    assert status == 200


def first_tokens(st: conftest.Stack, scripted: str, mode: str, calls: int, turns: int,
                 steps: dict[str, list[float]]) -> list[float]:
    """ask -> first token (seconds) per turn, after 5 warm-up turns; worker step times (ms,
    each decision round and each tool call) go to `steps`."""
    out = []
    ws = Client.connect(ws_url(st.base_url, get_ticket(st.base_url, app_token(st))))
    try:
        for i in range(turns + 5):
            script(scripted, calls)
            t0 = time.perf_counter()
            ws.send(json.dumps({"type": "ask", "message": "How does the search work?",
                                "mode": mode}))
            first = None
            tools = 0
            while True:
                f = json.loads(ws.receive(timeout=30))
                if f["type"] == "token" and first is None:
                    first = time.perf_counter() - t0
                if f["type"] == "event" and f.get("step") == "tool":
                    tools += 1
                if f["type"] in ("done", "error"):
                    assert f["type"] == "done" and f["mode"] == mode, f
                    if i >= 5:
                        for step in f["timing"]["steps"]:
                            if step["step"] in ("plan", "tool", "retrieve", "generate"):
                                steps.setdefault(step["step"], []).append(step["ms"] / 1000)
                    break
            assert tools == calls, (mode, calls, tools)
            if i >= 5 and first is not None:
                out.append(first)
    finally:
        ws.close()
    return out


def main() -> None:
    """Start services and one dev-profile stack (per-turn mode) on instant scripted models."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=100)
    args = ap.parse_args()
    with conftest.bench_services() as (services, scripted):
        fast = {"ASSISTANT_PROFILE": "dev",
                "ASSISTANT_ANSWER_TOOLS": "on",
                "ASSISTANT_ANSWER_LLM_BASE_URL": f"{scripted}/v1",
                "ASSISTANT_LLM_BASE_URL": f"{scripted}/v1",
                "ASSISTANT_EMBEDDING_BASE_URL": f"{scripted}/v1",
                "ASSISTANT_WS_FRAMES_PER_SECOND": "100000",
                "ASSISTANT_REDIS_URL": conftest.redis_url(11)}
        st = conftest.start_stack(services, "agent-bench", conftest.port(8022), fast)
        try:
            results = {}
            for name, mode, calls in CASES:
                steps: dict[str, list[float]] = {}
                values = first_tokens(st, scripted, mode, calls, args.turns, steps)
                results[name] = values
                per_step = ", ".join(f"{k} {pct(v, .5):.1f}" for k, v in steps.items())
                print(f"{name:<22} {len(values)} turns: p50 {pct(values, .5):6.1f} ms, "
                      f"p95 {pct(values, .95):6.1f} ms; step p50 ms: {per_step}", flush=True)
            base = pct(results["agent, 0 calls"], .5)
            for name, _, calls in CASES:
                if name.startswith("agent") and calls:
                    per = (pct(results[name], .5) - base) / calls
                    print(f"per tool call ({name}): {per:.1f} ms at p50")
        finally:
            st.sup.stop_all()


if __name__ == "__main__":
    main()
