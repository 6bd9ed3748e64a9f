"""Language detection: Czech, English or unknown (Slovak is not Czech; short text is unknown)."""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from pathlib import Path

WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
CZECH_ONLY_LETTERS = set("ěřůĚŘŮ")
CZECH_LETTERS = set("áčďéěíňóřšťúůýžÁČĎÉĚÍŇÓŘŠŤÚŮÝŽ")
SLOVAK_ONLY_LETTERS = set("ĺľŕôäĹĽŔÔÄ")
CZECH_WORDS = frozenset(
    "a aby ale co což je jak jaký jaká jaké jsem jsou jsme kde kdo když který která které ktery "
    "nebo není proč se si to tak také už v ve z ze že na do od po pro při mezi jestli můžu "
    "mohu lze jaký jaké čím nám náš naše naši proto tedy".split())
ENGLISH_WORDS = frozenset(
    "the a an is are was were what which who how why when where does do did can could should "
    "would of to in on for with and or not it this that these those our my your their from by "
    "about as be been its just if then there any some all will has have had you we they them "
    "his she her into than also only very".split())
# An English contraction's tail ("I've", "it's"): "ve" is a Czech word too.
# Quotation marks by language, outer then inner: “…” ‘…’ in English, „…“ ‚…‘ in Czech.
QUOTE_MARKS = {"en": ("“", "”", "‘", "’"), "cs": ("„", "“", "‚", "‘")}


def quote_marks(lang: str) -> tuple[str, str]:
    """A language's outer quotation marks (English's for any other language)."""
    opening, closing, _inner_open, _inner_close = QUOTE_MARKS.get(lang, QUOTE_MARKS["en"])
    return opening, closing


CONTRACTION = re.compile(r"(?<=\w)['’](?:ve|s|re|ll|d|t|m)\b", re.IGNORECASE)
SLOVAK_WORDS = frozenset("je aký aká aké prečo kde ako sú nie čo ktorý ktorá ktoré".split())
# Common Czech words as people type them without diacritics (question words, pronouns, verbs,
# particles, the method's everyday nouns), none of them also an English word: "Kdo vyvinul
# metodu BeCoMe?" is Czech.
CZECH_PLAIN_WORDS = frozenset("""
kdo co kde kdy jak proc kolik jaky jaka jake jakou jakym jakymi jakych ktery ktera ktere kterou
kterym kterymi kterych cim komu koho cemu ceho kam odkud kudy zda zdali jestli jestlize
ja ty vy oni ona ono mi mne mnou tebe tobe nas vas jim jich ho ji jej sebe sobe svuj sva sve
svou svych svym muj moje moji tvuj vase jeho jeji jejich tento tato toto tyto tenhle tahle
tohle takovy takova takove nekdo neco nic nikdo kazdy kazda kazde vsechno vsechny vse vsichni
zadny zadna zadne jsem jsi jsme jste jsou byl byla bylo byli byly bude budu budou budeme byt
mam mas ma mame mate maji mit muzu muze muzeme muzete mohou muzou mohl mohla chci chce chceme
chtel potrebuji potrebuju potrebuje musim musi musime jde jdu lze umi umim funguje fungovat
delat udelat vidim vidi vim znamena dela neni nejsou nemam nemuzu nemuze nelze nevim nefunguje
ale nebo protoze kdyz ze aby takze tedy jen jenom uz jeste taky take tez proto pak potom nejak
nejaky nejaka nejake mozna opravdu presne hodne vic vice mene dobre spatne tady tam ted vzdy
nikdy casto na od po pri mezi pred za nad bez podle kvuli misto pres projekt projektu projekty
projektech experti expertu expertum expertem expertu nazor nazoru nazory odhad odhadu vysledek
vysledku vysledky metoda metodu metody metode chyba chyby prumer hodnota hodnoty ucet uctu heslo
hesla uzivatel uzivatele stranka stranky aplikace soubor udaje udaju
""".split())
# Slovak as people type it without diacritics, none of them a Czech word: with one of these, or
# a word ending as only Slovak ends ("prihlasenie", "nastavenia"), the letters decide nothing.
SLOVAK_PLAIN_WORDS = frozenset("""
sa som sme ste su nie ako kedy preco ktory ktora ktore aky aka ake mozem mozes moze mozete
mozeme potrebujem potrebujes chcem chces nemozem nemoze zabudol zabudla alebo lebo tiez vsetko
vsetky ked
""".split())
SLOVAK_ENDINGS = ("enie", "enia", "anie", "ania")
# Words of both languages ("a", "to") say nothing either way.
BOTH = (CZECH_WORDS | CZECH_PLAIN_WORDS) & ENGLISH_WORDS


# Letter trigrams of Czech and English words (bench/language_table.py makes the table): where
# the word lists above are unsure, a question whose letters lean this far towards Czech is
# Czech. The lean is a sum of log ratios over the question's trigrams; 8 is far from what
# the English and Czech questions of the eval sets gave (docs/benchmarks.md, "The English
# decision from the adapter, hedged answers, groups of labels, Czech by its letters").
TRIGRAMS = Path(__file__).with_name("language_trigrams.json")
LEAN = 8.0


def plain(text: str) -> str:
    """The text without diacritics (č -> c)."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))


def trigrams(word: str) -> list[str]:
    """A word's letter trigrams, its start and end marked by a space."""
    padded = f" {word} "
    return [padded[i:i + 3] for i in range(len(padded) - 2)]


@functools.cache
def _table() -> tuple[dict[str, float], float]:
    data = json.loads(TRIGRAMS.read_text(encoding="utf-8"))
    return data["ratios"], float(data["unseen"])


def letters_lean(words: list[str]) -> float:
    """How much more Czech than English the words' letters are (log odds; > 0 Czech)."""
    ratios, unseen = _table()
    plain_words = (plain(w) for w in words)
    return sum(ratios.get(g, unseen) for w in plain_words if re.fullmatch(r"[a-z]+", w)
               for g in trigrams(w))


def detect_language(text: str) -> str:
    """'cs', 'en' or 'unknown'; unsure is unknown, so no language line is added
    (docs/spec/behaviour.md B-23)."""
    words = [w.lower() for w in WORD.findall(CONTRACTION.sub("", text))]
    if len(words) < 2:
        return "unknown"
    letters = set(text)
    if letters & SLOVAK_ONLY_LETTERS:
        return "unknown"
    cs = sum(w in CZECH_WORDS or w in CZECH_PLAIN_WORDS for w in words if w not in BOTH)
    cs += 2 * len(letters & CZECH_ONLY_LETTERS) + sum(1 for w in words if set(w) & CZECH_LETTERS)
    en = sum(w in ENGLISH_WORDS for w in words if w not in BOTH)
    sk = sum(w in SLOVAK_WORDS and w not in CZECH_WORDS for w in words)
    if sk and not letters & CZECH_ONLY_LETTERS:
        return "unknown"
    if cs >= 2 and cs > 2 * en:
        return "cs"
    if en >= 1 and en > 2 * cs and not letters & CZECH_LETTERS:
        return "en"
    if sk or en or not cs:  # both languages, Slovak, or no word of the lists: unsure
        return "unknown"
    # One Czech word of the lists, and Czech letters. Czech only: two languages' letters cannot
    # tell English from German or French (each leans "not Czech"); nor Czech from Slovak,
    # Croatian or Polish typed without diacritics, hence a Slovak word or ending, Polish "cz"
    # or "sz", or a letter Czech does not write (ł, ß, ö) keeps it unknown.
    plain_words = [plain(w) for w in words]
    if any(w in SLOVAK_PLAIN_WORDS or w.endswith(SLOVAK_ENDINGS) or "cz" in w or "sz" in w
           for w in plain_words) or {c for c in letters if c.isalpha() and not c.isascii()} \
            - CZECH_LETTERS:
        return "unknown"
    return "cs" if letters_lean(words) >= LEAN else "unknown"
