"""Citation markers: reading every form a model writes (docs/spec/behaviour.md B-24), and removing
them when sources are off (B-30), split markers included.

Forms read as citations (each names one or more passage numbers):
* `[n]`, also full-width `［n］`, `【n】`, `〔n〕`, `〖n〗` and full-width digits (`［１］`);
* lists and ranges: `[1, 2]`, `[1; 3]`, `[1 and 2]`, `[1 2]`, `[1-3]`, `[1–3]`, `[3–1]` (a
  reversed range is the same range), `[Source 1-3]`; a range wider than 50 keeps only its two
  ends;
* labels before a number, in English, Czech and Russian, with an optional `.`, `:`, `#`, `№`,
  `č.` or `no.`: `[Source 1]`, `[Sources 1, 2]`, `[Passage 3]`, `[doc1]`, `[Document 2]`,
  `[ref 1]`, `[Zdroj 2]`, `[Pasáž 3]`, `[Dokument 1]`, `[Úryvek 2]`, `[Источник 1]`,
  `[Фрагмент 2]`, `[Документ 3]`, `[#1]`, and each item labelled: `[Source 1, Source 2]`;
* any of these written as a markdown link, `[1](https://x)`: the link target belongs to the
  citation (stripping it leaves no `(https://x)` behind).

Not citations: `[6, 8, 11]` when the data reads it better as a fuzzy triple (see
`_is_triple`), an unlabelled list or range holding 0 (`[0, 1]`, `[0-100]`: intervals; a lone
`[0]` is still a citation, an invalid one), decimals (`[0.5, 1]`), half-open intervals
(`[0.585,91)`), four digits (`[1234]`), space-grouped thousands (`[1 234]`), words without a
number (`[docs]`, `[a]`, `[this step](#step-7)`), names (`[Q1-Q3]`, `[x1]`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_OPEN = "[\\[［【〔〖]"
_CLOSE = "[\\]］】〕〗]"
_FULL_WIDTH = "［【〔〖］】〕〗"
_DIGITS = "[0-9０-９]{1,3}"
_LABEL = ("(?:sources?|src|passages?|docs?|documents?|refs?|references?|citations?|chunks?"
          "|excerpts?|fragments?|contexts?|snippets?"
          "|zdroj\\w*|pasáž\\w*|dokument\\w*|úryv\\w*|odkaz\\w*|kontext\\w*|citac\\w*"
          "|источник\\w*|фрагмент\\w*|документ\\w*|отрыв\\w*|пассаж\\w*|ссылк\\w*|контекст\\w*"
          "|цитат\\w*)")
_S = "[ \\t\\u00a0\\u202f\\u2009]"
# A label, then an optional number sign ("Source #1", "Zdroj č. 2"); or a number sign alone.
_PREFIX = (f"(?:{_LABEL}\\.?:?{_S}*(?:(?:#|№|č\\.|no\\.|nr\\.){_S}*)?"
           f"|(?:#|№){_S}*)")
_RANGE = f"(?:{_S}*[-–—‒−~]{_S}*|{_S}+(?:to|až|до){_S}+)"
_ITEM = f"(?:{_PREFIX})?{_DIGITS}(?:{_RANGE}(?:{_PREFIX})?{_DIGITS})?"
_SEP = f"(?:{_S}*[,;、，]{_S}*(?:(?:and|a|и){_S}+)?|{_S}+(?:and|a|и|&){_S}+|{_S}+)"
CITATION = re.compile(f"{_OPEN}{_S}*{_ITEM}(?:{_SEP}{_ITEM})*{_S}*{_CLOSE}", re.I)
# A markdown link target right after the brackets ("[1](https://x)"); no spaces, no nesting.
_LINK_TARGET = re.compile("\\([^()\\s]{0,500}\\)")
_LINK_OPEN = re.compile("\\([^()\\s]{0,500}")  # a target still being streamed
_SPACE_THOUSANDS = re.compile(f"{_S}*[1-9][0-9]{{0,2}}(?:{_S}[0-9]{{3}})+{_S}*")
_LABELLED = re.compile(_PREFIX, re.I)
_DECIMAL_COMMA = re.compile("[0-9],[0-9]")
_ITEM_RE = re.compile(f"({_DIGITS})(?:{_RANGE}(?:{_PREFIX})?({_DIGITS}))?", re.I)
MAX_RANGE = 50
MAX_LENGTH = 64  # longer brackets are prose, not a citation
# A tail that could still turn into a citation once more text arrives: an opening bracket
# and a few characters without a closing one.
PARTIAL = re.compile(f"{_OPEN}[^\\]］】〕〗\\n]{{0,{MAX_LENGTH}}}$")


@dataclass(frozen=True)
class Citation:
    """One citation as written and the passage numbers it names, in order."""

    start: int
    end: int
    text: str
    numbers: tuple[int, ...]
    labelled: bool


def _items(body: str) -> list[tuple[int, int | None]]:
    """The (first, last-of-range or None) numbers of a bracket's items."""
    return [(int(m.group(1)), int(m.group(2)) if m.group(2) else None)
            for m in _ITEM_RE.finditer(body)]


def _expand(items: list[tuple[int, int | None]]) -> tuple[int, ...]:
    out: list[int] = []
    for a, b in items:
        if b is None:
            nums = [a]
        else:
            lo, hi = min(a, b), max(a, b)
            nums = list(range(lo, hi + 1)) if hi - lo <= MAX_RANGE else [lo, hi]
        out += [n for n in nums if n not in out]
    return tuple(out)


def _is_triple(items: list[tuple[int, int | None]], passages: int | None,
               grounded: Callable[[int], bool] | None) -> bool:
    """Whether an unlabelled [a, b, c] reads better as a fuzzy triple than as three citations.

    Only a non-decreasing list of exactly three plain numbers can be a triple. Each reading
    scores the members it explains: passage numbers 1..passages for the citation reading,
    numbers present in the grounding for the triple. The triple wins only with a higher score;
    a tie goes to the citation when the passage count is known (so a wrong citation is still
    flagged) and to the triple when it is not (nothing can be said about passages then).
    """
    if len(items) != 3 or any(b is not None for _, b in items):
        return False
    nums = [a for a, _ in items]
    if nums != sorted(nums):
        return False
    cite = sum(1 <= n <= passages for n in nums) if passages is not None else 0
    data = sum(grounded(n) for n in nums) if grounded is not None else 0
    return data > cite or (data == cite and passages is None)


def read_citations(text: str, passages: int | None = None,
                   grounded: Callable[[int], bool] | None = None) -> list[Citation]:
    """Every citation in text, in order; passages and grounded settle bracketed triples."""
    out: list[Citation] = []
    for m in CITATION.finditer(text):
        raw = m.group()
        if len(raw) > MAX_LENGTH or (out and m.start() < out[-1].end):
            continue  # too long for a citation, or inside the last one's link target
        labelled = raw[0] in _FULL_WIDTH or _LABELLED.search(raw) is not None
        items = _items(raw[1:-1])
        plain_many = not labelled and (len(items) > 1 or items[0][1] is not None)
        if plain_many:
            if _SPACE_THOUSANDS.fullmatch(raw[1:-1]):
                continue  # [1 234]: one number grouped by a space, not a list
            if any(n == 0 for it in items for n in it if n is not None):
                continue  # [0, 1], [0-100]: an interval
            if ";" in raw and _DECIMAL_COMMA.search(raw):
                continue  # [10,5; 15,5; 21,5]: Czech decimals separated by semicolons
            if _is_triple(items, passages, grounded):
                continue
        link = _LINK_TARGET.match(text, m.end())
        end = link.end() if link else m.end()
        out.append(Citation(m.start(), end, text[m.start():end], _expand(items), labelled))
    return out


def _held_from(text: str) -> int:
    """Where a citation at the very end starts, as a link target may still follow it."""
    cites = read_citations(text)
    if cites:
        last = cites[-1]
        if last.end == len(text) or _LINK_OPEN.fullmatch(text, last.end):
            return last.start
    return len(text)


def strip_markers(text: str) -> str:
    """Text without citations (repeated, so removing one cannot leave a new one behind)."""
    while True:
        spans = read_citations(text)
        if not spans:
            return text
        parts, pos = [], 0
        for c in spans:
            parts.append(text[pos:c.start])
            pos = c.end
        text = "".join(parts) + text[pos:]


class MarkerStripper:
    """Feeds streamed pieces through, holding back only a tail that may still become a citation."""

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, piece: str) -> str:
        """What can be sent now of pending + piece."""
        text = self._pending + piece
        hold = _held_from(text)  # a final "[1]" may still become "[1](https://x)"
        out = strip_markers(text[:hold])
        m = PARTIAL.search(out)
        if m:
            self._pending, out = out[m.start():] + text[hold:], out[:m.start()]
        else:
            self._pending = text[hold:]
        return out

    def flush(self) -> str:
        """Whatever was held back, at the end of the stream, without its citations."""
        rest, self._pending = self._pending, ""
        return strip_markers(rest)
