"""The quotes answer form: the documentation's own words, chosen in code (no chat-model call).

The spans of the retrieved passages (spans.py) are ranked against the question by meaning (the
embeddings role) and by words (BM25's idf over the index); the best one to three are quoted
verbatim, each with its [n]. When none clears THRESHOLD the outcome is "I don't know" with one
clarifying question naming the nearest sections (docs/spec/behaviour.md B-21). Weights and
threshold were chosen on the dev and held-out sets (docs/benchmarks.md, "Quotes answer form").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np

from shared.passage import Passage
from shared.spans import MAX_SPAN_CHARS, Span, embed_text, label_text, span_context
from worker.pipeline.bm25 import STEM, tokenize
from worker.pipeline.lexicon import CS_STOP, EN_STOP
from worker.pipeline.vectors import adapted
from worker.pipeline.weak import is_weak

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
    # "I don't know" below this decision score (see decision): `coverage` times how much of
    # the question the passages speak of, plus the weighted question views, query adapter,
    # span match, retrieval confidence and known words below, each per language (a Czech
    # question's words meet English pages only through its translation). The thresholds say
    # "I don't know" on the most unanswerable questions of the read sets while on at most
    # 10 % of the answerable, in the middle of that gap (bench/quotes_eval.py calibrate); they
    # move with retrieval and are recalibrated after a retrieval change. English: coverage,
    # the question views and the adapter, threshold by the rule on twelve sets
    # (docs/benchmarks.md, "The English decision from the adapter"); Czech: the same and
    # retrieval's confidence, on nine ("The Czech decision from the question views and the
    # adapter").
    coverage: float = 0.5
    threshold: float = 5.132
    coverage_other: float = 3.0
    threshold_other: float = 29.47
    # The best span's match in the decision. Czech reads, beside coverage and retrieval's
    # confidence, the question views (question_other) and the adapter (fitted_other) instead
    # of its spans' match and the known words: a logistic fit over the nine read sets, each
    # set's figures from a fit on the other eight, said "I don't know" on .835 of the Czech
    # unanswerable questions against .684 and on .072 of the answerable against .092
    # (docs/benchmarks.md, "The Czech decision from the question views and the adapter").
    # English reads coverage, the question views and the adapter alike (no confidence): over
    # twelve sets, each from a fit on the other eleven, .825 of the unanswerable against .777
    # and .087 of the answerable against .091 (docs/benchmarks.md, "The English decision from
    # the adapter").
    match: float = 0.0
    match_other: float = 0.0
    # Further quotes: within this much of the best score.
    margin: float = 0.04
    # Or, from another section than the first quote's, within this much of its score without
    # retrieval's order (0: off): a second page that says it too. Measured, off: at .04 128
    # answers of the twelve sets change; 40 of them read blind, 12 better (the fact joined:
    # "TypeScript strict", the member's DELETE row), 13 worse (a dev-server or label line
    # joined), 15 ties (docs/benchmarks.md, "Everyday questions").
    margin_other_section: float = 0.0
    max_quotes: int = 3
    # Variants measured against the above (bench/quotes_eval.py --variants; docs/benchmarks.md,
    # "Quotes answer form"): a prior from retrieval's fused score (a share of the best possible,
    # fusion.fuse) on top of the rank's; how a Czech question's vectors (its own and its
    # translation's) are combined ("max" or "mean"); a bonus from the best neighbouring span of
    # the same block; the page title's word overlap; and no quote from a weak match (weak.py).
    fused: float = 0.0
    fused_other: float = 0.0
    dense_mix_other: str = "max"
    neighbour: float = 0.0
    title: float = 0.0
    skip_weak: bool = False
    # The decision may also read retrieval's confidence: this much times the best fused
    # score among the passages coverage reads.
    confidence: float = 0.0
    confidence_other: float = 2.5
    # How coverage combines a Czech question's own words and its translation's (coverage).
    coverage_mix_other: str = "max"
    # The passage's own meaning (its index vector, caption included) against the question,
    # as a prior for each of its spans; and a penalty for a span too short to say anything
    # (per word under SHORT_WORDS) or a table row (a cell list rarely answers on its own).
    passage: float = 0.0
    passage_other: float = 0.0
    short: float = 0.0
    row: float = 0.0
    # Word overlap of a Czech question and its translation: over the union of their terms
    # ("union"), or the better of the two separately ("max": a Czech passage meets the
    # question's words, an English one the translation's, neither diluted by the other's).
    lexical_mix_other: str = "union"
    # The decision may also read the question views (an index built with them): this much
    # times the best similarity of the question (or its translation) with a question one of
    # the passages coverage reads answers (a question like one the passage answers is strong
    # evidence the documentation answers it). 0 = off; measured in docs/benchmarks.md.
    question: float = 4.6
    question_other: float = 28.0
    # A prior for each span from its passage's question views: this much times the best
    # similarity of the question (or its translation) with a question that passage answers
    # (0 = off; the caller then looks none up). On for Czech: a Czech question meets the Czech
    # questions of an English page in its own language, where the span itself is English
    # (tune set: Czech first quote from the expected section .56 -> .66, English unchanged at
    # any weight; docs/benchmarks.md, "The quotes form with question views").
    views: float = 0.0
    views_other: float = 1.0
    # A prior for each span from its passage's similarity with the question through the query
    # adapter (corpus_jobs/adapter.py; its index vector against the adapted question or
    # translation, the better): a Czech question's meaning carried to the English page it
    # asks about. Nine read sets, Czech first quote .550 -> .606 at 2.5; English does not
    # move at any weight (docs/benchmarks.md, "A query adapter").
    adapted: float = 0.0
    adapted_other: float = 2.5
    # The decision may also read how much of the question, as asked, the corpus knows at all:
    # this much times the idf-weighted share of its words found anywhere in the corpus (known;
    # a boiled egg or a castle's opening hours are words no page uses). 0 = off. Alone, on
    # English questions in a person's own words it also silenced answerable ones (a "crazy
    # extreme number" is no word of the docs either; docs/benchmarks.md, "Known words in the
    # decision"); beside the question views it helped a little, beside the adapter no more
    # (off since; docs/benchmarks.md, "The English decision from the adapter").
    vocabulary: float = 0.0
    vocabulary_other: float = 0.0
    # The decision may also read the best similarity of the passages coverage reads with the
    # question through the query adapter (as Weights.adapted's prior): how near the pages the
    # adapter carries the question to are. 0 = off.
    fitted: float = 4.3
    fitted_other: float = 9.5
    # English without question views to read (an index built without them, a corpus of the
    # user's own, or passages that have none): the decision as calibrated before they joined
    # it (see without_question_views).
    coverage_plain: float = 1.0
    vocabulary_plain: float = 0.0
    threshold_plain: float = 1.266
    # Czech without question views (and so without an adapter): the decision before they
    # joined it, the span's match, coverage, confidence and the known words.
    coverage_plain_other: float = 3.0
    confidence_plain_other: float = 0.5
    vocabulary_plain_other: float = 8.0
    threshold_plain_other: float = 4.959
    # A penalty for a span of a Czech text when the question is not Czech: an English reader
    # is quoted the English text that says it where retrieval brought one close enough. The
    # first quote's figures did not move at .05-.2 (all, fresh, fresh2); at .2 one of two
    # Czech quotes to English questions of the fresh set became English (docs/benchmarks.md).
    czech_span: float = 0.2
    # Its mirror for a Czech question: a penalty for an English text's span. Measured, off:
    # at .05 the twelve sets' Czech first quote .644 -> .647 (.1: .631), and its changed first
    # quotes read blind 6 better, 4 worse, 8 ties (docs/benchmarks.md, "Everyday questions").
    english_span_other: float = 0.0
    # Subtracted from the decision score when the question names something the corpus never
    # uses (names.unknown: GraphQL, WCAG, Zoom); math.inf says "I don't know" outright, 0 is
    # off. Over seven sets (six read, one blind) the veto said "I don't know" on 7 more of 63
    # English and 13 more of 63 Czech unanswerable questions, and on 2 more of 351 answerable
    # ones; a penalty of .4 / 2 caught fewer at the same cost (docs/benchmarks.md, "Names the
    # documentation never uses").
    strange: float = math.inf
    strange_other: float = math.inf
    # An answer whose decision score clears the threshold by less than this says that the
    # documentation may not answer the question exactly (its quotes are the closest it says).
    # The band below which .15 of the answers quoted from the expected section fall, twelve
    # sets pooled; each set from the others, it hedged .63 of the English answers to
    # unanswerable questions and .38 of the wrong ones (Czech .39 and .19), and .15 of the
    # right ones (docs/benchmarks.md, "An answer that barely clears the threshold").
    hedge: float = 0.24
    hedge_other: float = 0.85
    # Added to a span holding the question's rarest content word ("median" of "What is the
    # median in the BeCoMe method?", where "BeCoMe" and "method" are everywhere). Off: at .2,
    # of 37 questions whose first quote it changed over twelve sets, a blind reading found the
    # quotes better in 10 and worse in 20 (docs/benchmarks.md, "Quotes judged blind").
    focus: float = 0.0
    focus_other: float = 0.0
    # Subtracted from an interface text that asks ("Are you sure you want to delete your
    # account?"), an FAQ question aside (it gives way to its answer): a question asked back is
    # no answer, though its words match the asker's best. A page's question stays (a case
    # study's question may be what is asked for).
    # Twelve sets: no section figure moves; the three questions whose first quote changes
    # (two Czech account and project deletions, one project deletion's undo) were read blind
    # as better, 3 to 0; applied to every span that asks, a case study's question lost one
    # (docs/benchmarks.md, "An interface text that asks back"). Raised to .6: "Můžu smazat
    # svůj účet?" was still quoted "Opravdu chcete smazat svůj účet?" (it repeats every word
    # asked); over fifteen sets no answer changes from .2 to .6 ("Everyday questions").
    asks: float = 0.6
    asks_other: float = 0.6
    # An interface text that reports an action's outcome ("Welcome to BeCoMe.", the sign-up's
    # successMessage) and shares next to nothing with the question (under OUTCOME_SHARED of
    # its idf weight): it answers "what does this message mean?", not "how do I ...?". Over
    # seventeen sets 9 answers change, judged blind better in 8, a tie in 1 (docs/benchmarks.md,
    # "Quotes as a person reads them"; a penalty without the shared-words test was judged
    # worse, "Everyday questions").
    outcome: float = 1.0
    outcome_other: float = 1.0

    def without_question_views(self) -> Weights:
        """These weights where no question view can be read: each language's decision reads
        what it did before the question views joined it."""
        return dataclasses.replace(self, match=1.0, coverage=self.coverage_plain, question=0.0,
                                   vocabulary=self.vocabulary_plain,
                                   threshold=self.threshold_plain, fitted=0.0,
                                   match_other=1.0, coverage_other=self.coverage_plain_other,
                                   confidence_other=self.confidence_plain_other,
                                   question_other=0.0,
                                   vocabulary_other=self.vocabulary_plain_other,
                                   fitted_other=0.0,
                                   threshold_other=self.threshold_plain_other,
                                   # Not measured without them: no answer is hedged.
                                   hedge=0.0, hedge_other=0.0)

    def deciding(self, has_views: bool) -> Weights:
        """The weights a decision uses: these, or without_question_views when none of the
        passages it reads has a question view."""
        return self if has_views else self.without_question_views()


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
    order: float = 0.0  # the part of the score that is retrieval's order (Weights.rank)


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


SHORT_WORDS = 6
# Under this share of the question's idf weight in common, an outcome message is not about it.
OUTCOME_SHARED = 0.1


def _outcome_key(key: str) -> bool:
    """An interface text that reports an action's outcome: a success or an error message."""
    last = key.rsplit(".", 1)[-1]
    return last.startswith(("success", "error")) or last.endswith(("Success", "Failed", "Error"))


def rank_spans(questions: Sequence[str], passages: Sequence[Passage],
               spans: Sequence[Sequence[Span]], vectors: Vectors,
               idf: Callable[[str], float], weights: Weights = WEIGHTS,
               english: bool = True,
               passage_vectors: Sequence[Sequence[float]] | None = None,
               views: Sequence[float] | None = None,
               adapter: np.ndarray | None = None) -> list[Candidate]:
    """Every span scored against the question(s), best first; `english`: the question was
    asked in English (see Weights.rank); `passage_vectors`: the passages' index vectors
    (see Weights.passage and Weights.adapted); `views`: per passage, the best question-view
    similarity (see Weights.views); `adapter`: the index's query adapter."""
    prior = weights.rank if english else weights.rank_other
    whole = weights.passage if english else weights.passage_other
    fused = weights.fused if english else weights.fused_other
    asks = weights.views if english else weights.views_other
    language = "en" if english else "cs"
    asked = [_plain(q) for q in questions if len(q.split()) >= 3]
    flat = [(n, s) for n, per in enumerate(spans) for s in per
            if not (weights.skip_weak and is_weak(passages[n].score, language))
            # A span that holds the question itself (a code example asking it) repeats it.
            and not any(q in _plain(s.text_of(passages[n].text)) for q in asked)]
    if not flat:
        return []
    # A group of labels is read as its texts, without their keys.
    texts = [label_text(passages[n].text, s) for n, s in flat]
    # Embedded with its heading (embed_text); the index build stored these vectors.
    span_vectors = vectors([embed_text(passages[n], s) for n, s in flat], "passage")
    query_vectors = vectors(list(questions), "query")
    terms = query_terms(questions, idf)
    aim = weights.focus if english else weights.focus_other
    asking = weights.asks if english else weights.asks_other
    told = weights.outcome if english else weights.outcome_other
    focus = max((t for t in terms if t not in EN_STOP and t not in CS_STOP and len(t) > 2),
                key=terms.__getitem__, default=None) if aim else None
    each = [query_terms([q], idf) for q in questions] \
        if not english and weights.lexical_mix_other == "max" and len(questions) > 1 else None
    mean = not english and weights.dense_mix_other == "mean"
    meaning = [max(_cosine(q, v) for q in query_vectors) for v in passage_vectors] \
        if whole and passage_vectors else None
    fits = weights.adapted if english else weights.adapted_other
    fitted = adapted_similarities(query_vectors, passage_vectors, adapter) \
        if fits and adapter is not None and passage_vectors else None
    out = []
    for (n, span), text, vec in zip(flat, texts, span_vectors, strict=True):
        sims = [_cosine(q, vec) for q in query_vectors]
        dense = sum(sims) / len(sims) if mean else max(sims)
        context = span_context(passages[n], span)
        if each is not None:
            lexical = max(_overlap(t, text) for t in each)
            heading = max(_overlap(t, context) for t in each)
        else:
            lexical = _overlap(terms, text)
            heading = _overlap(terms, context)
        match = weights.dense * dense + weights.lexical * lexical + weights.heading * heading
        if weights.title:
            match += weights.title * _overlap(terms, passages[n].title)
        shape = 0.0
        if weights.short:
            shape -= weights.short * max(0, SHORT_WORDS - len(text.split())) / SHORT_WORDS
        if weights.row and span.kind == "row":
            shape -= weights.row
        if english and passages[n].lang == "cs":
            shape -= weights.czech_span
        if not english and passages[n].lang != "cs":
            shape -= weights.english_span_other
        if focus is not None and focus in tokenize(text, split=True):
            shape += aim
        if asking and span.kind == "line" and not span.key.endswith("question") \
                and text.rstrip(" \"”“").endswith("?"):
            shape -= asking
        if told and span.kind == "line" and _outcome_key(span.key) and lexical < OUTCOME_SHARED:
            shape -= told
        bonus = prior / (n + 1) + fused * passages[n].score + shape
        if meaning is not None:
            bonus += whole * meaning[n]
        if fitted is not None:
            bonus += fits * fitted[n]
        if asks and views is not None:
            bonus += asks * views[n]
        out.append(Candidate(n, span, " ".join(text.split()), match + bonus, dense,
                             lexical, match, prior / (n + 1)))
    if weights.neighbour:
        out = _with_neighbours(out, weights.neighbour)
    out.sort(key=lambda c: (-c.score, c.n, c.span.start))
    return out


def _plain(text: str) -> str:
    """Case folded, whitespace collapsed, without a final question mark or stop."""
    return " ".join(text.split()).casefold().rstrip("?.!… ")


def _with_neighbours(cands: list[Candidate], weight: float) -> list[Candidate]:
    """Each span's score plus `weight` times the best match of the spans just before and after
    it in its block (a sentence whose neighbours speak of the question is more likely the
    answer's place)."""
    out = []
    for i, c in enumerate(cands):
        near = [o.match for o in (cands[i - 1] if i else None,
                                  cands[i + 1] if i + 1 < len(cands) else None)
                if o is not None and o.n == c.n and o.span.block == c.span.block]
        out.append(dataclasses.replace(c, score=c.score + weight * max(near, default=0.0)))
    return out


def _extended(c: Candidate, passage: Passage, spans: Sequence[Span]) -> Candidate:
    """The span as it is best quoted: an FAQ question gives way to its answer, a sentence of
    an answer takes the whole answer; an introduction ending in ':' takes the item, row or
    formula line it introduces."""
    i = spans.index(c.span)
    nxt = spans[i + 1] if i + 1 < len(spans) else None
    if c.span.key.endswith("answer"):
        # One sentence of an FAQ answer is half of it ("For an odd number ..." without "For
        # an even number ..."): the whole answer while it fits one quote.
        first = last = i
        while first > 0 and _same_line(spans[first - 1], c.span):
            first -= 1
        while last + 1 < len(spans) and _same_line(spans[last + 1], c.span):
            last += 1
        if first == last or spans[last].end - spans[first].start > MAX_SPAN_CHARS:
            return c
        span = Span(spans[first].start, spans[last].end, c.span.kind, c.span.block,
                    c.span.key, c.span.label)
        return dataclasses.replace(c, span=span,
                                   text=" ".join(span.text_of(passage.text).split()))
    if c.span.kind == "code" and (run := _code_run(c.span, passage)) is not None:
        # A comment says what the commands under it are for ("# Backend (http://...)"), and a
        # command's first line ending in "\" does not run: alone neither answers. Quoted with
        # the lines they need, one line each, as the block has them.
        return dataclasses.replace(c, span=run, text=_code_lines(run, passage.text))
    if nxt is None:
        return c
    if c.span.key.endswith("question") and nxt.key.endswith("answer"):
        # The whole answer while it fits one quote: its second sentence may be the one asked
        # about ("... for an odd count. For an even count ...").
        end = nxt.end
        for more in spans[i + 2:]:
            if more.key != nxt.key or more.end - nxt.start > MAX_SPAN_CHARS:
                break
            end = more.end
        span = Span(nxt.start, end, nxt.kind, nxt.block, nxt.key, nxt.label)
    elif c.text.endswith(":") and nxt.end - c.span.start <= MAX_SPAN_CHARS \
            and nxt.kind != "line" and not _comment(nxt, passage):
        span = Span(c.span.start, nxt.end, c.span.kind, c.span.block, c.span.key)
    else:
        return c
    return dataclasses.replace(c, span=span, text=" ".join(span.text_of(passage.text).split()))


# What starts a comment line in the code blocks of the documentation (shell, Python, JS).
_COMMENT_MARKS = ("#", "//")


def _comment(span: Span, passage: Passage) -> bool:
    """Whether a span is a comment line of a code block (what a shell block's "# Clone the
    repository" is): no formula or command an introduction introduces."""
    return span.kind == "code" and span.text_of(passage.text).lstrip().startswith(_COMMENT_MARKS)


def _code_run(span: Span, passage: Passage) -> Span | None:
    """A code line with the lines it needs: a comment's own further comment lines, then the
    code under it, to the next comment, a blank line or the block's end; a command continued
    with "\\", its continuation lines. Within MAX_SPAN_CHARS, never ending inside a continued
    command; None when no line is added."""
    text = passage.text
    comment = _comment(span, passage)
    continued = span.text_of(text).endswith("\\")
    if not (comment or continued):
        return None
    safe = None if continued else span.end  # the last end that leaves no command open
    code = False
    pos = text.find("\n", span.end)
    while pos != -1:
        nxt = text.find("\n", pos + 1)
        line = text[pos + 1:nxt if nxt != -1 else len(text)].rstrip()
        stripped = line.strip()
        is_comment = stripped.startswith(_COMMENT_MARKS)
        if not stripped or stripped.startswith(("```", "~~~")) \
                or pos + 1 + len(line) - span.start > MAX_SPAN_CHARS:
            break
        if not continued and (not comment or (is_comment and code)):
            break
        code = code or not is_comment
        continued = stripped.endswith("\\")
        if not continued:
            safe = pos + 1 + len(line)
        pos = nxt
    return Span(span.start, safe, "code", span.block) \
        if safe is not None and safe > span.end else None


def _code_lines(span: Span, text: str) -> str:
    """A span of several code lines as the block has them, indented as under its first."""
    indent = span.start - (text.rfind("\n", 0, span.start) + 1)
    first, *rest = span.text_of(text).splitlines()
    return "\n".join([first.rstrip(), *(line[indent:].rstrip() if not line[:indent].strip()
                                         else line.strip() for line in rest)])


def _same_line(a: Span, b: Span) -> bool:
    """Whether two spans are sentences of one keyed line (one FAQ answer)."""
    return a.key == b.key and a.block == b.block


def decision(ranked: Sequence[Candidate], covered: float, top: float,
             weights: Weights = WEIGHTS, english: bool = True, asked: float = 0.0,
             familiar: float = 0.0, strange: bool = False, fit: float = 0.0) -> float:
    """The score "I don't know" is decided on: the weighted best span's match, plus the
    weighted coverage, plus the weighted retrieval confidence `top` (the best fused score),
    plus the weighted best question-view similarity `asked` (Weights.question), plus the
    weighted share of the question's words the corpus knows, `familiar` (Weights.vocabulary;
    see known), plus the weighted best similarity through the query adapter `fit`
    (Weights.fitted), less Weights.strange when the question names something the corpus
    never uses."""
    match, weight, conf, views, vocab, fitted, penalty = (
        (weights.match, weights.coverage, weights.confidence, weights.question,
         weights.vocabulary, weights.fitted, weights.strange) if english
        else (weights.match_other, weights.coverage_other, weights.confidence_other,
              weights.question_other, weights.vocabulary_other, weights.fitted_other,
              weights.strange_other))
    return (match * max((c.match for c in ranked), default=0.0) + weight * covered
            + conf * top + views * asked + vocab * familiar + fitted * fit
            - (penalty if strange else 0.0))


def margin(ranked: Sequence[Candidate], covered: float, weights: Weights = WEIGHTS,
           english: bool = True, top: float = 0.0, asked: float = 0.0,
           familiar: float = 0.0, strange: bool = False, fit: float = 0.0) -> float:
    """How far the decision score clears the threshold (see Weights.threshold); negative
    below it."""
    threshold = weights.threshold if english else weights.threshold_other
    return decision(ranked, covered, top, weights, english, asked, familiar, strange,
                    fit) - threshold


def answers(ranked: Sequence[Candidate], covered: float, weights: Weights = WEIGHTS,
            english: bool = True, top: float = 0.0, asked: float = 0.0,
            familiar: float = 0.0, strange: bool = False, fit: float = 0.0) -> bool:
    """Whether the spans answer at all: the decision score clears the threshold."""
    return bool(ranked) and margin(ranked, covered, weights, english, top, asked, familiar,
                                   strange, fit) >= 0


def retrieval_confidence(passages: Sequence[Passage]) -> float:
    """Retrieval's confidence: the best fused score (the best of the passages coverage reads,
    which are the best by their score: see covered)."""
    return max((p.score for p in passages), default=0.0)


def hedged(ranked: Sequence[Candidate], passages: Sequence[Passage], covered: float,
           weights: Weights = WEIGHTS, english: bool = True, asked: float = 0.0,
           familiar: float = 0.0, strange: bool = False, fit: float = 0.0) -> bool:
    """Whether the spans answer (see choose) by less than Weights.hedge over the threshold."""
    band = weights.hedge if english else weights.hedge_other
    return bool(ranked) and 0 <= margin(ranked, covered, weights, english,
                                        retrieval_confidence(passages), asked, familiar, strange,
                                        fit) < band


def reads_vocabulary(weights: Weights, english: bool) -> bool:
    """Whether the decision reads known (so the caller computes it)."""
    return (weights.vocabulary if english else weights.vocabulary_other) > 0


def uses_question_views(weights: Weights, english: bool) -> bool:
    """Whether the decision reads the question views (so the caller looks them up)."""
    return (weights.question if english else weights.question_other) > 0


def ranks_by_adapter(weights: Weights, english: bool) -> bool:
    """Whether the span ranking or the decision reads the query adapter (Weights.adapted,
    Weights.fitted)."""
    return (weights.adapted if english else weights.adapted_other) > 0 \
        or (weights.fitted if english else weights.fitted_other) > 0


def adapted_similarities(query_vectors: Sequence[Sequence[float]],
                         passage_vectors: Sequence[Sequence[float]],
                         adapter: np.ndarray) -> list[float]:
    """Per passage, its index vector's best cosine with a query vector through the adapter."""
    mapped = [adapted(list(q), adapter) for q in query_vectors]
    return [max(_cosine(q, v) for q in mapped) for v in passage_vectors]


def ranks_by_question_views(weights: Weights, english: bool) -> bool:
    """Whether the span ranking reads each passage's question views (Weights.views)."""
    return (weights.views if english else weights.views_other) > 0


def choose(ranked: Sequence[Candidate], passages: Sequence[Passage],
           spans: Sequence[Sequence[Span]], covered: float,
           weights: Weights = WEIGHTS, english: bool = True, asked: float = 0.0,
           familiar: float = 0.0, strange: bool = False, said: str = "",
           fit: float = 0.0) -> list[Candidate]:
    """The quotes: the best span, then up to two more within the margin, no two overlapping,
    those of one passage in its reading order; nothing when they do not answer (see answers;
    `asked`: the best question-view similarity of the passages coverage reads; `familiar`:
    see known; `strange`: the question names something the corpus never uses; `said`: the
    answer a follow-up follows, which is not given again word for word while other spans
    remain; `fit`: the best similarity through the query adapter of the passages coverage
    reads)."""
    if not answers(ranked, covered, weights, english, retrieval_confidence(passages), asked,
                   familiar, strange, fit):
        return []
    chosen = _pick(ranked, passages, spans, weights, english)
    earlier = _plain(said)
    if said and all(_plain(c.text) in earlier for c in chosen):
        # Every quote was in the last answer: the same answer again. The spans it did not
        # quote instead, as they would be quoted (an FAQ question gives way to its answer).
        fresh = [c for c in ranked if _plain(c.text) not in earlier and _plain(
            _extended(c, passages[c.n], spans[c.n]).text) not in earlier]
        chosen = _pick(fresh, passages, spans, weights, english) if fresh else chosen
    return _reading_order(chosen)


def _reading_order(chosen: Sequence[Candidate]) -> list[Candidate]:
    """The quotes of one passage in its reading order (steps read as the page has them), the
    passages in the order of their best quote."""
    first: dict[int, int] = {}
    for i, c in enumerate(chosen):
        first.setdefault(c.n, i)
    return sorted(chosen, key=lambda c: (first[c.n], c.span.start))


def _pick(ranked: Sequence[Candidate], passages: Sequence[Passage],
          spans: Sequence[Sequence[Span]], weights: Weights, english: bool
          ) -> list[Candidate]:
    """The best span, then up to two more within the margin, no two overlapping."""
    best = ranked[0].score
    own = ranked[0].score - ranked[0].order
    home = (passages[ranked[0].n].source, passages[ranked[0].n].section)
    chosen: list[Candidate] = []
    for c in ranked:
        if len(chosen) >= weights.max_quotes:
            break
        if c.score < best - weights.margin:
            if not weights.margin_other_section:
                break  # best first: nothing after it is within the margin either
            if (passages[c.n].source, passages[c.n].section) == home \
                    or c.score - c.order < own - weights.margin_other_section:
                continue
        if chosen and is_weak(passages[c.n].score, "en" if english else "cs"):
            continue  # a weak match beside the answer would be dressed as its support
        c = _extended(c, passages[c.n], spans[c.n])
        if any(o.n == c.n and o.span.start < c.span.end and c.span.start < o.span.end
               for o in chosen):
            continue
        chosen.append(c)
    return chosen


def _stems(text: str) -> set[str]:
    return {t[:STEM] for t in tokenize(text, split=True) if len(t) >= 3}


def coverage(questions: Sequence[str], passages: Sequence[Passage],
             idf: Callable[[str], float], vocabulary_max: float, mix: str = "max") -> float:
    """How much of the question the passages speak of: the idf-weighted share of its words
    (by their first STEM letters) found in the passages; a word the corpus never uses weighs
    as the rarest word does. The best of the question and its translation (`mix` "max"), or
    their mean ("mean"), or the translation's alone ("last")."""
    have: set[str] = set()
    for p in passages:
        # What search sees: the caption names the passage's subject in other words too.
        have |= _stems(p.index_text) | _stems(p.section)
    shares = [known(q, have, idf, vocabulary_max) for q in questions]
    if not shares:
        return 0.0
    if mix == "mean":
        return sum(shares) / len(shares)
    return shares[-1] if mix == "last" else max(shares)


COVERED = 3  # coverage reads the best this many passages


def covered(passages: Sequence[Passage]) -> list[int]:
    """The places of the COVERED passages the decision reads: the best by their fused share,
    on which it was calibrated (retrieval's order gives one ranking's first place more weight,
    RetrievalConfig.order_k; a passage a single ranking put first on one common word must not
    make an off-topic question look covered); ties in retrieval's order."""
    return sorted(range(len(passages)), key=lambda n: -passages[n].score)[:COVERED]


def known(question: str, stems: Collection[str], idf: Callable[[str], float],
          vocabulary_max: float) -> float:
    """The idf-weighted share of the question's words whose first STEM letters are in `stems`
    (a word the corpus never uses weighs as the rarest word does): of the passages' words,
    coverage; of the whole corpus's (LexicalIndex.stems), how much of the question the corpus
    knows at all (Weights.vocabulary)."""
    words = {t for t in tokenize(question, split=True) if len(t) >= 3}
    weights = {t: w if (w := idf(t)) > 0 else vocabulary_max for t in words}
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t[:STEM] in stems) / total if total else 0.0
