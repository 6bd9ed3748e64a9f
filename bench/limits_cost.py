"""Cost of one message's full limit checks against a real Redis (goal: p99 <= 2 ms).

One iteration = the admission script (the address's request window, the in-flight caps and
the per-user, per-address, global and daily message windows, one EVALSHA) + the slot's release,
as a web process and its worker do for every SSE turn (a WebSocket turn counts no request
window: its ticket did). Run:

    .venv/bin/python -m bench.limits_cost [--redis-url redis://127.0.0.1:6379/7] [-n 2000]

It deletes the assistant's `ba:*` keys in that database before and after the run. Interleaved
with each iteration it times the same number of round trips as bare PINGs: the floor set by the
network and the scheduler, so a noisy p99 on a busy machine can be told apart from the limits'
own cost.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial

import redis

from shared.config import settings_from_env
from shared.limits import Admission, Leases, Limiter


def _clean(client: redis.Redis) -> None:
    for key in client.scan_iter("ba:*", count=1000):
        client.delete(key)


# admit 1 (request window, caps and message windows in one script), release 1 (one script);
# tests/test_limits_round_trips.py counts them.
ROUND_TRIPS = 2


def _percentiles(samples: list[float]) -> str:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return (f"p50 {cuts[49]:.3f} ms  p90 {cuts[89]:.3f} ms  p99 {cuts[98]:.3f} ms  "
            f"max {max(samples):.3f} ms")


def main() -> None:
    """Time n iterations after a warm-up and print percentiles in milliseconds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/7")
    parser.add_argument("-n", type=int, default=2000)
    args = parser.parse_args()
    # Real per-user and per-address limits, spread over enough users and addresses that none
    # refuses; the global and daily windows are raised so they never refuse either, which
    # leaves them holding n entries: a longer list than the real 600/hour ever keeps.
    settings = settings_from_env({
        "ASSISTANT_REDIS_URL": args.redis_url,
        "ASSISTANT_GLOBAL_MESSAGE_LIMIT": "1000000/hour",
        "ASSISTANT_DAILY_QUESTION_CAP": "1000000",
    })
    client = redis.Redis.from_url(args.redis_url)
    _clean(client)
    limiter, leases = Limiter(settings, client), Leases(settings, client)
    admission = Admission(limiter, leases, client)
    message = "How is the BeCoMe consensus computed? " * 20

    def once(i: int) -> None:
        addr = f"198.51.{i % 250}.{i % 7}"
        admission.admit(f"user-{i % 400}", message, f"turn-{i}", "web-bench", "en", addr,
                        addr)
        leases.release(f"turn-{i}")

    def timed(fn: Callable[[], object]) -> float:
        start = time.perf_counter_ns()
        fn()
        return (time.perf_counter_ns() - start) / 1e6

    def pings(n: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(n):
                client.ping()
        return run

    try:
        for i in range(100):  # warm-up: connections, script loading
            once(1_000_000 + i)
        samples: list[float] = []
        floor: list[float] = []
        for i in range(args.n):
            samples.append(timed(partial(once, i)))
            floor.append(timed(pings(ROUND_TRIPS)))
    finally:
        _clean(client)
    p99 = statistics.quantiles(samples, n=100, method="inclusive")[98]
    info = client.info("server")
    print(f"limits_cost: {args.n} iterations against Redis {info['redis_version']} at "
          f"{args.redis_url}")
    print("one message = admit (request window, caps, message windows: one script) + release"
          f" = {ROUND_TRIPS} round trips; interleaved in the same loop:")
    print(f"limit checks         {_percentiles(samples)}  mean {statistics.fmean(samples):.3f} ms")
    print(f"{ROUND_TRIPS} bare PINGs         {_percentiles(floor)}  "
          f"mean {statistics.fmean(floor):.3f} ms")
    print(f"goal p99 <= 2 ms: {'met' if p99 <= 2.0 else 'NOT met'} (p99 {p99:.3f} ms)")


if __name__ == "__main__":
    main()
