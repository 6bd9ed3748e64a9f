"""A Czech->English domain dictionary learnt from the app's parallel interface texts.

Every Czech locale string has an English twin under the same key path (cs/x.json and
en/x.json). Pairing the twins line by line gives thousands of aligned sentence pairs; a word
pair that keeps appearing together (Dice coefficient over the pairs) is taken as a
translation. No model and no hand-written word list: the dictionary follows the corpus.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

LOCALE = re.compile(r"(?:^|/)locales/(cs|en)/([^/]+\.json)$")
LINE = re.compile(r"^([\w.\[\]-]+): (.+)$")
WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
# Function words of either language pair with everything; the Dice score already ranks them
# low, these keep them out of the expansion altogether.
EN_STOP = frozenset("""the and for are but not you your with this that from have has was were
will can its into than then them they their there these those what when which who why how all
any each our out one two may must also only own per via yet more most such other here been
being does did done just over under about after before between both same some very""".split())
CS_STOP = frozenset("""který která které kteří jak jako jen ale nebo než pro při před pod nad
bez mezi podle také tak tedy již ještě jsem jsi jsou jste jsme být byl byla bylo byly bude
budou mít má mají můj moje můžu může můžete musí musím mám máte něco někdo nic kdo kde kdy
proč což tím této tento tato toto ten ta to ty tu tom tomu toho jeho její jejich vám vás váš
vaše svůj své svým sebe sobě když aby ani až už ještě jaké jaký jaká jakou jakým""".split())
MIN_PAIRS = 2
MIN_DICE = 0.25
PER_WORD = 3


@lru_cache(maxsize=100_000)
def cs_lemma(word: str) -> str:
    """The Czech dictionary form of a lower-cased word (simplemma, offline data)."""
    import simplemma

    return str(simplemma.lemmatize(word, lang="cs")).lower()


def cs_terms(text: str) -> list[str]:
    """Czech content words of a text as lemmas, in order, without function words."""
    out = []
    for w in WORD.findall(text.lower()):
        if w in CS_STOP:
            continue
        lem = cs_lemma(w)
        if lem not in CS_STOP:
            out.append(lem)
    return out


def en_terms(text: str) -> list[str]:
    """English content words of a text, lower-cased, without function words."""
    return [w for w in WORD.findall(text.lower()) if w not in EN_STOP]


@dataclass(frozen=True)
class Lexicon:
    """cs lemma -> English words, best first; learnt from aligned interface strings."""

    entries: dict[str, tuple[str, ...]]
    pairs: int

    def expand(self, text: str) -> str:
        """English search terms for a Czech text: each known word's translations, and each
        unknown word as written (names such as Sentry or Railway are the same in both)."""
        out: list[str] = []
        for w in WORD.findall(text.lower()):
            if w in CS_STOP:
                continue
            lem = cs_lemma(w)
            if lem in CS_STOP:
                continue
            hits = self.entries.get(lem) or self.entries.get(w)
            out.extend(hits if hits else (w,))
        return " ".join(dict.fromkeys(out))

    def reverse(self) -> dict[str, tuple[str, ...]]:
        """English word -> the Czech lemmas it translates (the dictionary read backwards)."""
        out: dict[str, list[str]] = {}
        for cs, ens in self.entries.items():
            for en in ens:
                out.setdefault(en, []).append(cs)
        return {en: tuple(sorted(cs)) for en, cs in out.items()}


def _lines(section: str, text: str) -> Iterable[tuple[str, str]]:
    """(key path, value) for each 'key: value' line of a locale passage; the key is given
    both relative to the passage's section and as written, so twins cut differently still
    share keys."""
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        key, value = m.groups()
        yield key, value
        if section:
            yield f"{section}.{key}", value


def aligned_pairs(passages: Iterable[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """(Czech, English) string pairs from locale twins: (source, section, text) passages whose
    source is locales/cs/F.json or locales/en/F.json, paired by file name and key path."""
    sides: dict[str, dict[tuple[str, str], str]] = {"cs": {}, "en": {}}
    # A key seen twice with different values in one file (a bare "[0]" or "title" of two
    # passages) is ambiguous: it would pair unrelated strings, so it is dropped.
    ambiguous: set[tuple[str, str, str]] = set()
    for source, section, text in passages:
        m = LOCALE.search(source)
        if not m:
            continue
        lang, name = m.groups()
        for key, value in _lines(section, text):
            old = sides[lang].setdefault((name, key), value)
            if old != value:
                ambiguous.add((lang, name, key))
    for lang, name, key in ambiguous:
        sides[lang].pop((name, key), None)
    seen: set[tuple[str, str]] = set()
    out = []
    for pair_key, cs in sides["cs"].items():
        en = sides["en"].get(pair_key)
        if en is not None and cs != en and (cs, en) not in seen:
            seen.add((cs, en))
            out.append((cs, en))
    return out


def learn(pairs: list[tuple[str, str]]) -> Lexicon:
    """Word translations by Dice association over aligned pairs (at least MIN_PAIRS each)."""
    df_cs: Counter[str] = Counter()
    df_en: Counter[str] = Counter()
    co: Counter[tuple[str, str]] = Counter()
    for cs, en in pairs:
        a, b = set(cs_terms(cs)), set(en_terms(en))
        df_cs.update(a)
        df_en.update(b)
        co.update((x, y) for x in a for y in b)
    best: dict[str, list[tuple[float, str]]] = {}
    for (x, y), n in co.items():
        if n < MIN_PAIRS:
            continue
        dice = 2 * n / (df_cs[x] + df_en[y])
        if dice >= MIN_DICE:
            best.setdefault(x, []).append((dice, y))
    entries = {x: tuple(y for _d, y in sorted(c, key=lambda t: (-t[0], t[1]))[:PER_WORD])
               for x, c in best.items()}
    return Lexicon(entries, len(pairs))
