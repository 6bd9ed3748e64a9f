"""The quotes form's step of a turn: spans of the retrieved passages ranked, chosen and written
out (no chat-model call); the project's figures first for a project question."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from shared import corpus_store
from shared.config import Settings
from shared.turn_request import ProjectBlock
from worker.pipeline.bm25 import lexical_index
from worker.pipeline.names import unknown
from worker.pipeline.project_summary import summary_lines
from worker.pipeline.quote_answer import QuotesAnswer, compose, found, passage_spans
from worker.pipeline.quotes import (
    WEIGHTS,
    adapted_similarities,
    choose,
    coverage,
    covered,
    hedged,
    known,
    rank_spans,
    ranks_by_adapter,
    ranks_by_question_views,
    reads_vocabulary,
    uses_question_views,
)
from worker.pipeline.retrieve import RetrievalConfig
from worker.pipeline.types import Retrieval
from worker.pipeline.vectors import cached_vectors, passage_vectors, query_adapter

# The quotes form looks at more passages than a prompt holds: only the quoted ones are cited.
QUOTE_PASSAGES = 5


@dataclass(frozen=True)
class Said:
    """What the quotes step wrote: the answer and the done frame's structured block."""

    answer: QuotesAnswer
    structured: dict[str, Any]
    retrieval: Retrieval  # the quoted passages, numbered as the answer cites them


def write_quotes(conn: psycopg.Connection, settings: Settings, questions: Sequence[str],
                 retrieval: Retrieval, lang: str, project: ProjectBlock | None,
                 message: str, said: str = "") -> Said:
    """Rank the spans, choose the quotes (or "I don't know") and write the answer (`said`:
    the earlier answer a follow-up follows; see choose)."""
    config = RetrievalConfig.from_settings(settings)
    lexical = lexical_index(conn, retrieval.index_version, config.fold_diacritics,
                            config.lemmatize, config.split_identifiers)
    idf_table = lexical.bm25.idf

    def idf(term: str) -> float:
        return float(idf_table.get(term, 0.0))

    passages = list(retrieval.passages)
    spans = passage_spans(passages, lexical)
    english = lang != "cs"
    # The question's (and its translation's) vectors: the search asked for them already.
    asking = cached_vectors(settings, list(questions), "query", conn)
    # The best similarity of the question (and its translation) with a question each passage
    # answers (question views): a prior of its spans, and for the decision the best among the
    # passages coverage reads; looked up only when either reads it.
    views: dict[str, float] = {}
    if ranks_by_question_views(WEIGHTS, english) or uses_question_views(WEIGHTS, english):
        views = corpus_store.question_similarities(conn, asking, [p.id for p in passages])
    # The passages' similarity with the question through the query adapter: a prior of
    # their spans (Weights.adapted) and a part of the decision (Weights.fitted), read only
    # where it weighs.
    adapter = query_adapter(conn, retrieval.index_version) \
        if ranks_by_adapter(WEIGHTS, english) else None
    index_vectors = passage_vectors(conn, passages) if adapter is not None else None
    ranked = rank_spans(questions, passages, spans,
                        lambda texts, kind: cached_vectors(settings, texts, kind, conn), idf,
                        english=english, views=[views.get(p.id, 0.0) for p in passages],
                        passage_vectors=index_vectors, adapter=adapter)
    read = covered(passages)
    fit = max(adapted_similarities(asking, [index_vectors[n] for n in read], adapter),
              default=0.0) if adapter is not None and index_vectors else 0.0
    share = coverage(questions, [passages[n] for n in read], idf, lexical.idf_max,
                     "max" if english else WEIGHTS.coverage_mix_other)
    asked = max((views.get(passages[n].id, 0.0) for n in read), default=0.0)
    # An index without question views (a corpus of the user's own) decides as calibrated
    # without them.
    weights = WEIGHTS.deciding(any(passages[n].id in views for n in read))
    familiar = known(questions[0], lexical.stems, idf, lexical.idf_max) \
        if reads_vocabulary(weights, english) else 0.0
    # A name of the question the corpus never uses (GraphQL, Zoom, or words it knows but never
    # side by side: Internet Explorer) is something it cannot speak of; a project question's
    # names are its experts', read from the project. The message's own names: a follow-up is
    # not refused for a name its earlier question used.
    strange = unknown(message, lexical.uses, lexical.uses_together) if project is None else []
    chosen = choose(ranked, passages, spans, share, weights, english=english, asked=asked,
                    familiar=familiar, strange=bool(strange), said=said, fit=fit)
    figures = project.figures if project is not None else None
    lead = summary_lines(figures, lang, message) if figures is not None else []
    # Quotes that barely clear the threshold are given as the closest the documentation says.
    close = bool(chosen) and hedged(ranked, passages, share, weights, english, asked,
                                    familiar, bool(strange), fit)
    answer = compose(chosen, passages, lang, lead, strange, lexical.passages, hedged=close)
    # Verified, not assumed: each quote is looked up in its own passage's text
    # (docs/spec/behaviour.md B-26).
    quotes = tuple({**q, "found": found(q, answer.passages[q["n"] - 1].text)}
                   for q in answer.quotes)
    answer = dataclasses.replace(answer, quotes=quotes)
    block = answer.structured()
    block["project"] = {"lines": lead, "figures": figures.to_json()} if figures else None
    return Said(answer, block, Retrieval(answer.passages, retrieval.index_version,
                                         retrieval.query))
