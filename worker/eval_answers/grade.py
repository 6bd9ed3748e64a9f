"""Grading in code (no model call): language, citations, expected numbers, don't-know, flags
(invalid citations, unconfirmed numbers, prompt echoes, repeats)."""

from __future__ import annotations

import re
from typing import Any

from shared.checks import GRADED
from shared.language import detect_language
from shared.passage import Passage
from worker.eval_answers.questions import AnswerQuestion
from worker.evaluation import location_matches
from worker.pipeline.markers import read_citations, strip_markers
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


def first_source(record: dict[str, Any]) -> Passage | None:
    """The passage the answer leans on first: its first quote's (quotes and structured
    forms), else the one its first citation names (prose); None when it has neither. Its
    text is the source's full text when the harness looked it up, else its excerpt (an
    interface group counts for a key it holds: location_matches reads the text)."""
    sources = {s.get("n"): s for s in record.get("sources") or []}
    quotes = (record.get("structured") or {}).get("quotes") or []
    if quotes and quotes[0].get("source"):
        q = quotes[0]
        src = sources.get(q.get("n")) or {}
        # A locale source's section is its text; its key path is in "key".
        same = src.get("source") == q["source"] and \
            (src.get("key") or src.get("section")) == q.get("section")
        own = record.get("first_quote_text")
        return _passage(str(q["source"]), str(q.get("section") or ""),
                        {"text": own} if own else src if same else {})
    for c in read_citations(record.get("answer") or "", len(sources) or None):
        for n in c.numbers:
            if n in sources:
                s = sources[n]
                return _passage(str(s.get("source") or ""), str(s.get("section") or ""), s)
    return None


def _passage(source: str, section: str, src: dict[str, Any]) -> Passage:
    text = str(src.get("text") or src.get("excerpt") or "")
    return Passage("", source, "", section, "", text, "", False)


def first_from_expected(q: AnswerQuestion, record: dict[str, Any]) -> float | None:
    """1.0 when the answer's first quote (or first cited passage) lies in the expected section
    or an `also_in` one; None for a question without an expected section."""
    if not q.answerable or not q.targets:
        return None
    first = first_source(record)
    if first is None:
        return 0.0
    return 1.0 if any(location_matches(first, s, loc) for s, loc in q.targets) else 0.0


def quotes_verbatim(record: dict[str, Any]) -> float | None:
    """1.0 when every quote was found word for word in its passage by the harness
    (`quotes_found`, set from the index's text); None when the answer has no quotes."""
    check = record.get("quotes_found")
    if not isinstance(check, dict) or not check.get("quotes"):
        return None
    return 1.0 if check.get("found") == check.get("quotes") else 0.0


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
                "invented_figures": None,
                "first_quote_expected": 0.0 if q.answerable and q.targets else None,
                "dont_know_answerable": None, "quotes_verbatim": None}
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
        "first_quote_expected": first_from_expected(q, record),
        # "I don't know" where the documentation does answer: a missed answer.
        "dont_know_answerable": 1.0 if q.answerable and says_dont_know(record) else
        0.0 if q.answerable else None,
        "quotes_verbatim": quotes_verbatim(record),
    }
    if not q.answerable:
        # Nothing to answer from: the right outcome is "I don't know", with no figures made up.
        out["dont_know"] = 1.0 if says_dont_know(record) else 0.0
        out["invented_figures"] = 1.0 if numbers.get("unconfirmed") else 0.0
    return out
