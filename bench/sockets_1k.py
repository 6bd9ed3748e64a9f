"""1,000 open streaming sockets on one web process: memory per socket, and relay latency of a
probe turn with them open against the same probe with none open (goal: <= 150 kB a socket,
relay p99 unchanged within noise).

Each socket follows a turn of its own (resume after seq 0) that looks alive to the web tier (a
started attempt, a renewed lease); this script plays the worker: it appends frames to the
turns' replay logs and channels, a token to every background turn every BACKGROUND_S, and
timestamped probe frames, whose arrival it times. No Celery worker or model is involved, so the
figures are the web tier's own. Loopback only.

Run: BA_TEST_PORT_OFFSET=800 .venv/bin/python -m bench.sockets_1k [--sockets 1000] [--frames 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import websockets
from simple_websocket import Client

from assistant_cli import stack
from assistant_cli.client import ws_url
from assistant_cli.run import Plan, start_processes
from shared import keys
from shared.auth import user_hash
from shared.config import settings_from_env
from shared.frames import FrameLog
from shared.redis_client import redis_client
from tests.conftest import VAR, port, redis_url, stack_env
from tests.fault_rounds import children
from tests.wsutil import app_token, get_ticket

USER = "socket-bench"
# Every background turn gets a token this often (from before the sockets open): a silent
# socket's watchdog polls Redis every second, a streaming one does not.
BACKGROUND_S = 1.0
TTL = 900


def fake_turn(client: Any, turn: str) -> FrameLog:
    """A turn that looks running to the web tier: owner, started attempt, lease, seq 0."""
    pipe = client.pipeline(transaction=False)
    pipe.set(keys.turn_owner(turn), user_hash(USER), ex=TTL)
    pipe.set(keys.turn_started(turn, 1), "1", ex=TTL)
    pipe.set(keys.turn_lease(turn), "bench:0:1", ex=TTL)
    pipe.execute()
    log = FrameLog(client, turn, TTL)
    log.append({"type": "accepted", "turn": turn})  # seq 0
    return log


def rss_kb(pid: int) -> int:
    """Resident memory of a process, in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_s(pid: int) -> float:
    """CPU time (user + system) a process has used, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def probe_apart(base: str, token: str, url: str, frames: int, rate: float) -> list[float]:
    """probe() in a process of its own: the crowd's 1,000 client sockets and publisher in
    this one would hold the GIL against the probe's reader and count as relay latency."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(_probe_by_url, (base, token, url, frames, rate))


def _probe_by_url(base: str, token: str, url: str, frames: int, rate: float) -> list[float]:
    import redis

    return probe(base, token, redis.Redis.from_url(url), frames, rate)


def probe(base: str, token: str, client: Any, frames: int, rate: float) -> list[float]:
    """Relay latency (ms) of `frames` timestamped frames on a turn of its own."""
    turn = uuid.uuid4().hex
    log = fake_turn(client, turn)
    ws = Client.connect(ws_url(base, get_ticket(base, token)))
    ws.send(json.dumps({"type": "resume", "turn": turn, "after": 0}))
    time.sleep(0.5)  # subscribed (a resume subscribes before it replays)

    def publish() -> None:
        for _ in range(frames):
            log.append({"type": "token", "turn": turn, "text": "x", "t": time.time()})
            time.sleep(1 / rate)

    threading.Thread(target=publish, daemon=True).start()
    out: list[float] = []
    try:
        while len(out) < frames:
            raw = ws.receive(timeout=30)
            if raw is None:
                raise RuntimeError("probe got silence")
            frame = json.loads(raw)
            if frame.get("type") == "token":
                out.append((time.time() - frame["t"]) * 1000)
    finally:
        ws.close()
    return out


async def hold(base: str, token: str, turns: list[str], opened: threading.Event,
               stop: asyncio.Event, got: list[int]) -> None:
    """Open one socket per turn (resume after 0) and keep reading until stop."""
    loop = asyncio.get_running_loop()

    async def one(i: int, turn: str) -> None:
        ticket = await loop.run_in_executor(None, get_ticket, base, token)
        async with websockets.connect(ws_url(base, ticket), max_queue=None,
                                      ping_interval=None, open_timeout=60) as ws:
            await ws.send(json.dumps({"type": "resume", "turn": turn, "after": 0}))
            ready.add(i)
            while not stop.is_set():
                try:
                    raw = await asyncio.wait_for(ws.recv(), 1.0)
                except TimeoutError:
                    continue
                if json.loads(raw).get("type") == "token":
                    got[i] += 1

    ready: set[int] = set()
    tasks = []
    for i, turn in enumerate(turns):
        tasks.append(asyncio.create_task(one(i, turn)))
        if i % 50 == 49:
            await asyncio.sleep(0.2)
    while len(ready) < len(turns):
        failed = next((t for t in tasks if t.done() and t.exception()), None)
        if failed is not None:
            raise RuntimeError(f"socket failed after {len(ready)} opened") from failed.exception()
        await asyncio.sleep(0.2)
    opened.set()
    await asyncio.gather(*tasks)


def pct(xs: list[float]) -> str:
    """p50 / p99 / max."""
    cuts = statistics.quantiles(xs, n=100, method="inclusive")
    return f"p50 {cuts[49]:.2f} ms, p99 {cuts[98]:.2f} ms, max {max(xs):.2f} ms"


def main() -> None:
    """Start Redis and one web process; measure without and with the open sockets."""
    from tests import conftest

    ap = argparse.ArgumentParser()
    ap.add_argument("--sockets", type=int, default=1000)
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--rate", type=float, default=50.0, help="probe frames per second")
    ap.add_argument("--background-s", type=float, default=BACKGROUND_S,
                    help="a token to every open socket's turn this often")
    ap.add_argument("--spread", action="store_true",
                    help="spread the background tokens evenly, not all at once per period")
    args = ap.parse_args()
    env = stack_env({"ASSISTANT_REDIS_URL": redis_url(3),
                     "GUNICORN_CMD_ARGS": f"--worker-connections {args.sockets + 100}"})
    settings = settings_from_env(env)
    with conftest.bench_services():
        sup = stack.Supervisor(VAR / "log")
        web = f"127.0.0.1:{port(8026)}"
        try:
            start_processes(sup, Plan(var_dir=VAR, name="sockets", web_bind=web, web_workers=1,
                                      worker=False, beat=False, flower=False), env=env)
            base = f"http://{web}"
            master = next(p for p in sup.procs if p.name == "sockets-web").popen.pid
            pid = children(master)[0]
            client = redis_client(settings)
            token = app_token(type("S", (), {"settings": settings})(), USER)
            probe_apart(base, token, settings.redis_url, 50, args.rate)  # warm-up
            alone = probe_apart(base, token, settings.redis_url, args.frames, args.rate)
            before = rss_kb(pid)
            turns = [uuid.uuid4().hex for _ in range(args.sockets)]
            logs = [fake_turn(client, t) for t in turns]
            opened, stop_bg = threading.Event(), threading.Event()

            def background() -> None:
                if not args.spread:  # every socket's token at once, once a period
                    while not stop_bg.wait(args.background_s):
                        for log in logs:
                            log.append({"type": "token", "turn": log.turn, "text": "y"})
                    return
                # The same tokens spread evenly over each period, as independent turns'
                # tokens arrive.
                gap, due = args.background_s / len(logs), time.monotonic()
                while not stop_bg.is_set():
                    for log in logs:
                        due += gap
                        time.sleep(max(0.0, due - time.monotonic()))
                        log.append({"type": "token", "turn": log.turn, "text": "y"})

            threading.Thread(target=background, daemon=True).start()
            loop = asyncio.new_event_loop()
            got = [0] * len(turns)
            stop = asyncio.Event()
            started = time.monotonic()
            def run_hold() -> None:
                try:
                    loop.run_until_complete(hold(base, token, turns, opened, stop, got))
                except Exception as exc:  # noqa: BLE001 - reported, then main gives up
                    print(f"sockets: {exc!r} (cause: {exc.__cause__!r})", flush=True)

            th = threading.Thread(target=run_hold, daemon=True)
            th.start()
            deadline = time.monotonic() + 300
            while not opened.wait(1):
                if not th.is_alive() or time.monotonic() > deadline:
                    raise RuntimeError(f"the sockets did not all open (log: {VAR}/log)")
            open_s = time.monotonic() - started
            time.sleep(2)
            after = rss_kb(pid)

            cpu0, wall0 = cpu_s(pid), time.monotonic()
            crowd = probe_apart(base, token, settings.redis_url, args.frames, args.rate)
            busy = (cpu_s(pid) - cpu0) / (time.monotonic() - wall0)
            stop_bg.set()
            delivered = sum(got)
            loop.call_soon_threadsafe(stop.set)
            th.join(timeout=30)
        finally:
            sup.stop_all()
    per = (after - before) / args.sockets
    print(f"sockets_1k: {args.sockets} sockets opened in {open_s:.1f} s on one gunicorn "
          f"gevent worker")
    print(f"web worker RSS: {before / 1024:.1f} MiB before, {after / 1024:.1f} MiB with them "
          f"open: {per:.1f} kB a socket (goal <= 150 kB)")
    print(f"web worker CPU while the crowd probe ran: {busy:.0%} of one core")
    print(f"probe relay latency, {args.frames} frames at {args.rate:.0f}/s:")
    print(f"  no other sockets:        {pct(alone)}")
    print(f"  {args.sockets} sockets open:   {pct(crowd)}  (background: a token per socket "
          f"every {args.background_s:g} s{', spread' if args.spread else ', all at once'}, "
          f"{delivered} delivered)")


if __name__ == "__main__":
    main()
