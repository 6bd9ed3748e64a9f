"""A worker killed mid-turn: the client gets a complete answer from a re-run (or an error frame)
within 60 s, never silence. bench/worker_kill.py repeats this 20 times and counts outcomes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assistant_cli import stack
from tests.conftest import Stack, start_stack, start_worker
from tests.worker_kill_rounds import KILL_ENV, KILL_PORT, run


@pytest.fixture()
def two_worker_stack(services: stack.Supervisor, scripted_llm: str) -> Iterator[Stack]:
    s = start_stack(services, "kill", KILL_PORT, {
        **KILL_ENV, "ASSISTANT_ANSWER_LLM_BASE_URL": f"{scripted_llm}/v1"})
    start_worker(s.sup, "kill-second", s.env)
    try:
        yield s
    finally:
        s.sup.stop_all()


def test_killed_worker_turn_is_rerun_to_completion(two_worker_stack: Stack,
                                                   scripted_llm: str) -> None:
    outcomes = run(two_worker_stack, scripted_llm, rounds=2)
    assert outcomes == {"complete after re-run": 2}
