"""Word runs shared by two texts: the measure behind the prompt-echo and repeat checks."""

from __future__ import annotations

import re
from collections.abc import Iterable
from difflib import SequenceMatcher

from worker.pipeline.markers import strip_markers

_WORD = re.compile(r"\w+(?:['’]\w+)*")

Gram = tuple[str, ...]


def words(text: str) -> list[str]:
    """The text's words, lower-cased, citations removed (case and [n] never make a difference)."""
    return _WORD.findall(strip_markers(text).lower())


def grams(seq: list[str], n: int) -> set[Gram]:
    """Every run of n consecutive words."""
    return {tuple(seq[i:i + n]) for i in range(len(seq) - n + 1)}


def grams_of(texts: Iterable[str], n: int) -> set[Gram]:
    """The n-word runs of several texts together."""
    out: set[Gram] = set()
    for t in texts:
        out |= grams(words(t), n)
    return out


def shared_runs(seq: list[str], n: int, found: set[Gram]) -> list[tuple[int, int]]:
    """(start, end) word spans of seq covered by n-word runs that are in `found`, merged."""
    spans: list[tuple[int, int]] = []
    for i in range(len(seq) - n + 1):
        if tuple(seq[i:i + n]) not in found:
            continue
        if spans and i <= spans[-1][1]:
            spans[-1] = (spans[-1][0], i + n)
        else:
            spans.append((i, i + n))
    return spans


def ordered_share(seq: list[str], other: list[str], least: int = 2) -> float:
    """Share of seq's words that other has in the same order, in common runs of at least
    `least` words (a word changed here and there still leaves a copy near 1.0; single common
    words such as "the" count for nothing)."""
    if not seq:
        return 0.0
    blocks = SequenceMatcher(None, seq, other, autojunk=False).get_matching_blocks()
    return sum(b.size for b in blocks if b.size >= least) / len(seq)
