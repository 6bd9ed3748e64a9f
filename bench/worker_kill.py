"""Worker SIGKILL mid-turn, many rounds: a complete answer from a re-run or an error frame
within 60 s, never silence. The rounds are tests/worker_kill_rounds.py.

Run: .venv/bin/python -m bench.worker_kill --rounds 20
(starts the test services itself: Redis db 11, the embedded PostgreSQL, two workers, web.)
"""

from __future__ import annotations

import argparse

from tests.conftest import start_worker
from tests.worker_kill_rounds import KILL_ENV, run


def main() -> None:
    """Start the services and a two-worker stack, then run the rounds."""
    from tests import conftest

    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    with conftest.bench_services() as (services, scripted):
        stack = conftest.start_stack(services, "kill", conftest.port(8016), {
            **KILL_ENV, "ASSISTANT_ANSWER_LLM_BASE_URL": f"{scripted}/v1"})
        start_worker(stack.sup, "kill-second", stack.env)
        try:
            outcomes = run(stack, scripted, args.rounds)
        finally:
            stack.sup.stop_all()
        print("outcomes:", dict(outcomes))


if __name__ == "__main__":
    main()
