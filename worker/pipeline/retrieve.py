"""Hybrid retrieval: pgvector (meaning) + BM25 (words), merged by reciprocal rank fusion."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import psycopg

from shared import corpus_store
from shared.config import RETRIEVAL_MODES, Settings
from worker.pipeline import bilingual as freedict
from worker.pipeline.bm25 import LexicalIndex, lexical_index
from worker.pipeline.fusion import fuse, interleave, spread_sections, to_czech_twins
from worker.pipeline.twins import czech_keywords_for, lexicon_for, twins_for
from worker.pipeline.types import Retrieval
from worker.pipeline.vectors import adapted, cached_vectors, query_adapter

Ranking = list[tuple[str, float]]


@dataclass(frozen=True)
class RetrievalConfig:
    """What a chat turn's settings choose (`from_settings`), and the ranking's fixed choices.

    The fields are the settings' (shared/config.py). Every other choice the ranking reads is a
    class attribute below, fixed at the value measured best (docs/benchmarks.md): no setting
    and no `dataclasses.replace` changes it. The research presets vary them:
    `ResearchConfig` in worker/evaluation_presets.py makes each one a field (and says what it
    does), `PRESETS` there names the variants measured."""

    mode: str = "hybrid"
    candidates: int = 20
    top_k: int = 3
    per_language_pools: bool = False
    lemmatize: bool = False

    # The fixed choices the default ranking uses: RRF's k; BM25 on the original wording of a
    # translated question, by identifiers' words; the original wording by meaning too and the
    # translation over English passages only, at this weight; for a Czech question, its own
    # wording by meaning over English passages, its Czech keywords and the Czech twins; the
    # captions' and the questions' views; pieces of one section before the next section.
    rrf_k = 60
    # The fused list is ordered by the same sum at a small k, so that one ranking's first place
    # counts against a passage every ranking puts in the middle; its scores stay the shares at
    # rrf_k, which the weak-match labels and the quotes form's decision are calibrated on.
    # Twelve read sets: hit@3 English .843 -> .884, Czech .825 -> .851 (MRR +.039 [+.015,
    # +.064]); the sixteenth blind set: Czech hit@3 .30 -> .45 (docs/benchmarks.md, "First
    # places count").
    order_k = 3
    bm25_original = True
    split_identifiers = True
    dense_original = True
    translation_english_only = True
    translation_weight = 1.0
    original_english = 1.0
    czech_keywords = 1.0
    czech_twins = True
    caption_cs = 1.0
    caption_en = 1.0
    question_cs = 1.0
    question_en = 1.0
    question_translation = 1.0
    # The question as asked, through the query adapter fitted on the question views
    # (corpus_jobs/adapter.py), over every passage by meaning, at this weight (0 = off; an
    # index without question views has no adapter). Nine read sets: hit@3 English .84 ->
    # .86, Czech .78 -> .82 (docs/benchmarks.md, "A query adapter").
    adapted = 2.0
    per_section = 2
    # Research leads off by default: diacritics folded, the interface-text dictionary and the
    # English slots, Debian's FreeDict dictionary, one ranking of both views.
    fold_diacritics = False
    expand_czech = False
    english_slots = 0
    bilingual = 0.0
    bilingual_senses = 3
    bilingual_rank = "corpus"
    bilingual_dense = 0.0
    question_merge = False

    @classmethod
    def from_settings(cls, settings: Settings) -> RetrievalConfig:
        """The service's configuration."""
        return cls(mode=settings.retrieval_mode, candidates=settings.candidates,
                   top_k=settings.top_k, per_language_pools=settings.per_language_pools,
                   lemmatize=settings.lemmatize)


@dataclass(frozen=True)
class _Search:
    """One question's two ways to search, with the configured number of candidates."""

    conn: psycopg.Connection
    settings: Settings
    config: RetrievalConfig
    lexical: LexicalIndex
    adapter: np.ndarray | None = None

    def dense(self, vector: list[float], lang: str | None) -> Ranking:
        """Nearest passages by meaning (optionally of one language)."""
        return corpus_store.dense_search(self.conn, vector, self.config.candidates, lang)

    def words(self, text: str, lang: str | None) -> Ranking:
        """Best passages by BM25 (optionally of one language)."""
        return self.lexical.top(text, self.config.candidates, lang)

    def vectors(self, texts: list[str]) -> list[list[float]]:
        """Query embeddings of several texts in one request."""
        return _vectors(self.settings, texts)


def rank(conn: psycopg.Connection, settings: Settings, config: RetrievalConfig, query: str,
         original: str | None = None, limit: int | None = None, language: str | None = None
         ) -> tuple[str, Ranking, LexicalIndex]:
    """(index version, ranked (passage id, score), lexical index) for a query; `language`
    is the question's ("cs" turns on the configured cross-lingual help)."""
    if config.mode not in RETRIEVAL_MODES:
        raise ValueError(f"unknown retrieval mode {config.mode!r}")
    info = corpus_store.current_index(conn)
    lexical = lexical_index(conn, info.version, config.fold_diacritics, config.lemmatize,
                            config.split_identifiers)
    own = original or query
    czech = language == "cs"
    search = _Search(conn, settings, config, lexical,
                     query_adapter(conn, info.version) if config.adapted > 0 else None)
    expansion = lexicon_for(lexical).expand(own) if czech and config.expand_czech else ""
    if czech and config.english_slots and (own != query or expansion):
        ranked = _english_slots(search, query, own, expansion)
    else:
        rankings, weights = _rankings(search, query, own, expansion, czech)
        ranked = rankings[0] if len(rankings) == 1 else \
            fuse(rankings, config.rrf_k, weights, config.order_k)
        if czech and config.czech_twins:
            ranked = to_czech_twins(ranked, twins_for(lexical))
    if config.per_section > 0:
        ranked = spread_sections(ranked, lexical.by_id, config.per_section)
    return info.version, ranked[: limit or config.top_k], lexical


def _pools(config: RetrievalConfig) -> list[str | None]:
    """The languages each ranking is split into (None: one pool of every language)."""
    return ["en", "cs"] if config.per_language_pools else [None]


def _english_slots(search: _Search, query: str, own: str, expansion: str) -> Ranking:
    """Two lists, interleaved: the question's own wording over everything, and the English
    side (translation, dictionary terms) over English passages only."""
    config = search.config
    dense, words = config.mode in ("hybrid", "dense"), config.mode in ("hybrid", "bm25")
    english = [t for t in (query if own != query else "", expansion) if t]
    vectors = search.vectors([own, *english]) if dense else []
    main: list[Ranking] = []
    side: list[Ranking] = []
    for lang in _pools(config):
        if dense:
            main.append(search.dense(vectors[0], lang))
        if words:
            main.append(search.words(own, lang))
    for i, text in enumerate(english, start=1):
        if dense:
            side.append(search.dense(vectors[i], "en"))
        if words:
            side.append(search.words(text, "en"))
    return interleave(fuse(main, config.rrf_k), fuse(side, config.rrf_k), config.top_k,
                      config.english_slots)


def _rankings(search: _Search, query: str, own: str, expansion: str, czech: bool
              ) -> tuple[list[Ranking], list[float]]:
    """Every ranking the configuration asks for, with its RRF weight: meaning first, then
    words (`query` is the search wording, `own` the question's own, the same unless
    translated)."""
    config = search.config
    dense, words = config.mode in ("hybrid", "dense"), config.mode in ("hybrid", "bm25")
    pools = _pools(config)
    translated = own != query
    # The translation is English: its rankings search English passages only; the original's
    # rankings already cover the Czech ones.
    on_query: list[str | None] = ["en"] if config.translation_english_only and translated \
        else pools
    tw = config.translation_weight if translated else 1.0
    rankings: list[Ranking] = []
    weights: list[float] = []

    def add(ranking: Ranking, weight: float = 1.0) -> None:
        rankings.append(ranking)
        weights.append(weight)

    dense_texts = [query] + ([own] if config.dense_original and translated else [])
    vectors = search.vectors(dense_texts + ([expansion] if expansion else [])) if dense else []
    for n, vector in enumerate(vectors[: len(dense_texts)]):
        for lang in on_query if n == 0 else pools:
            add(search.dense(vector, lang), tw if n == 0 else 1.0)
    # The question's own wording by meaning (its translation's vector is vectors[0]).
    mine = (vectors[1] if config.dense_original and translated else
            vectors[0] if not translated else search.vectors([own])[0]) if dense else []
    if dense and search.adapter is not None:
        add(search.dense(adapted(mine, search.adapter), None), config.adapted)
    if czech and dense and config.original_english > 0:
        # The question's own wording, by meaning, over English pages only: Czech interface
        # texts cannot crowd them out of this ranking.
        add(search.dense(mine, "en"), config.original_english)
    if czech and dense and (config.caption_cs > 0 or config.question_cs > 0):
        # The Czech wording by meaning over the Czech captions: a caption says in Czech what
        # an English page is about, in the app's own Czech terms; and over the Czech questions
        # the passages answer.
        for ranking, weight in _views(search, mine, "cs", config.caption_cs,
                                      config.question_cs):
            add(ranking, weight)
    if not czech and dense and (config.caption_en > 0 or config.question_en > 0):
        for ranking, weight in _views(search, vectors[0], "en", config.caption_en,
                                      config.question_en):
            add(ranking, weight)
    if czech and translated and dense and config.question_translation > 0:
        found = corpus_store.view_search(search.conn, vectors[0], config.candidates, "en")
        if found:
            add(found, config.question_translation)
    if expansion and dense:
        add(search.dense(vectors[-1], "en"))
    bag = " ".join(freedict.load().english(
        own, config.bilingual_senses, search.lexical.postings.frequencies(),
        config.bilingual_rank)) if czech and (config.bilingual > 0 or config.bilingual_dense > 0) \
        else ""
    if bag and dense and config.bilingual_dense > 0:
        add(search.dense(search.vectors([bag])[0], "en"), config.bilingual_dense)
    if words:
        for lang in on_query:
            add(search.words(query, lang), tw)
        if config.bm25_original and translated:
            for lang in pools:
                add(search.words(own, lang))
        if expansion:
            add(search.words(expansion, "en"))
        if czech and config.bilingual > 0:
            add(search.words(bag, "en"), config.bilingual)
        if czech and config.czech_keywords > 0:
            add(czech_keywords_for(search.lexical).top(own, config.candidates),
                config.czech_keywords)
    return rankings, weights


def _views(search: _Search, vector: list[float], lang: str, caption: float, question: float
           ) -> list[tuple[Ranking, float]]:
    """The view rankings of one language with their weights: the captions' and the
    questions' apart, or one ranking of both (`question_merge`); a view the index
    lacks adds none."""
    conn, k = search.conn, search.config.candidates
    if search.config.question_merge and caption > 0:
        found = corpus_store.view_search(
            conn, vector, k, lang, (corpus_store.CAPTIONS_TABLE, corpus_store.QUESTIONS_TABLE))
        return [(found, caption)] if found else []
    out: list[tuple[Ranking, float]] = []
    if caption > 0 and (found := corpus_store.caption_search(conn, vector, k, lang)):
        out.append((found, caption))
    if question > 0 and (found := corpus_store.view_search(conn, vector, k, lang)):
        out.append((found, question))
    return out


def _vectors(settings: Settings, texts: list[str]) -> list[list[float]]:
    """Query embeddings of several texts in one request (kept: the quotes form asks again)."""
    return cached_vectors(settings, texts, "query")


def retrieve(conn: psycopg.Connection, settings: Settings, query: str,
             original: str | None = None, config: RetrievalConfig | None = None,
             language: str | None = None) -> Retrieval:
    """The top_k passages for a (search-language) query; BM25 also runs on the original."""
    config = config or RetrievalConfig.from_settings(settings)
    version, ranked, lexical = rank(conn, settings, config, query, original, language=language)
    by_id = lexical.by_id
    passages = tuple(
        dataclasses.replace(p, score=round(score, 5))
        for pid, score in ranked if (p := by_id.get(pid)) is not None)
    return Retrieval(passages, version, query)
