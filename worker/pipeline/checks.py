"""Checks in code, no model call: every citation must point at a passage the model was given."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from worker.pipeline.markers import read_citations
from worker.pipeline.numbers import grounding_values
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
