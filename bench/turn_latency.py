"""Latency of the turn path, with instant scripted chat and embedding servers.

1. Time our code adds before the first token (English question): client sends `ask` ->
   client receives the first `token` frame. The scripted servers answer at once, so this is
   all ours: WebSocket, Redis, Celery dispatch, retrieval (pgvector + BM25), prompt, HTTP.
2. Token relay: a frame published the way the worker publishes it -> the WebSocket client,
   side by side in the same run with the floor: a Redis publish relayed by a trivial gevent
   WebSocket handler (bench/floor_ws.py).

Run: .venv/bin/python -m bench.turn_latency --turns 200 --frames 2000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

import redis
from simple_websocket import Client

from assistant_cli import stack
from assistant_cli.client import ws_url
from shared.frames import FrameLog
from tests import conftest
from tests.wsutil import app_token, get_ticket

FLOOR_PORT = conftest.port(8019)


def pct(values: list[float], q: float) -> float:
    """The q-quantile, in ms."""
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] * 1000


STEPS: dict[str, list[float]] = {}


def first_token_overhead(st: conftest.Stack, turns: int) -> list[float]:
    """ask -> first token, per turn (seconds); worker-side step times go to STEPS."""
    conftest.set_script(conftest.start_scripted(st.sup), ["Instant [1]."])
    out = []
    ws = Client.connect(ws_url(st.base_url, get_ticket(st.base_url, app_token(st))))
    try:
        for i in range(turns + 10):
            t0 = time.perf_counter()
            ws.send(json.dumps({"type": "ask", "message": "How does the search work?"}))
            first = None
            while True:
                f = json.loads(ws.receive(timeout=30))
                if f["type"] == "accepted":
                    STEPS.setdefault("client: ask -> accepted", []).append(
                        time.perf_counter() - t0)
                if f["type"] == "token" and first is None:
                    first = time.perf_counter() - t0
                if f["type"] == "done" and i >= 10:
                    for step in f["timing"]["steps"]:
                        STEPS.setdefault(f"worker: {step['step']}", []).append(
                            (step["ms"] or step["start_ms"]) / 1000)
                if f["type"] in ("done", "error"):
                    break
            if i >= 10 and first is not None:  # the first turns warm caches and connections
                out.append(first)
    finally:
        ws.close()
    return out


def relay_latency(st: conftest.Stack, frames: int, rate: float) -> tuple[list[float], list[float]]:
    """(ours, floor) publish -> client latencies, interleaved in the same run."""
    client = redis.Redis.from_url(st.settings.redis_url)
    # Our path: a turn whose worker is absent (no worker consumes db 8), so only our
    # publishes arrive; they go through FrameLog.append exactly as the worker's do.
    ws = Client.connect(ws_url(st.base_url, get_ticket(st.base_url, app_token(st))))
    ws.send(json.dumps({"type": "ask", "message": "latency probe"}))
    turn = json.loads(ws.receive(timeout=10))["turn"]
    log = FrameLog(client, turn, 900)
    floor = Client.connect(f"ws://127.0.0.1:{FLOOR_PORT}/floor")
    assert floor.receive(timeout=10) == "ready"
    ours: list[float] = []
    base: list[float] = []

    def reader(sock: Client, sink: list[float], n: int) -> None:
        while len(sink) < n:
            raw = sock.receive(timeout=30)
            if raw is None:
                return
            f = json.loads(raw)
            if "t" in f:
                sink.append(time.time() - f["t"])

    ta = threading.Thread(target=reader, args=(ws, ours, frames))
    tb = threading.Thread(target=reader, args=(floor, base, frames))
    ta.start()
    tb.start()
    # Half a period apart: published back to back, the second publish's Python work (in this
    # process, holding the GIL) delayed the reading of the first one's frame, always ours.
    for _ in range(frames):
        log.append({"type": "token", "turn": turn, "text": "x", "t": time.time()})
        time.sleep(0.5 / rate)
        client.publish("floor", json.dumps({"t": time.time()}))
        time.sleep(0.5 / rate)
    ta.join(60)
    tb.join(60)
    ws.close()
    floor.close()
    return ours, base


def main() -> None:
    """Start services, a web + worker stack on instant scripted models, the floor server."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--frames", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=200.0)
    args = ap.parse_args()
    with conftest.bench_services() as (services, scripted):
        fast = {"ASSISTANT_ANSWER_LLM_BASE_URL": f"{scripted}/v1",
                "ASSISTANT_LLM_BASE_URL": f"{scripted}/v1",
                "ASSISTANT_EMBEDDING_BASE_URL": f"{scripted}/v1",
                # One client asks back to back: more frames a second than a person sends.
                "ASSISTANT_WS_FRAMES_PER_SECOND": "100000",
                "ASSISTANT_REDIS_URL": conftest.redis_url(9)}
        st = conftest.start_stack(services, "latency", conftest.port(8018), fast)
        relay_st = conftest.start_stack(services, "relay", conftest.port(8020), {
            **fast, "ASSISTANT_REDIS_URL": conftest.redis_url(8)})
        relay_st.sup.stop(next(p for p in relay_st.sup.procs if p.name.endswith("worker")))
        floor = services.start("floor", [sys.executable, "-m", "gunicorn", "-k", "gevent", "-w",
                                         "1", "-b", f"127.0.0.1:{FLOOR_PORT}",
                                         "bench.floor_ws:app"],
                               env={**os.environ, "FLOOR_REDIS": conftest.redis_url(8)})
        stack.wait_until(lambda: not stack.port_free("127.0.0.1", FLOOR_PORT), 30, "floor",
                         floor)
        try:
            ft = first_token_overhead(st, args.turns)
            print(f"before first token (instant models), {len(ft)} turns: "
                  f"p50 {pct(ft, .5):.1f} ms, p95 {pct(ft, .95):.1f} ms, "
                  f"p99 {pct(ft, .99):.1f} ms")
            for name, values in STEPS.items():
                print(f"   {name:<28} p50 {pct(values, .5):6.2f} ms")
            ours, base = relay_latency(relay_st, args.frames, args.rate)
            print(f"relay at {args.rate:.0f} frames/s, {len(ours)} frames: ours p50 "
                  f"{pct(ours, .5):.2f} / p95 {pct(ours, .95):.2f} / p99 {pct(ours, .99):.2f} ms;"
                  f" floor p50 {pct(base, .5):.2f} / p95 {pct(base, .95):.2f} / p99 "
                  f"{pct(base, .99):.2f} ms; ratio p50 {pct(ours, .5) / pct(base, .5):.2f}x, "
                  f"p99 {pct(ours, .99) / pct(base, .99):.2f}x")
        finally:
            st.sup.stop_all()
            relay_st.sup.stop_all()


if __name__ == "__main__":
    main()
