"""Hybrid retrieval: pgvector (meaning) + BM25 (words), merged by reciprocal rank fusion."""

from __future__ import annotations

import dataclasses
import re
import threading
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import psycopg
from rank_bm25 import BM25Okapi

from shared import corpus_store
from shared.config import Settings
from shared.models import embed
from shared.passage import Passage
from worker.pipeline import bilingual as freedict
from worker.pipeline.lexicon import Lexicon, aligned_pairs, cs_terms, en_terms, learn
from worker.pipeline.types import Retrieval

TOKEN = re.compile(r"\w+", re.UNICODE)
# Where an identifier's words meet: an underscore, or a lower-case letter or digit followed by
# a capital (snake_case, camelCase, ASSISTANT_CAPTIONS_FILE).
IDENTIFIER_PARTS = re.compile(r"_|(?<=[a-z0-9])(?=[A-Z])")
MODES = ("hybrid", "dense", "bm25")


@dataclass(frozen=True)
class RetrievalConfig:
    """The knobs of retrieval; the evaluation compares two of these."""

    mode: str = "hybrid"
    rrf_k: int = 60
    candidates: int = 20
    top_k: int = 3
    bm25_original: bool = True
    fold_diacritics: bool = False
    lemmatize: bool = False
    per_language_pools: bool = False
    # Cross-lingual help for a Czech question (issue 12): also search English passages with
    # the question's words translated by the interface-text dictionary (lexicon.py) ...
    expand_czech: bool = False
    # ... keep this many of the top_k places for the best English passages ...
    english_slots: int = 0
    # When a translation is searched: search the original wording by meaning too, and search
    # the (English) translation over English passages only, since the original's rankings
    # already cover the Czech ones (both measured in docs/benchmarks.md, issue 12).
    dense_original: bool = True
    translation_english_only: bool = True
    # Language-aware fusion variants (issue 12, item 1): the RRF weight of the translation's
    # rankings; the weight of an extra dense ranking of a Czech question's own wording over
    # English passages only (0 = off); the weight of a BM25 ranking of its Czech lemmas over
    # the English passages' Czech keywords from the reversed interface dictionary (0 = off).
    translation_weight: float = 1.0
    original_english: float = 1.0
    czech_keywords: float = 1.0
    # For a Czech question, an English interface text in the ranking stands for its Czech twin
    # (same locale file and key path): the Czech user reads the Czech string, and boosting
    # English pages no longer pushes the Czech interface texts out through their twins.
    czech_twins: bool = True
    # The RRF weight of a BM25 ranking over English passages of the Czech question's words
    # looked up in Debian's general FreeDict Czech-English dictionary (bilingual.py; 0 = off),
    # with at most this many English senses per Czech word.
    bilingual: float = 0.0
    bilingual_senses: int = 3
    # How a Czech word's senses are ordered: "dictionary" (most often given, shortest),
    # "corpus" (a word like the Czech one first, then the senses most used in the passages).
    bilingual_rank: str = "corpus"
    # The RRF weight of a dense ranking of that bag of words over English passages (0 = off).
    bilingual_dense: float = 0.0
    # At most this many pieces of one section before every other ranked section has had a
    # place (0 = off): a long section cut into many pieces otherwise fills the top places
    # with near-copies of one passage.
    per_section: int = 2
    # BM25 also reads an identifier's words (key paths, settings names; see tokenize).
    split_identifiers: bool = True

    @classmethod
    def from_settings(cls, settings: Settings) -> RetrievalConfig:
        """The service's configuration."""
        return cls(mode=settings.retrieval_mode, candidates=settings.candidates,
                   top_k=settings.top_k, per_language_pools=settings.per_language_pools,
                   lemmatize=settings.lemmatize)


def fold(text: str) -> str:
    """Remove diacritics (č -> c), for the fold_diacritics variant."""
    return "".join(c for c in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(c))


@lru_cache(maxsize=200_000)
def lemma(token: str) -> str:
    """The Czech (else English) dictionary form of a token (simplemma, offline data)."""
    import simplemma

    return str(simplemma.lemmatize(token, lang=("cs", "en"))).lower()


def tokenize(text: str, folded: bool = False, lemmas: bool = False, split: bool = False
             ) -> list[str]:
    """Lower-cased word tokens for BM25 (optionally lemmatized, then optionally folded);
    `split` adds the words of an identifier after it (notVerifiedMessage -> not, verified,
    message), so "password requirements" meets the key path passwordRequirements."""
    if split:
        tokens = []
        for token in TOKEN.findall(text):
            tokens.append(token.lower())
            if token.isascii():
                parts = [t for t in IDENTIFIER_PARTS.split(token) if t]
                # Every part a word of 3+ letters: BeCoMe is a name, not be + co + me.
                if len(parts) > 1 and min(map(len, parts)) >= 3:
                    tokens.extend(t.lower() for t in parts)
    else:
        tokens = TOKEN.findall(text.lower())
    if lemmas:
        tokens = [lemma(t) for t in tokens]
    return [fold(t) for t in tokens] if folded else tokens


class Postings:
    """BM25Okapi's scores as an inverted index: per term, the documents that contain it and
    the term's finished score in each. Same numbers as rank-bm25's get_scores, but a query
    touches only the postings of its own terms instead of every document."""

    def __init__(self, bm25: BM25Okapi) -> None:
        self.size = len(bm25.doc_len)
        self._frequencies: dict[str, int] | None = None
        docs: dict[str, list[int]] = {}
        tfs: dict[str, list[float]] = {}
        for i, freqs in enumerate(bm25.doc_freqs):
            for term, tf in freqs.items():
                docs.setdefault(term, []).append(i)
                tfs.setdefault(term, []).append(tf)
        norm = bm25.k1 * (1 - bm25.b + bm25.b * np.asarray(bm25.doc_len) / bm25.avgdl)
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for term, idx in docs.items():
            ids = np.asarray(idx, dtype=np.int32)
            tf = np.asarray(tfs[term], dtype=np.float64)
            weight = (bm25.idf.get(term) or 0) * tf * (bm25.k1 + 1) / (tf + norm[ids])
            self._postings[term] = (ids, weight)

    def frequencies(self) -> dict[str, int]:
        """Every indexed term -> the number of documents that contain it (built once: the
        dictionary preset asks for it with every Czech question)."""
        if self._frequencies is None:
            self._frequencies = {term: len(ids) for term, (ids, _w) in self._postings.items()}
        return self._frequencies

    def scores(self, tokens: list[str]) -> np.ndarray:
        """Scores of every document for the query tokens (repeated tokens count again)."""
        out = np.zeros(self.size)
        for term in tokens:
            hit = self._postings.get(term)
            if hit is not None:
                out[hit[0]] += hit[1]
        return out


@dataclass(frozen=True)
class LexicalIndex:
    """BM25 over one index version's passages; built once per version per process."""

    version: str
    folded: bool
    lemmas: bool
    split: bool
    passages: tuple[Passage, ...]
    bm25: BM25Okapi
    langs: np.ndarray
    by_id: dict[str, Passage]
    postings: Postings

    def top(self, query: str, k: int, lang: str | None = None) -> list[tuple[str, float]]:
        """Best k passage ids for the query by BM25 (optionally one language), with scores."""
        tokens = tokenize(query, self.folded, self.lemmas, self.split)
        if not tokens:
            return []
        scores = self.postings.scores(tokens)
        if lang is not None:
            scores = np.where(self.langs == lang, scores, -np.inf)
        k = min(k, len(scores))
        best = np.argpartition(-scores, k - 1)[:k]
        ranked = sorted(best, key=lambda i: (-scores[i], i))
        return [(self.passages[i].id, float(scores[i])) for i in ranked if scores[i] > 0]


_lexical: dict[tuple[bool, bool, bool], LexicalIndex] = {}
_lexical_lock = threading.Lock()


def lexical_index(conn: psycopg.Connection, version: str, folded: bool = False,
                  lemmas: bool = False, split: bool = True) -> LexicalIndex:
    """The cached BM25 model for `version`, rebuilt once when a new index is swapped in."""
    key = (folded, lemmas, split)
    current = _lexical.get(key)
    if current is not None and current.version == version:
        return current
    with _lexical_lock:
        current = _lexical.get(key)
        if current is None or current.version != version:
            passages = tuple(corpus_store.all_passages(conn))
            corpus = [tokenize(p.index_text, folded, lemmas, split) for p in passages]
            bm25 = BM25Okapi(corpus or [[""]])
            langs = np.array([p.lang for p in passages])
            current = LexicalIndex(version, folded, lemmas, split, passages, bm25, langs,
                                   {p.id: p for p in passages}, Postings(bm25))
            _lexical[key] = current
        return current


_lexicons: dict[str, Lexicon] = {}


def lexicon_for(lexical: LexicalIndex) -> Lexicon:
    """The cs->en dictionary learnt from this index version's locale twins (cached)."""
    found = _lexicons.get(lexical.version)
    if found is None:
        found = learn(aligned_pairs((p.source, p.section, p.text) for p in lexical.passages))
        _lexicons.clear()
        _lexicons[lexical.version] = found
    return found


@dataclass(frozen=True)
class KeywordIndex:
    """BM25 over the Czech keywords of English passages: each English word of a passage
    replaced by its Czech twins from the reversed interface dictionary (lemmas), so a Czech
    question's lemmas can meet an English page lexically. No model call; built with the
    lexical index, once per index version per process."""

    version: str
    ids: tuple[str, ...]
    postings: Postings

    def top(self, question: str, k: int) -> list[tuple[str, float]]:
        """Best k English passage ids for a Czech question's lemmas."""
        tokens = cs_terms(question)
        if not tokens or not self.ids:
            return []
        scores = self.postings.scores(tokens)
        k = min(k, len(scores))
        best = np.argpartition(-scores, k - 1)[:k]
        ranked = sorted(best, key=lambda i: (-scores[i], i))
        return [(self.ids[i], float(scores[i])) for i in ranked if scores[i] > 0]


_keywords: dict[str, KeywordIndex] = {}


def czech_keywords_for(lexical: LexicalIndex) -> KeywordIndex:
    """The Czech-keyword BM25 of this index version's English passages (cached)."""
    found = _keywords.get(lexical.version)
    if found is None:
        reverse = lexicon_for(lexical).reverse()
        english = [p for p in lexical.passages if p.lang == "en"]
        docs = [[cs for w in en_terms(p.index_text) for cs in reverse.get(w, ())]
                for p in english]
        found = KeywordIndex(lexical.version, tuple(p.id for p in english),
                             Postings(BM25Okapi([d or [""] for d in docs] or [[""]])))
        _keywords.clear()
        _keywords[lexical.version] = found
    return found


_twins: dict[str, dict[str, str]] = {}


def twins_for(lexical: LexicalIndex) -> dict[str, str]:
    """English locale passage id -> its Czech twin's id (same file name and key path)."""
    found = _twins.get(lexical.version)
    if found is None:
        czech = {(p.source.replace("/locales/cs/", "/locales/en/"), p.section): p.id
                 for p in lexical.passages if p.lang == "cs" and "/locales/cs/" in p.source}
        found = {p.id: czech[(p.source, p.section)] for p in lexical.passages
                 if (p.source, p.section) in czech and "/locales/en/" in p.source}
        _twins.clear()
        _twins[lexical.version] = found
    return found


def to_czech_twins(ranked: list[tuple[str, float]], twins: dict[str, str]
                   ) -> list[tuple[str, float]]:
    """The ranking with each English interface text replaced by its Czech twin, at the
    better of the two places (a passage is listed once)."""
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    for pid, score in ranked:
        pid = twins.get(pid, pid)
        if pid not in seen:
            seen.add(pid)
            out.append((pid, score))
    return out


def interleave(main: list[tuple[str, float]], side: list[tuple[str, float]], top_k: int,
               slots: int) -> list[tuple[str, float]]:
    """Language-aware fusion: in every run of top_k places, the last `slots` go to the best
    not yet placed passages of `side` (English pages found across languages), the others to
    `main` (the ranking of the question's own wording), so neither crowds the other out."""
    per = max(1, top_k - slots)
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    lists, pos = (main, side), [0, 0]
    while pos[0] < len(main) or pos[1] < len(side):
        for which, count in ((0, per), (1, slots)):
            taken = 0
            while taken < count and pos[which] < len(lists[which]):
                pid, score = lists[which][pos[which]]
                pos[which] += 1
                if pid not in seen:
                    seen.add(pid)
                    out.append((pid, score))
                    taken += 1
    return out


def spread_sections(ranked: list[tuple[str, float]], by_id: dict[str, Passage], per: int
                    ) -> list[tuple[str, float]]:
    """The ranking with each section's pieces beyond the first `per` moved after every
    section's first `per` pieces, order otherwise kept."""
    head: list[tuple[str, float]] = []
    tail: list[tuple[str, float]] = []
    seen: dict[tuple[str, str], int] = {}
    for pid, score in ranked:
        p = by_id.get(pid)
        key = (p.source, p.section) if p is not None else (pid, "")
        seen[key] = seen.get(key, 0) + 1
        (head if seen[key] <= per else tail).append((pid, score))
    return head + tail


def fuse(rankings: list[list[tuple[str, float]]], k: int = 60,
         weights: list[float] | None = None) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: sum of weight/(k + rank) over the rankings, best first."""
    scores: dict[str, float] = {}
    for n, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[n]
        for rank, (pid, _score) in enumerate(ranking, start=1):
            scores[pid] = scores.get(pid, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def rank(conn: psycopg.Connection, settings: Settings, config: RetrievalConfig, query: str,
         original: str | None = None, limit: int | None = None, language: str | None = None
         ) -> tuple[str, list[tuple[str, float]], LexicalIndex]:
    """(index version, ranked (passage id, score), lexical index) for a query; `language`
    is the question's ("cs" turns on the configured cross-lingual help)."""
    if config.mode not in MODES:
        raise ValueError(f"unknown retrieval mode {config.mode!r}")
    info = corpus_store.current_index(conn)
    lexical = lexical_index(conn, info.version, config.fold_diacritics, config.lemmatize,
                            config.split_identifiers)
    pools: list[str | None] = ["en", "cs"] if config.per_language_pools else [None]
    dense, words = config.mode in ("hybrid", "dense"), config.mode in ("hybrid", "bm25")
    own = original or query
    translated = own != query
    czech = language == "cs"
    expansion = lexicon_for(lexical).expand(own) if czech and config.expand_czech else ""
    if czech and config.english_slots and (translated or expansion):
        # Two lists: the question's own wording over everything, and the English side
        # (translation, dictionary terms) over English passages only; then interleaved.
        english = [t for t in (query if translated else "", expansion) if t]
        vectors = _vectors(settings, [own, *english]) if dense else []
        main, side = [], []
        for lang in pools:
            if dense:
                main.append(corpus_store.dense_search(conn, vectors[0], config.candidates, lang))
            if words:
                main.append(lexical.top(own, config.candidates, lang))
        for i, text in enumerate(english, start=1):
            if dense:
                side.append(corpus_store.dense_search(conn, vectors[i], config.candidates, "en"))
            if words:
                side.append(lexical.top(text, config.candidates, "en"))
        ranked = interleave(fuse(main, config.rrf_k), fuse(side, config.rrf_k), config.top_k,
                            config.english_slots)
        if config.per_section > 0:
            ranked = spread_sections(ranked, lexical.by_id, config.per_section)
        return info.version, ranked[: limit or config.top_k], lexical
    on_query: list[str | None] = ["en"] if config.translation_english_only and translated \
        else pools
    dense_texts = [query] + ([own] if config.dense_original and translated else [])
    extra_dense = czech and dense and config.original_english > 0
    texts = dense_texts + ([expansion] if expansion else [])
    vectors = _vectors(settings, texts) if dense else []
    tw = config.translation_weight if translated else 1.0
    rankings: list[list[tuple[str, float]]] = []
    weights: list[float] = []

    def add(ranking: list[tuple[str, float]], weight: float = 1.0) -> None:
        rankings.append(ranking)
        weights.append(weight)

    for n, vector in enumerate(vectors[: len(dense_texts)]):
        for lang in on_query if n == 0 else pools:
            add(corpus_store.dense_search(conn, vector, config.candidates, lang),
                tw if n == 0 else 1.0)
    if extra_dense:
        # The question's own wording, by meaning, over English pages only: Czech interface
        # texts cannot crowd them out of this ranking.
        vector = vectors[1] if config.dense_original and translated else \
            (vectors[0] if not translated else _vectors(settings, [own])[0])
        add(corpus_store.dense_search(conn, vector, config.candidates, "en"),
            config.original_english)
    if expansion and dense:
        add(corpus_store.dense_search(conn, vectors[-1], config.candidates, "en"))
    bag = " ".join(freedict.load().english(
        own, config.bilingual_senses, lexical.postings.frequencies(), config.bilingual_rank)
    ) if czech and (config.bilingual > 0 or config.bilingual_dense > 0) else ""
    if bag and dense and config.bilingual_dense > 0:
        add(corpus_store.dense_search(conn, _vectors(settings, [bag])[0], config.candidates,
                                      "en"), config.bilingual_dense)
    if words:
        for lang in on_query:
            add(lexical.top(query, config.candidates, lang), tw)
        if config.bm25_original and translated:
            for lang in pools:
                add(lexical.top(own, config.candidates, lang))
        if expansion:
            add(lexical.top(expansion, config.candidates, "en"))
        if czech and config.bilingual > 0:
            add(lexical.top(bag, config.candidates, "en"), config.bilingual)
        if czech and config.czech_keywords > 0:
            add(czech_keywords_for(lexical).top(own, config.candidates), config.czech_keywords)
    ranked = rankings[0] if len(rankings) == 1 else fuse(rankings, config.rrf_k, weights)
    if czech and config.czech_twins:
        ranked = to_czech_twins(ranked, twins_for(lexical))
    if config.per_section > 0:
        ranked = spread_sections(ranked, lexical.by_id, config.per_section)
    return info.version, ranked[: limit or config.top_k], lexical


def _vectors(settings: Settings, texts: list[str]) -> list[list[float]]:
    """Query embeddings of several texts in one request."""
    return embed(settings.embeddings, texts, "query", settings.embedding_prefix_mode)


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
