"""Names a question uses that the corpus never does: a product, a standard or a place the
documentation does not mention is something it cannot answer about (GraphQL, WCAG, Zoom)."""

from __future__ import annotations

import re
from collections.abc import Callable

WORD = re.compile(r"\w+", re.UNICODE)
# What may stand before a sentence's first word, whose capital says nothing.
OPENERS = ".?!:;\"'“”„‘’«»([*-–—"


def names(question: str) -> list[str]:
    """The words written as names, in order, once each: a capital letter not at a sentence's
    start, two capitals or more (an acronym, GraphQL), or letters and digits together (A0)."""
    out: list[str] = []
    for m in WORD.finditer(question):
        word = m.group(0)
        if len(word) < 2 or word.isdigit() or "_" in word:
            continue  # a letter, a number, an identifier (snake_case is written as such)
        before = question[:m.start()].rstrip()
        opening = not before or before[-1] in OPENERS
        capitals = sum(c.isupper() for c in word)
        mixed = any(c.isdigit() for c in word) and any(c.isalpha() for c in word)
        if (capitals >= 2 or mixed or (word[0].isupper() and not opening)) \
                and word not in out:
            out.append(word)
    return out


def unknown(question: str, known: Callable[[str], bool]) -> list[str]:
    """The question's names (see names) that `known` says the corpus never uses."""
    return [w for w in names(question) if not known(w)]
