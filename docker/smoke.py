"""`make docker-smoke`: bring the compose project up for real, ask through it, scale it, roll it
to a next release under load, tear down.

Steps, each timed and printed: up (production profile, local models) and wait for health; one
question through the proxy with an independent WebSocket client (the `websockets` library, not
our own client) and checks of the cited answer; then two web and two worker containers, a turn
whose socket drops once the turn is accepted and resumes on the OTHER web container (proved
from each container's log) with gapless, duplicate-free frames; memory at rest; then a rolling
upgrade of the worker and web services to a "next release" image, one container at a time in
the order of docs/operations.md, while clients keep asking through the proxy, every turn
counted (complete, error frame, silent, lost, gaps or duplicates in `seq`); teardown with the
volumes. Exit 0 only when every check passed. Loopback only: the proxy is published on
127.0.0.1; the containers talk on their own compose network.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

REPO = Path(__file__).resolve().parent.parent
PROJECT = "become-smoke"
PORT = int(os.environ.get("SMOKE_PORT", "8700"))
BASE = f"http://127.0.0.1:{PORT}"
COMPOSE = os.environ.get("COMPOSE", "docker-compose").split()
QUESTIONS = ("How does the search work?", "What does the assistant send to the model?",
             "How are answers checked?")
FAILURES: list[str] = []
# Every smoke client reaches the web tier as one address (the Docker network's gateway, set as
# X-Forwarded-For by the proxy), and sixteen users ask hundreds of questions in minutes: the
# rollout's load would trip the per-address, per-user and global limits made for a real crowd
# (the first run: 150 of 531 turns refused with 429 by the 60/hour per user), and sixteen
# turns at once the per-process cap of turns in flight. The smoke raises them, on the web
# service only, with an override file.
OVERRIDE = REPO / "var/docker/smoke-override.yaml"
OVERRIDE_TEXT = """# Written by docker/smoke.py: the smoke's load is a few users at one address.
services:
  web:
    environment:
      ASSISTANT_CLIENT_REQUEST_LIMIT: 10000/minute
      ASSISTANT_CLIENT_MESSAGE_LIMIT: 100000/hour
      ASSISTANT_USER_MESSAGE_LIMIT: 5000/hour
      ASSISTANT_GLOBAL_MESSAGE_LIMIT: 100000/hour
      # Sixteen turns at once can all land on one of a container's two processes (8 a
      # process by default: the third run got three 429 "busy" this way, a capacity
      # setting, not the rollout).
      ASSISTANT_MAX_TURNS_PER_PROCESS: "32"
"""


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def check(ok: bool, what: str) -> None:
    say(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        FAILURES.append(what)


def compose(*args: str, env: dict[str, str], capture: bool = False) -> str:
    proc = subprocess.run([*COMPOSE, "-p", PROJECT, "-f", str(REPO / "docker/compose.yaml"),
                           "-f", str(OVERRIDE), *args], env=env, cwd=REPO, text=True,
                          capture_output=capture, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"compose {' '.join(args)} failed ({proc.returncode}):\n"
                         f"{(proc.stderr or '')[-3000:]}")
    return proc.stdout or ""


def http(method: str, path: str, token: str | None = None) -> tuple[int, Any]:
    req = urllib.request.Request(BASE + path, method=method, headers={
        "Content-Type": "application/json",
        **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 - loopback
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except (urllib.error.URLError, OSError):
        return 0, None


def app_token(secret: str, user: str) -> str:
    """An access token as the BeCoMe app signs it (HS256), minted here with PyJWT."""
    now = int(time.time())
    return jwt.encode({"sub": user, "type": "access", "iat": now, "exp": now + 900,
                       "jti": uuid.uuid4().hex}, secret, algorithm="HS256")


def open_socket(token: str) -> ClientConnection:
    t0 = time.monotonic()
    status, body = http("POST", "/api/v1/assistant/tickets", token)
    assert status == 201, f"ticket refused: {status} after {time.monotonic() - t0:.1f}s"
    return connect(f"ws://127.0.0.1:{PORT}/api/v1/assistant/ws?ticket={body['ticket']}",
                   open_timeout=20, max_size=2**22)


def frames(ws: ClientConnection, until_done: bool = True, tokens: int = 0,
           timeout_s: float = 300) -> list[dict[str, Any]]:
    """Frames until done/error, or until `tokens` token frames when that is set."""
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        frame = json.loads(ws.recv(timeout=max(1.0, deadline - time.monotonic())))
        out.append(frame)
        if frame["type"] in ("done", "error"):
            return out
        if not until_done and sum(f["type"] == "token" for f in out) >= tokens:
            return out
    raise TimeoutError("no final frame in time")


def web_containers(env: dict[str, str]) -> list[str]:
    return compose("ps", "-q", "web", env=env, capture=True).split()


def logged(cid: str, line: str) -> int:
    """How often a web container has logged a line (web/routes/ws.py logs asks and resumes)."""
    proc = subprocess.run(["docker", "logs", cid], capture_output=True, text=True)
    return (proc.stdout + proc.stderr).count(line)


def wait_healthy(env: dict[str, str], webs: int, timeout_s: float = 600) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        ids = web_containers(env)
        states = [subprocess.run(["docker", "inspect", "-f", "{{.State.Health.Status}}", c],
                                 capture_output=True, text=True).stdout.strip() for c in ids]
        if len(ids) == webs and all(s == "healthy" for s in states) and \
                http("GET", "/api/v1/ping")[0] == 200:
            return time.monotonic() - started
        time.sleep(2)
    compose("ps", env=env)
    raise SystemExit(f"not healthy within {timeout_s:.0f}s")


def ask_once(secret: str) -> dict[str, Any]:
    """Ask until one answer cites a source (the 135M offline model does not always cite)."""
    done: dict[str, Any] = {}
    for question in QUESTIONS:
        with open_socket(app_token(secret, "smoke-user")) as ws:
            t0 = time.monotonic()
            ws.send(json.dumps({"type": "ask", "message": question}))
            got = frames(ws)
        done = got[-1]
        first = next((i for i, f in enumerate(got) if f["type"] == "token"), None)
        say(f"asked {question!r}: {done['type']} in {time.monotonic() - t0:.1f}s, "
            f"{len(got)} frames, first token frame #{first}")
        if done["type"] == "done":
            say(f"  answer: {done.get('answer', '')[:300]!r}")
            say(f"  sources: {[(s['n'], s['source'], s['section']) for s in done['sources']]}")
            if "[1]" in done.get("answer", "") or "[2]" in done.get("answer", "") or \
                    "[3]" in done.get("answer", ""):
                return done
    return done


def resume_across_webs(env: dict[str, str], secret: str) -> None:
    token = app_token(secret, "smoke-resume")
    webs = web_containers(env)
    ws = open_socket(token)
    ws.send(json.dumps({"type": "ask", "message": QUESTIONS[0]}))
    # Dropped right after the turn is accepted: a quoted answer can end within three tokens,
    # and a resume after a turn's final frame gets that frame again (web/follow.py), which is
    # no drop-and-resume at all (the first run of the rollout smoke counted it as a repeat).
    first = frames(ws, until_done=False, tokens=0)
    ws.close()
    turn = next(f["turn"] for f in first if f.get("turn"))
    last_seq = first[-1]["seq"]
    served_a = [c for c in webs if logged(c, f"turn {turn}: asked")]
    say(f"socket A on {served_a[0][:12] if served_a else '?'}: {len(first)} frames up to seq "
        f"{last_seq}, then dropped")
    resumed = f"turn {turn}: resumed over WebSocket after seq {last_seq}"
    rest: list[dict[str, Any]] = []
    for attempt in range(8):
        before = {c: logged(c, resumed) for c in webs}
        ws = open_socket(token)
        ws.send(json.dumps({"type": "resume", "turn": turn, "after": last_seq}))
        got = frames(ws)
        ws.close()
        served_b = [c for c in webs if logged(c, resumed) > before[c]]
        if served_b and served_a and served_b[0] != served_a[0]:
            rest = got
            say(f"socket B on {served_b[0][:12]} (attempt {attempt + 1}): resumed after seq "
                f"{last_seq}, {len(rest)} frames, ended with {rest[-1]['type']}")
            break
        http("GET", "/api/v1/ping")  # moves the proxy's round robin on by one
    check(bool(served_a) and bool(rest),
          "the drop-and-resume crossed web containers (ask on one, resume on the other)")
    if not rest:
        return
    seqs = [f["seq"] for f in first + rest if "seq" in f]
    check(seqs == list(range(seqs[0], seqs[0] + len(seqs))),
          f"frames gapless and without duplicates across the two containers (seq {seqs[0]}.."
          f"{seqs[-1]})")
    text = "".join(f.get("text", "") for f in first + rest if f["type"] == "token")
    done = rest[-1]
    check(done["type"] == "done" and text.strip() == done.get("answer", "").strip(),
          "the text streamed over both sockets equals the final answer")


# --- the rolling upgrade (docs/operations.md) ----------------------------------------------------------

# Sixteen: on a quiet machine a turn takes a third of a second, and with six clients the web
# containers' SIGTERMs found no socket open mid-turn on them (two runs): with sixteen a few are.
ROLLOUT_CLIENTS = int(os.environ.get("SMOKE_ROLLOUT_CLIENTS", "16"))
SILENT_S = 60.0  # no frame at all for this long is silence (pings come every 15 s in a turn)
TURN_LIMIT_S = 210.0  # the answer limit (180 s) and a margin: no final frame by then is silent
RECONNECT_S = 60.0  # how long a client whose socket dropped keeps trying to resume
PAUSE_S = 0.5  # between one client's turns: a steady load, not a flood
MAX_REASKS = 3  # a 1012 close before `accepted`: asked again, as the panel does


def grace_periods(compose_text: str) -> dict[str, int]:
    """Each service's stop_grace_period in docker/compose.yaml, in seconds (what `docker stop
    --time` gets here, as docs/operations.md tells an operator)."""
    out: dict[str, int] = {}
    service = ""
    for line in compose_text.splitlines():
        if m := re.match(r"^  ([a-z][\w-]*):\s*$", line):
            service = m.group(1)
        elif m := re.match(r"^    stop_grace_period:\s*(\d+)s\s*$", line):
            out[service] = int(m.group(1))
    return out


GRACE_S = grace_periods((REPO / "docker/compose.yaml").read_text(encoding="utf-8"))
# SMOKE_BROKEN_ROLLOUT=1: a deliberately wrong web step (both web containers stopped before any
# new one starts, for longer than a client keeps trying): the turns in flight are lost and the
# smoke must fail.
BROKEN = os.environ.get("SMOKE_BROKEN_ROLLOUT") == "1"


@dataclass
class Turn:
    """One turn asked through the proxy during the rollout, and how it ended."""

    client: int
    asked: float
    frames: list[dict[str, Any]] = field(default_factory=list)
    outcome: str = "running"
    took: float = 0.0
    closes: list[int] = field(default_factory=list)
    resumes: int = 0
    refused: int = 0  # new sockets refused while resuming
    reasks: int = 0  # asked again after a 1012 close before `accepted`


def classify(frames: list[dict[str, Any]], resumes: int = 0) -> str:
    """The outcome of a turn that got its final frame, counted as tests/fault_rounds.py does:
    any repeated or missing seq first, then the final frame, then the streamed text."""
    seqs = [f["seq"] for f in frames if f.get("seq") is not None]
    if len(set(seqs)) != len(seqs):
        return "duplicate frames"
    if seqs != list(range(len(seqs))):
        return "lost frames (a gap in seq)"
    last = frames[-1]
    if last["type"] == "error":
        return f"error {last.get('code')}"
    text = ""
    for f in frames:
        text = "" if f["type"] == "restart" else text + str(f.get("text", ""))
    if text.strip() != str(last.get("answer", "")).strip():
        return "streamed text differs from the answer"
    return "complete (resumed)" if resumes else "complete"


def failed_turn(outcome: str) -> bool:
    """What fails the smoke: anything but a complete answer, or an error frame of the answer
    time limit (504: the machine's load, not the rollout)."""
    return not outcome.startswith("complete") and outcome != "error 504"


class LoadClient(threading.Thread):
    """One person asking through the proxy without pause, as the panel does: a ticket and a
    socket per turn; a socket closed after the turn was accepted is replaced at once and the
    turn resumed after the last seq received (on whichever web container the proxy picks);
    one closed with 1012 before that is replaced at once and the question asked again (the
    server sends a turn's `accepted` before that close, so none was taken), up to MAX_REASKS
    times; any other close before `accepted`, or a ticket or socket refused for the ask, ends
    the turn as a connection error, as the panel shows it."""

    def __init__(self, i: int, secret: str, stop: threading.Event, turns: list[Turn],
                 lock: threading.Lock) -> None:
        super().__init__(name=f"smoke-load-{i}", daemon=True)
        self.i, self.secret, self.stop_asking, self.turns, self.lock = i, secret, stop, turns, lock
        self.current: Turn | None = None

    def run(self) -> None:
        k = 0
        while not self.stop_asking.is_set():
            turn = Turn(self.i, time.monotonic())
            with self.lock:
                self.turns.append(turn)
            self.current = turn
            try:
                self.one(turn, f"{QUESTIONS[k % len(QUESTIONS)]} (rollout {self.i}.{k})")
            except Exception as exc:  # noqa: BLE001 - counted, never a crash of the smoke
                turn.outcome = f"client error {exc!r}"
            turn.took = time.monotonic() - turn.asked
            self.current = None
            k += 1
            self.stop_asking.wait(PAUSE_S)

    def socket(self, until: float, turn: Turn | None = None) -> ClientConnection | None:
        """A ticket and a socket through the proxy; with `turn`, retried until `until`."""
        while True:
            try:
                return open_socket(app_token(self.secret, f"smoke-rollout-{self.i}"))
            except Exception:  # noqa: BLE001 - refused (502/503), reset, no ticket
                if turn is None:
                    raise
                turn.refused += 1
                if time.monotonic() >= until:
                    return None
                time.sleep(0.5)

    def one(self, turn: Turn, message: str) -> None:
        deadline = turn.asked + TURN_LIMIT_S
        try:
            ws = self.socket(deadline)
        except Exception as exc:  # noqa: BLE001 - the panel shows a refusal before the ask
            turn.outcome = f"error: no socket to ask on ({type(exc).__name__}: {exc})"[:160]
            return
        assert ws is not None
        try:
            ask = json.dumps({"type": "ask", "message": message})
            # The frame a new socket opens with (the ask, or a resume): a socket closed as it
            # is sent (a stopping container) is a close like any other, as in the panel.
            first: str | None = ask
            while True:
                left = min(SILENT_S, deadline - time.monotonic())
                try:
                    if first is not None:
                        ws.send(first)
                        first = None
                    if left <= 0:
                        raise TimeoutError
                    raw = ws.recv(timeout=left)
                except TimeoutError:
                    turn.outcome = "silent"
                    return
                except ConnectionClosed as exc:
                    code = exc.rcvd.code if exc.rcvd is not None else 1006
                    turn.closes.append(code)
                    turn_id = next((f["turn"] for f in turn.frames if f.get("turn")), None)
                    if turn_id is None and code == 1012 and turn.reasks < MAX_REASKS:
                        try:
                            ws = self.socket(deadline)
                        except Exception as exc:  # noqa: BLE001 - as for the first ask
                            turn.outcome = (f"error: no socket to ask again on after 1012 "
                                            f"({type(exc).__name__}: {exc})")[:160]
                            return
                        assert ws is not None
                        turn.reasks += 1
                        first = ask
                        continue
                    if turn_id is None:
                        turn.outcome = f"error: socket closed ({code}) before the turn was accepted"
                        return
                    new = self.socket(min(deadline, time.monotonic() + RECONNECT_S), turn)
                    if new is None:
                        turn.outcome = "lost: no socket to resume on"
                        return
                    ws = new
                    turn.resumes += 1
                    after = max(f["seq"] for f in turn.frames if f.get("seq") is not None)
                    first = json.dumps({"type": "resume", "turn": turn_id, "after": after})
                    continue
                frame = json.loads(raw)
                if frame["type"] in ("ping", "pong"):
                    continue
                turn.frames.append(frame)
                if frame["type"] in ("done", "error"):
                    turn.outcome = classify(turn.frames, turn.resumes)
                    return
        finally:
            ws.close()


def service_containers(env: dict[str, str], service: str) -> list[str]:
    return compose("ps", "-q", service, env=env, capture=True).split()


def image_of(cid: str) -> str:
    return subprocess.run(["docker", "inspect", "-f", "{{.Image}}", cid], capture_output=True,
                          text=True).stdout.strip()


def start_one_more(env: dict[str, str], service: str) -> str:
    """A container of the service beside the running ones, from the image `env` names:
    `--no-recreate` leaves the old containers as they are."""
    before = service_containers(env, service)
    compose("up", "-d", "--no-deps", "--no-recreate", "--scale", f"{service}={len(before) + 1}",
            service, env=env, capture=True)
    new = [c for c in service_containers(env, service) if c not in before]
    if len(new) != 1:
        raise SystemExit(f"expected one new {service} container, got {new}")
    return new[0]


def wait_ready(service: str, cid: str, timeout_s: float = 180) -> float:
    """Until a new worker has connected to the broker, or a new web container is healthy."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if service == "worker":
            logs = subprocess.run(["docker", "logs", cid], capture_output=True, text=True)
            if " ready." in logs.stdout + logs.stderr:
                return time.monotonic() - started
        elif subprocess.run(["docker", "inspect", "-f", "{{.State.Health.Status}}", cid],
                            capture_output=True, text=True).stdout.strip() == "healthy":
            return time.monotonic() - started
        time.sleep(1)
    raise SystemExit(f"the new {service} container {cid[:12]} was not ready in {timeout_s:.0f}s")


# What a stopping container logs, and when (gunicorn's master and workers, web/drain.py, the
# Celery worker): printed relative to the SIGTERM, so a slow stop shows where its time went.
STOP_LINES = ("Handling signal", "told to reconnect", "Worker exiting", "graceful timeout",
              "Shutting down", "warm shutdown", "Warm shutdown", "stopping")
# What nginx logs when it passes a request on to another web container (docker/proxy/nginx.conf,
# proxy_next_upstream), or gives up: counted over the rollout. (A 503 passed on is logged by
# the web container that answered it: "Unavailable: stopping" in its stop timeline.)
PROXY_LINES = {"refused": "Connection refused) while connecting to upstream",
               "connect timed out": "timed out) while connecting to upstream",
               "reset": "Connection reset by peer) while reading response header",
               "closed early": "prematurely closed connection while reading response header",
               "no route": "No route to host) while connecting to upstream",
               "no live upstreams": "no live upstreams"}


def now_rfc3339() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f"{now % 1:.3f}"[1:] + "Z"


def proxy_log_counts(cid: str, since: str) -> dict[str, int]:
    """How often the proxy logged each of PROXY_LINES since `since`."""
    proc = subprocess.run(["docker", "logs", "--since", since, cid], capture_output=True,
                          text=True)
    text = proc.stdout + proc.stderr
    return {name: text.count(line) for name, line in PROXY_LINES.items()}


def stop_timeline(cid: str, since: str) -> list[str]:
    """The container's log lines of STOP_LINES from `since` (an RFC 3339 time), each as
    "+seconds text" from then."""
    proc = subprocess.run(["docker", "logs", "--timestamps", "--since", since, cid],
                          capture_output=True, text=True)
    start = _rfc3339(since)
    out = []
    for line in (proc.stdout + proc.stderr).splitlines():
        stamp, _, text = line.partition(" ")
        if any(k in text for k in STOP_LINES):
            at = _rfc3339(stamp)
            out.append(f"+{at - start:.1f}s {text.strip()[:110]}" if at and start else text)
    return out


def summed(timeline: list[str], limit: int = 8) -> list[str]:
    """A stop timeline to print: the 503s a stopping web container answered (each passed on
    by the proxy to another container) as one count, then the first `limit` other lines."""
    refused = [line for line in timeline if "Unavailable: stopping" in line]
    rest = [line for line in timeline if "Unavailable: stopping" not in line]
    return rest[:limit] + ([f"{len(refused)} requests answered 503 (stopping) between "
                            f"{refused[0].split()[0]} and {refused[-1].split()[0]}"]
                           if refused else [])


def _rfc3339(stamp: str) -> float:
    """Seconds since the epoch of docker's RFC 3339 nanosecond time stamps (0 if not one)."""
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z", stamp)
    if not m:
        return 0.0
    import calendar
    return calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) + \
        float("0" + (m.group(2) or ".0")[:10])


def open_connections(cid: str) -> int:
    """Connections the proxy holds open to a web container's port 8000 (its open sockets, and
    any request it is serving): ESTABLISHED in the container's /proc/net/tcp, not loopback
    (the health check)."""
    proc = subprocess.run(["docker", "exec", cid, "cat", "/proc/net/tcp"], capture_output=True,
                          text=True)
    held = 0
    for line in proc.stdout.splitlines()[1:]:
        cols = line.split()
        if len(cols) > 3 and cols[1].endswith(":1F40") and cols[3] == "01" and \
                not cols[1].startswith("0100007F"):
            held += 1
    return held


def wait_for_turns(clients: list[LoadClient], service: str, cid: str,
                   timeout_s: float = 20) -> tuple[int, int]:
    """Until half the clients have a turn in flight and, for a web container, the proxy holds
    a connection to it (a socket its SIGTERM must hand over), or `timeout_s`: a quick turn
    (under a second on a quiet machine) is otherwise easily missed. The turns in flight and
    the connections it holds."""
    want = max(1, len(clients) // 2)
    end = time.monotonic() + timeout_s
    while True:
        busy = sum(c.current is not None for c in clients)
        held = open_connections(cid) if service == "web" and busy >= want else 0
        if (busy >= want and (service != "web" or held > 0)) or time.monotonic() >= end:
            return sum(c.current is not None for c in clients), held
        time.sleep(0.05)


def stop_and_remove(service: str, cid: str) -> tuple[float, int, list[str]]:
    """What a deploy does to the container it replaces: SIGTERM, the service's grace period,
    then SIGKILL (`docker stop --time`); how long it took, its exit code and what it logged
    while it stopped (stop_timeline)."""
    since = now_rfc3339()
    t0 = time.monotonic()
    subprocess.run(["docker", "stop", "--time", str(GRACE_S[service]), cid], check=True,
                   capture_output=True)
    took = time.monotonic() - t0
    code = int(subprocess.run(["docker", "inspect", "-f", "{{.State.ExitCode}}", cid],
                              capture_output=True, text=True).stdout.strip() or -1)
    timeline = stop_timeline(cid, since)
    subprocess.run(["docker", "rm", cid], check=True, capture_output=True)
    return took, code, timeline


def next_release_image(env: dict[str, str]) -> dict[str, str]:
    """The "next release": the app image with a release label of its own, so it is another
    image and every container really is replaced. The same code: what two different releases
    do together is bench.faults' rollout round; here the containers, the proxy and compose's
    grace periods are what is tested. The environment that names it."""
    tag = f"{env['TAG']}-next"
    dockerfile = (f"FROM become-assistant:{env['TAG']}\n"
                  f"LABEL org.opencontainers.image.version=smoke-next-{int(time.time())}\n")
    subprocess.run(["docker", "build", "-q", "-t", f"become-assistant:{tag}", "-"],
                   input=dockerfile, text=True, check=True, capture_output=True)
    return dict(env, TAG=tag)


def rolling_upgrade(env: dict[str, str], secret: str) -> None:
    """Workers, then web containers, one at a time, each replaced by a next-release container
    started beside it before it gets SIGTERM (docs/operations.md, "Order of a rollout"),
    while ROLLOUT_CLIENTS people keep asking; every turn asked meanwhile is counted."""
    nxt = next_release_image(env)
    new_image = subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}",
                                f"become-assistant:{nxt['TAG']}"], capture_output=True,
                               text=True).stdout.strip()
    old = {s: service_containers(env, s) for s in ("worker", "web")}
    turns: list[Turn] = []
    lock = threading.Lock()
    stop = threading.Event()
    clients = [LoadClient(i, secret, stop, turns, lock) for i in range(ROLLOUT_CLIENTS)]
    for c in clients:
        c.start()
    time.sleep(3)  # every client has a turn running
    in_flight: list[int] = []
    stops: list[tuple[str, float, int]] = []
    terms: list[tuple[str, float]] = []  # each SIGTERM: which container, when (from t0)
    proxy, since = service_containers(env, "proxy")[0], now_rfc3339()
    t0 = time.monotonic()
    rollout_s = 0.0
    try:
        for service in ("worker", "web"):
            if service == "web" and BROKEN:
                in_flight.append(sum(c.current is not None for c in clients))
                for cid in old["web"]:
                    terms.append((f"web {cid[:12]}", time.monotonic() - t0))
                    took, code, _ = stop_and_remove("web", cid)
                    stops.append(("web", took, code))
                say(f"  BROKEN step: both web containers stopped; new ones in "
                    f"{RECONNECT_S + 10:.0f}s")
                time.sleep(RECONNECT_S + 10)
                for _ in old["web"]:
                    wait_ready("web", start_one_more(nxt, "web"))
                break
            for cid in old[service]:
                new = start_one_more(nxt, service)
                ready = wait_ready(service, new)
                if service == "web":
                    time.sleep(2)  # the proxy re-reads the service's addresses every second
                busy, held = wait_for_turns(clients, service, cid)
                in_flight.append(busy)
                term = time.monotonic() - t0
                terms.append((f"{service} {cid[:12]}", term))
                took, code, timeline = stop_and_remove(service, cid)
                stops.append((service, took, code))
                say(f"  {service} {cid[:12]} -> {new[:12]}: new one ready in {ready:.0f}s, "
                    f"old one sent SIGTERM at +{term:.1f}s and stopped in {took:.1f}s, exit "
                    f"{code}, {busy} turns in flight at the SIGTERM"
                    + (f" ({held} connections from the proxy open on it)"
                       if service == "web" else ""))
                for line in summed(timeline):
                    say(f"    {line}")
        rollout_s = time.monotonic() - t0
    finally:
        stop.set()
        for c in clients:
            c.join(TURN_LIMIT_S + RECONNECT_S)
    say(f"rollout of 2 workers + 2 web containers in {rollout_s:.0f}s; the load's last turns "
        f"ended {time.monotonic() - t0 - rollout_s:.0f}s later; load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    outcomes: dict[str, int] = {}
    for t in turns:
        outcomes[t.outcome] = outcomes.get(t.outcome, 0) + 1
    closes = [c for t in turns for c in t.closes]
    say(f"  {len(turns)} turns asked during the rollout: "
        + ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items())))
    say(f"  sockets closed under a turn: {len(closes)} (codes {sorted(set(closes))}), resumed: "
        f"{sum(t.resumes for t in turns)}, new sockets refused while resuming: "
        f"{sum(t.refused for t in turns)}, asked again after a 1012 before `accepted`: "
        f"{sum(t.reasks for t in turns)}; worst time to the final frame "
        f"{max((t.took for t in turns), default=0):.1f}s")
    say("  SIGTERMs: " + ", ".join(f"{name} at +{at:.1f}s" for name, at in terms))
    say("  the proxy passed on or failed (its log over the rollout): " + ", ".join(
        f"{name}: {n}" for name, n in proxy_log_counts(proxy, since).items()))
    errors = [t for t in turns if failed_turn(t.outcome) or t.outcome.startswith("error")]
    for t in errors[:20]:
        last = t.frames[-1] if t.frames else {}
        say(f"  turn of client {t.client} asked at +{t.asked - t0:.1f}s "
            f"({since_sigterm(t.asked - t0, terms)}), ended after {t.took:.1f}s: {t.outcome}; "
            f"frames {[f.get('seq') for f in t.frames]}; last {str(last)[:160]}")
    if len(errors) > 20:
        say(f"  ... and {len(errors) - 20} more turns not complete")
    check(len(turns) >= ROLLOUT_CLIENTS and all(n > 0 for n in in_flight),
          f"turns were in flight at every SIGTERM ({in_flight})")
    check(all(code == 0 and took < GRACE_S[s] for s, took, code in stops),
          "every replaced container exited by itself (0) within its grace period")
    now = {s: service_containers(env, s) for s in ("worker", "web")}
    check(all(len(now[s]) == len(old[s]) and not set(now[s]) & set(old[s]) and
              all(image_of(c) == new_image for c in now[s]) for s in now),
          "2 workers + 2 web containers, every one replaced by one of the next release")
    check(not any(t.outcome == "running" for t in turns), "every turn ended (no client hung)")
    check(not any(t.outcome == "silent" for t in turns), "no turn was silent")
    check(not any("seq" in t.outcome or "duplicate" in t.outcome or "differs" in t.outcome
                  for t in turns), "no lost or duplicated frame, no streamed text but the answer")
    check(not any(t.outcome.startswith("lost") for t in turns),
          "no turn lost its socket for good")
    check(not any(failed_turn(t.outcome) for t in turns),
          "every turn ended with a complete answer (or the time limit's 504 error frame)")


def since_sigterm(at: float, terms: list[tuple[str, float]]) -> str:
    """Where a moment of the rollout falls against its SIGTERMs: "3.2s after the SIGTERM of
    web 0123…", or "before any SIGTERM"."""
    before = [(name, t) for name, t in terms if t <= at]
    if not before:
        return "before any SIGTERM"
    name, t = before[-1]
    return f"{at - t:.1f}s after the SIGTERM of {name}"


def memory_at_rest() -> None:
    out = subprocess.run(["docker", "stats", "--no-stream", "--format",
                          "{{.Name}} {{.MemUsage}}"], capture_output=True, text=True).stdout
    for line in sorted(out.splitlines()):
        if line.startswith(PROJECT):
            say(f"  memory at rest: {line}")


def main() -> int:
    started = time.monotonic()
    secret = secrets.token_hex(32)
    env = dict(os.environ, TAG=os.environ.get("TAG", "local"),
               WEB_PUBLISH=f"127.0.0.1:{PORT}", FLOWER_PUBLISH="127.0.0.1:5600",
               POSTGRES_PASSWORD=secrets.token_hex(16),
               CORPUS_OWNER_PASSWORD=secrets.token_hex(16),
               CORPUS_READER_PASSWORD=secrets.token_hex(16),
               ASSISTANT_DB_PASSWORD=secrets.token_hex(16),
               REDIS_PASSWORD=secrets.token_hex(16),
               ASSISTANT_APP_JWT_SECRET=secret,
               ASSISTANT_ALLOWED_ORIGINS=f"http://127.0.0.1:{PORT}")
    OVERRIDE.parent.mkdir(parents=True, exist_ok=True)
    OVERRIDE.write_text(OVERRIDE_TEXT, encoding="utf-8")
    compose("down", "-v", "--remove-orphans", env=env)
    say(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    try:
        say("up: production profile, local models, one web and one worker")
        t0 = time.monotonic()
        compose("up", "-d", env=env)  # waits for each service's dependencies to be healthy
        wait_healthy(env, 1)
        say(f"up and healthy after {time.monotonic() - t0:.0f}s")
        status, _ = http("GET", "/healthz")
        check(status == 200, "GET /healthz through the proxy is 200")
        check(http("POST", "/api/v1/dev/token")[0] == 404, "production: /api/v1/dev/token is 404")
        forged = jwt.encode({"sub": "alice", "type": "access", "exp": int(time.time()) + 60},
                            "dev-only-insecure-secret-change-me", algorithm="HS256")
        check(http("POST", "/api/v1/assistant/tickets", forged)[0] == 401,
              "a token signed with the dev secret is refused")
        done = ask_once(secret)
        check(done.get("type") == "done", "the turn ended with a done frame")
        check(bool(done.get("sources")), "the answer came with sources")
        check(done.get("checks", {}).get("citations", {}).get("valid") is True,
              "every citation in the answer points at a passage the model got")
        check(any(f"[{s['n']}]" in done.get("answer", "") for s in done.get("sources", [])),
              "the answer cites at least one source as [n]")
        memory_at_rest()

        say("scale: two web and two worker containers")
        t0 = time.monotonic()
        compose("up", "-d", "--scale", "web=2", "--scale", "worker=2", env=env)
        wait_healthy(env, 2)
        say(f"two web containers healthy after {time.monotonic() - t0:.0f}s")
        resume_across_webs(env, secret)

        say(f"rolling upgrade: workers, then web containers, one at a time, to a next release, "
            f"while {ROLLOUT_CLIENTS} clients ask")
        rolling_upgrade(env, secret)
    finally:
        say("down -v")
        compose("down", "-v", "--remove-orphans", env=env)
        left = subprocess.run(["docker", "ps", "-q", "--filter", f"name={PROJECT}"],
                              capture_output=True, text=True).stdout.split()
        check(not left, "teardown left no container running")
        subprocess.run(["docker", "rmi", f"become-assistant:{env['TAG']}-next"],
                       capture_output=True)
    say(f"smoke finished in {time.monotonic() - started:.0f}s: "
        f"{'all checks passed' if not FAILURES else f'{len(FAILURES)} FAILED'}")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
