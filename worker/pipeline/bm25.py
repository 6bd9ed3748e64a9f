"""Words: BM25 over one index version's passages, as an inverted index, built once per version
per process."""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
import psycopg
from rank_bm25 import BM25Okapi

from shared import corpus_store
from shared.passage import Passage
from worker.pipeline.names import names

TOKEN = re.compile(r"\w+", re.UNICODE)
# Where an identifier's words meet: an underscore, or a lower-case letter or digit followed by
# a capital (snake_case, camelCase, ASSISTANT_CAPTIONS_FILE).
IDENTIFIER_PARTS = re.compile(r"_|(?<=[a-z0-9])(?=[A-Z])")
STEM = 5  # characters a word and its inflected forms share (Czech cases, English plurals)


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

    @cached_property
    def stems(self) -> frozenset[str]:
        """The first STEM letters of every indexed word of 3 letters or more, once per index."""
        return frozenset(t[:STEM] for t in self.bm25.idf if len(t) >= 3)

    def uses(self, word: str) -> bool:
        """Whether the corpus uses this word or an inflected form of it (the same first STEM
        letters, as coverage reads them)."""
        tokens = tokenize(word, self.folded, self.lemmas)
        return bool(tokens) and all(t in self.bm25.idf or (len(t) >= 3 and t[:STEM] in self.stems)
                                    for t in tokens)

    @cached_property
    def pairs(self) -> frozenset[tuple[str, str]]:
        """Every two words side by side in a passage, by their first STEM letters, once per
        index."""
        out: set[tuple[str, str]] = set()
        for p in self.passages:
            stems = [t[:STEM] for t in tokenize(p.index_text, self.folded, self.lemmas)]
            out.update(zip(stems, stems[1:], strict=False))
        return frozenset(out)

    @cached_property
    def named(self) -> frozenset[str]:
        """The first STEM letters of every word a passage writes as a name (names.names, line
        by line), once per index."""
        return frozenset(t[:STEM] for p in self.passages for line in p.text.splitlines()
                         for w in names(line) for t in tokenize(w, self.folded, self.lemmas))

    def uses_together(self, words: Sequence[str]) -> bool:
        """Whether the corpus uses these words side by side, in this order, in some form (the
        same first STEM letters): "Docker Compose" yes, "Internet Explorer" no; or writes
        each of them as a name of its own ("OpenAI API", "BeCoMe Docker": its own names put
        side by side by the asker, who may mean what it says of each)."""
        stems = [t[:STEM] for w in words for t in tokenize(w, self.folded, self.lemmas)]
        return all(pair in self.pairs for pair in zip(stems, stems[1:], strict=False)) \
            or all(stem in self.named for stem in stems)

    @cached_property
    def idf_max(self) -> float:
        """The rarest indexed word's idf (a word the corpus never uses weighs as much)."""
        return max(self.bm25.idf.values(), default=1.0)

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
