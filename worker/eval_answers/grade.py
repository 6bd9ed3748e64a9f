"""Grading in code (no model call): language, citations, expected numbers, don't-know, flags
(invalid citations, unconfirmed numbers, prompt echoes, repeats)."""

from __future__ import annotations

import re
from typing import Any

from shared.checks import GRADED
from shared.language import detect_language
from worker.eval_answers.questions import AnswerQuestion
from worker.pipeline.markers import strip_markers
from worker.pipeline.numbers import extract_numbers

# "I don't know" outcomes in prose, English and Czech; the structured form says it in a field.
DONT_KNOW = re.compile(
    r"\b(i\s+(do\s+not|don't|don’t)\s+know|i\s+cannot\s+(find|tell|answer)|"
    r"(passages|documents|sources|documentation)\s+(do|does)\s+not\s+(say|contain|mention|"
    r"cover)|(documentation|passages)\s+(doesn't|doesn’t|don't|don’t)\s+(say|contain|mention|"
    r"cover)|not\s+in\s+the\s+documentation|dokumentace\s+(to\s+)?(neuvád\w*|nepokrýv\w*|"
    r"neobsahuj\w*)|v\s+dokumentaci\s+(není|nen[ií]|to\s+není)|"
    r"no\s+information\s+(about|on)|nevím|nemám\s+(informac|dost)|nenašel|nenašla|"
    r"nelze\s+(odpovědět|říci)|(pasáže|dokumenty|zdroje)\s+(ne\w+|to\s+neuvád\w+))",
    re.IGNORECASE)


def says_dont_know(record: dict[str, Any]) -> bool:
    """Whether the answer's outcome is "I don't know" (a structured outcome or prose words)."""
    structured = record.get("structured") or {}
    if structured.get("outcome") == "dont_know":
        return True
    return bool(DONT_KNOW.search(record.get("answer") or ""))


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def expected_numbers_share(answer: str, expected: tuple[float, ...]) -> float | None:
    """Share of the expected numbers written in the answer (decimal comma etc. understood)."""
    if not expected:
        return None
    found = [float(v) for _, v, _ in extract_numbers(strip_markers(answer))]
    return sum(1 for e in expected if any(_close(e, v) for v in found)) / len(expected)


def _flag(checks: dict[str, Any], name: str, absent: float | None) -> float | None:
    """1.0 when the check failed (or could not run), 0.0 when it passed, `absent` when the
    record lacks it (made before the check existed)."""
    check = checks.get(name)
    return absent if not isinstance(check, dict) else 0.0 if check.get("valid", True) else 1.0


def grade(q: AnswerQuestion, record: dict[str, Any]) -> dict[str, float | None]:
    """Per-question scores in code: 1.0/0.0 flags and shares; None where one does not apply."""
    if record.get("outcome") != "done":
        return {"error": 1.0, "language_match": 0.0, "citations_used": 0.0,
                **{c.metric: None for c in GRADED if c.metric}, "expected_numbers": None,
                "dont_know": 0.0 if not q.answerable else None,
                "invented_figures": None}
    answer = record.get("answer") or ""
    checks = record.get("checks") or {}
    citations = checks.get("citations") or {}
    numbers = checks.get("numbers") or {}
    out: dict[str, float | None] = {
        "error": 0.0,
        "language_match": 1.0 if detect_language(answer) == q.language else 0.0,
        "citations_used": 1.0 if citations.get("cited") else 0.0,
        # One flag per graded check of shared/checks.py.
        **{c.metric: _flag(checks, c.name, c.absent) for c in GRADED if c.metric},
        "expected_numbers": expected_numbers_share(answer, q.expected_numbers),
        "dont_know": None,
        "invented_figures": None,
    }
    if not q.answerable:
        # Nothing to answer from: the right outcome is "I don't know", with no figures made up.
        out["dont_know"] = 1.0 if says_dont_know(record) else 0.0
        out["invented_figures"] = 1.0 if numbers.get("unconfirmed") else 0.0
    return out
