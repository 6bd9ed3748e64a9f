"""Secrets: the hosted key goes only to `api` roles (a capturing server on loopback proves it),
and no token, ticket or key appears in any log line or trace of the test run.

Marked `last` (tests/conftest.py runs it after every other test): it scans the logs of the
whole run."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from assistant_cli import stack
from assistant_cli.client import ask
from tests.conftest import ALLOC, VAR, Stack, set_script, start_stack
from tests.sseutil import sse_frames
from tests.wsutil import app_token, get_ticket, http_json

HOSTED_KEY = "sk-test-hosted-key-7d3f9a51c2"
JWT = re.compile(r"eyJ[\w-]{10,}\.eyJ[\w-]{10,}\.[\w-]{10,}")
WEB_PORT = ALLOC.port("secrets_stack")
REDIS_URL = ALLOC.redis_url("secrets_stack")
FLOWER_PORT = ALLOC.port("secrets scan flower", pool="other")

pytestmark = pytest.mark.last


@pytest.fixture(scope="module")
def secrets_stack(services: stack.Supervisor, scripted_llm: str) -> Iterator[Stack]:
    s = start_stack(services, "secrets", WEB_PORT, {
        "ASSISTANT_REDIS_URL": REDIS_URL,
        "ASSISTANT_API_KEY": HOSTED_KEY,
        "ASSISTANT_ANSWER_PROVIDER": "api",
        "ASSISTANT_ANSWER_LLM_BASE_URL": f"{scripted_llm}/v1",
        "ASSISTANT_ANSWER_LLM_MODEL": "hosted-answer",
        "ASSISTANT_LLM_PROVIDER": "local",
        "ASSISTANT_LLM_BASE_URL": f"{scripted_llm}/v1",
        "ASSISTANT_LLM_MODEL": "local-translation",
        "ASSISTANT_EMBEDDING_PROVIDER": "local",
        "ASSISTANT_EMBEDDING_BASE_URL": f"{scripted_llm}/v1",
        "ASSISTANT_EMBEDDING_MODEL": "local-embeddings",
    })
    try:
        yield s
    finally:
        s.sup.stop_all()


def test_hosted_key_is_sent_only_to_api_roles(secrets_stack: Stack, scripted_llm: str) -> None:
    set_script(scripted_llm, ["Hosted answer [1]."])
    _, done = ask(secrets_stack.base_url, app_token(secrets_stack), "and why is that?",
                  history=[{"role": "user", "content": "How does search work?"},
                           {"role": "assistant", "content": "It is hybrid."}])
    assert done["type"] == "done"
    _, requests = http_json("GET", f"{scripted_llm}/_requests")
    seen: dict[str, set[str]] = {}
    for r in requests:
        model = r["body"].get("model", "?")
        auth = {k.lower(): v for k, v in r["headers"].items()}.get("authorization", "")
        seen.setdefault(model, set()).add(auth)
    assert seen["hosted-answer"] == {f"Bearer {HOSTED_KEY}"}
    assert seen["local-translation"] == {"Bearer local-no-key"}, "the rewrite call"
    assert seen["local-embeddings"] == {"Bearer local-no-key"}


def test_no_token_ticket_or_key_in_logs_or_traces(secrets_stack: Stack,
                                                  scripted_llm: str) -> None:
    set_script(scripted_llm, ["Traced [1]."])
    token = app_token(secrets_stack, "scan-user")
    ticket = get_ticket(secrets_stack.base_url, token)  # issued, then used over SSE below
    ask(secrets_stack.base_url, token, "Where does my ticket go?")
    list(sse_frames(secrets_stack.base_url, "POST", "/api/v1/assistant/chat/stream", token,
                    body={"message": "And over SSE?"}))
    http_json("POST", f"{secrets_stack.base_url}/api/v1/assistant/tickets",
              headers={"Authorization": "Bearer not-a-valid-token-at-all"})
    logs = log_files(VAR)
    assert len(logs) >= 3, logs  # the stack's web, worker and Redis at least
    leaks = scan_logs(logs, needles(secrets_stack, token, ticket))
    assert not leaks, leaks
    with psycopg.connect(secrets_stack.settings.assistant_dsn) as conn:
        rows = conn.execute("SELECT row_to_json(t)::text FROM traces t").fetchall()
    dump = "\n".join(r[0] for r in rows)
    assert rows and token not in dump and ticket not in dump and HOSTED_KEY not in dump
    assert not JWT.search(dump)
    assert json.loads(rows[-1][0])["user_hash"] != "scan-user"


def log_files(root: Path) -> list[Path]:
    """Every log file of the test run, in every folder below the run's data folder."""
    return sorted(p for p in root.rglob("*.log") if p.is_file())


def needles(s: Stack, token: str, ticket: str) -> list[tuple[str, str]]:
    """What may never be written: the user's token and ticket, the hosted key, the app secret."""
    return [(token, "app token"), (ticket, "ticket"), (HOSTED_KEY, "hosted key"),
            (s.settings.app_jwt_secret, "app secret"),
            ("not-a-valid-token-at-all", "bad token")]


def scan_logs(logs: list[Path], what: list[tuple[str, str]]) -> list[str]:
    """Each log that holds one of the needles, a JWT or a ticket in a URL."""
    leaks = []
    for log in logs:
        text = log.read_text(errors="replace")
        leaks += [f"{log}: {name}" for needle, name in what if needle and needle in text]
        if JWT.search(text):
            leaks.append(f"{log}: a JWT")
        if re.search(r"ticket=[\w-]{20,}", text):
            leaks.append(f"{log}: a ticket in a URL")
    return leaks


def test_the_scan_reads_nested_log_folders_and_knows_the_app_secret(
        secrets_stack: Stack, tmp_path: Path) -> None:
    """The scanner itself: a secret in a log two folders down is found, the app secret too."""
    nested = tmp_path / "log" / "worker" / "attempt-2"
    nested.mkdir(parents=True)
    (tmp_path / "log" / "web.log").write_text("a clean line\n")
    (nested / "turns.log").write_text(f"oops {secrets_stack.settings.app_jwt_secret}\n")
    logs = log_files(tmp_path)
    assert nested / "turns.log" in logs
    leaks = scan_logs(logs, needles(secrets_stack, "tok-absent", "ticket-absent"))
    assert leaks == [f"{nested / 'turns.log'}: app secret"], leaks


def test_the_token_never_reaches_redis(secrets_stack: Stack, scripted_llm: str) -> None:
    """docs/security.md: the user's token never reaches the broker, the replay log, a task or
    a trace. Every command Redis receives during real turns (MONITOR: broker messages, task
    events, frames, tickets, the stored request) and every key and value left afterwards."""
    import threading

    import redis

    client = redis.Redis.from_url(secrets_stack.settings.redis_url)
    commands: list[str] = []
    ready, stop = threading.Event(), threading.Event()

    def watch() -> None:
        with client.monitor() as monitor:
            ready.set()
            for command in monitor.listen():
                commands.append(str(command.get("command", "")))
                if stop.is_set():
                    return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    assert ready.wait(10)
    set_script(scripted_llm, ["Kept out of Redis [1]."])
    token = app_token(secrets_stack, "redis-scan-user")
    ticket = get_ticket(secrets_stack.base_url, token)
    frames, done = ask(secrets_stack.base_url, token, "Does my token reach Redis?")
    assert done["type"] == "done"
    list(sse_frames(secrets_stack.base_url, "POST", "/api/v1/assistant/chat/stream", token,
                    body={"message": "And over SSE?"}))
    stop.set()
    client.ping()  # one more command, so the watcher sees `stop`
    watcher.join(10)
    assert any("ba:ticket:" in c for c in commands), "MONITOR saw no ticket being stored"
    assert any(frames[0]["turn"] in c for c in commands), "MONITOR saw no frame of the turn"
    seen = "\n".join(commands)
    for key in client.scan_iter(count=500):
        kind = client.type(key).decode()
        value = {"string": lambda k: client.get(k), "list": lambda k: client.lrange(k, 0, -1),
                 "hash": lambda k: client.hgetall(k), "set": lambda k: client.smembers(k),
                 "zset": lambda k: client.zrange(k, 0, -1),
                 "stream": lambda k: client.xrange(k)}.get(kind, lambda k: b"")(key)
        seen += f"\n{key!r} {value!r}"
    for needle, what in ((token, "app token"), (ticket, "ticket"),
                         (secrets_stack.settings.app_jwt_secret, "app secret")):
        assert needle not in seen, f"{what} reached Redis"
    assert not JWT.search(seen), "a JWT reached Redis"


def test_flower_task_views_show_no_user_text_or_secret(secrets_stack: Stack,
                                                      scripted_llm: str) -> None:
    """Flower (no login of its own) sees every task event: its views must hold no user text."""
    import sys
    import urllib.request

    flower_port = FLOWER_PORT
    proc = secrets_stack.sup.start("secrets-flower", [
        sys.executable, "-m", "celery", "-A", "worker.celery_app", "flower",
        "--address=127.0.0.1", f"--port={flower_port}"],
        # Flower 2 serves its JSON API only with this (or a login): the scan reads it.
        env={**secrets_stack.env, "FLOWER_UNAUTHENTICATED_API": "true"})
    flower = f"http://127.0.0.1:{flower_port}"
    stack.wait_until(lambda: stack.http_ok(f"{flower}/healthcheck"), 60, "flower", proc)
    set_script(scripted_llm, ["Seen by Flower [1]."])
    token = app_token(secrets_stack, "flower-user")
    typed = "flower-scan what-the-user-typed 5521"
    frames, _ = ask(secrets_stack.base_url, token, typed,
                    history=[{"role": "user", "content": f"earlier {typed}"}])
    turn = frames[0]["turn"]

    def view(path: str) -> str:
        with urllib.request.urlopen(f"{flower}{path}", timeout=10) as resp:  # noqa: S310
            return resp.read().decode(errors="replace")

    def seen() -> bool:
        try:
            return turn in view("/api/tasks")
        except OSError:
            return False

    assert _poll(seen, 30), "Flower never listed the turn's task"
    pages = view("/api/tasks") + view(f"/api/task/info/{turn}") + view(f"/task/{turn}")
    for needle in (typed, token, HOSTED_KEY, secrets_stack.settings.app_jwt_secret):
        assert needle not in pages
    assert not JWT.search(pages)


def _poll(check, timeout_s: float) -> bool:  # type: ignore[no-untyped-def]
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.5)
    return False
