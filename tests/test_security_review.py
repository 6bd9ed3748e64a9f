"""The security review's findings: one test per finding, named after its item (docs/security.md
names each claim's test)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from simple_websocket import Client

from assistant_cli.client import ask, http_json, ws_url
from shared.project_grounding import project_grounding
from tests.bad_inputs import SLOW_REGEX_UNITS
from tests.conftest import ALLOC, Stack
from tests.wsutil import app_token, get_ticket
from web.project import cleaning as pc

ITEM8_PORT, ITEM8_REDIS = ALLOC.port("item8_stack"), ALLOC.redis_url("item8_stack")
ITEM4_PORT, ITEM4_REDIS = ALLOC.port("item4_stack"), ALLOC.redis_url("item4_stack")
# Host pages the panel is embedded in: an allowed origin (the `web` pool), and a foreign one.
ALLOWED_HOST_PORT = ALLOC.port("item11 host page (an allowed origin)")
FOREIGN_HOST_PORT = ALLOC.port("item11 host page (a foreign origin)", pool="other")
REFRESH_HOST_PORT = ALLOC.port("item12 host page")


def record_events(events: list[dict[str, Any]]) -> None:
    """Keep captured Celery events among the run's logs, which the secrets scan reads."""
    from tests.conftest import VAR

    (VAR / "log").mkdir(parents=True, exist_ok=True)
    with open(VAR / "log" / "celery-events.log", "a", encoding="utf-8") as fh:
        for e in events:
            fh.write(json.dumps(e, default=str) + "\n")

# CPU seconds per megabyte a cleaning step may take; linear code stays far below it.
CPU_PER_MB = 1.5
MB = 1_000_000
CLEANING_STEPS: dict[str, Callable[[str], object]] = {
    "controls": pc._strip_controls,
    "markup": pc._strip_markup,
    "fence word": lambda t: pc._FENCE_WORD.sub("project data", t),
    "e-mail": lambda t: pc._EMAIL.sub("(e-mail removed)", t),
    "uuid": lambda t: pc._UUID.sub("(id removed)", t),
    "whitespace": lambda t: pc._WHITESPACE.sub(" ", t),
    "clean_text": lambda t: pc.clean_text(t, pc.LIMIT_DESCRIPTION),
    "grounding": project_grounding,
}


@pytest.mark.parametrize("step_name", CLEANING_STEPS)
def test_item1_slow_regexes_every_cleaning_step_is_linear_on_1mb(step_name: str) -> None:
    step = CLEANING_STEPS[step_name]
    for unit_name, unit in SLOW_REGEX_UNITS.items():
        # Grow to 1 MB so a quadratic step fails at a small size instead of running for hours.
        for size in (16_000, 128_000, MB):
            text = unit * (size // len(unit))
            start = time.process_time()
            step(text)
            spent = time.process_time() - start
            budget = 0.02 + CPU_PER_MB * size / MB
            assert spent < budget, (f"{step_name} on {size} chars of {unit_name!r}: "
                                    f"{spent:.3f}s CPU, budget {budget:.3f}s")


def test_item1_slow_regexes_clean_text_truncates_before_cleaning() -> None:
    # A 1 MB description costs no more CPU than the 600 characters that can survive it.
    text = "<script>" * (MB // 8)
    start = time.process_time()
    cleaned = pc.clean_text(text, pc.LIMIT_DESCRIPTION)
    assert time.process_time() - start < 0.05
    assert "<" not in cleaned and "script" not in cleaned
    assert pc.clean_text("a" * MB + "@example.org", 50) == "a" * 49 + pc.ELLIPSIS


def _turn_request(history: list[tuple[str, str]]) -> Any:
    from shared.turn_request import Message, TurnRequest

    return TurnRequest(turn="t" * 32, user="u", message="What is the result?", language="en",
                       mode="workflow", history=tuple(Message(r, c) for r, c in history))


def test_item7_history_entry_of_100kb_is_refused_on_the_server(scripted_stack: Stack) -> None:
    base = scripted_stack.base_url
    ws = Client.connect(ws_url(base, get_ticket(base, app_token(scripted_stack, "item7"))))
    try:
        ws.send(json.dumps({"type": "ask", "message": "hi",
                            "history": [{"role": "user", "content": "x" * 100_000}]}))
        reply = json.loads(ws.receive(timeout=15) or "{}")
        assert reply.get("type") == "error" and reply.get("code") == 413, reply
    finally:
        ws.close()


def test_item7_history_is_bounded_to_20_messages_and_6000_chars_on_the_server() -> None:
    from shared.config import Settings
    from web.protocol import parse_ask

    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "w" * 500}
               for i in range(30)]
    kept = parse_ask({"message": "hi", "history": history}, Settings()).history
    assert len(kept) <= 20 and sum(len(m.content) for m in kept) <= 6000
    assert (kept[-1].role, kept[-1].content) == (history[-1]["role"], history[-1]["content"]), \
        "the newest messages are kept, the oldest dropped"


def test_item7_only_the_users_own_recent_messages_ground_numbers() -> None:
    from worker.pipeline.turn import run_checks
    from worker.pipeline.types import Retrieval

    retrieval = Retrieval(passages=(), index_version="v", query="q")
    answer = "The result is 4217."
    said_by_assistant = _turn_request([("user", "What is it?"), ("assistant", "It is 4217.")])
    checks = run_checks(answer, retrieval, said_by_assistant, None, True)
    assert checks["numbers"]["unconfirmed"] == ["4217"], "an earlier answer grounds nothing"
    # A user message the model no longer sees (beyond the last 20) grounds nothing either.
    old = [("user", "Remember 4217.")] + [("user", "ok"), ("assistant", "fine")] * 10
    checks = run_checks(answer, retrieval, _turn_request(old), None, True)
    assert checks["numbers"]["unconfirmed"] == ["4217"]
    recent = _turn_request([("user", "Remember 4217."), ("assistant", "fine")])
    assert run_checks(answer, retrieval, recent, None, True)["numbers"]["valid"]


def test_item2_socket_closes_when_the_app_token_expires(scripted_stack: Stack) -> None:
    from simple_websocket import ConnectionClosed

    from shared.auth import mint_access_token

    base = scripted_stack.base_url
    token = mint_access_token("item2", scripted_stack.settings.app_jwt_secret, ttl_s=3)
    ws = Client.connect(ws_url(base, get_ticket(base, token)))
    closed_with: tuple[int, str] | None = None
    try:
        ws.send(json.dumps({"type": "ping"}))
        assert json.loads(ws.receive(timeout=10) or "{}") == {"type": "pong"}
        time.sleep(4.5)  # the token has expired; the socket must not serve it any more
        ws.send(json.dumps({"type": "ask", "message": "Still signed in?"}))
        for _ in range(10):
            reply = ws.receive(timeout=5)
            assert reply is None or json.loads(reply).get("type") != "accepted", reply
    except ConnectionClosed as exc:
        closed_with = (exc.reason, exc.message)
    assert closed_with is not None and closed_with[0] == 4401, closed_with
    assert "expired" in closed_with[1]


class _BurstSocket:
    """A client socket stand-in that delivers a burst of frames as fast as they are read."""

    def __init__(self, frames: int, size: int) -> None:
        self.left = frames
        self.frame = json.dumps({"type": "ping", "pad": "x" * size})
        self.closed: tuple[int, str] | None = None

    def receive(self) -> str:
        from simple_websocket import ConnectionClosed

        if self.left == 0:
            raise ConnectionClosed(1000, "burst over")
        self.left -= 1
        return self.frame

    def close(self, reason: int = 1000, message: str = "") -> None:
        self.closed = (reason, message)


def test_item5_inbox_is_bounded_and_frames_are_counted_in_the_reader() -> None:
    from shared.config import Settings
    from web.routes.ws import Session
    from web.tickets import TicketGrant

    s = Settings()
    sock = _BurstSocket(frames=2000, size=200 * 1024)
    session = Session(sock, TicketGrant("item5", "token", time.time() + 60), s,
                      None)  # type: ignore[arg-type]
    # The session loop is busy (say, waiting on a project read): only the reader runs.
    session._read()
    kinds = [session.inbox.get_nowait()[0] for _ in range(session.inbox.qsize())]
    held = kinds.count("client")
    assert held <= s.ws_inbox_frames, f"{held} frames of 200 KB held for one socket"
    assert "overflow" in kinds, "a client that keeps flooding is disconnected"
    assert len(kinds) <= s.ws_inbox_frames + 3  # one flood notice, the overflow, the close


@pytest.fixture(scope="module")
def item8_stack(services: Any, scripted_llm: str) -> Iterator[Stack]:
    """A stack with a 3-second first-token limit whose worker the test stops and restarts,
    and health detail for no loopback caller."""
    from tests.conftest import scripted_roles, start_stack

    s = start_stack(services, "item8", ITEM8_PORT, {
        "ASSISTANT_REDIS_URL": ITEM8_REDIS, **scripted_roles(scripted_llm),
        "ASSISTANT_FIRST_TOKEN_TIMEOUT_S": "3",
        # Item 3: loopback is not a trusted health caller here, and public calls are limited.
        "ASSISTANT_HEALTH_TRUSTED": "192.0.2.1/32", "ASSISTANT_HEALTH_REQUEST_LIMIT": "5/minute"})
    try:
        yield s
    finally:
        s.sup.stop_all()


def _capture_task_events(redis_url: str, stop: threading.Event,
                         into: list[dict[str, Any]]) -> threading.Thread:
    """Record every Celery task event on the broker, as Flower receives them."""
    from celery import Celery

    app = Celery("item6-capture", broker=redis_url)
    ready = threading.Event()

    def run() -> None:
        with app.connection() as conn:
            recv = app.events.Receiver(conn, handlers={"*": into.append})
            threading.Thread(target=lambda: (stop.wait(), setattr(recv, "should_stop", True)),
                             daemon=True).start()
            ready.set()
            recv.capture(limit=None, timeout=None, wakeup=True)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)
    return thread


def test_item6_celery_task_events_carry_the_turn_id_never_the_payload(
        item8_stack: Stack, scripted_llm: str) -> None:
    from tests.conftest import set_script

    set_script(scripted_llm, ["Fine [1]."])
    events: list[dict[str, Any]] = []
    stop = threading.Event()
    thread = _capture_task_events(item8_stack.env["ASSISTANT_REDIS_URL"], stop, events)
    time.sleep(1.5)  # the receiver's queue is bound before the turn is sent
    secret = "item6-what-the-user-typed-7731"
    frames, done = ask(item8_stack.base_url, app_token(item8_stack, "item6"),
                       f"How does the search work? {secret}",
                       history=[{"role": "user", "content": f"earlier {secret}"}])
    turn = frames[0]["turn"]
    time.sleep(1.5)
    stop.set()
    thread.join(10)
    record_events(events)
    sent = [e for e in events if e.get("type") == "task-sent" and e.get("uuid") == turn]
    assert sent, f"no task-sent event captured among {len(events)}"
    # The task's arguments are the ids themselves (the text is in the stored TurnRequest).
    assert sent[0]["args"] == repr((turn, 1)) and sent[0]["kwargs"] == "{}"
    for e in events:
        assert secret not in json.dumps(e, default=str), e


def test_item8_turns_queued_while_no_worker_runs_expire_unanswered(
        item8_stack: Stack, scripted_llm: str) -> None:
    from assistant_cli.client import stream_turn
    from tests.conftest import set_script, start_worker, wait_for

    set_script(scripted_llm, ["Late [1]."])
    worker = next(p for p in item8_stack.sup.procs if p.name == "item8-worker")
    item8_stack.sup.stop(worker)
    events: list[dict[str, Any]] = []
    stop = threading.Event()
    thread = _capture_task_events(item8_stack.env["ASSISTANT_REDIS_URL"], stop, events)
    marker = "item8-nobody-waits"
    queued = []
    try:
        for i in range(3):  # each client goes away at once: nobody waits for these turns
            for frame in stream_turn(item8_stack.base_url, app_token(item8_stack, f"item8-{i}"),
                                     f"{marker} {i}: how does the search work?"):
                assert frame["type"] == "accepted"
                queued.append(frame["turn"])
                break
        time.sleep(4)  # past the first-token limit
        start_worker(item8_stack.sup, "item8", item8_stack.env)
        # A turn asked now is answered: the worker has taken the queue, the three before it.
        set_script(scripted_llm, ["Fresh [1]."])
        _, fresh = ask(item8_stack.base_url, app_token(item8_stack, "item8-fresh"),
                       "How does the search work?", timeout_s=30)
        assert fresh["type"] == "done" and fresh["answer"] == "Fresh [1].", fresh

        def expired() -> set[str]:
            return {e.get("uuid") for e in list(events)
                    if e.get("type") == "task-revoked" and e.get("expired")}

        # Each of the three was dropped by the worker as expired, not run, not lost.
        assert wait_for(lambda: set(queued) <= expired(), 10), (queued, expired())
    finally:
        stop.set()
        thread.join(10)
        record_events(events)
    _, requests = http_json("GET", f"{scripted_llm}/_requests")
    called = [r for r in requests if marker in json.dumps(r)]
    assert not called, f"{len(called)} model calls for turns nobody waited for"


def test_item3_healthz_is_up_down_for_the_public_and_rate_limited(item8_stack: Stack) -> None:
    status, body = http_json("GET", f"{item8_stack.base_url}/healthz")
    assert status in (200, 503) and set(body) == {"ok", "status"}, body
    assert body["status"] == ("up" if body["ok"] else "down")
    replies = [http_json("GET", f"{item8_stack.base_url}/healthz") for _ in range(6)]
    statuses = [r[0] for r in replies]
    assert 429 in statuses, statuses
    first = statuses.index(429)
    assert statuses[first:] == [429] * (6 - first), "once refused, refused for the minute"
    assert replies[first][1]["error"]["message"].startswith(
        "Too many requests from your address (5 in the last minute)."), replies[first]
    assert all(set(b) == {"ok", "status"} for c, b in replies[:first]), replies[:first]


def test_item3_healthz_detail_for_trusted_callers_is_cached(scripted_stack: Stack) -> None:
    first = http_json("GET", f"{scripted_stack.base_url}/healthz")[1]
    second = http_json("GET", f"{scripted_stack.base_url}/healthz")[1]
    assert "components" in first and "model:answer" in first["components"]
    assert first["checked_at"] == second["checked_at"], "checked once for both calls"


def test_item4_ipv6_clients_are_bucketed_per_56(settings: Any, services: Any) -> None:
    import dataclasses
    import uuid

    from shared.errors import RateLimited
    from shared.limits import Limiter
    from shared.redis_client import redis_client

    s = dataclasses.replace(settings, client_request_limit="2/minute")
    limiter = Limiter(s, redis_client(s))
    # A fresh /56 per run: 2001:db8:<random>:ab00::/56 holds the /64s ab00 to abff.
    prefix = f"2001:db8:{uuid.uuid4().int % 0xffff:x}:ab"
    limiter.check_request(f"{prefix}01::1")
    limiter.check_request(f"{prefix}02::1")  # another /64 of the same subscriber
    with pytest.raises(RateLimited):
        limiter.check_request(f"{prefix}ff:ffff:ffff:ffff:fff0")  # same /56, a third /64
    limiter.check_request(f"{prefix[:-2]}ac00::1")  # the next /56 is its own bucket


class _CountingApp:
    """Stands in for the BeCoMe app's API on loopback: counts reads, answers 404."""

    def __init__(self) -> None:
        import http.server

        self.paths: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                outer.paths.append(self.path)
                self.send_response(404)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"detail": "Not found"}')

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"


@pytest.fixture(scope="module")
def counting_app() -> Iterator[_CountingApp]:
    app = _CountingApp()
    yield app
    app.server.shutdown()


@pytest.fixture(scope="module")
def item4_stack(services: Any, scripted_llm: str, counting_app: _CountingApp
                ) -> Iterator[Stack]:
    """Tight per-user and per-address limits, one event stream per user, few sockets; loopback
    is a trusted proxy, so each test speaks from addresses of its own (X-Forwarded-For) and
    no test depends on what another one used up."""
    from tests.conftest import scripted_roles, start_stack

    s = start_stack(services, "item4", ITEM4_PORT, {
        "ASSISTANT_REDIS_URL": ITEM4_REDIS, **scripted_roles(scripted_llm),
        "ASSISTANT_APP_API_URL": counting_app.url,
        "ASSISTANT_TRUSTED_PROXIES": "127.0.0.1",
        "ASSISTANT_USER_MESSAGE_LIMIT": "1/hour",
        "ASSISTANT_CLIENT_MESSAGE_LIMIT": "3/hour",
        "ASSISTANT_CLIENT_REQUEST_LIMIT": "40/minute",
        "ASSISTANT_MAX_STREAMS_PER_USER": "1",
        "ASSISTANT_MAX_SOCKETS_PER_USER": "2",
        "ASSISTANT_MAX_SOCKETS_PER_ADDRESS": "3",
        "ASSISTANT_SLOT_LEASE_S": "2"})
    try:
        yield s
    finally:
        s.sup.stop_all()


def _address() -> str:
    """A client address no other test (or earlier run: the windows live an hour) used."""
    import uuid

    return f"2001:db8:{uuid.uuid4().int % 0xffff:x}:{uuid.uuid4().int % 0xffff:x}::1"


def _via(addr: str) -> dict[str, str]:
    return {"X-Forwarded-For": addr}


def _socket(stack: Stack, user: str, addr: str) -> Client:
    """A WebSocket of user from addr (its ticket requested from there too)."""
    status, body = http_json("POST", f"{stack.base_url}/api/v1/assistant/tickets", headers={
        "Authorization": f"Bearer {app_token(stack, user)}", **_via(addr)})
    assert status == 201, (status, body)
    return Client.connect(ws_url(stack.base_url, body["ticket"]), headers=_via(addr))


def _frames(ws: Client, until: Callable[[dict[str, Any]], bool], timeout: float = 30
            ) -> list[dict[str, Any]]:
    """Frames (pings left out) up to the first for which until() holds."""
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        raw = ws.receive(timeout=max(0.1, deadline - time.monotonic()))
        if raw is None:
            continue
        frame = json.loads(raw)
        if frame["type"] == "ping":
            continue
        out.append(frame)
        if until(frame):
            return out
    raise AssertionError(f"no such frame in {timeout} s; got {[f['type'] for f in out]}")


def _terminal(frame: dict[str, Any]) -> bool:
    return frame["type"] in ("done", "error")


def _ask_from(stack: Stack, user: str, addr: str, message: str = "How does the search work?",
              **fields: Any) -> list[dict[str, Any]]:
    """One turn over a socket of its own from addr: every frame up to the terminal one."""
    ws = _socket(stack, user, addr)
    try:
        ws.send(json.dumps({"type": "ask", "message": message, **fields}))
        return _frames(ws, _terminal)
    finally:
        ws.close()


def test_item4_limits_are_checked_before_any_app_api_call(
        item4_stack: Stack, scripted_llm: str, counting_app: _CountingApp) -> None:
    from tests.conftest import set_script

    set_script(scripted_llm, ["First [1]."])
    addr = _address()
    assert _ask_from(item4_stack, "item4-quota", addr)[-1]["type"] == "done"
    before = len(counting_app.paths)
    refused = _ask_from(item4_stack, "item4-quota", addr, "And my project?",
                        project_id="p-1")[-1]
    assert refused["type"] == "error" and refused["code"] == 429, refused
    assert refused["message"].startswith("You have sent 1 message in the last hour."), refused
    assert len(counting_app.paths) == before, counting_app.paths[before:]


def test_item4_turn_event_streams_are_capped_per_user(
        item4_stack: Stack, scripted_llm: str) -> None:
    from tests.conftest import set_script
    from tests.sseutil import sse_frames

    set_script(scripted_llm, ["Slow [1]."], stall_s=6)
    token, addr = app_token(item4_stack, "item4-streams"), _address()
    chat = sse_frames(item4_stack.base_url, "POST", "/api/v1/assistant/chat/stream", token,
                      body={"message": "How does the search work?"}, headers=_via(addr))
    turn = next(chat)[1]["turn"]
    path = f"/api/v1/assistant/turns/{turn}/events"
    opened = sse_frames(item4_stack.base_url, "GET", path, token, headers=_via(addr))
    assert next(opened)[1]["type"] == "accepted"  # one live event stream of this user
    status, body = http_json("GET", f"{item4_stack.base_url}{path}",
                             headers={"Authorization": f"Bearer {token}", **_via(addr)})
    assert status == 429, (status, body)
    assert body["error"]["message"] == "Too many open answer streams. Close one and try again."


def test_item4_websocket_asks_are_counted_per_address(item4_stack: Stack,
                                                      scripted_llm: str) -> None:
    from tests.conftest import set_script

    set_script(scripted_llm, ["Fine [1]."])
    addr = _address()
    # Four users behind one address (an office): the address's allowance is 3 an hour.
    ends = [_ask_from(item4_stack, f"item4-addr-{i}-{addr}", addr)[-1] for i in range(4)]
    assert [e["type"] for e in ends] == ["done", "done", "done", "error"], ends
    assert ends[3]["code"] == 429 and ends[3]["message"].startswith(
        "Too many requests from your address (3 in the last hour)."), ends[3]
    assert ends[0]["answer"] == "Fine [1]."
    # Another address is not held back by this one.
    assert _ask_from(item4_stack, f"item4-addr-9-{addr}", _address())[-1]["type"] == "done"


def test_item4_projects_list_is_rate_limited(item4_stack: Stack) -> None:
    token, addr = app_token(item4_stack, "item4-projects"), _address()
    auth = {"Authorization": f"Bearer {token}", **_via(addr)}
    replies = [http_json("GET", f"{item4_stack.base_url}/api/v1/assistant/projects",
                         headers=auth) for _ in range(41)]
    # The stand-in app answers 404: each call reached it, until the window was full.
    assert [r[0] for r in replies] == [404] * 40 + [429], [r[0] for r in replies]
    assert replies[-1][1]["error"]["message"].startswith(
        "Too many requests from your address (40 in the last minute).")
    status, body = http_json("GET", f"{item4_stack.base_url}/api/v1/assistant/turns/{'a' * 32}"
                             "/events", headers=auth)
    assert status == 429, "event streams share the address's window"
    # The window is the address's, not the server's: another address is served.
    assert http_json("GET", f"{item4_stack.base_url}/api/v1/assistant/projects",
                     headers={**auth, **_via(_address())})[0] == 404


def test_item4_resumes_count_in_the_address_request_window(item4_stack: Stack,
                                                           scripted_llm: str) -> None:
    from tests.conftest import set_script

    set_script(scripted_llm, ["Counted [1]."])
    addr = _address()
    frames = _ask_from(item4_stack, "item4-resumes", addr)
    assert frames[-1]["type"] == "done"
    ws = _socket(item4_stack, "item4-resumes", addr)  # the 2nd request of this address
    try:
        for _ in range(38):  # 40 a minute: these fill the window
            ws.send(json.dumps({"type": "resume", "turn": frames[0]["turn"], "after": 0}))
            time.sleep(0.06)  # under the socket's frame rate
        ws.send(json.dumps({"type": "resume", "turn": frames[0]["turn"], "after": 0}))
        refused = _frames(ws, lambda f: f["type"] == "error" and "address" in f["message"])
    finally:
        ws.close()
    assert refused[-1]["code"] == 429
    status, body = http_json("POST", f"{item4_stack.base_url}/api/v1/assistant/tickets",
                             headers={"Authorization": f"Bearer {app_token(item4_stack)}",
                                      **_via(addr)})
    assert status == 429, (status, body)


def test_item4_a_socket_replays_a_finished_turn_once(item4_stack: Stack,
                                                     scripted_llm: str) -> None:
    from tests.conftest import set_script

    set_script(scripted_llm, ["Replayed ", "once [1]."])
    addr = _address()
    asked = _ask_from(item4_stack, "item4-replay", addr)
    turn = asked[0]["turn"]
    ws = _socket(item4_stack, "item4-replay", addr)
    try:
        ws.send(json.dumps({"type": "resume", "turn": turn, "after": -1}))
        replay = _frames(ws, _terminal)
        assert [f["seq"] for f in replay] == [f["seq"] for f in asked]
        assert replay[-1]["answer"] == "Replayed once [1]."
        ws.send(json.dumps({"type": "resume", "turn": turn, "after": -1}))
        again = _frames(ws, _terminal)
    finally:
        ws.close()
    assert len(again) == 1 and again[0]["type"] == "error" and again[0]["code"] == 429, again
    assert again[0]["turn"] == turn
    assert again[0]["message"] == "This answer was already sent on this connection."


def test_item4_resuming_after_the_end_of_a_finished_turn_resends_its_end_only(
        item4_stack: Stack, scripted_llm: str) -> None:
    from shared import keys
    from shared.redis_client import redis_client
    from tests.conftest import set_script
    from tests.sseutil import sse_frames

    set_script(scripted_llm, ["Finished [1]."])
    addr = _address()
    asked = _ask_from(item4_stack, "item4-after", addr)
    turn, last = asked[0]["turn"], asked[-1]["seq"]
    _, calls_before = http_json("GET", f"{scripted_llm}/_requests")
    for after in (last, last + 100, 10**9):
        ws = _socket(item4_stack, "item4-after", addr)
        try:
            ws.send(json.dumps({"type": "resume", "turn": turn, "after": after}))
            got = _frames(ws, _terminal, timeout=10)
            # The watchdog looks after 2 s of silence: nothing may follow the end.
            assert ws.receive(timeout=4) is None
        finally:
            ws.close()
        assert got == [asked[-1]], (after, got)
    token = app_token(item4_stack, "item4-after")
    events = list(sse_frames(item4_stack.base_url, "GET", f"/api/v1/assistant/turns/{turn}"
                             "/events", token, last_event_id=last + 50, headers=_via(addr)))
    assert [f for _, f in events] == [asked[-1]]
    _, calls_after = http_json("GET", f"{scripted_llm}/_requests")
    assert len(calls_after) == len(calls_before), "no false 'worker lost' re-run"
    assert not redis_client(item4_stack.settings).exists(keys.turn_rerun(turn))


def test_item4_open_sockets_are_capped_per_user_and_per_address(item4_stack: Stack) -> None:
    from tests.wsutil import upgrade_status

    def upgrade(user: str, addr: str) -> tuple[int, Any]:
        status, body = http_json("POST", f"{item4_stack.base_url}/api/v1/assistant/tickets",
                                 headers={"Authorization": f"Bearer {app_token(item4_stack, user)}",
                                          **_via(addr)})
        assert status == 201, body
        code, raw = upgrade_status(item4_stack.base_url,
                                   f"/api/v1/assistant/ws?ticket={body['ticket']}", _via(addr))
        return code, json.loads(raw) if raw else None

    addr, other = _address(), _address()
    held = [_socket(item4_stack, "item4-socks", addr), _socket(item4_stack, "item4-socks", other)]
    try:
        time.sleep(3)  # past the 2 s lease: the open sockets renew theirs
        code, body = upgrade("item4-socks", _address())
        assert code == 429, (code, body)
        assert body["error"]["message"].startswith("You have 2 connections open")
        held.append(_socket(item4_stack, "item4-socks-b", addr))
        held.append(_socket(item4_stack, "item4-socks-c", addr))  # the 3rd of this address
        code, body = upgrade("item4-socks-d", addr)
        assert code == 429, (code, body)
        assert body["error"]["message"].startswith("Too many connections from your address")
        assert upgrade("item4-socks-d", _address())[0] != 429  # another address has room
        held.pop().close()  # a closed socket frees its place at once
        time.sleep(1.5)
        held.append(_socket(item4_stack, "item4-socks-d", addr))
    finally:
        for ws in held:
            ws.close()


def _timed_turn(stack: Stack, user: str) -> tuple[dict[str, Any], float]:
    start = time.monotonic()
    _, end = ask(stack.base_url, app_token(stack, user), "How does the search work?",
                 timeout_s=60)
    return end, time.monotonic() - start


def test_item9_a_model_that_hangs_sending_nothing_is_stopped_at_the_first_token_limit(
        strict_stack: Stack, scripted_llm: str) -> None:
    from tests.conftest import set_script

    # strict_stack: first token 3 s, answer 8 s. The server keeps the connection busy with
    # comments for 40 s, so no read timeout ever fires: only our own hard stop can end it.
    set_script(scripted_llm, ["Too late [1]."], stall_s=40, keepalive=True)
    end, took = _timed_turn(strict_stack, "item9-a")
    assert end["type"] == "error" and end["code"] == 504, end
    assert took < 3 + 4, f"ended after {took:.1f} s"


def test_item9_a_model_that_trickles_is_stopped_at_the_answer_limit(
        strict_stack: Stack, scripted_llm: str) -> None:
    from tests.conftest import set_script

    set_script(scripted_llm, ["One ", "two [1]."], delay_s=40, keepalive=True)
    end, took = _timed_turn(strict_stack, "item9-b")
    assert end["type"] == "error" and end["code"] == 504, end
    assert took < 8 + 4, f"ended after {took:.1f} s"


def _hosted_env(**extra: str) -> dict[str, str]:
    from tests.conftest import TEST_ENV

    return {**TEST_ENV, "ASSISTANT_API_KEY": "sk-shared-provider-a",
            "ASSISTANT_ANSWER_PROVIDER": "api",
            "ASSISTANT_ANSWER_LLM_BASE_URL": "https://provider-a.example/v1",
            "ASSISTANT_LLM_PROVIDER": "api",
            "ASSISTANT_LLM_BASE_URL": "https://provider-b.example/v1", **extra}


def test_item10_hosted_keys_per_role_never_cross_providers() -> None:
    from shared.config import ConfigError, settings_from_env

    # Two providers and only the shared key: provider B would receive provider A's key.
    with pytest.raises(ConfigError, match="ASSISTANT_LLM_API_KEY"):
        settings_from_env(_hosted_env())
    s = settings_from_env(_hosted_env(ASSISTANT_LLM_API_KEY="sk-provider-b"))
    assert s.answer.key_for_request == "sk-shared-provider-a"
    assert s.translation.key_for_request == "sk-provider-b"
    # One host for both roles: the shared key serves both.
    same = settings_from_env(_hosted_env(
        ASSISTANT_LLM_BASE_URL="https://provider-a.example/v1/"))
    assert same.translation.key_for_request == "sk-shared-provider-a"


EMBED_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Host page</title>
<link rel="stylesheet" href="{base}/static/panel.css">
<script src="{base}/static/panel-i18n.js"></script>
<script src="{base}/static/panel-render.js"></script>
<script src="{base}/static/panel.js"></script></head>
<body><div id="host"></div><script>
BecomeAssistant.mount(document.getElementById("host"),
  {{baseUrl: "{base}", getToken: () => "{token}", lang: "en"}});
</script></body></html>"""


class _HostPage:
    """A second origin on loopback that serves one page embedding the panel."""

    def __init__(self, port_number: int, html: str) -> None:
        import http.server

        body = html.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port_number), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{port_number}/"


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    import shutil

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                              args=["--headless", "--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def _embed(chromium: Any, stack: Stack, port_number: int) -> tuple[Any, Any, list[str]]:
    page_html = EMBED_PAGE.format(base=stack.base_url, token=app_token(stack, "item11"))
    host = _HostPage(port_number, page_html)
    context = chromium.new_context()
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text))
    page.goto(host.url)
    page.wait_for_selector("#ba-question")
    page.get_by_label("Your question").fill("How does the search work?")
    page.get_by_role("button", name="Ask", exact=True).click()
    host.server.shutdown()
    return context, page, console


def test_item11_panel_embedded_from_an_allowed_second_origin_gets_an_answer(
        chromium: Any, scripted_stack: Stack, scripted_llm: str) -> None:
    from tests.conftest import set_script

    set_script(scripted_llm, ["Embedded answer [1]."])
    # The test environment allows 127.0.0.1 on the ports of the allocator's `web` pool.
    context, page, console = _embed(chromium, scripted_stack, ALLOWED_HOST_PORT)
    try:
        page.wait_for_function("() => window.__assistantPanel.current && "
                               "window.__assistantPanel.current.finished", timeout=30_000)
        assert "Embedded answer" in page.evaluate("() => window.__assistantPanel.answerText()"), \
            console
    finally:
        context.close()


def test_item11_a_foreign_origin_is_refused(chromium: Any, scripted_stack: Stack) -> None:
    context, page, _ = _embed(chromium, scripted_stack, FOREIGN_HOST_PORT)
    try:
        outcome = page.evaluate("""async (base) => {
            try { await fetch(base + "/api/v1/assistant/tickets", {method: "POST",
                    headers: {"Authorization": "Bearer x"}}); return "read"; }
            catch (e) { return "blocked"; } }""", scripted_stack.base_url)
        assert outcome == "blocked"
        page.wait_for_function("() => window.__assistantPanel.current && "
                               "window.__assistantPanel.current.finished", timeout=30_000)
        assert not page.evaluate("() => window.__assistantPanel.lastDone")
    finally:
        context.close()


def test_item11_headers_restrict_connect_src_and_answer_cors_only_for_allowed_origins(
        scripted_stack: Stack) -> None:
    import urllib.request

    def options(origin: str) -> dict[str, str]:
        req = urllib.request.Request(f"{scripted_stack.base_url}/api/v1/assistant/tickets",
                                     method="OPTIONS", headers={
                                         "Origin": origin,
                                         "Access-Control-Request-Method": "POST",
                                         "Access-Control-Request-Headers": "authorization"})
        with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 - loopback
            return {k.lower(): v for k, v in resp.headers.items()}

    allowed = f"http://127.0.0.1:{ALLOWED_HOST_PORT}"
    headers = options(allowed)
    assert headers.get("access-control-allow-origin") == allowed
    assert "authorization" in headers.get("access-control-allow-headers", "").lower()
    assert "access-control-allow-origin" not in options(f"http://127.0.0.1:{FOREIGN_HOST_PORT}")
    with urllib.request.urlopen(f"{scripted_stack.base_url}/", timeout=10) as resp:  # noqa: S310
        csp = resp.headers["Content-Security-Policy"]
    connect = next(d for d in csp.split(";") if d.strip().startswith("connect-src"))
    assert " ws: " not in f"{connect} " and " wss: " not in f"{connect} ", connect


def test_item12_tokens_without_iat_or_jti_are_refused() -> None:
    import jwt as pyjwt

    from shared.auth import verify_access_token
    from shared.errors import Unauthorized

    secret = "item12-secret-long-enough-for-hs256-0123456789"
    now = int(time.time())
    full = {"sub": "u", "iat": now, "exp": now + 60, "jti": "ab" * 16, "type": "access"}
    assert verify_access_token(pyjwt.encode(full, secret, algorithm="HS256"), secret) == "u"
    for missing in ("iat", "jti"):
        claims = {k: v for k, v in full.items() if k != missing}
        with pytest.raises(Unauthorized):
            verify_access_token(pyjwt.encode(claims, secret, algorithm="HS256"), secret)


def test_item12_a_logged_out_token_gets_no_ticket_for_a_project_turn(
        project_stack: Stack, demo_app: str) -> None:
    import urllib.parse
    import urllib.request

    from demo_app.seed import OFFICE_MOVE

    form = urllib.parse.urlencode({"username": "alice@example.com",
                                   "password": "demo-password"}).encode()
    with urllib.request.urlopen(f"{demo_app}/api/v1/auth/login", form,  # noqa: S310
                                timeout=10) as resp:
        token = json.loads(resp.read())["access_token"]
    auth = {"Authorization": f"Bearer {token}"}
    tickets = f"{project_stack.base_url}/api/v1/assistant/tickets"
    assert http_json("POST", f"{demo_app}/api/v1/auth/logout", headers=auth)[0] == 200
    assert http_json("GET", f"{demo_app}/api/v1/users/me", headers=auth)[0] == 401
    # The token still verifies offline (signature, exp): only the online check refuses it.
    status, body = http_json("POST", tickets, {"project_id": OFFICE_MOVE}, headers=auth)
    assert status == 401, body
    # A ticket for a turn without project data needs no app call and is still issued.
    assert http_json("POST", tickets, headers=auth)[0] == 201


REFRESH_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Host page</title>
<script src="{base}/static/panel-i18n.js"></script>
<script src="{base}/static/panel-render.js"></script>
<script src="{base}/static/panel.js"></script></head>
<body><div id="host"></div><script>
window.__tokenCalls = [];
BecomeAssistant.mount(document.getElementById("host"), {{baseUrl: "{base}", lang: "en",
  getToken: (opts) => {{
    const fresh = !!(opts && opts.fresh);
    window.__tokenCalls.push(fresh);
    return fresh ? "{fresh}" : "{expired}";
  }}}});
</script></body></html>"""


def test_item12_panel_asks_the_host_page_for_a_fresh_token_when_its_token_expired(
        chromium: Any, scripted_stack: Stack, scripted_llm: str) -> None:
    from shared.auth import mint_access_token
    from tests.conftest import set_script

    set_script(scripted_llm, ["Fresh answer [1]."])
    secret = scripted_stack.settings.app_jwt_secret
    html = REFRESH_PAGE.format(base=scripted_stack.base_url,
                               fresh=mint_access_token("item12", secret),
                               expired=mint_access_token("item12", secret, ttl_s=-60))
    host = _HostPage(REFRESH_HOST_PORT, html)
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.goto(host.url)
        page.wait_for_selector("#ba-question")
        page.get_by_label("Your question").fill("How does the search work?")
        page.get_by_role("button", name="Ask", exact=True).click()
        page.wait_for_function("() => window.__assistantPanel.current && "
                               "window.__assistantPanel.current.finished", timeout=30_000)
        assert page.evaluate("() => window.__tokenCalls") == [False, True]
        assert "Fresh answer" in page.evaluate("() => window.__assistantPanel.answerText()")
    finally:
        context.close()
        host.server.shutdown()
