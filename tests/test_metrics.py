"""The Prometheus endpoints: a real turn shows up on the web tier's /metrics and on the
worker's loopback endpoint; production serves /metrics only to a direct loopback scrape."""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from collections.abc import Iterator

import pytest
from simple_websocket import Client

from assistant_cli import stack
from assistant_cli.client import http_json, ws_url
from assistant_cli.run import Plan, start_processes
from tests.conftest import ALLOC, VAR, Stack, scripted_roles, set_script, start_stack, wait_for
from tests.test_production_profile import PRODUCTION, client_for
from tests.wsutil import app_token, get_ticket

WEB_PORT, REDIS_URL = ALLOC.port("metrics_stack"), ALLOC.redis_url("metrics_stack")
WORKER_METRICS = ALLOC.port("metrics_stack's worker metrics", pool="other")
FLOWER_PORT = ALLOC.port("metrics_stack's flower", pool="other")


@pytest.fixture(scope="module")
def metrics_stack(services: stack.Supervisor, scripted_llm: str) -> Iterator[Stack]:
    s = start_stack(services, "metrics", WEB_PORT, {
        "ASSISTANT_REDIS_URL": REDIS_URL, **scripted_roles(scripted_llm),
        "ASSISTANT_WORKER_METRICS_PORT": str(WORKER_METRICS)})
    try:
        yield s
    finally:
        s.sup.stop_all()


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.headers["Content-Type"].startswith("text/plain")
        return resp.read().decode()


def value(text: str, sample: str, default: float | None = None) -> float:
    """The value of one sample line (name with labels, exactly as exposed); default when the
    series is not there yet (a labelled counter appears with its first increment)."""
    m = re.search(rf"^{re.escape(sample)} ([0-9.e+]+)$", text, re.M)
    if m is None and default is not None:
        return default
    assert m, f"{sample} not in metrics"
    return float(m.group(1))


def counters(s: Stack, samples: dict[str, str]) -> dict[str, float]:
    """The current values of counters (0 for a series not yet there), by name; samples maps
    a name to 'web:<sample>' or 'worker:<sample>'."""
    web = scrape(s.base_url + "/metrics")
    worker = scrape(f"http://127.0.0.1:{WORKER_METRICS}/metrics")
    return {name: value(web if where == "web" else worker, sample, 0.0)
            for name, (where, sample) in ((n, v.split(":", 1)) for n, v in samples.items())}


def ask(s: Stack) -> dict:  # type: ignore[type-arg]
    ws = Client.connect(ws_url(s.base_url, get_ticket(s.base_url, app_token(s))))
    try:
        ws.send(json.dumps({"type": "ask", "message": "How does the search work?"}))
        while True:
            frame = json.loads(ws.receive(timeout=30))
            if frame["type"] in ("done", "error"):
                return frame  # type: ignore[no-any-return]
    finally:
        ws.close()


TURN_COUNTERS = {
    "accepted": 'web:assistant_turn_starts_total{result="accepted"}',
    "done": 'worker:assistant_turns_total{code="",outcome="done"}',
    "first_token": "worker:assistant_first_token_seconds_count",
    "answer": "worker:assistant_answer_seconds_count",
    "citation_flags": 'worker:assistant_check_flags_total{check="citations"}',
}


def test_a_turn_is_counted_on_the_web_tier_and_the_worker(metrics_stack: Stack,
                                                           scripted_llm: str) -> None:
    # Counted as differences: the other tests of this file ask on the same stack, in any order.
    before = counters(metrics_stack, TURN_COUNTERS)
    set_script(scripted_llm, ["Scripted answer [9]."])  # [9]: a citation the check flags
    done = ask(metrics_stack)
    assert done["type"] == "done" and done["answer"] == "Scripted answer [9].", done
    assert wait_for(lambda: counters(metrics_stack, TURN_COUNTERS)["done"] > before["done"], 5)
    after = counters(metrics_stack, TURN_COUNTERS)
    assert {k: after[k] - before[k] for k in TURN_COUNTERS} == dict.fromkeys(TURN_COUNTERS, 1)
    web = scrape(metrics_stack.base_url + "/metrics")
    assert value(web, 'assistant_queue_depth{queue="turns"}') == 0
    assert value(web, 'assistant_queue_depth{queue="feedback"}') == 0
    assert value(web, "assistant_inflight_slots") == 0
    assert value(web, "assistant_redis_up") == 1
    # The server notices the closed socket a moment later.
    assert wait_for(lambda: value(scrape(metrics_stack.base_url + "/metrics"),
                                  "assistant_open_sockets") == 0, 5)
    worker = scrape(f"http://127.0.0.1:{WORKER_METRICS}/metrics")
    assert "assistant_rebuilds_total" in worker and "assistant_tool_calls_total" in worker


def test_feedback_is_counted_by_rating(metrics_stack: Stack, scripted_llm: str) -> None:
    sample = 'web:assistant_feedback_total{rating="down"}'
    before = counters(metrics_stack, {"down": sample})["down"]
    set_script(scripted_llm, ["Scripted answer [1]."])
    done = ask(metrics_stack)
    status, body = http_json("POST", metrics_stack.base_url + "/api/v1/assistant/feedback",
                             {"turn": done["turn"], "rating": "down", "comment": "too short"},
                             headers={"Authorization": f"Bearer {app_token(metrics_stack)}"})
    assert (status, body) == (202, {"ok": True})
    assert counters(metrics_stack, {"down": sample})["down"] - before == 1
    assert "too short" not in scrape(metrics_stack.base_url + "/metrics")


def test_production_serves_metrics_to_a_direct_loopback_scrape_only(
        services: stack.Supervisor) -> None:
    client = client_for(PRODUCTION)
    outside = client.get("/metrics", environ_base={"REMOTE_ADDR": "203.0.113.7"})
    assert outside.status_code == 404
    proxied = client.get("/metrics", environ_base={"REMOTE_ADDR": "127.0.0.1"},
                         headers={"X-Forwarded-For": "203.0.113.7"})
    assert proxied.status_code == 404
    local = client.get("/metrics", environ_base={"REMOTE_ADDR": "127.0.0.1"})
    assert local.status_code == 200 and b"assistant_queue_depth" in local.data


def test_a_running_turn_shows_its_step_in_flower(metrics_stack: Stack, scripted_llm: str
                                                 ) -> None:
    flower = FLOWER_PORT
    start_processes(metrics_stack.sup, Plan(
        var_dir=VAR, name="metrics-flower", flower_port=flower, web=False, worker=False,
        beat=False), env={**metrics_stack.env, "FLOWER_UNAUTHENTICATED_API": "true"})
    states: dict[str, set[str]] = {}
    # Flower's state of a task is the type of its latest event: record the events on the broker
    # too, so every step operations.md names is seen, not only the one Flower showed last.
    from tests.test_security_review import _capture_task_events

    events: list[dict] = []  # type: ignore[type-arg]
    stop = threading.Event()
    receiver = _capture_task_events(metrics_stack.env["ASSISTANT_REDIS_URL"], stop, events)

    def tasks() -> dict:  # type: ignore[type-arg]
        with urllib.request.urlopen(f"http://127.0.0.1:{flower}/api/tasks", timeout=5) as r:
            return json.loads(r.read())  # type: ignore[no-any-return]

    def seen() -> bool:
        for task_id, t in tasks().items():
            if t.get("name") == "turn.answer":
                states.setdefault(task_id, set()).add(t.get("state"))
        return any("GENERATE" in s for s in states.values())

    # A first turn shows that Flower's event receiver is connected (it starts a little after
    # Flower answers HTTP); then the one whose steps are watched.
    ask(metrics_stack)
    assert wait_for(lambda: bool(tasks()), 15)
    set_script(scripted_llm, [f"w{i} " for i in range(30)], delay_s=0.2)

    box: list[dict] = []  # type: ignore[type-arg]
    asker = threading.Thread(target=lambda: box.append(ask(metrics_stack)))
    asker.start()
    try:
        assert wait_for(seen, 20, 0.3), states
    finally:
        asker.join()
    assert box and box[0]["type"] == "done"
    watched = box[0]["turn"]  # the task id is the turn id
    assert "GENERATE" in states[watched]
    assert wait_for(lambda: (seen(), "SUCCESS" in states[watched])[1], 10), states
    stop.set()
    receiver.join(10)
    steps = [e["type"].removeprefix("task-").upper() for e in events
             if e.get("uuid") == watched and "step" in e]
    named = operations_md_steps()
    assert len(named) == 5, named
    assert [step for step in steps if step in named] == named, (steps, named)
    assert set(named) <= states[watched] | set(steps)


def operations_md_steps() -> list[str]:
    """The steps docs/operations.md says Flower shows for every turn, in order."""
    text = (stack.REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    match = re.search(r"shows the state ((?:`[A-Z]+`,?\s*)+)\(and", text)
    assert match, "docs/operations.md no longer names the Flower steps"
    return re.findall(r"`([A-Z]+)`", match.group(1))
