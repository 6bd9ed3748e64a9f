"""A bug in any step of a turn: one plain error frame at once, logged with the turn id
and the exception's type, never its text; a bug inside the checks keeps the streamed answer
and marks the check unavailable. Pure code: the turn's frames go to a list, the corpus and the
model are replaced by fixed passages and a fixed stream (tests/test_turn_fault_stack.py runs the
same fault on the real stack)."""

from __future__ import annotations

import dataclasses
import decimal
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import pytest

from shared.config import Settings
from shared.frame_types import Done
from shared.frames import TurnClosed
from shared.passage import Passage
from shared.traces import Trace
from shared.turn_request import Message, ProjectBlock, TurnRequest
from tests.harness import ListLog
from worker.emit import TurnEmitter
from worker.pipeline import checks as checks_mod
from worker.pipeline import turn as turn_mod
from worker.pipeline.turn import TurnDeps, run_checks, run_turn
from worker.pipeline.types import Generation, Retrieval

TURN = "turn-faults-0001"
SECRET = "the user's private words 4711"  # the text of every injected exception
PASSAGES = Retrieval((
    Passage("p1", "docs/a.md", "A", "# A", "en", "The maximum error is 2.2 for 13 experts.", "",
            False, 0.3),
    Passage("p2", "docs/b.md", "B", "# B", "en", "The budget is 57300 CZK.", "", False, 0.2),
), "v-test", "q")
CHUNKS = ["Chyba je ", "2,2 [1]", " a rozpočet 57 300 Kč [2]."]
ANSWER = "".join(CHUNKS)
# Every step a workflow turn with a Czech follow-up question and a project goes through.
STEPS = ["language", "rewrite", "translate", "retrieve", "project", "prompt", "generate",
         "checks", "done"]


class Bug(Exception):
    """An unexpected exception, as a bug in a step raises it."""


class FaultyEmitter(TurnEmitter):
    """A TurnEmitter that raises Bug inside one step (or instead of sending the done frame)."""

    def __init__(self, log: ListLog, fail_in: str | None) -> None:
        super().__init__(log)  # type: ignore[arg-type]
        self.fail_in = fail_in

    @contextmanager
    def step(self, name: str) -> Iterator[dict[str, Any]]:
        with super().step(name) as detail:
            if name == self.fail_in:
                raise Bug(SECRET)
            yield detail

    def done(self, fields: Done) -> None:
        if self.fail_in == "done":
            raise Bug(SECRET)
        super().done(fields)


@pytest.fixture()
def scripted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The corpus and the models replaced by fixed passages, a fixed rewrite and translation
    and a fixed token stream; returns the steps that ran, in order."""
    ran: list[str] = []

    def retrieve(conn: Any, s: Settings, search: str, **kw: Any) -> Retrieval:
        ran.append("retrieve")
        return PASSAGES

    def stream_answer(role: Any, s: Settings, messages: Any, on_token: Callable[[str], None],
                      **kw: Any) -> Generation:
        ran.append("generate")
        for c in CHUNKS:
            on_token(c)
        return Generation(ANSWER, 100, 10, "scripted")

    monkeypatch.setattr(turn_mod, "retrieve", retrieve)
    monkeypatch.setattr(turn_mod, "stream_answer", stream_answer)
    monkeypatch.setattr(turn_mod, "rewrite_followup", lambda *a: "Jak se počítá chyba?")
    monkeypatch.setattr(turn_mod, "translate_for_search", lambda *a: "How is the error computed?")
    return ran


PROJECT = ProjectBlock("Project: budget", ("57300",), 1.5)


def _request(project: ProjectBlock | None = PROJECT) -> TurnRequest:
    return TurnRequest(TURN, "user-hash", "A co ta chyba?", "cs", "workflow",
                       history=(Message("user", "Jak funguje BeCoMe?"),
                                Message("assistant", "Kombinuje průměr a medián [1].")),
                       project=project)


def _turn(settings: Settings, fail_in: str | None, req: TurnRequest | None = None,
          **overrides: Any) -> tuple[ListLog, Trace]:
    s = dataclasses.replace(settings, translate_queries="on", rewrite_followups=True,
                            **overrides)
    log = ListLog(TURN)
    trace = Trace(turn=TURN, user_hash="user-hash")
    # The search is the fixture's (it replaces turn_mod.retrieve), handed over as the seam.
    deps = TurnDeps(s, lambda: nullcontext(), search=turn_mod.retrieve)
    run_turn(req or _request(), deps, FaultyEmitter(log, fail_in),
             trace)
    return log, trace


def test_the_harness_runs_every_step(settings: Settings, scripted: list[str]) -> None:
    log, trace = _turn(settings, None)
    steps = [f["step"] for f in log.of("event") if f["step"] != "first_token"]
    assert steps + ["done"] == STEPS
    assert log.frames[-1]["type"] == "done" and trace.outcome == "done"
    assert log.frames[-1]["checks"]["numbers"] == {"valid": True, "unconfirmed": [],
                                                   "checked": 2}


@pytest.mark.parametrize("step", [s for s in STEPS if s != "checks"])
def test_a_bug_in_a_step_ends_the_turn_with_one_plain_error_frame(
        settings: Settings, scripted: list[str], step: str,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    log, trace = _turn(settings, step)
    terminal = [f for f in log.frames if f["type"] in ("done", "error")]
    assert terminal == [log.frames[-1]], "exactly one terminal frame, the last"
    error = log.frames[-1]
    assert error["type"] == "error" and error["code"] == 500
    assert error["message"] == "Something went wrong on our side. Please try again."
    assert trace.outcome == "error" and trace.error_code == 500
    # Ended at once: no step after the failing one ran.
    later = STEPS[STEPS.index(step) + 1:]
    assert not {f["step"] for f in log.of("event")} & set(later) - {"done"}
    # What streamed before the bug stays in the log (a resuming client still reads it).
    if STEPS.index(step) > STEPS.index("generate"):
        assert "".join(f["text"] for f in log.of("token")) == ANSWER
    # Logged with the turn id, the step and the exception's type; never the exception's text.
    logged = "\n".join(r.getMessage() for r in caplog.records)
    where = f"in step {step}" if step != "done" else "after step checks"
    assert f"turn {TURN}: unexpected Bug {where}" in logged
    assert SECRET not in logged and all(r.exc_info is None for r in caplog.records)
    assert SECRET not in repr(log.frames)


def test_a_bug_in_the_checks_keeps_the_answer_and_marks_them_unavailable(
        settings: Settings, scripted: list[str]) -> None:
    log, trace = _turn(settings, "checks")
    done = log.frames[-1]
    assert done["type"] == "done" and trace.outcome == "done"
    assert done["answer"] == ANSWER == "".join(f["text"] for f in log.of("token"))
    assert done["checks"]["citations"] == {"valid": None, "unavailable": True}
    assert done["checks"]["numbers"] == {"valid": None, "unavailable": True}
    assert [f["type"] for f in log.frames].count("done") == 1 and not log.of("error")


@pytest.mark.parametrize("check, raises", [
    ("check_numbers", decimal.InvalidOperation([decimal.InvalidOperation])),
    ("check_citations", Bug(SECRET)),
])
def test_one_check_failing_leaves_the_other(settings: Settings, scripted: list[str],
                                            monkeypatch: pytest.MonkeyPatch, check: str,
                                            raises: Exception,
                                            caplog: pytest.LogCaptureFixture) -> None:
    def broken(*a: Any, **kw: Any) -> Any:
        raise raises

    monkeypatch.setattr(checks_mod, check, broken)
    log, _ = _turn(settings, None)
    done = log.frames[-1]
    assert done["type"] == "done" and done["answer"] == ANSWER
    failed, kept = ("numbers", "citations") if check == "check_numbers" else (
        "citations", "numbers")
    assert done["checks"][failed] == {"valid": None, "unavailable": True}
    assert done["checks"][kept]["valid"] is True
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert TURN in logged and type(raises).__name__ in logged and SECRET not in logged


def test_the_issues_number_crash_keeps_the_answer(settings: Settings, scripted: list[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's example end to end: it raised decimal.InvalidOperation after streaming."""
    big = "1234567890123456789012345678"
    monkeypatch.setattr(turn_mod, "stream_answer", lambda role, s, m, on_token, **kw: (
        on_token(f"It is {big}.13"), Generation(f"It is {big}.13", 1, 1, "scripted"))[1])
    req = dataclasses.replace(_request(None), message=f"Is it value={big}.1234567?")
    log, _ = _turn(settings, None, req)
    done = log.frames[-1]
    assert done["type"] == "done", log.frames[-1]
    assert done["checks"]["numbers"]["unconfirmed"] == [f"{big}.13"]


def test_a_closed_log_is_not_taken_for_a_bug(settings: Settings, scripted: list[str],
                                             caplog: pytest.LogCaptureFixture) -> None:
    """TurnClosed (the web tier ended the turn) still stops the attempt as before."""
    log = ListLog(TURN)
    log.frames.append({"seq": 1, "type": "error", "turn": TURN})  # ended by the web tier
    with pytest.raises(TurnClosed):
        run_turn(_request(), TurnDeps(settings, lambda: nullcontext()),
                 FaultyEmitter(log, None), Trace(turn=TURN, user_hash="user-hash"))
    assert not any("unexpected" in r.getMessage() for r in caplog.records)


# --- the checks as a turn wires them (mutations the suite once did not catch) --------------


def test_run_checks_hands_the_citation_check_the_passage_count() -> None:
    """An off-by-one in the passage count (either way) changes which citation is invalid."""
    req = _request(None)
    checks = run_checks("Both [2] and [3] say 2.2.", PASSAGES, req, None, True)
    assert checks["citations"]["cited"] == [2, 3]
    assert checks["citations"]["invalid"] == [3] and checks["citations"]["valid"] is False
    assert run_checks("Both [1] and [2].", PASSAGES, req, None, True)["citations"]["valid"]


def test_run_checks_reports_an_ungrounded_number() -> None:
    checks = run_checks("The error is 7.5 [1].", PASSAGES, _request(None), None, True)
    assert checks["numbers"] == {"valid": False, "unconfirmed": ["7.5"], "checked": 1}


def test_the_done_frame_reports_an_ungrounded_number(settings: Settings, scripted: list[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """What the panel's warning reads, without a browser: numbers.valid false in done."""
    monkeypatch.setattr(turn_mod, "stream_answer", lambda role, s, m, on_token, **kw: (
        on_token("Chyba je 7,5 [1]."), Generation("Chyba je 7,5 [1].", 1, 1, "scripted"))[1])
    log, trace = _turn(settings, None)
    numbers = log.frames[-1]["checks"]["numbers"]
    assert numbers == {"valid": False, "unconfirmed": ["7,5"], "checked": 1}
    assert trace.checks["numbers"]["valid"] is False


def test_project_data_grounds_numbers() -> None:
    """The project's numbers ground the answer's; dropped, the same number is flagged."""
    project = ProjectBlock("Project: result", ("the stored result is 35.5",))
    answer = "The best compromise is 35.5."
    assert run_checks(answer, PASSAGES, _request(project), project, True)["numbers"]["valid"]
    unconfirmed = run_checks(answer, PASSAGES, _request(None), None, True)["numbers"]
    assert unconfirmed["unconfirmed"] == ["35.5"]
