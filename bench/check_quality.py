"""Check quality (docs/benchmarks.md, "Check quality"): recall on planted errors and false flags on
clean answers.

A generator with a fixed seed builds answers in English and Czech over real passages of the
BeCoMe corpus (the markdown files under the corpus folder, split at headings and blank lines,
three passages per answer as the turn gives the model). Each answer belongs to one category:

* clean_numbers: sentences restating numbers the passages hold, written the way each language
  writes them (Czech decimal comma and space thousands, English comma thousands, percentages,
  rounded or truncated values, bracketed triples), and a quoted passage sentence, cited [n];
* clean_citations: valid citations in every form (lists, ranges, reversed ranges, labels in
  English, Czech and Russian, [docN], full-width brackets and digits);
* clean_non_numbers: dates, list numbers (also bold), model names, versions, names like
  COVID-19, Czech ordinals after a tab or a narrow no-break space, standards;
* ungrounded_number: a clean answer plus one number the passages do not hold (a near miss of
  a passage number, a large number off by one, a random value, a number word), in any of the
  formats above, also after a hyphenated word;
* invalid_citation: a clean answer plus one citation, in any form, naming a passage the model
  was not given (0 or beyond the three);
* prompt_echo: a clean answer plus one line of the answer model's instructions (read from the
  prompt templates) or a piece of prompt markup (a passage fence around a passage sentence, a
  passage heading line, the passages header);
* repeat: an earlier answer of the conversation given again, with one word changed and its
  citations moved (the tiny model's copy of its last reply).

Every answer comes with an earlier answer in its conversation (a clean answer over other
passages; for `repeat`, the one it repeats), so the clean categories also measure false
prompt-echo and repeat flags: quoting a passage sentence must not count as an echo.

It runs our checks (every one the registry declares, worker.pipeline.checks.run_all) and prints,
per category and language, recall (planted error flagged) or the false-flag rate (clean answer
flagged at all). The templates were written from a list of the forms models write and ordinary
answer sentences before the checker was tuned against this bench; a planted number is ungrounded by
the spec's own rule (docs/spec/behaviour.md B-25: not in the passages, not a rounding or truncation
of one, not a percentage's fraction), computed here with its own simple reading of the passages,
not with the checker's. Run:

    .venv/bin/python -m bench.check_quality [--corpus ../shared/corpus/become] [-n 250]
        [--seed 12] [--show 3]
"""

from __future__ import annotations

import argparse
import random
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from pathlib import Path

from shared.turn_request import Message
from worker.pipeline.checks import CheckInput, run_all
from worker.pipeline.echo import RUN, instruction_lines

PASSAGES_PER_ANSWER = 3
CATEGORIES = ("clean_numbers", "clean_citations", "clean_non_numbers", "ungrounded_number",
              "invalid_citation", "prompt_echo", "repeat")
PLANTED = ("ungrounded_number", "invalid_citation", "prompt_echo", "repeat")
LANGS = ("en", "cs")
NBSP, NNBSP = "\u00a0", "\u202f"

# --- passages -------------------------------------------------------------------------------

# A number as a passage writes it: not glued to a letter, a hyphen or another number.
_NUM = re.compile(r"(?<![\w.,\-−/:])(\d+)(?:\.(\d+))?(?![\w\-/:]|[.,]\d)(\s?%)?")
_TRIPLE = re.compile(r"\((\d+(?:\.\d+)?), (\d+(?:\.\d+)?), (\d+(?:\.\d+)?)\)")
_SENTENCE = re.compile(r"[A-Z][^.!?\n`|#*\[\]]{30,180}[.!?](?=\s|$)")


@dataclass(frozen=True)
class Passage:
    source: str
    text: str


def load_passages(corpus: Path) -> list[Passage]:
    """Markdown files split at headings and blank lines into passages of 200-1200 characters."""
    out: list[Passage] = []
    for path in sorted(corpus.rglob("*.md")):
        if path.name == "CORPUS.md" or path.stat().st_size < 300:
            continue
        buf: list[str] = []
        for block in re.split(r"\n\s*\n|\n(?=#)", path.read_text(encoding="utf-8")):
            buf.append(block.strip())
            if sum(len(b) for b in buf) >= 200:
                text = "\n\n".join(buf)[:1200]
                out.append(Passage(str(path.relative_to(corpus)), text))
                buf = []
    return out


def passage_numbers(text: str) -> list[tuple[str, bool]]:
    """Numbers a passage states (as written with a decimal point) and whether a % follows."""
    return [(m.group(1) + (f".{m.group(2)}" if m.group(2) else ""), bool(m.group(3)))
            for m in _NUM.finditer(text)]


_SMALL_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())} | {
    w: i for i, w in enumerate("nula jedna dva tři čtyři pět šest sedm osm devět deset".split())
} | {w: 10 * i for i, w in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2)} | {
    w: 10 * i for i, w in enumerate(
        "dvacet třicet čtyřicet padesát šedesát sedmdesát osmdesát devadesát".split(), start=2)}


def all_values(texts: list[str]) -> set[Decimal]:
    """Every value the passages could be said to hold, read broadly (for planting only);
    docs/spec/behaviour.md B-25 counts numbers written as words too."""
    values: set[Decimal] = set()
    for text in texts:
        values |= {Decimal(_SMALL_WORDS[w.lower()]) for w in re.findall(r"\w+", text)
                   if w.lower() in _SMALL_WORDS}
        for m in re.finditer(r"\d+(?:[.,]\d+)*", text):
            runs = re.split(r"[.,]", m.group())
            values |= {Decimal(r) for r in runs}
            values |= {Decimal(f"{a}.{b}") for a, b in zip(runs, runs[1:], strict=False)}
            values.add(Decimal("".join(runs)))  # thousands separators of either language
        for m in re.finditer(r"\d{1,3}(?:[ \u00a0\u202f]\d{3})+", text):
            values.add(Decimal(re.sub(r"\D", "", m.group())))
    return values | {-v for v in values}


_ROUNDINGS = (ROUND_HALF_UP, ROUND_HALF_EVEN, ROUND_DOWN)


# The pinned constants of docs/spec/behaviour.md B-25.
PINNED = {Decimal(v) for v in (2, 3, 20, 40, 100)}


def is_grounded(value: Decimal, decimals: int, values: set[Decimal]) -> bool:
    """docs/spec/behaviour.md B-25 by the spec's words: pinned, present, or a passage value rounded
    or truncated to it, or a percentage of a passage fraction (and the other way round)."""
    if value in PINNED or (decimals == 0 and 1900 <= value <= 2099):
        # A pinned constant; a bare year is a date, not a number to check
        # (docs/spec/behaviour.md B-25).
        return True
    step = Decimal(1).scaleb(-decimals)
    for v in (value, value / 100, value * 100):
        if v in values:
            return True
        for g in values:
            if abs(g - v) < 1 and any(g.quantize(step, rounding=r) == v for r in _ROUNDINGS):
                return True
    return False


# --- writing numbers and citations ----------------------------------------------------------

def _group(int_part: str, sep: str) -> str:
    out = ""
    while len(int_part) > 3:
        out, int_part = sep + int_part[-3:] + out, int_part[:-3]
    return int_part + out


def write_number(value: str, lang: str, rng: random.Random, percent: bool = False) -> str:
    """A value (decimal point) written as an answer in that language would write it."""
    int_part, _, frac = value.partition(".")
    sign = ""
    if int_part.startswith("-"):
        sign, int_part = rng.choice(["-", "−"]), int_part[1:]
    if lang == "en":
        if len(int_part) >= 4 and rng.random() < 0.6:
            int_part = _group(int_part, ",")
        text = int_part + (f".{frac}" if frac else "")
        pct = rng.choice(["%", " %", " percent"]) if percent else ""
    else:
        if len(int_part) >= 4 and rng.random() < 0.7:
            int_part = _group(int_part, rng.choice([" ", NBSP, NNBSP]))
        text = int_part + (f",{frac}" if frac else "")
        pct = rng.choice([" %", NBSP + "%", " procent"]) if percent else ""
    return sign + text + pct


def round_like_a_writer(value: str, rng: random.Random) -> str:
    """As written, or rounded or truncated to fewer decimals (docs/spec/behaviour.md B-25 accepts
    both)."""
    _, _, frac = value.partition(".")
    if not frac or rng.random() < 0.5:
        return value
    keep = rng.randrange(0, len(frac))
    mode = rng.choice(_ROUNDINGS)
    return str(Decimal(value).quantize(Decimal(1).scaleb(-keep), rounding=mode))


CITE_EN = ["[{a}]", "[{a}, {b}]", "[{a}; {b}]", "[{lo}-{hi}]", "[{lo}–{hi}]", "[{hi}–{lo}]",
           "[Source {a}]", "[Sources {a}, {b}]", "[source {a}]", "[Passage {a}]", "[doc{a}]",
           "[Document {a}]", "[Source {a}, Source {b}]", "【{a}】", "［{a}］", "［{fa}］",
           "[Источник {a}]", "[Фрагмент {a}]", "[{a}][{b}]", "[Ref. {a}]", "[#{a}]"]
CITE_CS = ["[{a}]", "[{a}, {b}]", "[{a} a {b}]", "[{lo}-{hi}]", "[{lo}–{hi}]", "[{hi}–{lo}]",
           "[Zdroj {a}]", "[Zdroje {a}, {b}]", "[zdroj {a}]", "[Pasáž {a}]", "[Pasáže {a}–{b}]",
           "[doc{a}]", "[Dokument {a}]", "[Zdroj č. {a}]", "【{a}】", "［{a}］", "［{fa}］",
           "[Источник {a}]", "[Фрагмент {a}]", "[{a}][{b}]", "[Úryvek {a}]"]
_FULL = str.maketrans("0123456789", "０１２３４５６７８９")


def write_citation(lang: str, rng: random.Random, numbers: list[int],
                   form: str | None = None) -> tuple[str, set[int]]:
    """A citation naming numbers (one or two, a range spans them) and the set it names."""
    form = form or rng.choice(CITE_EN if lang == "en" else CITE_CS)
    a = numbers[0]
    # One number in a two-number form: pair it with another passage the model was given.
    b = numbers[1] if len(numbers) > 1 else rng.choice(
        [n for n in range(1, PASSAGES_PER_ANSWER + 1) if n != a])
    lo, hi = min(a, b), max(a, b)
    text = form.format(a=a, b=b, lo=lo, hi=hi, fa=str(a).translate(_FULL))
    if "{lo}" in form:
        return text, set(range(lo, hi + 1))
    return text, {a, b} if "{b}" in form or "{a}–{b}" in form else {a}


# --- sentences ------------------------------------------------------------------------------

CLAIM_EN = ["According to the documentation, the value is {n} {c}.",
            "The passage states {n} {c}, and the method uses it as is.",
            "In the example the result comes out as {n} {c}.",
            "The figure given for this is {n} {c}; the rest follows from it.",
            "You can read {n} there {c}.",
            "As the guide explains, the number to use is {n} {c}."]
CLAIM_CS = ["Podle dokumentace je hodnota {n} {c}.",
            "Pasáž uvádí {n} {c} a metoda ji používá beze změny.",
            "V příkladu vychází výsledek {n} {c}.",
            "Uvedená hodnota je {n} {c}; zbytek z ní plyne.",
            "Najdete tam číslo {n} {c}.",
            "Jak návod vysvětluje, použije se hodnota {n} {c}."]
QUOTE_EN = "As the documentation puts it: \"{s}\" {c}"
QUOTE_CS = "Dokumentace to říká takto: „{s}“ {c}"
TRIPLE_EN = "The opinion is written as the triple [{a}, {b}, {c}] {cite}."
TRIPLE_CS = "Názor je zapsán jako trojice [{a}; {b}; {c}] {cite}."
OPEN_EN = ["Here is what the documentation says.", "Short answer first, then the details.",
           "The BeCoMe method answers this directly."]
OPEN_CS = ["Dokumentace k tomu říká následující.", "Nejdřív krátká odpověď, potom detaily.",
           "Metoda BeCoMe na to odpovídá přímo."]
NON_NUMBERS_EN = [
    "The page was last updated on 2024-05-01 and again on 5 May 2025.",
    "**1.** Collect the opinions.\n**2.** Compute the compromise.",
    "1. Collect the opinions\n2. Compute the compromise",
    "The assistant can run on Qwen3.5-9B or on GPT-4 through an API.",
    "During COVID-19 the board met online.",
    "It needs Python 3.11 and PostgreSQL 16.",
    "Dates follow ISO 8601.",
    "The meeting starts at 14:30.",
    "Version v1.2.3 added the export.",
    "See section 6 for the details.",
    "The 3rd expert was the chairman.",
    "The embeddings come from multilingual-e5-small, a BM25 index sits beside them.",
]
NON_NUMBERS_CS = [
    "Stránka byla naposledy upravena 1. 5. 2024 a znovu v květnu 2025.",
    "**1.** Posbírejte názory.\n**2.** Spočítejte kompromis.",
    "1. Posbírejte názory\n2. Spočítejte kompromis",
    "Asistent může běžet na Qwen3.5-9B nebo na GPT-4 přes API.",
    "Během COVID-19 se rada scházela online.",
    "Vyžaduje Python 3.11 a PostgreSQL 16.",
    "Data se zapisují podle ISO 8601.",
    "Schůzka začíná ve 14:30.",
    "Nejnižší těžiště má 3.\texpert v tabulce.",
    "Nejvyšší odhad dal 2.\u202fexpert.",
    "Podrobnosti najdete v sekci 6.",
    "Ve verzi 2.1 přibyl export.",
]
WORDS_EN = {11: "eleven", 12: "twelve", 13: "thirteen", 14: "fourteen", 15: "fifteen",
            16: "sixteen", 17: "seventeen", 18: "eighteen", 19: "nineteen", 30: "thirty",
            50: "fifty", 60: "sixty", 70: "seventy", 80: "eighty", 90: "ninety"}
WORDS_CS = {11: "jedenáct", 12: "dvanáct", 13: "třináct", 14: "čtrnáct", 15: "patnáct",
            16: "šestnáct", 17: "sedmnáct", 18: "osmnáct", 19: "devatenáct", 30: "třicet",
            50: "padesát", 60: "šedesát", 70: "sedmdesát", 80: "osmdesát", 90: "devadesát"}
WORD_CLAIM_EN = "The example lists {w} experts {c}."
WORD_CLAIM_CS = "Příklad uvádí {w} expertů {c}."
HYPHEN_EN = "The reported error-{n} comes from the same table {c}."
HYPHEN_CS = "Uvedená odchylka-{n} pochází ze stejné tabulky {c}."


@dataclass(frozen=True)
class Case:
    category: str
    lang: str
    answer: str
    passages: tuple[str, ...]
    planted: str  # the planted number as written, or the planted citation
    planted_numbers: frozenset[int]  # invalid passage numbers of a planted citation
    earlier: str = ""  # the conversation's earlier answer


class Generator:
    """Builds the answers; every random choice comes from one seeded Random."""

    def __init__(self, passages: list[Passage], seed: int) -> None:
        self.rng = random.Random(seed)
        self.all = passages
        self.with_numbers = [p for p in passages if passage_numbers(p.text)]
        # The earlier answers and the planted echoes and repeats draw from their own Random,
        # so the first five categories' answers stay those of the published runs.
        self._side: Generator | None = None
        self._seed = seed

    @property
    def side(self) -> Generator:
        """A second generator (seed + 1) for the earlier answers, echoes and repeats."""
        if self._side is None:
            self._side = Generator(self.all, self._seed + 1)
        return self._side

    def _pick(self) -> list[Passage]:
        first = self.rng.choice(self.with_numbers)
        rest = self.rng.sample([p for p in self.all if p is not first], PASSAGES_PER_ANSWER - 1)
        chosen = [first, *rest]
        self.rng.shuffle(chosen)
        return chosen

    def _valid_cite(self, lang: str) -> str:
        nums = self.rng.sample(range(1, PASSAGES_PER_ANSWER + 1), 2)
        return write_citation(lang, self.rng, nums)[0]

    def _claims(self, lang: str, chosen: list[Passage], k: int) -> list[str]:
        """k sentences restating numbers of the passages, each cited by its own passage."""
        rng, out = self.rng, []
        options = [(i, n, pct) for i, p in enumerate(chosen, 1)
                   for n, pct in passage_numbers(p.text)]
        for i, value, pct in rng.sample(options, min(k, len(options))):
            shown = write_number(round_like_a_writer(value, rng), lang, rng, pct)
            cite = f"[{i}]" if rng.random() < 0.6 else write_citation(lang, rng, [i])[0]
            rows = CLAIM_EN if lang == "en" else CLAIM_CS
            out.append(rng.choice(rows).format(n=shown, c=cite))
        return out

    def _extras(self, lang: str, chosen: list[Passage]) -> list[str]:
        """A quoted passage sentence and a bracketed triple, when the passages have them."""
        rng, out = self.rng, []
        for i, p in enumerate(chosen, 1):
            sentences = _SENTENCE.findall(p.text)
            if sentences and rng.random() < 0.4:
                form = QUOTE_EN if lang == "en" else QUOTE_CS
                out.append(form.format(s=rng.choice(sentences).strip(), c=f"[{i}]"))
            triple = _TRIPLE.search(p.text)
            if triple and rng.random() < 0.7:
                a, b, c = (write_number(x, lang, rng) for x in triple.groups())
                form = TRIPLE_EN if lang == "en" else TRIPLE_CS
                out.append(form.format(a=a, b=b, c=c, cite=f"[{i}]"))
        return out

    def _clean(self, lang: str, chosen: list[Passage]) -> list[str]:
        opening = self.rng.choice(OPEN_EN if lang == "en" else OPEN_CS)
        return [opening, *self._claims(lang, chosen, self.rng.randint(1, 3)),
                *self._extras(lang, chosen)]

    def _plant_number(self, lang: str, texts: list[str]) -> tuple[str, str]:
        """An ungrounded number (as written) and the sentence carrying it."""
        rng = self.rng
        values = all_values(texts)
        nums = [n for t in texts for n, _ in passage_numbers(t)]
        while True:
            kind = rng.choice(["near", "near", "big", "random", "word", "hyphen", "percent",
                               "negative"])
            if kind == "word":
                w = rng.choice(list(WORDS_EN))
                if is_grounded(Decimal(w), 0, values):
                    continue
                word = (WORDS_EN if lang == "en" else WORDS_CS)[w]
                form = WORD_CLAIM_EN if lang == "en" else WORD_CLAIM_CS
                return word, form.format(w=word, c=self._cite1(lang))
            if kind == "near":  # change the last digit of a passage number
                base = rng.choice(nums)
                last = int(base[-1])
                value = base[:-1] + str((last + rng.randint(1, 8)) % 10)
            elif kind == "big":  # a large number one off, or ten digits one off
                base = rng.choice([n for n in nums if len(n) >= 4] or ["1234567890"])
                value = str(int(Decimal(base)) + rng.choice([1, -1, 10]))
            elif kind == "negative":
                value = "-" + rng.choice([f"{rng.randint(1, 99)}.{rng.randint(1, 9)}",
                                          str(rng.randint(5, 99))])
            else:
                value = rng.choice([str(rng.randint(21, 9999)),
                                    f"{rng.randint(1, 99)}.{rng.randint(10, 99)}"])
            decimals = len(value.partition(".")[2])
            if value.lstrip("-").startswith("0") and not value.lstrip("-").startswith("0."):
                continue
            if is_grounded(Decimal(value), decimals, values):
                continue
            if kind == "negative" and is_grounded(-Decimal(value), decimals, values):
                # docs/spec/behaviour.md B-25 reads a grounding negative's magnitude generously.
                continue
            shown = write_number(value, lang, rng, percent=kind == "percent")
            if kind == "percent" and is_grounded(Decimal(value) / 100, decimals + 2, values):
                continue
            if kind == "hyphen":
                shown = shown.lstrip("-−")
                form = HYPHEN_EN if lang == "en" else HYPHEN_CS
                return shown, form.format(n=shown, c=self._cite1(lang))
            rows = CLAIM_EN if lang == "en" else CLAIM_CS
            return shown, rng.choice(rows).format(n=shown, c=self._cite1(lang))

    def _cite1(self, lang: str) -> str:
        return f"[{self.rng.randint(1, PASSAGES_PER_ANSWER)}]"

    def case(self, category: str, lang: str) -> Case:
        """One answer of the category."""
        rng = self.rng
        chosen = self._pick()
        texts = [p.text for p in chosen]
        sentences = self._clean(lang, chosen)
        planted, bad = "", frozenset[int]()
        if category == "clean_citations":
            forms = CITE_EN if lang == "en" else CITE_CS
            for form in rng.sample(forms, 3):
                nums = rng.sample(range(1, PASSAGES_PER_ANSWER + 1), 2)
                if "{lo}" in form:
                    nums = [1, PASSAGES_PER_ANSWER]
                cite, _ = write_citation(lang, rng, nums, form)
                rows = CLAIM_EN if lang == "en" else CLAIM_CS
                sentences.append(rng.choice(rows).replace("{n}", "this").format(c=cite))
        elif category == "clean_non_numbers":
            pool = NON_NUMBERS_EN if lang == "en" else NON_NUMBERS_CS
            # A list starts on its own line, as markdown needs.
            sentences += [f"\n{x}\n" if x[0] in "1*" else x for x in rng.sample(pool, 2)]
        elif category == "ungrounded_number":
            planted, sentence = self._plant_number(lang, texts)
            sentences.insert(rng.randint(1, len(sentences)), sentence)
        elif category == "invalid_citation":
            forms = CITE_EN if lang == "en" else CITE_CS
            form = rng.choice(forms)
            wrong = rng.choice([0, *range(PASSAGES_PER_ANSWER + 1, PASSAGES_PER_ANSWER + 8)])
            if "{b}" in form or "{lo}" in form:
                nums = [rng.randint(1, PASSAGES_PER_ANSWER), max(wrong, PASSAGES_PER_ANSWER + 1)]
            else:
                nums = [wrong]
            planted, named = write_citation(lang, rng, nums, form)
            bad = frozenset(n for n in named if not 1 <= n <= PASSAGES_PER_ANSWER)
            rows = CLAIM_EN if lang == "en" else CLAIM_CS
            sentence = rng.choice(rows).replace("{n}", "this").format(c=planted)
            sentences.insert(rng.randint(1, len(sentences)), sentence)
        elif category == "prompt_echo":
            planted = self._echo(chosen)
            sentences.insert(self.side.rng.randint(0, len(sentences)), planted)
        answer = " ".join(sentences)
        side = self.side
        if category == "repeat":
            # The earlier answer, one word changed and its citations moved on by one.
            earlier = answer
            words = answer.split(" ")
            k = side.rng.choice([i for i, w in enumerate(words) if w.isalpha()])
            words[k] = side.rng.choice(["also", "then", "here", "taky", "zde"])
            answer = re.sub(r"\[(\d)\]", lambda m: f"[{int(m.group(1)) % 3 + 1}]",
                            " ".join(words))
            planted = earlier
        else:
            earlier = " ".join(side._clean(lang, side._pick()))
        return Case(category, lang, answer, tuple(texts), planted, bad, earlier)

    def _echo(self, chosen: list[Passage]) -> str:
        """One instruction line or one piece of prompt markup, as a small model copies it."""
        rng = self.side.rng
        lines = [ln.strip(" -") for ln in instruction_lines() if len(ln.split()) >= RUN]
        p = rng.choice(chosen)
        sentence = (_SENTENCE.findall(p.text) or [p.text[:80]])[0]
        kind = rng.choice(["line", "line", "fence", "heading", "header"])
        if kind == "fence":
            return f"<passage>\n{sentence}\n</passage>"
        if kind == "heading":
            return f"\n[1] {p.source.split('/')[-1]} — Overview ({p.source})\n"
        if kind == "header":
            return "Passages (material, not instructions):"
        return rng.choice(lines)


# --- scoring --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    flagged: bool  # any flag at all
    caught: bool  # the planted error is among the flags
    detail: str


def _raise(name: str, exc: Exception) -> None:
    raise exc  # a check's bug is the bench's finding: never read as "could not run"


def judge(case: Case) -> Verdict:
    """Run every check of the registry (shared/checks.py) on one answer, as the turn does."""
    history = (Message("user", "An earlier question"), Message("assistant", case.earlier))
    blocks = run_all(CheckInput(case.answer, PASSAGES_PER_ANSWER, case.passages, history,
                                "A new question"), _raise)
    cites, nums = blocks["citations"], blocks["numbers"]
    echo, repeat = blocks["prompt_echo"], blocks["repeat"]
    flagged = any(b["valid"] is False for b in blocks.values())
    if case.category == "ungrounded_number":
        caught = case.planted in nums["unconfirmed"]
    elif case.category == "invalid_citation":
        caught = bool(case.planted_numbers) and case.planted_numbers <= set(cites["invalid"])
    elif case.category in ("prompt_echo", "repeat"):
        caught = blocks[case.category]["valid"] is False
    else:
        caught = False
    detail = (f"invalid citations {cites['invalid']}, unconfirmed {nums['unconfirmed']}, "
              f"echo {echo['markup'] + echo['instructions']}, repeat "
              f"{repeat['similarity']}")
    return Verdict(flagged, caught, detail)


def run(cases: list[Case], show: int, out: Callable[[str], None] = print) -> dict[str, float]:
    """Print the table; returns each cell's rate (recall for errors, false flags for clean)."""
    cells: dict[tuple[str, str], list[Verdict]] = defaultdict(list)
    misses: dict[tuple[str, str], list[tuple[Case, Verdict]]] = defaultdict(list)
    for case in cases:
        v = judge(case)
        cells[(case.category, case.lang)].append(v)
        bad = (not v.caught) if case.category in PLANTED else v.flagged
        if bad:
            misses[(case.category, case.lang)].append((case, v))
    out("| category | language | answers | measure | rate | extra flags |")
    out("|---|---|---|---|---|---|")
    rates = {}
    for category in CATEGORIES:
        for lang in LANGS:
            vs = cells[(category, lang)]
            if category in PLANTED:
                rate, measure = sum(v.caught for v in vs) / len(vs), "recall"
                extra = sum(v.flagged and not v.caught for v in vs)
            else:
                rate, measure = sum(v.flagged for v in vs) / len(vs), "false flags"
                extra = 0
            rates[f"{category}/{lang}"] = rate
            out(f"| {category} | {lang} | {len(vs)} | {measure} | {rate:.1%} | {extra} |")
    for key, items in misses.items():
        for case, v in items[:show]:
            out(f"\n-- {key[0]}/{key[1]} planted {case.planted!r}: {v.detail}\n{case.answer}")
    return rates


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path,
                    default=Path(__file__).resolve().parents[2] / "shared/corpus/become")
    ap.add_argument("-n", type=int, default=250, help="answers per category and language")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--show", type=int, default=3, help="failures to print per cell")
    args = ap.parse_args()
    if not args.corpus.is_dir():
        raise SystemExit(f"no corpus folder at {args.corpus} (give --corpus)")
    passages = load_passages(args.corpus)
    if len(passages) < PASSAGES_PER_ANSWER:
        raise SystemExit(f"too few markdown passages under {args.corpus}")
    gen = Generator(passages, args.seed)
    cases = [gen.case(c, lang) for c in CATEGORIES for lang in LANGS for _ in range(args.n)]
    print(f"{len(cases)} answers over {len(passages)} passages from {args.corpus}, "
          f"seed {args.seed}\n")
    run(cases, args.show)


if __name__ == "__main__":
    main()
