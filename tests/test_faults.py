"""A few rounds per fault class of tests/fault_rounds.py (bench/faults.py runs many): every round
ends in a complete answer or an error frame with a plain message, within the time limits;
no silence, no lost or duplicated text. Worker SIGKILL: tests/test_worker_faults.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assistant_cli import stack
from assistant_cli.client import RESTART_CLOSE, stream_turn
from tests import fault_rounds as faults
from tests.fault_rounds import LIMIT_S, FaultStack, Result

ROUNDS = 2
DOWN = "The document index is unavailable right now. Please try again shortly."


@pytest.fixture(scope="module")
def fs(services: stack.Supervisor, scripted_llm: str) -> Iterator[FaultStack]:
    with faults.fault_stack(services, scripted_llm) as f:
        yield f


def rounds(fs: FaultStack, fault: object, n: int = ROUNDS) -> list[Result]:
    out: list[Result] = []
    for i in range(n):
        got = fault(fs, i)  # type: ignore[operator]
        out += got if isinstance(got, list) else [got]
    for r in out:
        assert r.took < LIMIT_S, r
    return out


def test_redis_restart_mid_stream_ends_in_an_error_frame(fs: FaultStack) -> None:
    for r in rounds(fs, faults.r_redis):
        assert r.outcome == "error 503", r
        assert r.message == "The answer was interrupted. Please ask again."


def test_postgres_down_during_a_question_then_back(fs: FaultStack) -> None:
    got = rounds(fs, faults.r_pg_question)
    assert [r.outcome for r in got] == ["error 503", "next question: complete"] * ROUNDS
    assert got[0].message == DOWN


def test_postgres_stopped_mid_stream_the_answer_completes(fs: FaultStack) -> None:
    for r in rounds(fs, faults.r_pg_mid):
        assert r.outcome == "complete", r


def test_postgres_stopped_during_a_rebuild_old_index_serves_and_rebuild_resumes(
        fs: FaultStack) -> None:
    got = [r.outcome for r in rounds(fs, faults.r_pg_rebuild, 1)]
    assert got == ["rebuild failed", "question after: complete", "rebuild resumed"]


def test_chat_model_that_hangs_times_out_at_first_token_limit(fs: FaultStack) -> None:
    for r in rounds(fs, faults.r_hang):
        assert r.outcome == "error 504", r
        assert faults.FIRST_TOKEN_S - 0.5 < r.took < faults.FIRST_TOKEN_S + 3


def test_chat_model_dying_mid_stream_is_an_error_not_a_cut_answer(fs: FaultStack) -> None:
    for r in rounds(fs, faults.r_dies):
        assert r.outcome == "error 503", r


def test_slow_chat_model_ends_at_the_answer_limit(fs: FaultStack) -> None:
    for r in rounds(fs, faults.r_slow, 1):
        assert r.outcome == "error 504", r
        assert r.took < faults.ANSWER_S + 3


def test_embeddings_server_down_is_an_error_frame(fs: FaultStack) -> None:
    for r in rounds(fs, faults.r_embeddings, 1):
        assert r.outcome == "error 503", r


def test_web_worker_killed_client_resumes_on_the_other_web(fs: FaultStack) -> None:
    for r in rounds(fs, faults.r_web_kill):
        assert r.outcome == "complete (resumed)", r


def test_web_reload_tells_the_socket_to_reconnect_at_once(fs: FaultStack) -> None:
    # A HUP replaces web A's gunicorn worker: the old one closes its sockets with 1012 at
    # once (not after the 10 s graceful timeout); the client resumes on web B.
    for r in rounds(fs, faults.r_web_hup):
        assert r.outcome == "complete (resumed)", r
        assert r.closes == (RESTART_CLOSE,), r
        assert r.took < 5, r


def test_web_sigterm_mid_stream_resumes_on_the_other_web(fs: FaultStack) -> None:
    got = rounds(fs, faults.r_web_term)
    assert [r.outcome for r in got] == ["complete (resumed)", "web A exited after SIGTERM"
                                        ] * ROUNDS, got
    for r in got[::2]:
        assert r.closes == (RESTART_CLOSE,) and r.took < 5, r


def test_worker_sigterm_mid_turn_finishes_it_and_takes_no_new_one(fs: FaultStack) -> None:
    got = rounds(fs, faults.r_worker_term)
    assert [r.outcome for r in got] == ["complete", "next turn: complete",
                                        "stopped worker exited (0)"] * ROUNDS, got


def test_the_cli_resumes_at_once_when_the_server_restarts(fs: FaultStack) -> None:
    # The CLI (assistant_cli.client.stream_turn) against web A alone, reloaded mid-stream:
    # the closing socket says 1012 and a new one on the same address resumes the turn.
    faults.set_script(fs.scripted, faults.CHUNKS, delay_s=0.05)
    token = faults.app_token(fs.stack, "fault-cli")
    frames: list[dict[str, object]] = []
    for frame in stream_turn(fs.urls[0], token, "How does the search work? (cli)",
                             timeout_s=faults.LIMIT_S):
        frames.append(frame)
        if frame["type"] == "token" and sum(f["type"] == "token" for f in frames) == 3:
            faults.hup_web(fs)
    assert faults.classify(frames, faults.EXPECTED) == "complete", frames


def test_index_swaps_while_clients_ask_fail_no_read(fs: FaultStack) -> None:
    got = faults.r_swaps(fs, 0, swaps=3, clients=4)
    assert got and {r.outcome for r in got} == {"complete"}, got
