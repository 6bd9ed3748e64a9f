"""Hybrid retrieval: pgvector (meaning) + BM25 (words), merged by reciprocal rank fusion."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import numpy as np
import psycopg
from rank_bm25 import BM25Okapi

from shared import corpus_store
from shared.config import Settings
from shared.corpus_store import StoredPassage
from shared.models import embed
from worker.pipeline.types import Passage, Retrieval

TOKEN = re.compile(r"\w+", re.UNICODE)
RRF_K = 60


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens for BM25."""
    return TOKEN.findall(text.lower())


@dataclass(frozen=True)
class LexicalIndex:
    """BM25 over one index version's passages; built once per version per process."""

    version: str
    passages: tuple[StoredPassage, ...]
    bm25: BM25Okapi

    def top(self, query: str, k: int) -> list[tuple[str, float]]:
        """Best k passage ids for the query by BM25, with their scores."""
        tokens = tokenize(query)
        if not tokens:
            return []
        scores = self.bm25.get_scores(tokens)
        k = min(k, len(scores))
        best = np.argpartition(-scores, k - 1)[:k]
        ranked = sorted(best, key=lambda i: (-scores[i], i))
        return [(self.passages[i].id, float(scores[i])) for i in ranked if scores[i] > 0]


_lexical: LexicalIndex | None = None
_lexical_lock = threading.Lock()


def lexical_index(conn: psycopg.Connection, version: str) -> LexicalIndex:
    """The cached BM25 model for `version`, rebuilt once when a new index is swapped in."""
    global _lexical
    current = _lexical
    if current is not None and current.version == version:
        return current
    with _lexical_lock:
        if _lexical is None or _lexical.version != version:
            passages = tuple(corpus_store.all_passages(conn))
            bm25 = BM25Okapi([tokenize(p.index_text) for p in passages] or [[""]])
            _lexical = LexicalIndex(version, passages, bm25)
        return _lexical


def fuse(rankings: list[list[tuple[str, float]]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: sum of 1/(k + rank) over the rankings, best first."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, (pid, _score) in enumerate(ranking, start=1):
            scores[pid] = scores.get(pid, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def retrieve(conn: psycopg.Connection, settings: Settings, query: str,
             original: str | None = None) -> Retrieval:
    """The top_k passages for a (search-language) query; BM25 also runs on the original."""
    info = corpus_store.current_index(conn)
    lexical = lexical_index(conn, info.version)
    vector = embed(settings.embeddings, [query], "query", settings.embedding_prefix_mode)[0]
    dense = corpus_store.dense_search(conn, vector, settings.candidates)
    rankings = [dense, lexical.top(query, settings.candidates)]
    if original and original != query:
        rankings.append(lexical.top(original, settings.candidates))
    fused = fuse(rankings)[: settings.top_k]
    by_id = {p.id: p for p in lexical.passages}
    passages = tuple(
        Passage(p.id, p.source, p.title, p.section, p.text, p.local, round(score, 5))
        for pid, score in fused if (p := by_id.get(pid)) is not None)
    return Retrieval(passages, info.version, query)
