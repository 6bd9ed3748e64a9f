"""Names a question uses that the corpus never does: a product, a standard or a place the
documentation does not mention is something it cannot answer about (GraphQL, WCAG, Zoom)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from worker.pipeline.given_names import given

WORD = re.compile(r"\w+", re.UNICODE)
# What may stand before a sentence's first word, whose capital says nothing.
OPENERS = ".?!:;\"'“”„‘’«»([*-–—"
# A version or a size after a word the corpus knows (Python3, macOS14) names that word.
TRAILING_DIGITS = re.compile(r"\d+$")
# More than this share of a question's words in capitals (SHOUTED), or of the words inside its
# sentences starting with one (Title Case): its capitals say nothing about names. Two names in
# a short question are 3 of 5 ("Jde BeCoMe provozovat na Raspberry Pi?").
CAPITALS_SHARE = 0.5
TITLE_SHARE = 0.75


def names(question: str) -> list[str]:
    """The words written as names, in order, once each: a capital letter not at a sentence's
    start, two capitals or more (an acronym, GraphQL), or letters and digits together (A0)."""
    return list(dict.fromkeys(m.group(0) for m in _name_matches(question)))


def _name_matches(question: str) -> list[re.Match[str]]:
    """Every word written as a name (see names), in order, repeats included."""
    words = [m for m in WORD.finditer(question)
             if len(m.group(0)) >= 2 and not m.group(0).isdigit() and "_" not in m.group(0)]
    if not words:
        return []
    opening = [not (b := question[:m.start()].rstrip()) or b[-1] in OPENERS for m in words]
    inner = [m.group(0) for m, first in zip(words, opening, strict=True) if not first]
    shouted = sum(m.group(0).isupper() for m in words) > CAPITALS_SHARE * len(words)
    titled = len(inner) >= 3 and sum(w[0].isupper() for w in inner) > TITLE_SHARE * len(inner)
    out: list[re.Match[str]] = []
    for m, first in zip(words, opening, strict=True):
        word = m.group(0)
        acronym = sum(c.isupper() for c in word) >= 2 and not shouted
        mixed = any(c.isdigit() for c in word) and any(c.isalpha() for c in word)
        inside = word[0].isupper() and not first and not titled and not shouted
        if acronym or mixed or inside:
            out.append(m)
    return out


def phrases(question: str) -> list[list[str]]:
    """Names of several words: runs of two or more names with only spaces between them
    (Internet Explorer, App Store, Microsoft Teams)."""
    runs: list[list[re.Match[str]]] = []
    for m in _name_matches(question):
        if runs and not question[runs[-1][-1].end():m.start()].strip():
            runs[-1].append(m)
        else:
            runs.append([m])
    return [[m.group(0) for m in run] for run in runs if len(run) >= 2]


def unknown(question: str, known: Callable[[str], bool],
            together: Callable[[Sequence[str]], bool] | None = None) -> list[str]:
    """The question's names (see names) that `known` says the corpus never uses; a person's
    given name is none (given_names: "Can Bob see my estimate?" asks about the app). With
    `together` (whether the corpus uses words side by side), also a name of several words
    whose every word it knows but never together: "Internet Explorer" where the corpus says
    only "internet" and "explore"."""
    def used(word: str) -> bool:
        stem = TRAILING_DIGITS.sub("", word)
        return known(word) or given(word) or (stem != word and len(stem) >= 3 and known(stem))

    out = [w for w in names(question) if not used(w)]
    if together is not None:
        for words in phrases(question):
            if any(given(w) or w in out for w in words) or together(words):
                continue
            name = " ".join(words)
            if name not in out:
                out.append(name)
    return out
