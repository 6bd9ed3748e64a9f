"""`make docker-smoke`: bring the compose project up for real, ask through it, scale it, tear down.

Steps, each timed and printed: up (production profile, local models) and wait for health; one
question through the proxy with an independent WebSocket client (the `websockets` library, not
our own client) and checks of the cited answer; then two web and two worker containers, a turn
whose socket drops after a few tokens and resumes on the OTHER web container (proved from each
container's access log) with gapless, duplicate-free frames; memory at rest; teardown with the
volumes. Exit 0 only when every check passed. Loopback only: the proxy is published on
127.0.0.1; the containers talk on their own compose network.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import jwt
from websockets.sync.client import ClientConnection, connect

REPO = Path(__file__).resolve().parent.parent
PROJECT = "become-smoke"
PORT = int(os.environ.get("SMOKE_PORT", "8700"))
BASE = f"http://127.0.0.1:{PORT}"
COMPOSE = os.environ.get("COMPOSE", "docker-compose").split()
QUESTIONS = ("How does the search work?", "What does the assistant send to the model?",
             "How are answers checked?")
FAILURES: list[str] = []


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def check(ok: bool, what: str) -> None:
    say(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        FAILURES.append(what)


def compose(*args: str, env: dict[str, str], capture: bool = False) -> str:
    proc = subprocess.run([*COMPOSE, "-p", PROJECT, "-f", str(REPO / "docker/compose.yaml"),
                           *args], env=env, cwd=REPO, text=True,
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
    status, body = http("POST", "/api/v1/assistant/tickets", token)
    assert status == 201, f"ticket refused: {status}"
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
    first = frames(ws, until_done=False, tokens=3)
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
    compose("down", "-v", "--remove-orphans", env=env)
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
    finally:
        say("down -v")
        compose("down", "-v", "--remove-orphans", env=env)
        left = subprocess.run(["docker", "ps", "-q", "--filter", f"name={PROJECT}"],
                              capture_output=True, text=True).stdout.split()
        check(not left, "teardown left no container running")
    say(f"smoke finished in {time.monotonic() - started:.0f}s: "
        f"{'all checks passed' if not FAILURES else f'{len(FAILURES)} FAILED'}")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
