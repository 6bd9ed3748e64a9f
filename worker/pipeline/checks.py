"""Checks in code, no model call: every [n] must point at a passage the model was given."""

from __future__ import annotations

import re

from worker.pipeline.types import CitationCheck

CITATION = re.compile(r"\[(\d{1,3})\]")


def check_citations(answer: str, passage_count: int) -> CitationCheck:
    """Cited markers in order of first use, and those outside 1..passage_count ([0] never is)."""
    cited: list[int] = []
    for m in CITATION.finditer(answer):
        n = int(m.group(1))
        if n not in cited:
            cited.append(n)
    invalid = tuple(n for n in cited if not 1 <= n <= passage_count)
    return CitationCheck(tuple(cited), invalid)
