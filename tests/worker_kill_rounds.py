"""Worker SIGKILL mid-turn: the client must get a complete answer from a re-run or an error
frame within 60 s, never silence. Repeats and counts outcomes.

tests/test_worker_faults.py runs a few rounds; bench/worker_kill.py runs many and counts them.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from typing import Any

from simple_websocket import Client

from assistant_cli.client import ws_url
from shared import turns
from shared.redis_client import redis_client
from tests.conftest import ALLOC, Stack, set_script, start_worker
from tests.wsutil import app_token, get_ticket

# A killed worker leaves its turn's message unacknowledged in the broker, to be redelivered:
# the kill stack's database is its own, so no other stack's worker ever receives it.
KILL_ENV = {"ASSISTANT_REDIS_URL": ALLOC.redis_url("worker kill stack")}
KILL_PORT = ALLOC.port("worker kill stack")
CHUNKS = [f"part{i} " for i in range(60)] + ["end [1]."]


def kill_round(stack: Stack, scripted: str, n: int) -> tuple[str, float]:
    """One turn whose worker is killed after a few tokens: (outcome, seconds to terminal)."""
    set_script(scripted, CHUNKS, delay_s=0.05)
    ws = Client.connect(ws_url(stack.base_url, get_ticket(stack.base_url, app_token(stack))))
    frames: list[dict[str, Any]] = []
    try:
        ws.send(json.dumps({"type": "ask", "message": f"How does the search work? ({n})"}))
        while sum(f["type"] == "token" for f in frames) < 3:
            frames.append(json.loads(ws.receive(timeout=30)))
        holder = turns.lease_holder(redis_client(stack.settings), frames[0]["turn"])
        assert holder is not None, "a running turn holds a lease"
        pid = int(holder.split(":")[1])
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        while frames[-1]["type"] not in ("done", "error"):
            raw = ws.receive(timeout=max(0.1, 60 - (time.monotonic() - killed)))
            if raw is None:
                return "silence", time.monotonic() - killed
            frames.append(json.loads(raw))
        took = time.monotonic() - killed
    finally:
        ws.close()
    seqs = [f["seq"] for f in frames if "seq" in f]
    assert seqs == list(range(len(seqs))), "gapless across the re-run"
    last = frames[-1]
    if last["type"] == "error":
        return f"error {last['code']}", took
    text = ""
    for f in frames:
        text = "" if f["type"] == "restart" else text + f.get("text", "")
    if text != last["answer"]:
        return "done but text differs", took
    if last["answer"] != "".join(CHUNKS):
        return "done but not the scripted answer", took
    ok = any(f["type"] == "restart" for f in frames)
    return ("complete after re-run" if ok else "done without a re-run"), took


def run(stack: Stack, scripted: str, rounds: int) -> Counter[str]:
    """Repeat kill rounds, starting a replacement worker after each kill."""
    outcomes: Counter[str] = Counter()
    for n in range(rounds):
        outcome, took = kill_round(stack, scripted, n)
        outcomes[outcome] += 1
        print(f"round {n + 1:>2}: {outcome:<24} {took:5.1f} s after SIGKILL", flush=True)
        start_worker(stack.sup, f"kill-extra{n}", stack.env)
    return outcomes
