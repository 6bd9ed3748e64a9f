"""The whole stack (web A and B, a worker) on a Sentinel-managed Redis, its primary SIGKILLed
mid-turn (tests/fault_rounds.py's failover round; bench/faults.py runs ten): every turn ends
with a complete answer or an error frame with a plain message, no silence, no gap or
duplicate shown, and new questions are accepted again once the replica is promoted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assistant_cli import stack
from tests import fault_rounds as faults
from tests.fault_rounds import LIMIT_S, FaultStack

ROUNDS = 2


@pytest.fixture(scope="module")
def fs(services: stack.Supervisor, scripted_llm: str) -> Iterator[FaultStack]:
    with faults.fault_stack(services, scripted_llm, sentinel=True) as f:
        yield f


def test_the_primary_killed_mid_turn_never_shows_a_gap_and_asks_come_back(
        fs: FaultStack) -> None:
    for n in range(ROUNDS):
        turn, again = faults.r_failover(fs, n)
        assert turn.outcome in ("complete", "error 503"), turn
        if turn.outcome == "error 503":
            assert turn.message == "The answer was interrupted. Please ask again.", turn
        assert turn.took < LIMIT_S, turn
        assert again.outcome == "asks accepted again", again
    # After the rounds the stack answers in full on the promoted replica.
    faults.set_script(fs.scripted, faults.CHUNKS)
    after = faults.ask(fs, "How does the search work? (after the failovers)", None)
    assert after.outcome == "complete", after
