"""What the app's locale twins give a Czech question's search: the cs->en dictionary learnt from
them, Czech keywords for English passages, and each English interface text's Czech twin. Each
is built once per index version per process."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rank_bm25 import BM25Okapi

from shared.passage import Passage
from worker.pipeline.bm25 import LexicalIndex, Postings
from worker.pipeline.lexicon import Lexicon, aligned_pairs, cs_terms, en_terms, learn

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


def in_language(passages: Sequence[Passage], lang: str, pool: Sequence[Passage]) -> list[Passage]:
    """Each passage as a reader of `lang` has it named: an app's text of the other locale by
    its twin in `lang`'s (same file name and key path) where `pool` holds one."""
    by = {(p.source, p.section): p for p in pool}
    out = []
    for p in passages:
        other = f"/locales/{p.lang}/"
        twin = by.get((p.source.replace(other, f"/locales/{lang}/"), p.section)) \
            if p.lang != lang and other in p.source else None
        out.append(twin or p)
    return out
