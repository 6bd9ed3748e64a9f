"""The quotes answer form: the documentation's own words, chosen in code (no chat-model call).

The spans of the retrieved passages (spans.py) are ranked against the question by meaning (the
embeddings role) and by words (BM25's idf over the index); the best one to three are quoted
verbatim, each with its [n]. When none clears THRESHOLD the outcome is "I don't know" with one
clarifying question naming the nearest sections (B-21). Weights and threshold were chosen on
the dev and held-out sets (docs/benchmarks.md, "Quotes answer form").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shared.passage import Passage
from worker.pipeline.bm25 import tokenize
from worker.pipeline.spans import Span

# Vectors of texts as "query" or "passage" (the embeddings role, batched by the caller).
Vectors = Callable[[Sequence[str], str], list[list[float]]]


@dataclass(frozen=True)
class Weights:
    """How a span's score is made; the evaluation compares settings of these."""

    dense: float = 1.0
    lexical: float = 0.35
    heading: float = 0.15
    # Trust in retrieval's order: a bonus of rank / (place + 1). A question searched in
    # another language than English goes through the small translator and twins, whose
    # order is weaker (measured: docs/benchmarks.md), so its spans decide more.
    rank: float = 0.4
    rank_other: float = 0.05
    # "I don't know" below this decision score: the best span's match plus `coverage` times
    # how much of the question the passages speak of (calibrated on questions with and
    # without an answer, per language: a Czech question's words meet English pages only
    # through its translation; docs/benchmarks.md).
    coverage: float = 1.0
    threshold: float = 1.44
    coverage_other: float = 3.0
    threshold_other: float = 1.76
    # Further quotes: within this much of the best score.
    margin: float = 0.04
    max_quotes: int = 3


WEIGHTS = Weights()


@dataclass(frozen=True)
class Candidate:
    """One span of one passage (index `n` into the passages) with its score parts."""

    n: int
    span: Span
    text: str
    score: float
    dense: float
    lexical: float
    match: float  # the score without retrieval's order: how well the span itself fits


def _leaf(section: str) -> str:
    """The last heading of a heading path, without its # marks."""
    return section.split(" > ")[-1].lstrip("#").strip()


def _context(passage: Passage, span: Span) -> str:
    """What a span means besides its words: its heading, and the label above it."""
    leaf = _leaf(passage.section)
    return f"{leaf}, {span.label}" if span.label else leaf


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def _overlap(query_terms: dict[str, float], text: str) -> float:
    """Share of the query's idf weight whose terms the text contains."""
    total = sum(query_terms.values())
    if total <= 0:
        return 0.0
    have = set(tokenize(text, split=True))
    return sum(w for t, w in query_terms.items() if t in have) / total


def query_terms(texts: Sequence[str], idf: Callable[[str], float]) -> dict[str, float]:
    """The distinct terms of the question (and its translation) with their idf weights."""
    terms: dict[str, float] = {}
    for text in texts:
        for t in tokenize(text, split=True):
            terms[t] = max(terms.get(t, 0.0), max(idf(t), 0.0))
    return terms


def rank_spans(questions: Sequence[str], passages: Sequence[Passage],
               spans: Sequence[Sequence[Span]], vectors: Vectors,
               idf: Callable[[str], float], weights: Weights = WEIGHTS,
               english: bool = True) -> list[Candidate]:
    """Every span scored against the question(s), best first; `english`: the question was
    asked in English (see Weights.rank)."""
    prior = weights.rank if english else weights.rank_other
    flat = [(n, s) for n, per in enumerate(spans) for s in per]
    if not flat:
        return []
    texts = [s.text_of(passages[n].text) for n, s in flat]
    # A span is embedded with its heading: "Step 4: the maximum error: Δmax = ..." is what
    # a formula line means.
    span_vectors = vectors([f"{_context(passages[n], s)}: {t}" for (n, s), t
                            in zip(flat, texts, strict=True)], "passage")
    query_vectors = vectors(list(questions), "query")
    terms = query_terms(questions, idf)
    out = []
    for (n, span), text, vec in zip(flat, texts, span_vectors, strict=True):
        dense = max(_cosine(q, vec) for q in query_vectors)
        lexical = _overlap(terms, text)
        heading = _overlap(terms, _context(passages[n], span))
        match = weights.dense * dense + weights.lexical * lexical + weights.heading * heading
        out.append(Candidate(n, span, " ".join(text.split()), match + prior / (n + 1), dense,
                             lexical, match))
    out.sort(key=lambda c: (-c.score, c.n, c.span.start))
    return out


def _extended(c: Candidate, passage: Passage, spans: Sequence[Span]) -> Candidate:
    """The span as it is best quoted: an FAQ question gives way to its answer; an
    introduction ending in ':' takes the item, row or formula line it introduces."""
    i = spans.index(c.span)
    nxt = spans[i + 1] if i + 1 < len(spans) else None
    if nxt is None:
        return c
    if c.span.key.endswith("question") and nxt.key.endswith("answer"):
        span = nxt
    elif c.text.endswith(":") and nxt.end - c.span.start <= 300 and nxt.kind != "line":
        span = Span(c.span.start, nxt.end, c.span.kind, c.span.block, c.span.key)
    else:
        return c
    return dataclasses.replace(c, span=span, text=" ".join(span.text_of(passage.text).split()))


def answers(ranked: Sequence[Candidate], covered: float, weights: Weights = WEIGHTS,
            english: bool = True) -> bool:
    """Whether the spans answer at all: the best match plus the weighted coverage clears the
    threshold (see Weights.threshold)."""
    weight, threshold = ((weights.coverage, weights.threshold) if english
                         else (weights.coverage_other, weights.threshold_other))
    return bool(ranked) and max(c.match for c in ranked) + weight * covered >= threshold


def choose(ranked: Sequence[Candidate], passages: Sequence[Passage],
           spans: Sequence[Sequence[Span]], covered: float,
           weights: Weights = WEIGHTS, english: bool = True) -> list[Candidate]:
    """The quotes: the best span, then up to two more within the margin, no two overlapping;
    nothing when they do not answer (see answers)."""
    if not answers(ranked, covered, weights, english):
        return []
    best = ranked[0].score
    chosen: list[Candidate] = []
    for c in ranked:
        if len(chosen) >= weights.max_quotes or c.score < best - weights.margin:
            break
        c = _extended(c, passages[c.n], spans[c.n])
        if any(o.n == c.n and o.span.start < c.span.end and c.span.start < o.span.end
               for o in chosen):
            continue
        chosen.append(c)
    return chosen


STEM = 5  # characters a word and its inflected forms share (Czech cases, English plurals)


def _stems(text: str) -> set[str]:
    return {t[:STEM] for t in tokenize(text, split=True) if len(t) >= 3}


def coverage(questions: Sequence[str], passages: Sequence[Passage],
             idf: Callable[[str], float], vocabulary_max: float) -> float:
    """How much of the question the passages speak of: the idf-weighted share of its words
    (by their first STEM letters) found in the passages; a word the corpus never uses weighs
    as the rarest word does. The best of the question and its translation."""
    have: set[str] = set()
    for p in passages:
        # What search sees: the caption names the passage's subject in other words too.
        have |= _stems(p.index_text) | _stems(p.section)
    best = 0.0
    for q in questions:
        words = {t for t in tokenize(q, split=True) if len(t) >= 3}
        weights = {t: idf(t) if idf(t) > 0 else vocabulary_max for t in words}
        total = sum(weights.values())
        if total > 0:
            best = max(best, sum(w for t, w in weights.items() if t[:STEM] in have) / total)
    return best


COVERED = 3  # coverage reads the best this many passages
