"""A general Czech->English dictionary from Debian's FreeDict packages (dictd format).

dict-freedict-eng-ces (English->Czech, 150,000 headwords) is read backwards, Czech word ->
the English headwords that it translates, and merged with the small dict-freedict-ces-eng.
For a Czech question this gives an English bag of words (classic dictionary-based query
translation) for one more BM25 ranking over English passages: no model call. Both packages
are GPL-2+ (FreeDict contributors; /usr/share/doc/dict-freedict-*/copyright).
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from worker.pipeline.bm25 import fold
from worker.pipeline.lexicon import CS_STOP, EN_STOP, WORD, cs_lemma

DICT_DIR = Path("/usr/share/dictd")
ENG_CES = "freedict-eng-ces"
CES_ENG = "freedict-ces-eng"
PACKAGES = "dict-freedict-eng-ces dict-freedict-ces-eng"
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
# "[chem] adenosindifosfát (note)", "word <n, pl>", "Praha /prˈaha/": tags, glosses and
# pronunciations are not translations.
NOISE = re.compile(r"\[[^\]]*\]|\([^)]*\)|<[^>]*>|/[^/]*/")
# English words per Czech word: a general dictionary lists a dozen senses of a common word
# ("váha" -> weight, scale, balance, ...); the fewest-word, most-often-given ones first.
PER_WORD = 3


class DictionaryMissing(RuntimeError):
    """The Debian dictionary files are not installed."""


def _number(text: str) -> int:
    """A dictd index offset or length (base 64, most significant digit first)."""
    value = 0
    for c in text:
        value = value * 64 + B64.index(c)
    return value


def read_dictd(name: str, directory: Path = DICT_DIR) -> Iterator[tuple[str, str]]:
    """(headword line, body) of every entry of a dictd dictionary (.index + .dict.dz)."""
    index, data = directory / f"{name}.index", directory / f"{name}.dict.dz"
    for path in (index, data):
        if not path.exists():
            raise DictionaryMissing(
                f"the Czech-English dictionary file {path} is missing: install the Debian "
                f"packages {PACKAGES} (apt-get install {PACKAGES})")
    # dictzip is gzip with a random-access table; the whole file is small enough to inflate.
    with gzip.open(data) as f:
        raw = f.read()
    seen: set[int] = set()
    for line in index.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) != 3 or parts[0].startswith("00database"):
            continue
        start, size = _number(parts[1]), _number(parts[2])
        if start in seen:
            continue
        seen.add(start)
        head, _, body = raw[start:start + size].decode("utf-8", "replace").partition("\n")
        yield head, body


def _phrases(text: str) -> list[str]:
    """The translations in an entry's text: tags and glosses removed, split at , and ;."""
    out = []
    for line in text.splitlines():
        for part in re.split(r"[,;]", NOISE.sub(" ", line)):
            part = " ".join(part.split()).lower()
            if part:
                out.append(part)
    return out


def _english(phrase: str) -> tuple[str, ...]:
    """English content words of a headword or translation."""
    return tuple(w for w in WORD.findall(phrase.lower()) if w not in EN_STOP)


def _cognate(czech: str, english: str) -> bool:
    """A borrowed word (projekt/project, databáze/database): a common start of at least
    four letters covering most of the shorter word, diacritics folded."""
    n = 0
    for a, b in zip(czech, english, strict=False):
        if a != b:
            break
        n += 1
    return n >= 4 and n >= 0.6 * min(len(czech), len(english))


@dataclass(frozen=True)
class Bilingual:
    """Czech word (as written in the dictionary, lower case) -> English senses, best first."""

    entries: dict[str, tuple[tuple[str, ...], ...]]

    def senses(self, word: str) -> tuple[tuple[str, ...], ...]:
        """English senses of a lower-cased Czech word: by its lemma, else as written."""
        return self.entries.get(cs_lemma(word)) or self.entries.get(word) or ()

    def english(self, text: str, per_word: int = PER_WORD,
                frequencies: dict[str, int] | None = None, order: str = "corpus"
                ) -> list[str]:
        """An English bag of words for a Czech text: up to per_word senses of each content
        word, and an unknown word as written (names such as BeCoMe or Likert). With the
        corpus's term `frequencies`, senses that cannot match are dropped and, for order
        "corpus", a cognate (projekt -> project) comes first, then the senses the passages
        use most: the corpus tells which of a general dictionary's senses is its domain's."""
        out: list[str] = []
        for w in WORD.findall(text.lower()):
            if w in CS_STOP or cs_lemma(w) in CS_STOP:
                continue
            senses = self.senses(w)
            if frequencies is not None:
                senses = tuple(s for s in senses if any(x in frequencies for x in s))
                if order == "corpus":
                    stem = fold(cs_lemma(w))
                    senses = tuple(sorted(senses, key=lambda s: (
                        -max(_cognate(stem, x) for x in s),
                        -max(frequencies.get(x, 0) for x in s))))
            if not senses:
                out.append(w)
                continue
            for sense in senses[:per_word]:
                out.extend(sense)
        return list(dict.fromkeys(out))


def build(eng_ces: Iterable[tuple[str, str]], ces_eng: Iterable[tuple[str, str]]
          ) -> Bilingual:
    """The Czech->English table from both dictionaries: a Czech one-word translation of an
    English headword, read backwards, and every ces-eng entry as it stands."""
    counts: dict[str, dict[tuple[str, ...], int]] = {}

    def add(cs: str, en: tuple[str, ...]) -> None:
        if en and cs not in CS_STOP:
            senses = counts.setdefault(cs, {})
            senses[en] = senses.get(en, 0) + 1

    for head, body in eng_ces:
        en = _english(NOISE.sub(" ", head))
        for cs in _phrases(body):
            # Multi-word Czech renderings ("Jaderské moře") would give every one of their
            # words the whole headword; only one-word renderings are read backwards.
            if " " not in cs and WORD.fullmatch(cs):
                add(cs, en)
    for head, body in ces_eng:
        cs = " ".join(NOISE.sub(" ", head).split()).lower()
        if " " not in cs:
            for phrase in _phrases(body):
                add(cs, _english(phrase))
    entries = {cs: tuple(sorted(s, key=lambda e: (-s[e], len(e), e)))
               for cs, s in counts.items()}
    return Bilingual(entries)


_loaded: list[Bilingual] = []


def load(directory: Path = DICT_DIR) -> Bilingual:
    """The installed dictionaries, read once per process (about a second)."""
    if not _loaded:
        _loaded.append(build(read_dictd(ENG_CES, directory), read_dictd(CES_ENG, directory)))
    return _loaded[0]
