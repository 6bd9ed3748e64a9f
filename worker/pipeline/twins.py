"""What the app's locale twins give a Czech question's search: the cs->en dictionary learnt from
them, Czech keywords for English passages, and each English interface text's Czech twin. Each
is built once per index version per process."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rank_bm25 import BM25Okapi

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


_by_keys: dict[tuple[str, str], dict[str, str]] = {}


def english_twins_for(lexical: LexicalIndex) -> dict[str, str]:
    """Czech locale passage id -> its English twin's id (twins_by_keys)."""
    return twins_by_keys(lexical, "en")


def twins_by_keys(lexical: LexicalIndex, lang: str) -> dict[str, str]:
    """Locale passage id of the other language -> the piece of the same file in `lang` that
    holds most of its key paths. Matched by key path, not by section: one language's text
    of a key group may be cut into more pieces, or grouped deeper ("cookies.outro" against
    "cookies"), than the other's."""
    found = _by_keys.get((lexical.version, lang))
    if found is not None:
        return found
    other = "cs" if lang == "en" else "en"
    mine: dict[str, list[tuple[str, set[str]]]] = {}
    for p in lexical.passages:
        if p.lang == lang and f"/locales/{lang}/" in p.source:
            mine.setdefault(p.source, []).append((p.id, key_paths(p.section, p.text)))
    found = {}
    for p in lexical.passages:
        if p.lang != other or f"/locales/{other}/" not in p.source:
            continue
        keys = key_paths(p.section, p.text)
        shared, twin = max(((len(keys & theirs), pid) for pid, theirs in mine.get(
            p.source.replace(f"/locales/{other}/", f"/locales/{lang}/"), ())), default=(0, ""))
        if shared:  # a text whose keys the other file lacks has no twin
            found[p.id] = twin
    if not any(v == lexical.version for v, _ in _by_keys):
        _by_keys.clear()
    _by_keys[(lexical.version, lang)] = found
    return found


def key_paths(section: str, text: str) -> set[str]:
    """The full key paths of a locale piece's "key: text" lines ("cookies" + "items[0]" and
    "cookies.items" + "[0]" are both "cookies.items[0]")."""
    out = set()
    for line in text.splitlines():
        key, sep, _ = line.partition(": ")
        if not sep or not key or " " in key:
            continue
        if section.rsplit(".", 1)[-1] == key:  # a piece of one key: the section names it
            out.add(section)
        else:
            out.add(f"{section}{'' if key.startswith('[') else '.'}{key}")
    return out
