"""The fault suite's full run: many rounds per fault class, every outcome counted in a table.

The rounds themselves are tests/fault_rounds.py (tests/test_faults.py runs a few of each).
Goal: no silence and no lost or duplicated text in any round; every failure is an error frame
with a plain message within LIMIT_S.

Run: BA_TEST_PORT_OFFSET=800 .venv/bin/python -m bench.faults --rounds 10 [--only NAME ...]
(names: FAULTS in tests/fault_rounds.py; worker SIGKILL rounds: bench/worker_kill.py).
The rolling upgrade goes from a checkout of the previous release and back, e.g.
  git worktree add --detach /tmp/old-release <commit> &&
  .venv/bin/python -m bench.faults --only rollout --rounds 1 --old-release /tmp/old-release
(without --old-release it restarts this release the same way).
The Sentinel failover (`--only failover`) runs on a stack whose Redis is a primary, a replica
and three Sentinels (Debian's redis-sentinel); its rounds also print the seconds from the kill
until a new question is accepted.
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

from tests import fault_rounds
from tests.fault_rounds import FAULTS, ON_SENTINEL, SHORT, fault_stack, run


def main() -> None:
    """Start the services and the fault stack; run the rounds; print the table."""
    from tests import conftest

    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--swap-rounds", type=int, default=1)
    ap.add_argument("--only", nargs="*", default=None, help=" ".join(SHORT))
    ap.add_argument("--old-release", type=Path, default=None,
                    help="a checkout of the previous release, for the rolling upgrade")
    ap.add_argument("--rollout-turns", type=int, default=50)
    args = ap.parse_args()
    FAULTS[SHORT["rollout"]] = functools.partial(
        fault_rounds.r_rollout, old=args.old_release, min_turns=args.rollout_turns)
    names = [SHORT[s] for s in args.only] if args.only else list(FAULTS)
    rows = []
    with conftest.bench_services() as (services, scripted):
        # The rounds on one Redis server first, then those on a Sentinel-managed one, each
        # group on a fault stack of its own.
        for sentinel in (False, True):
            group = [n for n in names if (n in ON_SENTINEL) == sentinel]
            if not group:
                continue
            with fault_stack(services, scripted, sentinel=sentinel) as fs:
                for name in group:
                    rounds = args.swap_rounds if name.startswith("50 index") else \
                        1 if name == SHORT["rollout"] else args.rounds
                    outcomes, worst = run(fs, name, rounds)
                    rows.append((name, rounds, outcomes, worst))
    print("\n| fault | rounds | outcomes | worst time to final frame |\n|---|---|---|---|")
    for name, rounds, outcomes, worst in rows:
        counted = ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items()))
        print(f"| {name} | {rounds} | {counted} | {worst:.1f} s |")


if __name__ == "__main__":
    main()
