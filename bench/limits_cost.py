"""Cost of one message's full limit checks against a real Redis (goal: p99 <= 2 ms).

One iteration = check_request + check_message (per-user, global and daily windows) + acquire
+ release, as a web process does for every turn. Run:

    .venv/bin/python -m bench.limits_cost [--redis-url redis://127.0.0.1:6379/7] [-n 2000]

It deletes the assistant's `ba:*` keys in that database before and after the run. It also
times the same number of round trips as bare PINGs: the floor set by the network and the
scheduler, so a noisy p99 on a busy machine can be told apart from the limits' own cost.
"""

from __future__ import annotations

import argparse
import statistics
import time

import redis

from shared.config import settings_from_env
from shared.limits import Leases, Limiter


def _clean(client: redis.Redis) -> None:
    for key in client.scan_iter("ba:*", count=1000):
        client.delete(key)


# check_request 1, check_message 1 (every window in one script: user, global, daily),
# acquire 1, release 1 (one script); tests/test_limits_round_trips.py counts them.
ROUND_TRIPS = 4


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
    message = "How is the BeCoMe consensus computed? " * 20

    def once(i: int) -> None:
        limiter.check_request(f"198.51.{i % 250}.{i % 7}")
        limiter.check_message(f"user-{i % 400}", message, "en")
        leases.acquire(f"user-{i % 400}", f"turn-{i}", "web-bench")
        leases.release(f"turn-{i}")

    try:
        for i in range(100):  # warm-up: connections, script loading
            once(1_000_000 + i)
        samples, floor = [], []
        for i in range(args.n):
            start = time.perf_counter_ns()
            once(i)
            samples.append((time.perf_counter_ns() - start) / 1e6)
            start = time.perf_counter_ns()
            for _ in range(ROUND_TRIPS):
                client.ping()
            floor.append((time.perf_counter_ns() - start) / 1e6)
    finally:
        _clean(client)
    p99 = statistics.quantiles(samples, n=100, method="inclusive")[98]
    info = client.info("server")
    print(f"limits_cost: {args.n} iterations against Redis {info['redis_version']} at "
          f"{args.redis_url}")
    print("one message = check_request + check_message (user, global, daily) + acquire "
          f"+ release = {ROUND_TRIPS} round trips")
    print(f"limit checks      {_percentiles(samples)}  mean {statistics.fmean(samples):.3f} ms")
    print(f"{ROUND_TRIPS} bare PINGs      {_percentiles(floor)}  "
          f"mean {statistics.fmean(floor):.3f} ms")
    print(f"goal p99 <= 2 ms: {'met' if p99 <= 2.0 else 'NOT met'} (p99 {p99:.3f} ms)")


if __name__ == "__main__":
    main()
