"""The fault suite: real turns while a component fails mid-stream, many rounds per fault class,
every outcome counted (complete, error frame, silence, duplicate or lost text).

Goal: no silence and no lost or duplicated text in any round; every failure is an error frame
with a plain message within LIMIT_S. Loopback only; the stack gets a Redis server of its own
(restarted by the Redis fault), the session's PostgreSQL and embeddings server are stopped and
started again by their faults.

The rounds live here, beside the tests that run a few of them (tests/test_faults.py); the bench
runs many and prints the table: BA_TEST_PORT_OFFSET=800 .venv/bin/python -m bench.faults
--rounds 10 [--only NAME ...] (names: FAULTS below; worker SIGKILL: tests/worker_kill_rounds.py).
The Sentinel failover round runs on a stack of its own whose Redis is a primary, a replica and
three Sentinels (fault_stack(sentinel=True)).
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import sys
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
from assistant_cli.client import RESTART_CLOSE, ws_url
from assistant_cli.run import Plan, start_processes
from shared import turns
from shared.config import settings_from_env
from shared.redis_client import redis_client
from tests.conftest import (
    ALLOC,
    EMBED_PORT,
    PG_PORT,
    REPO,
    VAR,
    Stack,
    scripted_roles,
    set_script,
    stack_env,
    start_worker,
)
from tests.sentinel_set import SentinelSet, start_sentinel_set
from tests.wsutil import app_token, get_ticket

LIMIT_S = 30.0  # the longest a client may wait for the final frame after a fault
# The fault stack's time limits (short, so rounds are short). The first-token limit leaves
# room for retrieval on a loaded machine: at 4 s, turns with no fault ended in 504 under the
# load of eight test sessions on two cores.
FIRST_TOKEN_S, ANSWER_S = 8, 12
REDIS_PORT = ALLOC.port("fault stack redis", pool="redis")  # restarted: it touches nobody else
WEB_A_PORT, WEB_B_PORT = ALLOC.port("fault stack: web a"), ALLOC.port("fault stack: web b")
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
    # The primary, replica and Sentinels the stack runs on, for the failover round.
    sentinels: SentinelSet | None = None


@dataclass(frozen=True)
class Result:
    """One round: its outcome and seconds from the fault (or the ask) to the final frame."""

    outcome: str
    took: float
    message: str = ""
    closes: tuple[int, ...] = ()  # the close codes of the sockets the server closed


def _connect(urls: list[str], first: int, token: str, deadline: float) -> tuple[Any, int]:
    """A socket on urls[first], else the next one, retried until deadline (a web server or
    Redis may be coming back); the socket and the index of the address it reached."""
    i = first
    while True:
        try:
            return Client.connect(ws_url(urls[i], get_ticket(urls[i], token))), i
        except Exception:  # noqa: BLE001 - any failure to connect is retried until the deadline
            if time.monotonic() > deadline:
                raise
            i = (i + 1) % len(urls)
            time.sleep(0.3)


def ask(fs: FaultStack, message: str, inject: Callable[[list[dict[str, Any]]], None] | None,
        at_tokens: int = 3, expected: str | None = EXPECTED, first_url: int = 0) -> Result:
    """One turn; inject the fault after at_tokens tokens (None: before asking); classify."""
    token = app_token(fs.stack, f"fault-{os.getpid()}")
    start = time.monotonic()
    frames: list[dict[str, Any]] = []
    injected = start
    if inject is not None and at_tokens == 0:
        inject(frames)  # the fault is in place before the question: time from the ask
        start = injected = time.monotonic()
    hard_deadline = injected + LIMIT_S + 10
    url_i, resumes = first_url % len(fs.urls), 0
    closes: list[int] = []
    ws, url_i = _connect(fs.urls, url_i, token, hard_deadline)
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
                closes.append(int(ws.close_reason))
                turn = next((f.get("turn") for f in frames if f.get("turn")), None)
                if turn is None or resumes >= 3:
                    return Result("socket closed without a final frame",
                                  time.monotonic() - injected)
                # What the panel does: a new socket (on the next web server) resumes the turn.
                resumes += 1
                ws, url_i = _connect(fs.urls, (url_i + 1) % len(fs.urls), token,
                                     hard_deadline)
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
                  str(frames[-1].get("message") or ""), tuple(closes))


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


def term_web(fs: FaultStack) -> stack.Proc:
    """A deploy's stop: SIGTERM to web A's gunicorn (it drains and exits, web/drain.py)."""
    proc = _proc(fs.sup, "fault-web")
    os.kill(proc.popen.pid, signal.SIGTERM)
    return proc


def restart_web_a(fs: FaultStack, proc: stack.Proc) -> float:
    """Wait for the stopped web A to exit (seconds it took), then start it again."""
    started = time.monotonic()
    try:
        proc.popen.wait(timeout=30)
    finally:
        fs.sup.stop(proc, timeout_s=1)
    took = time.monotonic() - started
    start_processes(fs.sup, Plan(var_dir=VAR, name="fault",
                                 web_bind=fs.stack.base_url.split("://", 1)[1], web_workers=1,
                                 worker=False, beat=False, flower=False), env=fs.stack.env)
    return took


def r_web_term(fs: FaultStack, n: int) -> list[Result]:
    """Web A sent SIGTERM mid-stream: its socket is closed with 1012 at once and the client
    resumes on web B; then web A exits (well within gunicorn's graceful_timeout)."""
    set_script(fs.scripted, CHUNKS, delay_s=0.05)
    box: list[stack.Proc] = []
    r = ask(fs, f"How does the search work? (web term {n})", lambda _f: box.append(term_web(fs)))
    told = [c for c in r.closes if c == RESTART_CLOSE]
    outcome = r.outcome + ("" if told else f" (closed with {list(r.closes)}, not 1012)")
    exited = restart_web_a(fs, box[0]) if box else 0.0
    return [Result(outcome, r.took, r.message, r.closes),
            Result("web A exited after SIGTERM" if exited < 10 else
                   "web A held on to the graceful timeout", exited)]


def r_worker_term(fs: FaultStack, n: int) -> list[Result]:
    """The worker running a turn sent SIGTERM after 3 tokens: that turn completes there (no
    re-run), a turn asked meanwhile runs on another worker, and the stopped one exits."""
    client = redis_client(fs.stack.settings)
    start_worker(fs.sup, f"fault-term{n}", fs.stack.env)  # the stopped one's replacement
    set_script(fs.scripted, CHUNKS, delay_s=0.05)
    stopped: list[int] = []
    second: list[Result] = []
    holders: list[str | None] = []
    asker = threading.Thread(target=lambda: second.append(ask(
        fs, f"How does the search work? (after term {n})",
        lambda f: holders.append(turns.lease_holder(client, str(f[0]["turn"]))), at_tokens=1)))

    def term(frames: list[dict[str, Any]]) -> None:
        holder = turns.lease_holder(client, str(frames[0]["turn"]))
        assert holder is not None, "a running turn holds a lease"
        stopped.append(int(holder.split(":")[1]))
        os.kill(stopped[0], signal.SIGTERM)
        time.sleep(0.3)  # Celery's signal handler runs: it takes no new turn from here on
        asker.start()

    first = ask(fs, f"How does the search work? (worker term {n})", term)
    asker.join()
    proc = next(p for p in fs.sup.procs if p.popen.pid == stopped[0])
    began = time.monotonic()
    try:
        proc.popen.wait(timeout=LIMIT_S)
        exited = f"stopped worker exited ({proc.popen.returncode})"
    except Exception:  # noqa: BLE001 - a worker that does not stop is the finding
        exited = "stopped worker still running"
    fs.sup.stop(proc, timeout_s=1)
    elsewhere = bool(holders) and holders[0] is not None and \
        int(str(holders[0]).split(":")[1]) != stopped[0]
    return [first, Result(f"next turn: {second[0].outcome}"
                          + ("" if elsewhere else " (on the stopped worker!)"), second[0].took),
            Result(exited, time.monotonic() - began)]


def accepted_again(fs: FaultStack, since: float, timeout_s: float = LIMIT_S) -> float:
    """Seconds from `since` until a new question is accepted (its `accepted` frame), asked
    again every 0.2 s while tickets or turns are refused (503) or a socket cannot open."""
    token = app_token(fs.stack, f"fault-probe-{os.getpid()}")
    while time.monotonic() - since < timeout_s:
        try:
            ws = Client.connect(ws_url(fs.urls[1], get_ticket(fs.urls[1], token)))
        except Exception:  # noqa: BLE001 - no ticket while there is no primary: try again
            time.sleep(0.2)
            continue
        try:
            ws.send(json.dumps({"type": "ask", "message": "How does the search work? (probe)"}))
            while True:
                raw = ws.receive(timeout=5)
                frame = json.loads(raw) if raw else {"type": "silence"}
                if frame["type"] not in ("ping", "pong"):
                    break
            if frame["type"] == "accepted":
                return time.monotonic() - since
        except (ConnectionClosed, OSError):
            pass
        finally:
            ws.close()
        time.sleep(0.2)
    return timeout_s


def r_failover(fs: FaultStack, n: int, behind_s: float = 0.0) -> list[Result]:
    """The Redis primary SIGKILLed after 3 tokens; the Sentinels promote the replica. The
    turn completes (the worker's appends wait for the new primary), or, when the newest
    frames had not reached the replica, ends with an error frame: never a gap, never
    silence. Also measured: the seconds from the kill until a new question is accepted."""
    assert fs.sentinels is not None, "the failover round needs fault_stack(sentinel=True)"
    ss = fs.sentinels
    set_script(fs.scripted, CHUNKS, delay_s=0.05)
    killed: list[int] = []
    probe: list[float] = []
    prober: list[threading.Thread] = []

    def kill(_frames: list[dict[str, Any]]) -> None:
        at = time.monotonic()
        killed.append(ss.kill_primary(behind_s))
        t = threading.Thread(target=lambda: probe.append(accepted_again(fs, at)))
        t.start()
        prober.append(t)

    try:
        r = ask(fs, f"How does the search work? (failover {n})", kill)
    finally:
        for t in prober:
            t.join()
        if killed:
            ss.recover(killed[0])
    again = probe[0] if probe else LIMIT_S
    print(f"    failover {n}{' (lagging replica)' if behind_s else ''}: {r.outcome} after "
          f"{r.took:.1f} s; asks accepted again after "
          f"{again:.1f} s", flush=True)
    return [r, Result("asks accepted again" if again < LIMIT_S else "asks still refused",
                      again)]


def start_release(fs: FaultStack, name: str, release: Path | None,
                  web_port: int | None = None) -> stack.Proc:
    """A worker (or, with web_port, a web server) of a release: a checkout of another commit
    (e.g. a `git worktree` of the previous release) or, for None, this one."""
    cwd = release or REPO
    env = dict(fs.stack.env, PYTHONUNBUFFERED="1", PYTHONPATH=str(cwd))
    if web_port is None:
        proc = fs.sup.start(name, [sys.executable, "-m", "celery", "-A", "worker.celery_app",
                                   "worker", "-Q", "turns,corpus", "-P", "threads", "-c", "4",
                                   "-n", f"{name}-{os.getpid()}@%h", "--loglevel", "INFO",
                                   "--without-gossip", "--without-mingle"], env=env, cwd=cwd)
        stack.wait_until(lambda: "ready." in stack.tail(proc.log, 200), 60, name, proc)
        return proc
    env.update(ASSISTANT_WEB_BIND=f"127.0.0.1:{web_port}", ASSISTANT_WEB_WORKERS="1")
    proc = fs.sup.start(name, [sys.executable, "-m", "gunicorn", "-c", "web/gunicorn_conf.py",
                               "web.wsgi:app"], env=env, cwd=cwd)
    stack.wait_until(lambda: stack.http_ok(f"http://127.0.0.1:{web_port}/api/v1/ping"), 60,
                     name, proc)
    return proc


def sigterm_and_wait(fs: FaultStack, proc: stack.Proc, timeout_s: float = 60) -> None:
    """What a deploy does to the process it replaces: SIGTERM, then wait for it to exit."""
    os.kill(proc.popen.pid, signal.SIGTERM)
    try:
        proc.popen.wait(timeout=timeout_s)
    finally:
        fs.sup.stop(proc, timeout_s=1)


def r_rollout(fs: FaultStack, n: int, old: Path | None = None, clients: int = 6,
              min_turns: int = 50) -> list[Result]:
    """Rolling upgrades of 2 web + 2 workers under a steady load of turns: from the release in
    `old` to this one with the web servers first (new web, old workers), back with the web
    servers first (old web, new workers), and forward again with the workers first. Each
    step starts a replacement and SIGTERMs the process it replaces, one at a time. Every
    turn asked meanwhile is a result, and the round goes on until min_turns have run."""
    set_script(fs.scripted, CHUNKS, delay_s=0.05)
    ports = {"web-a": WEB_A_PORT, "web-b": WEB_B_PORT}
    slots: dict[str, stack.Proc] = {"web-a": _proc(fs.sup, "fault-web"),
                                    "web-b": _proc(fs.sup, "fault-b-web"),
                                    "worker-1": _proc(fs.sup, "fault-worker")}
    slots["worker-2"] = start_release(fs, f"roll{n}-worker-2", None)
    results: list[Result] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client(i: int) -> None:
        k = 0
        while not stop.is_set():
            r = ask(fs, f"How does the search work? (rollout {n}.{i}.{k})", None,
                    first_url=i + k)
            k += 1
            with lock:
                results.append(r)

    def replace(slot: str, release: Path | None, step: int) -> None:
        name = f"roll{n}-{slot}-{step}"
        if slot.startswith("worker"):
            new = start_release(fs, name, release)  # the new one first: a worker always runs
            sigterm_and_wait(fs, slots[slot])
        else:
            sigterm_and_wait(fs, slots[slot])  # one address: the old one must let go of it
            new = start_release(fs, name, release, ports[slot])
        slots[slot] = new
        print(f"    {slot} -> {'this release' if release is None else release}", flush=True)

    web_first, workers_first = ("web-a", "web-b", "worker-1", "worker-2"), (
        "worker-1", "worker-2", "web-a", "web-b")
    if old is not None:  # the old release everywhere, before the load begins
        for slot in workers_first:
            replace(slot, old, 0)
    # Without `old`: the same release throughout, restarted as a rollout would.
    passes = [(None, web_first), (old, web_first), (None, workers_first)]
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    try:
        step = 1
        for release, order in passes:
            for slot in order:
                replace(slot, release, step)
                step += 1
        while len(results) < min_turns:
            time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join()
        # The fault stack's names again, for the rounds that follow.
        slots["web-a"].name, slots["web-b"].name = "fault-web", "fault-b-web"
        slots["worker-1"].name = "fault-worker"
    return results


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
    "web server sent SIGTERM mid-stream": r_web_term,
    "worker sent SIGTERM mid-turn": r_worker_term,
    "rolling upgrade of 2 web + 2 workers under load": r_rollout,
    "50 index swaps, 20 clients asking": r_swaps,
    "Redis primary killed mid-turn, Sentinel fails over": r_failover,
    "the same, its replica 0.5 s behind (frames lost)": functools.partial(r_failover,
                                                                         behind_s=0.5),
}
SHORT = dict(zip(("redis", "pg-question", "pg-mid", "pg-rebuild", "hang", "dies", "slow", "embeddings",
                  "web-kill", "web-hup", "web-term", "worker-term", "rollout", "swaps",
                  "failover", "failover-lag"), FAULTS, strict=True))
# The rounds that need the stack on a Sentinel-managed Redis (fault_stack(sentinel=True)).
ON_SENTINEL = frozenset({SHORT["failover"], SHORT["failover-lag"]})


@contextmanager
def fault_stack(services: stack.Supervisor, scripted: str, sentinel: bool = False
                ) -> Iterator[FaultStack]:
    """Its own Redis, one worker, web A (with the worker) and web B on loopback. With
    sentinel, that Redis is a primary, a replica and three Sentinels (tests/sentinel_set.py),
    and every process of the stack reaches it through a sentinel:// URL."""
    sup = stack.Supervisor(VAR / "log")
    try:
        sentinels = start_sentinel_set(sup) if sentinel else None
    except BaseException:
        sup.stop_all()
        raise
    redis_url = sentinels.url(0) if sentinels else f"redis://127.0.0.1:{REDIS_PORT}/0"
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
        if sentinels is None:
            start_redis(sup)
        a, b = WEB_A_PORT, WEB_B_PORT
        start_processes(sup, Plan(var_dir=VAR, name="fault", web_bind=f"127.0.0.1:{a}",
                                  web_workers=1, worker_concurrency=8, beat=False,
                                  flower=False), env=env)
        start_processes(sup, Plan(var_dir=VAR, name="fault-b", web_bind=f"127.0.0.1:{b}",
                                  web_workers=1, worker=False, beat=False, flower=False),
                        env=env)
        st = Stack("fault", f"http://127.0.0.1:{a}", env, settings_from_env(env), sup)
        fs = FaultStack(services, scripted, sup, st, [st.base_url, f"http://127.0.0.1:{b}"],
                        redis_url, sentinels=sentinels)
        # A first turn warms the worker (models, the index's first read), which on a busy
        # machine can take longer than the short first-token limit: no round's turn is it.
        set_script(scripted, ["Warm [1]."])
        ask(fs, "How does the search work? (warm-up)", None, expected=None)
        yield fs
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
