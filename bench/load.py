"""Load run: 2 web processes, 200 concurrent WebSocket clients on loopback, bounded in time.

Checks, from the server's own records:
- accepted messages (the traces table: one row per turn that ran) never exceed the per-user
  or the global limit in any window;
- in-flight turns per user, sampled every 10 ms from the slot sets in Redis, never exceed 2;
- a worker killed mid-turn whose client is gone frees its slot within the lease time.

Run: .venv/bin/python -m bench.load --clients 200 --seconds 20
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time
from collections import Counter

import psycopg
import redis
from simple_websocket import Client, ConnectionClosed

from assistant_cli.client import ClientError, get_ticket, ws_url
from shared import keys, turns
from shared.auth import mint_access_token
from tests import conftest

USERS = 40
USER_LIMIT, GLOBAL_LIMIT, WINDOW_S = 8, 120, 60
LEASE_S = 4


def client_loop(base: str, secret: str, user: str, stop: float, out: Counter[str]) -> None:
    """Ask again and again until `stop`; count outcomes."""
    token = mint_access_token(user, secret)
    while time.monotonic() < stop:
        try:
            ws = Client.connect(ws_url(base, get_ticket(base, token)))
        except (ClientError, OSError, ConnectionClosed):
            out["ticket refused"] += 1
            time.sleep(0.5)
            continue
        try:
            while time.monotonic() < stop:
                ws.send(json.dumps({"type": "ask", "message": "How does the search work?"}))
                while True:
                    raw = ws.receive(timeout=30)
                    if raw is None:
                        out["silence"] += 1
                        break
                    f = json.loads(raw)
                    if f["type"] == "done":
                        out["done"] += 1
                        break
                    if f["type"] == "error":
                        out[f"error {f['code']}: {f['message'][:60]}"] += 1
                        time.sleep(min(2.0, f.get("retry_after", 1)))
                        break
        except ConnectionClosed:
            out["closed"] += 1
        finally:
            ws.close()


def sample_inflight(client: redis.Redis, users: list[str], stop: float,
                    peak: Counter[str]) -> None:
    """Every 10 ms: live slots per user (deadline in the future), keep the maximum."""
    while time.monotonic() < stop:
        now_ms = int(client.time()[0] * 1000)
        pipe = client.pipeline(transaction=False)
        for u in users:
            pipe.zcount(keys.slots_user(u), now_ms, "+inf")  # keys hash the user id
        for u, n in zip(users, pipe.execute(), strict=True):
            peak[u] = max(peak[u], int(n))
        time.sleep(0.01)


def max_in_window(times: list[float], window: float) -> int:
    """The largest number of events inside any window of that length."""
    times = sorted(times)
    best, start = 0, 0
    for end in range(len(times)):
        while times[end] - times[start] >= window:
            start += 1
        best = max(best, end - start + 1)
    return best


def killed_slot_frees(st: conftest.Stack, secret: str) -> float:
    """Seconds until a killed worker's slot is free again (its client already gone)."""
    client = redis.Redis.from_url(st.settings.redis_url)
    for key in client.scan_iter(f"{keys.RATE_PREFIX}*"):  # the load used up the quotas
        client.delete(key)
    conftest.set_script(conftest.start_scripted(st.sup), [f"w{i} " for i in range(400)],
                        delay_s=0.05)
    user = "kill-user"
    ws = Client.connect(ws_url(st.base_url, get_ticket(st.base_url,
                                                        mint_access_token(user, secret))))
    ws.send(json.dumps({"type": "ask", "message": "How does the search work?"}))
    first = json.loads(ws.receive(timeout=10))
    if first["type"] != "accepted":
        raise RuntimeError(f"the probe turn was refused: {first}")
    turn = first["turn"]
    deadline = time.monotonic() + 30
    while turns.lease_holder(client, turn) is None:
        if time.monotonic() > deadline:
            raise RuntimeError("no worker took the probe turn")
        time.sleep(0.05)
    ws.close()  # nobody watches the turn any more: no re-run
    time.sleep(0.5)
    pid = int(str(turns.lease_holder(client, turn)).split(":")[1])
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    key = keys.slots_user(user)
    while time.monotonic() - killed < 3 * LEASE_S + 10:
        if client.zcount(key, int(client.time()[0] * 1000), "+inf") == 0:
            return time.monotonic() - killed
        time.sleep(0.05)
    return float("inf")


def main() -> None:
    """Start the stack, run the clients, check the records."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=20)
    args = ap.parse_args()
    with conftest.bench_services() as (services, scripted):
        conftest.set_script(scripted, [f"t{i} " for i in range(10)] + ["[1]."], delay_s=0.05)
        env = {"ASSISTANT_REDIS_URL": conftest.redis_url(3),
               "ASSISTANT_ANSWER_LLM_BASE_URL": f"{scripted}/v1",
               "ASSISTANT_EMBEDDING_BASE_URL": f"{scripted}/v1",
               "ASSISTANT_USER_MESSAGE_LIMIT": f"{USER_LIMIT}/minute",
               "ASSISTANT_GLOBAL_MESSAGE_LIMIT": f"{GLOBAL_LIMIT}/minute",
               "ASSISTANT_CLIENT_REQUEST_LIMIT": "100000/minute",
               "ASSISTANT_MAX_TURNS_PER_USER": "2",
               "ASSISTANT_MAX_TURNS_PER_PROCESS": "8",
               "ASSISTANT_SLOT_LEASE_S": str(LEASE_S)}
        st = conftest.start_stack(services, "load", conftest.port(8024), env)
        # Two web processes: a second gunicorn worker process set on another port would
        # split the clients; one gunicorn with two worker processes shares one port.
        st.sup.stop(next(p for p in st.sup.procs if p.name.endswith("web")))
        conftest.start_processes(st.sup, conftest.Plan(
            var_dir=conftest.VAR, name="load", web_bind=f"127.0.0.1:{conftest.port(8024)}",
            web_workers=2, worker=False, beat=False, flower=False),
            env=conftest.stack_env(env))
        conftest.start_worker(st.sup, "load-second", st.env)
        client = redis.Redis.from_url(st.settings.redis_url)
        client.flushdb()
        secret = st.settings.app_jwt_secret
        users = [f"load-user-{i}" for i in range(USERS)]
        started_at = time.time()
        stop = time.monotonic() + args.seconds
        outcomes: Counter[str] = Counter()
        peak: Counter[str] = Counter()
        threads = [threading.Thread(target=client_loop, args=(
            st.base_url, secret, users[i % USERS], stop, outcomes), daemon=True)
            for i in range(args.clients)]
        sampler = threading.Thread(target=sample_inflight, args=(
            client, users, stop, peak), daemon=True)
        sampler.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join(args.seconds + 60)
        sampler.join(5)
        time.sleep(2)  # traces are written just after each done frame
        with psycopg.connect(st.settings.assistant_dsn) as conn:
            rows = conn.execute(
                "SELECT user_hash, extract(epoch from created_at) FROM traces "
                "WHERE created_at >= to_timestamp(%s) AND attempt = 1", (started_at,)).fetchall()
        per_user: dict[str, list[float]] = {}
        for u, t in rows:
            per_user.setdefault(u, []).append(float(t))
        worst_user = max((max_in_window(v, WINDOW_S) for v in per_user.values()), default=0)
        worst_global = max_in_window([float(t) for _, t in rows], WINDOW_S)
        print(f"{args.clients} clients, {USERS} users, {args.seconds:.0f} s, 2 web processes, "
              f"2 workers")
        print(f"outcomes: {dict(outcomes)}")
        print(f"turns run (traces): {len(rows)}; most in any {WINDOW_S}s window: per user "
              f"{worst_user} (limit {USER_LIMIT}), all users {worst_global} "
              f"(limit {GLOBAL_LIMIT})")
        print(f"in-flight per user, max of 10 ms samples: {max(peak.values(), default=0)} "
              f"(cap 2)")
        freed = killed_slot_frees(st, secret)
        print(f"worker SIGKILL mid-turn (client gone): slot free after {freed:.1f} s "
              f"(lease {LEASE_S} s)")
        ok = (worst_user <= USER_LIMIT and worst_global <= GLOBAL_LIMIT
              and max(peak.values(), default=0) <= 2 and freed <= LEASE_S + 1)
        print("all limits held" if ok else "A LIMIT WAS EXCEEDED")
        st.sup.stop_all()


if __name__ == "__main__":
    main()
