"""docker/smoke.py's counting of the turns of its rolling upgrade, without Docker: a gap or a
repeat in `seq`, a streamed text other than the answer, or any error frame but the time
limit's fails the smoke (`make docker-smoke` runs the rest for real)."""

from __future__ import annotations

import importlib.util
import sys
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
