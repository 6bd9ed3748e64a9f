"""docker/smoke.py's counting of the turns of its rolling upgrade, without Docker: a gap or a
repeat in `seq`, a streamed text other than the answer, or any error frame but the time
limit's fails the smoke (`make docker-smoke` runs the rest for real)."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

SMOKE = Path(__file__).resolve().parent.parent / "docker" / "smoke.py"
spec = importlib.util.spec_from_file_location("docker_smoke", SMOKE)
assert spec is not None and spec.loader is not None
smoke = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = smoke  # dataclasses look their module up there
spec.loader.exec_module(smoke)


def turn(*texts: str, answer: str | None = None, start: int = 0,
         final: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """accepted, one token frame per text, then done (or `final`), numbered from `start`."""
    frames: list[dict[str, Any]] = [{"type": "accepted", "turn": "t1"}]
    frames += [{"type": "token", "text": t} for t in texts]
    frames.append(final or {"type": "done", "answer": "".join(texts) if answer is None
                            else answer})
    return [dict(f, seq=start + i) for i, f in enumerate(frames)]


def test_a_whole_answer_is_complete() -> None:
    assert smoke.classify(turn("The search ", "uses BM25 [1].")) == "complete"
    assert smoke.classify(turn("a", "b"), resumes=1) == "complete (resumed)"


def test_a_gap_in_seq_is_lost_frames() -> None:
    frames = turn("a", "b", "c")
    del frames[2]
    assert smoke.classify(frames) == "lost frames (a gap in seq)"
    assert smoke.classify(turn("a", start=1)) == "lost frames (a gap in seq)"


def test_a_repeated_seq_is_duplicate_frames() -> None:
    frames = turn("a", "b")
    frames.insert(2, dict(frames[1]))
    assert smoke.classify(frames) == "duplicate frames"


def test_a_streamed_text_other_than_the_answer_is_caught() -> None:
    assert smoke.classify(turn("a", "b", answer="a b c")) == \
        "streamed text differs from the answer"


def test_a_restart_frame_starts_the_text_again() -> None:
    frames = turn("lost words ", "An answer.", answer="An answer.")
    frames[1:2] = [{"type": "restart"}]
    frames = [dict(f, seq=i) for i, f in enumerate(frames)]
    assert smoke.classify(frames) == "complete"


@pytest.mark.parametrize(("outcome", "fails"), [
    ("complete", False), ("complete (resumed)", False), ("error 504", False),
    ("error 503", True), ("silent", True), ("lost frames (a gap in seq)", True),
    ("duplicate frames", True), ("lost: no socket to resume on", True),
    ("error: socket closed (1012) before the turn was accepted", True), ("running", True),
])
def test_what_fails_the_smoke(outcome: str, fails: bool) -> None:
    assert smoke.failed_turn(outcome) is fails


def test_an_error_frame_is_counted_by_its_code() -> None:
    final = {"type": "error", "code": 503, "message": "Please ask again."}
    assert smoke.classify(turn("a", final=final)) == "error 503"


def test_the_grace_periods_are_compose_s() -> None:
    """`docker stop --time` in the smoke is each service's stop_grace_period."""
    text = (SMOKE.parent / "compose.yaml").read_text(encoding="utf-8")
    assert smoke.GRACE_S == smoke.grace_periods(text)
    assert smoke.GRACE_S["worker"] == 190 and smoke.GRACE_S["web"] >= 25


def test_each_failed_turn_is_placed_against_the_sigterms() -> None:
    terms = [("worker a", 40.0), ("web b", 120.5)]
    assert smoke.since_sigterm(10.0, terms) == "before any SIGTERM"
    assert smoke.since_sigterm(123.0, terms) == "2.5s after the SIGTERM of web b"


class FakeSocket:
    """A socket through the proxy: the server's frames, then a close with `code`."""

    def __init__(self, frames: list[dict[str, Any]], code: int | None = None) -> None:
        self.frames = [json.dumps(f) for f in frames]
        self.code = code
        self.sent: list[dict[str, Any]] = []

    def send(self, text: str) -> None:
        self.sent.append(json.loads(text))

    def recv(self, timeout: float | None = None) -> str:
        from websockets.exceptions import ConnectionClosed
        from websockets.frames import Close

        if self.frames:
            return self.frames.pop(0)
        raise ConnectionClosed(Close(self.code or 1006, ""), None)

    def close(self) -> None:
        pass


def run_turn(monkeypatch: pytest.MonkeyPatch, *socks: FakeSocket) -> Any:
    left = list(socks)
    monkeypatch.setattr(smoke, "open_socket", lambda token: left.pop(0))
    client = smoke.LoadClient(0, "s" * 32, threading.Event(), [], threading.Lock())
    t = smoke.Turn(0, time.monotonic())
    client.one(t, "How does the search work?")
    return t


def test_a_1012_before_accepted_is_asked_again_as_the_panel_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    first = FakeSocket([], code=1012)
    second = FakeSocket(turn("An answer."))
    t = run_turn(monkeypatch, first, second)
    assert t.outcome == "complete" and t.reasks == 1 and t.closes == [1012]
    assert first.sent == second.sent and second.sent[0]["type"] == "ask"


def test_any_other_close_before_accepted_fails_the_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    t = run_turn(monkeypatch, FakeSocket([], code=1006))
    assert t.outcome == "error: socket closed (1006) before the turn was accepted"
    assert smoke.failed_turn(t.outcome)
    # A server that keeps closing before accepting: given up after MAX_REASKS asks again.
    t = run_turn(monkeypatch, *[FakeSocket([], code=1012) for _ in range(smoke.MAX_REASKS + 1)])
    assert t.outcome == "error: socket closed (1012) before the turn was accepted"
    assert t.reasks == smoke.MAX_REASKS


def test_connections_open_on_a_web_container_are_read_from_its_proc_net_tcp(
        monkeypatch: pytest.MonkeyPatch) -> None:
    table = """  sl  local_address rem_address   st tx_queue rx_queue
   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000
   1: 0B07590A:1F40 FA07590A:B2C4 01 00000000:00000000 00:00000000 00000000
   2: 0B07590A:1F40 FA07590A:B2C6 01 00000000:00000000 00:00000000 00000000
   3: 0100007F:1F40 0100007F:9C40 01 00000000:00000000 00:00000000 00000000
   4: 0B07590A:9A10 0207590A:18EB 01 00000000:00000000 00:00000000 00000000
   5: 0B07590A:1F40 FA07590A:B2C8 06 00000000:00000000 00:00000000 00000000
"""

    class Done:
        stdout = table

    monkeypatch.setattr(smoke.subprocess, "run", lambda *a, **k: Done())
    # Two from the proxy; not the listener, the health check, Redis or a closing one.
    assert smoke.open_connections("cid") == 2


class ClosedOnSend(FakeSocket):
    """A socket a stopping container closes with 1012 as soon as it opens."""

    def send(self, text: str) -> None:
        from websockets.exceptions import ConnectionClosedError
        from websockets.frames import Close

        raise ConnectionClosedError(Close(1012, "restart"), Close(1012, "restart"), True)


def test_a_socket_closed_as_the_ask_is_sent_is_a_close_like_any_other(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The third run: a socket opened to a container that had just begun to stop raised from
    # send(), a "client error" instead of the ask again.
    second = FakeSocket(turn("An answer."))
    t = run_turn(monkeypatch, FakeSocket([], code=1012), ClosedOnSend([]), second)
    assert t.outcome == "complete" and t.reasks == 2 and t.closes == [1012, 1012]
    resumed = FakeSocket([{"type": "token", "turn": "t1", "seq": 1, "text": "A"},
                          {"type": "done", "turn": "t1", "seq": 2, "answer": "A"}])
    t = run_turn(monkeypatch, FakeSocket(turn("A")[:1], code=1012), ClosedOnSend([]), resumed)
    assert t.outcome == "complete (resumed)" and t.resumes == 2
