"""Checks in code, no model call: every citation must point at a passage the model was given;
and the runner of every check that shared/checks.py declares (`RUNNERS`, `run_all`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from shared.checks import CHECKS, unavailable
from shared.turn_request import Message
from worker.pipeline.echo import check_echo
from worker.pipeline.markers import read_citations
from worker.pipeline.numbers import check_numbers, grounding_values
from worker.pipeline.repeat import RepeatCheck, check_repeat
from worker.pipeline.types import CitationCheck


def check_citations(answer: str, passage_count: int,
                    grounding: Iterable[str] = ()) -> CitationCheck:
    """Cited numbers in order of first use, and those outside 1..passage_count ([0] never is).

    Every form markers.read_citations reads counts ([1, 2], [3–1], [Zdroj 2], 【1】, ...); the
    grounding texts only settle whether a bracketed [a, b, c] is a fuzzy triple instead.
    """
    values = grounding_values(grounding)
    cited: list[int] = []
    for c in read_citations(answer, passage_count, lambda n: Decimal(n) in values):
        cited += [n for n in c.numbers if n not in cited]
    invalid = tuple(n for n in cited if not 1 <= n <= passage_count)
    return CitationCheck(tuple(cited), invalid)


@dataclass(frozen=True)
class CheckInput:
    """What the checks read: the answer and the material it may rest on."""

    answer: str
    passages: int
    # Passages, the question, the user's earlier messages and the project's figures
    # (docs/spec/behaviour.md B-25).
    grounding: Sequence[str]
    history: Sequence[Message] = ()
    message: str = ""
    # The project block's preface instructs the model; its data is material like a passage.
    project_preface: str = ""
    project_data: str = ""
    show_sources: bool = True
    # The quotes form chooses from this question's passages only: no model copies an answer.
    written_in_code: bool = False
    # The answer form's verdicts on its quotes and source paths (None: the form has none).
    quotes: Sequence[Mapping[str, Any]] | None = None
    paths: Sequence[Mapping[str, Any]] | None = None


Block = dict[str, Any]


def _citations(i: CheckInput) -> Block:
    c = check_citations(i.answer, i.passages, i.grounding)
    if i.show_sources:
        return {"valid": c.valid, "cited": list(c.cited), "invalid": list(c.invalid)}
    # With sources off the markers never reach the user, so the flag reads valid
    # (docs/spec/behaviour.md B-30); the trace keeps the real verdict under `recorded`.
    return {"valid": True, "cited": [], "invalid": [],
            "recorded": {"valid": c.valid, "invalid": list(c.invalid)}}


def _numbers(i: CheckInput) -> Block:
    # The number check reads citations in place: stripping them first would join "5[1]000".
    n = check_numbers(i.answer, i.grounding, passages=i.passages)
    return {"valid": n.valid, "unconfirmed": list(n.unconfirmed), "checked": len(n.mentions)}


def _prompt_echo(i: CheckInput) -> Block:
    e = check_echo(i.answer, [*i.grounding, i.project_data],
                   [i.project_preface] if i.project_preface else [])
    return {"valid": e.valid, "markup": list(e.markup), "instructions": list(e.instructions)}


def _repeat(i: CheckInput) -> Block:
    # The repeat check is for a model copying its last answer; the quotes form chooses from
    # this question's passages only, so two questions with the same best span are no copy.
    r = RepeatCheck(None, 0.0) if i.written_in_code else check_repeat(
        i.answer, i.message, i.history)
    return {"valid": r.valid, "earlier": r.earlier, "similarity": r.similarity}


def _quotes(i: CheckInput) -> Block | None:
    if i.quotes is None:
        return None
    return {"valid": all(q["found"] for q in i.quotes),
            "not_found": [q["text"] for q in i.quotes if not q["found"]]}


def _source_paths(i: CheckInput) -> Block | None:
    if i.paths is None:
        return None
    return {"valid": all(x["valid"] for x in i.paths),
            "invalid": [x["path"] for x in i.paths if not x["valid"]]}


# One function per declared check: the block for the done frame, or None when the answer has
# nothing that check reads (the quotes of a prose answer).
RUNNERS: Mapping[str, Callable[[CheckInput], Block | None]] = {
    "citations": _citations, "numbers": _numbers, "prompt_echo": _prompt_echo,
    "repeat": _repeat, "quotes": _quotes, "source_paths": _source_paths}


def _unavailable(name: str, i: CheckInput) -> Block:
    if name == "citations" and not i.show_sources:
        # No marker reaches the user: the flag reads valid all the same.
        return {"valid": True, "cited": [], "invalid": [], "recorded": unavailable()}
    return unavailable()


def run_all(i: CheckInput, on_bug: Callable[[str, Exception], None]) -> dict[str, Block]:
    """Every declared check that applies, in the registry's order; flags only, the answer is
    never changed. A check that raises reads unavailable (on_bug is told); the others run."""
    out: dict[str, Block] = {}
    for check in CHECKS:
        try:
            block = RUNNERS[check.name](i)
        except Exception as exc:  # noqa: BLE001 - one failing check must not take the answer
            on_bug(check.name, exc)
            block = _unavailable(check.name, i)
        if block is not None:
            out[check.name] = block
    return out
