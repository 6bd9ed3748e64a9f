"""The fault suite: real turns while a component fails mid-stream, many rounds per fault class,
every outcome counted (complete, error frame, silence, duplicate or lost text).

Goal: no silence and no lost or duplicated text in any round; every failure is an error frame
with a plain message within LIMIT_S. Loopback only; the stack gets a Redis server of its own
(restarted by the Redis fault), the session's PostgreSQL and embeddings server are stopped and
started again by their faults.

The rounds live here, beside the tests that run a few of them (tests/test_faults.py); the bench
runs many and prints the table: BA_TEST_PORT_OFFSET=800 .venv/bin/python -m bench.faults
--rounds 10 [--only NAME ...] (names: FAULTS below; worker SIGKILL: tests/worker_kill_rounds.py).
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simple_websocket import Client, ConnectionClosed

from assistant_cli import stack
from assistant_cli.client import ws_url
from assistant_cli.run import Plan, start_processes
from shared.config import settings_from_env
from tests.conftest import (
    EMBED_PORT,
    PG_PORT,
    VAR,
    Stack,
    port,
    scripted_roles,
    set_script,
    stack_env,
)
from tests.wsutil import app_token, get_ticket

LIMIT_S = 30.0  # the longest a client may wait for the final frame after a fault
FIRST_TOKEN_S, ANSWER_S = 4, 10  # the fault stack's time limits (short, so rounds are short)
REDIS_PORT = port(7390)  # the fault stack's own Redis: restarting it touches nobody else
CHUNKS = [f"w{i} " for i in range(40)] + ["end [1]."]
EXPECTED = "".join(CHUNKS)
TECHNICAL = re.compile(r"Traceback|Error\(|Exception|psycopg|redis\.|errno", re.I)


@dataclass
class FaultStack:
    """Web servers A and B and a worker on a Redis of their own; what faults need to reach."""

    services: stack.Supervisor
    scripted: str
    sup: stack.Supervisor
    stack: Stack
    urls: list[str]
    redis_url: str
    extra: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Result:
    """One round: its outcome and seconds from the fault (or the ask) to the final frame."""

    outcome: str
    took: float
    message: str = ""


def _connect(url: str, token: str, deadline: float) -> Any:
    """A socket on url, retried until deadline (the web tier or Redis may be coming back)."""
    while True:
        try:
            return Client.connect(ws_url(url, get_ticket(url, token)))
        except Exception:  # noqa: BLE001 - any failure to connect is retried until the deadline
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def ask(fs: FaultStack, message: str, inject: Callable[[list[dict[str, Any]]], None] | None,
        at_tokens: int = 3, expected: str | None = EXPECTED) -> Result:
    """One turn; inject the fault after at_tokens tokens (None: before asking); classify."""
    token = app_token(fs.stack, f"fault-{os.getpid()}")
    start = time.monotonic()
    frames: list[dict[str, Any]] = []
    injected = start
    if inject is not None and at_tokens == 0:
        inject(frames)  # the fault is in place before the question: time from the ask
        start = injected = time.monotonic()
    hard_deadline = injected + LIMIT_S + 10
    url_i, resumes = 0, 0
    ws = _connect(fs.urls[url_i], token, hard_deadline)
    ws.send(json.dumps({"type": "ask", "message": message}))
    fired = inject is None or at_tokens == 0
    try:
        while not frames or frames[-1]["type"] not in ("done", "error"):
            left = injected + LIMIT_S - time.monotonic() if fired else LIMIT_S
            if left <= 0:
                return Result("silence", time.monotonic() - injected)
            try:
                raw = ws.receive(timeout=left)
            except ConnectionClosed:
                turn = next((f.get("turn") for f in frames if f.get("turn")), None)
                if turn is None or resumes >= 3:
                    return Result("socket closed without a final frame",
                                  time.monotonic() - injected)
                # What the panel does: a new socket (on the next web server) resumes the turn.
                resumes += 1
                url_i = (url_i + 1) % len(fs.urls)
                ws = _connect(fs.urls[url_i], token, hard_deadline)
                ws.send(json.dumps({"type": "resume", "turn": turn,
                                    "after": frames[-1].get("seq", 0)}))
                continue
            if raw is None:
                return Result("silence", time.monotonic() - injected)
            frame = json.loads(raw)
            if frame["type"] in ("ping", "pong"):
                continue
            frames.append(frame)
            if not fired and sum(f["type"] == "token" for f in frames) >= at_tokens:
                assert inject is not None
                injected, fired = time.monotonic(), True
                inject(frames)
    finally:
        ws.close()
    return Result(classify(frames, expected, resumes), time.monotonic() - injected,
                  str(frames[-1].get("message") or ""))


def classify(frames: list[dict[str, Any]], expected: str | None, resumes: int = 0) -> str:
    """The outcome of a finished turn's frames."""
    seqs = [f["seq"] for f in frames if f.get("seq") is not None]
    if len(set(seqs)) != len(seqs):
        return "duplicate frames"
    if seqs != list(range(len(seqs))):
        return "lost frames"
    last = frames[-1]
    via = " (resumed)" if resumes else ""
    if last["type"] == "error":
        message = str(last.get("message") or "")
        if not message or TECHNICAL.search(message):
            return f"error {last.get('code')} without a plain message"
        return f"error {last.get('code')}{via}"
    text = ""
    for f in frames:
        text = "" if f["type"] == "restart" else text + f.get("text", "")
    if text != last["answer"]:
        return "streamed text differs from the answer"
    if expected is not None and last["answer"] != expected:
        return "answer cut short"
    restarted = " after re-run" if any(f["type"] == "restart" for f in frames) else ""
    return f"complete{restarted}{via}"


# --- the faults --------------------------------------------------------------------------

def _proc(sup: stack.Supervisor, name: str) -> stack.Proc:
    return next(p for p in sup.procs if p.name == name)


def restart_redis(fs: FaultStack, down_s: float = 1.0) -> None:
    """Stop the stack's Redis (its data goes: no persistence) and start it again."""
    fs.sup.stop(_proc(fs.sup, "fault-redis"), timeout_s=5)
    time.sleep(down_s)
    start_redis(fs.sup)


def start_redis(sup: stack.Supervisor) -> None:
    """The fault stack's own Redis server."""
    url = f"redis://127.0.0.1:{REDIS_PORT}/0"
    proc = sup.start("fault-redis", [stack.redis_server_binary(), "--bind", "127.0.0.1",
                                     "--port", str(REDIS_PORT), "--save", "", "--appendonly",
                                     "no", "--dir", str(VAR)])
    stack.wait_until(lambda: stack.redis_answers(url), 20, "fault-redis", proc)


def stop_postgres(fs: FaultStack) -> None:
    """Stop the session's PostgreSQL (corpus and traces): a fast shutdown, as an operator
    would (SIGTERM waits for every client to disconnect)."""
    proc = _proc(fs.services, "postgres")
    proc.popen.send_signal(signal.SIGINT)
    proc.popen.wait(timeout=30)
    fs.services.procs.remove(proc)


def start_postgres(fs: FaultStack) -> None:
    """Start it again on the same data."""
    stack.start_postgres(fs.services, VAR / "pg", PG_PORT)


def restart_embeddings(fs: FaultStack, down: Callable[[], None]) -> None:
    """Stop the embeddings server, run down(), start it again."""
    fs.services.stop(_proc(fs.services, "embeddings"), timeout_s=5)
    try:
        down()
    finally:
        stack.start_embedding_server(fs.services, EMBED_PORT)


def kill_web_worker(fs: FaultStack) -> None:
    """SIGKILL web A's gunicorn worker process (its master starts a new one)."""
    master = _proc(fs.sup, "fault-web").popen.pid
    for child in children(master):
        os.kill(child, signal.SIGKILL)


def hup_web(fs: FaultStack) -> None:
    """A deploy's reload: gunicorn HUP on web A (new workers; old ones stop within 10 s)."""
    os.kill(_proc(fs.sup, "fault-web").popen.pid, signal.SIGHUP)


def children(pid: int) -> list[int]:
    """Direct children of a process (from /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def r_redis(fs: FaultStack, n: int) -> Result:
    set_script(fs.scripted, CHUNKS, delay_s=0.05)
    return ask(fs, f"How does the search work? (redis {n})", lambda _f: restart_redis(fs))


def r_pg_question(fs: FaultStack, n: int) -> list[Result]:
    """PostgreSQL down when the question comes; back; the next question gets a full answer."""
    set_script(fs.scripted, CHUNKS)
    down = ask(fs, f"How does the search work? (pg {n})", lambda _f: stop_postgres(fs),
               at_tokens=0)
    start_postgres(fs)
    back = ask(fs, f"How does the search work? (pg back {n})", None)
    return [down, Result(f"next question: {back.outcome}", back.took)]


def r_pg_mid(fs: FaultStack, n: int) -> Result:
    """PostgreSQL stopped while the answer streams (the trace cannot be saved)."""
    set_script(fs.scripted, CHUNKS, delay_s=0.05)
    try:
        return ask(fs, f"How does the search work? (pg mid {n})", lambda _f: stop_postgres(fs))
    finally:
        start_postgres(fs)


def r_hang(fs: FaultStack, n: int) -> Result:
    set_script(fs.scripted, CHUNKS, stall_s=3600)
    return ask(fs, f"How does the search work? (hang {n})", None, expected=None)


def r_dies(fs: FaultStack, n: int) -> Result:
    set_script(fs.scripted, CHUNKS, delay_s=0.05, die_after=10)
    return ask(fs, f"How does the search work? (dies {n})", None)


def r_slow(fs: FaultStack, n: int) -> Result:
    set_script(fs.scripted, CHUNKS, delay_s=1.0)
    return ask(fs, f"How does the search work? (slow {n})", None)


def r_embeddings(fs: FaultStack, n: int) -> Result:
    set_script(fs.scripted, CHUNKS)
    box: list[Result] = []
    restart_embeddings(fs, lambda: box.append(
        ask(fs, f"How does the search work? (embeddings {n})", None)))
    return box[0]


def r_web_kill(fs: FaultStack, n: int) -> Result:
    set_script(fs.scripted, CHUNKS, delay_s=0.05)
    return ask(fs, f"How does the search work? (web kill {n})", lambda _f: kill_web_worker(fs))


def r_web_hup(fs: FaultStack, n: int) -> Result:
    set_script(fs.scripted, CHUNKS, delay_s=0.05)
    return ask(fs, f"How does the search work? (web hup {n})", lambda _f: hup_web(fs))


def r_pg_rebuild(fs: FaultStack, n: int) -> list[Result]:
    """PostgreSQL stopped during a rebuild: the build fails, the old index serves once the
    database is back, and the next build resumes (embeds only what the first did not store)."""
    from dataclasses import replace

    from corpus_jobs.build import build_index
    from corpus_jobs.manifest import load_manifest

    settings = fs.stack.settings
    # A model name of its own, so nothing is cached and the build takes a few seconds.
    slow = replace(settings, embeddings=replace(
        settings.embeddings, base_url=f"{fs.scripted}/v1", model=f"fault-{os.getpid()}-{n}"))
    manifest = load_manifest(settings.corpus_manifest)
    set_script(fs.scripted, CHUNKS, embed_delay_s=0.4)
    before = current_version(fs)
    failed: list[BaseException] = []

    def build() -> None:
        try:
            build_index(slow, manifest, force=True)
        except Exception as exc:  # noqa: BLE001 - the failure is the point here
            failed.append(exc)

    t = threading.Thread(target=build)
    t.start()
    time.sleep(1.0)
    stop_postgres(fs)
    t.join()
    start_postgres(fs)
    results = [Result("rebuild failed" if failed else "rebuild finished before the stop", 0.0)]
    set_script(fs.scripted, CHUNKS, embed_delay_s=0.0)
    served = ask(fs, f"How does the search work? (rebuild {n})", None)
    same = current_version(fs) == before
    results.append(Result(f"question after: {served.outcome}"
                          + ("" if same else " (index changed!)"), served.took))
    report = build_index(slow, manifest, force=True)
    resumed = 0 < report.embedded < report.passages
    results.append(Result("rebuild resumed" if resumed else
                          f"rebuild embedded {report.embedded} of {report.passages}", 0.0))
    build_index(settings, manifest, force=True)  # back to the stack's own embeddings
    return results


def current_version(fs: FaultStack) -> str:
    """The index version serving now."""
    from shared import corpus_store

    with corpus_store.connect(fs.stack.settings.corpus_read_dsn) as conn:
        return corpus_store.current_index(conn).version


def r_swaps(fs: FaultStack, n: int, swaps: int = 50, clients: int = 20) -> list[Result]:
    """`swaps` forced index rebuilds (each swaps the live table) while `clients` ask."""
    from corpus_jobs.build import build_index
    from corpus_jobs.manifest import load_manifest

    set_script(fs.scripted, ["Swapped [1]."])
    stop = threading.Event()
    results: list[Result] = []
    lock = threading.Lock()

    def client(i: int) -> None:
        while not stop.is_set():
            r = ask(fs, f"How does the search work? (swap {n}.{i})", None,
                    expected="Swapped [1].")
            with lock:
                results.append(r)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    settings = fs.stack.settings
    manifest = load_manifest(settings.corpus_manifest)
    try:
        for _ in range(swaps):
            build_index(settings, manifest, force=True)
    finally:
        stop.set()
        for t in threads:
            t.join()
    return results


FAULTS: dict[str, Callable[[FaultStack, int], Result | list[Result]]] = {
    "redis restarted mid-stream": r_redis,
    "PostgreSQL down during a question": r_pg_question,
    "PostgreSQL stopped mid-stream": r_pg_mid,
    "PostgreSQL stopped during a rebuild": r_pg_rebuild,
    "chat model hangs": r_hang,
    "chat model dies mid-stream": r_dies,
    "chat model slow (1 token/s)": r_slow,
    "embeddings server down": r_embeddings,
    "web worker killed mid-stream": r_web_kill,
    "web server reloaded (HUP) mid-stream": r_web_hup,
    "50 index swaps, 20 clients asking": r_swaps,
}
SHORT = dict(zip(("redis", "pg-question", "pg-mid", "pg-rebuild", "hang", "dies", "slow", "embeddings",
                  "web-kill", "web-hup", "swaps"), FAULTS, strict=True))


@contextmanager
def fault_stack(services: stack.Supervisor, scripted: str) -> Iterator[FaultStack]:
    """Its own Redis, one worker, web A (with the worker) and web B on loopback."""
    sup = stack.Supervisor(VAR / "log")
    redis_url = f"redis://127.0.0.1:{REDIS_PORT}/0"
    env = stack_env({
        "ASSISTANT_REDIS_URL": redis_url, **scripted_roles(scripted),
        "ASSISTANT_PING_INTERVAL_S": "1",
        "ASSISTANT_FIRST_TOKEN_TIMEOUT_S": str(FIRST_TOKEN_S),
        "ASSISTANT_ANSWER_TIMEOUT_S": str(ANSWER_S),
        # The swap round runs 20 clients as one user.
        "ASSISTANT_MAX_TURNS_PER_USER": "40",
        "ASSISTANT_MAX_TURNS_PER_PROCESS": "64",
    })
    try:
        start_redis(sup)
        a, b = port(8027), port(8028)
        start_processes(sup, Plan(var_dir=VAR, name="fault", web_bind=f"127.0.0.1:{a}",
                                  web_workers=1, worker_concurrency=8, beat=False,
                                  flower=False), env=env)
        start_processes(sup, Plan(var_dir=VAR, name="fault-b", web_bind=f"127.0.0.1:{b}",
                                  web_workers=1, worker=False, beat=False, flower=False),
                        env=env)
        st = Stack("fault", f"http://127.0.0.1:{a}", env, settings_from_env(env), sup)
        yield FaultStack(services, scripted, sup, st, [st.base_url, f"http://127.0.0.1:{b}"],
                         redis_url)
    finally:
        sup.stop_all()


def run(fs: FaultStack, name: str, rounds: int) -> tuple[Counter[str], float]:
    """Rounds of one fault: outcome counts and the worst time to the final frame."""
    outcomes: Counter[str] = Counter()
    worst = 0.0
    for n in range(rounds):
        got = FAULTS[name](fs, n)
        for r in got if isinstance(got, list) else [got]:
            outcomes[r.outcome] += 1
            worst = max(worst, r.took)
        print(f"  {name} round {n + 1}: {dict(outcomes)}", flush=True)
    return outcomes, worst
