"""Number check (docs/spec/behaviour.md B-25): every number in an answer must be grounded. Pure: no
I/O, no model call.

A number in the answer is grounded when it appears in the grounding texts (passages, project
data, the user's own messages) or is one of the pinned constants, either exactly or as that
value rounded or truncated to the decimals the answer wrote (data 14.19 grounds 14.2, 14.1
and 14; data 2.2 grounds 2.20). A percentage also matches its fraction ("20 %" ~ 0.20).
Values are exact decimals (decimal.Decimal), never floats with a tolerance: 1234567890 does
not ground 1234567891. Exact at any length, too: negation, fractions and rounding never use
the default context's 28 digits (which rounds -1234567890123456789012345678.99 to ...679 and
cannot quantize a 30-digit number at all).

What a comma between digits means (a number may have several readings; it is grounded when
any reading is, so the checker flags only what no reading the data supports explains):

| written | English answer | Czech answer | language unknown |
|---|---|---|---|
| 1,234 (three digits after) | 1234, or 1 and 234 side by side | 1.234, 1234, or 1 and 234 | 1234, 1.234, or 1 and 234 |
| 14,19 / 7,1 (other than three) | 14.19 (a decimal comma) | 14.19 | 14.19 |
| 1,234,567 / 12,345.67 | thousands | thousands | thousands |
| 6,8,11 (not thousands) | a list of three | a list of three | a list of three |
| 1 234 / 1 234,5 (space, no-break, narrow, thin) | 1234 (or 1 and 234 where each part can stand alone) | same | same |

A dot before exactly three digits ("10.000") is a decimal first and Czech dot thousands
second, in every language. The answer's language comes from shared.language.detect_language.
In the grounding every reading counts ("-20 123.48" gives -20123.48, -20 and 123.48).

What counts as a number in the answer:
* digits with a decimal point or a decimal comma ("14.19", "14,19", ".5");
* thousands separators: "1,000,000", "1.000.000", "1 000" (normal, no-break, narrow or thin
  space; the first group 1-3 digits and every later group exactly 3 digits);
* one separator before exactly three digits is ambiguous: "1,000" reads as the table above
  says, "10.000" first as 10.0 (decimal point; Czech 10 000 only when unambiguous, as in
  "10.000.000" or "10.000,5"), the other reading still counting as grounded;
* digits joined by commas into three or more groups that are not thousands ("6,8,11") are a
  list of separate numbers; two groups ("6,8") are a decimal comma, except between brackets
  that do not match, a half-open interval: "(83,24]" and "[53,88)" are two integers each;
* percentages ("20%", "20 %", "20 percent", "20 procent"); a range end before a percentage is a
  percentage too ("10-20 %");
* a leading "-" or U+2212 minus after a space or an opening bracket; in "10-20" and "10–20"
  the dash is a range and both ends are checked;
* words: English zero, two..ninety-nine, hundred; Czech nula, dva..devadesát devět with their
  common case forms, compounds like "dvaadvacet", and sto. "one"/"jeden"/"jedna" are skipped:
  they are mostly pronouns or articles.

What is not a number to check: dates ("2024-05-01", "1. 5. 2024", "May 2024", "5 May 2024",
"1. května 2024", "01/05/2024") and times ("14:30"); bare years 1900-2099 written as four plain
digits (a year is a date; the cost is that "2000 experts" goes unchecked, so write 2 000);
list numbering at a line start ("1. ", "2) ", "### 3. "); ordinals ("3rd", Czech "3. expert");
version strings ("v1.2.3", "1.2.3", "Python 3.11"; a bare "3.11" is a number); section
references ("section 6", "§ 3"); names glued to a letter ("COVID-19", "BM25", "E_1", "#3");
standards ("ISO 8601", "RFC 7519"); file names and URLs; markdown link targets
("[this step](#step-7)"); digits before an underscore ("5_b"); bold list numbers ("**1.** Compute");
model names ("Qwen3.5-9B", "GPT-4": a number after a hyphen is a name when the word before
the hyphen has a capital or a digit, while after a lowercase word, "error-15.3", it is the
number 15.3; the cost is that a lowercase "utf-8" is checked, and grounded only when the
grounding writes it too); Czech ordinals before a lowercase word after any space, tab or U+202F
("3.\texpert"); citations in every form markers.read_citations reads ("[1]", "[1-3]",
"[Zdroj 2]", "【1】", ...), blanked in place so that "5[1]000" is 5 and 000, never 5000. A
fuzzy triple "[6, 8, 11]" that the data supports is not a citation: its numbers are checked.

Pinned constants: 2 and 3 (the formulas' divisors), 20 and 40 (the agreement thresholds, in
percent) and 100 (percent of the whole, the 0-100 scale).

Quantity binding (kept small): when the grounding states how many experts there are
("22 experts", "M = 22", "num_experts: 22", "tři experti"), a count of experts in the answer
("13 experts", "třináct expertů") must be one of those counts, not merely some number nearby.

Grounding is read generously: every digit run, every date part, list and version number, and
"one"/"jeden" count there, as do a negative's absolute value and a percentage's fraction.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, Context, Decimal

from shared.language import detect_language
from worker.pipeline.markers import read_citations

PINNED: frozenset[Decimal] = frozenset(Decimal(v) for v in (2, 3, 20, 40, 100))

Reading = tuple[Decimal, int]  # a value and the number of decimals it was written with


@dataclass(frozen=True)
class NumberMention:
    """One number in the answer and whether the grounding confirms it."""

    text: str
    value: Decimal
    start: int
    grounded: bool


@dataclass(frozen=True)
class NumberCheck:
    """The numbers of one answer, in order of appearance."""

    mentions: tuple[NumberMention, ...]

    @property
    def valid(self) -> bool:
        """True when every mention is grounded."""
        return all(m.grounded for m in self.mentions)

    @property
    def unconfirmed(self) -> tuple[str, ...]:
        """Texts of the mentions the grounding does not confirm."""
        return tuple(m.text for m in self.mentions if not m.grounded)


@dataclass(frozen=True)
class _Token:
    text: str  # as written, with sign and percent suffix
    start: int  # where the sign or first digit is
    end: int  # end of the digits, before any percent suffix
    readings: tuple[Reading, ...]  # primary reading first, then other readings of separators
    percent: bool = False
    word: bool = False
    plain: bool = False  # unsigned ASCII digits only, as years and ordinals are written
    # Another reading: several numbers side by side ("1,234" as 1 and 234, "20 123.48" as 20
    # and 123.48); grounded when each of them is.
    parts: tuple[_Token, ...] = ()

    @property
    def value(self) -> Decimal:
        return self.readings[0][0]

    @property
    def stop(self) -> int:
        return self.start + len(self.text)


# --- digits ---------------------------------------------------------------------------------

_SPACE = "[ \u00a0\u202f\u2009]"
# A run of digits with the separators inside it; a space joins only a following 3-digit group.
_BLOB = re.compile(rf"(?:(?<![\w.,])\.)?[0-9](?:[0-9]|[.,](?=[0-9])|{_SPACE}(?=[0-9]{{3}}(?![0-9])))*")
_SPACE_GROUPED = re.compile(rf"[1-9][0-9]{{0,2}}(?:{_SPACE}[0-9]{{3}})+(?:[.,][0-9]+)?")
_GROUPED_EN = re.compile(r"[1-9][0-9]{0,2}(?:,[0-9]{3})+(?:\.[0-9]+)?")
_GROUPED_CS = re.compile(r"[1-9][0-9]{0,2}(?:\.[0-9]{3})+(?:,[0-9]+)?")
_PERCENT = re.compile(rf"{_SPACE}?(?:%|per\s?cent\w*|procent\w*)", re.I)
_MINUS = "-\u2212"
_SIGN_AFTER = "([{=:;,/<>≈~|*"  # a minus after these (or a space) is a sign, not a range dash
_RANGE_JOIN = re.compile(r"\s*[-–—]\s*|\s+(?:to|až)\s+", re.I)

@dataclass(frozen=True)
class _Raw:
    offset: int  # in the blob
    text: str
    readings: tuple[Reading, ...]
    parts: tuple[_Raw, ...] = ()  # the side-by-side reading, if the text has one


def _reading(digits: str, mark: str) -> Reading:
    int_part, _, frac = digits.partition(mark)
    return Decimal(f"{int_part or '0'}.{frac}" if frac else int_part or "0"), len(frac)


def _standalone(piece: str) -> bool:
    """Whether a piece could be written alone: no leading zero unless it is 0 or 0.x."""
    return not (len(piece) > 1 and piece[0] == "0" and piece[1].isdigit())


def _side_by_side(s: str, sep: str) -> tuple[_Raw, ...]:
    """s split at sep into numbers written side by side, or () when a piece cannot stand alone."""
    pieces = [(m.start(), m.group()) for m in re.finditer(f"[^{sep}]+", s)]
    if len(pieces) < 2 or not all(_standalone(p) for _, p in pieces):
        return ()
    out: list[_Raw] = []
    for start, piece in pieces:
        out += [replace(r, offset=start + r.offset) for r in _parse_plain(piece)]
    return tuple(out)


def _one_mark(s: str) -> _Raw:
    # One separator: a decimal mark, unless three digits follow it (then also a thousands one).
    # Only before three digits may a comma also stand between two numbers ("1,234" beside data
    # holding 1 and 234); "7,1" is a Czech decimal and nothing else.
    mark = "," if "," in s else "."
    int_part, _, frac = s.partition(mark)
    decimal = _reading(s, mark)
    parts = _side_by_side(s, ",") if mark == "," and len(frac) == 3 else ()
    if len(frac) != 3 or not re.fullmatch(r"[1-9][0-9]{0,2}", int_part):
        return _Raw(0, s, (decimal,), parts)
    grouped = (Decimal(int_part + frac), 0)
    return _Raw(0, s, (grouped, decimal) if mark == "," else (decimal, grouped), parts)


def _parse_plain(s: str) -> list[_Raw]:
    if s.isdigit():
        return [_Raw(0, s, ((Decimal(s), 0),))]
    if s.count(",") + s.count(".") == 1:
        return [_one_mark(s)]
    if _GROUPED_EN.fullmatch(s):
        # Thousands only (the table above): "1,234.56" is never 1 and 234.56 side by side.
        return [_Raw(0, s, (_reading(s.replace(",", ""), "."),))]
    if _GROUPED_CS.fullmatch(s):
        return [_Raw(0, s, (_reading(s.replace(".", ""), ","),))]
    if "," in s:  # "6,8,11" or "5.5,8.5,13" or "[0.585,91)": a list written without spaces
        out: list[_Raw] = []
        for piece in re.finditer(r"[^,]+", s):
            out += [replace(r, offset=piece.start() + r.offset) for r in _parse_plain(piece.group())]
        return out
    return []  # "1.2.3": a version, section or date, not a quantity


def _parse_blob(blob: str) -> list[_Raw]:
    if _SPACE_GROUPED.fullmatch(blob):
        digits = re.sub(_SPACE, "", blob)
        # "20 123.48" is 20123.48 or, side by side, 20 and 123.48 (as in "-20 123.48").
        return [_Raw(0, blob, (_reading(digits, "," if "," in digits else "."),),
                     _side_by_side(blob, _SPACE[1:-1]))]
    out: list[_Raw] = []
    for piece in re.finditer(rf"[^{_SPACE[1:-1]}]+", blob):  # spaces that do not group split
        out += [replace(r, offset=piece.start() + r.offset) for r in _parse_plain(piece.group())]
    return out


def _has_sign(text: str, start: int) -> bool:
    if start == 0 or text[start - 1] not in _MINUS:
        return False
    return start == 1 or text[start - 2].isspace() or text[start - 2] in _SIGN_AFTER


def _finish(text: str, start: int, end: int, readings: tuple[Reading, ...], *,
            word: bool = False, parts: tuple[_Token, ...] = ()) -> _Token:
    """Attach a leading minus and a trailing percent suffix to the digits at start:end.

    Parts were finished on their own: the first takes the same sign, the last the same suffix.
    """
    plain = not word and text[start:end].isdigit()
    if not word and _has_sign(text, start):
        start, plain = start - 1, False
        # copy_negate is exact; unary minus rounds to the context's 28 digits.
        readings = tuple((v.copy_negate(), d) for v, d in readings)
    pct = _PERCENT.match(text, end)
    stop = pct.end() if pct else end
    return _Token(text[start:stop], start, end, readings, bool(pct), word, plain, parts)


def _token(text: str, start: int, raw: _Raw) -> _Token:
    parts = tuple(_token(text, start + p.offset, p) for p in raw.parts)
    return _finish(text, start, start + len(raw.text), raw.readings, parts=parts)


# A half-open interval of two integers, "(83,24]" or "[53,88)": the brackets do not match, so
# the comma separates two ends rather than marking decimals (matching ones, "(83,24)", stay
# the Czech decimal 83.24).
_HALF_OPEN = re.compile(r"\([0-9]+,[0-9]+\]|\[[0-9]+,[0-9]+\)")


def _digit_tokens(text: str) -> Iterator[_Token]:
    for m in _BLOB.finditer(text):
        ends = _HALF_OPEN.fullmatch(text, m.start() - 1, m.end() + 1) if m.start() else None
        raws = (ends and _side_by_side(m.group(), ",")) or _parse_blob(m.group())
        for raw in raws:
            yield _token(text, m.start() + raw.offset, raw)

# --- words ----------------------------------------------------------------------------------

_EN_TENS = {w: 10 * i for i, w in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2)}
_EN_UNITS = {w: i for i, w in enumerate(
    "one two three four five six seven eight nine".split(), start=1)}
_EN_SMALL = {**_EN_UNITS, "zero": 0, "hundred": 100, **{w: i for i, w in enumerate(
    "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split(),
    start=10)}}

_CS_TENS = {w: 10 * i for i, w in enumerate(
    "dvacet třicet čtyřicet padesát šedesát sedmdesát osmdesát devadesát".split(), start=2)}
_CS_UNITS = {"jedna": 1, "jeden": 1, "jedno": 1, "dva": 2, "dvě": 2, "tři": 3, "čtyři": 4,
             "pět": 5, "šest": 6, "sedm": 7, "osm": 8, "devět": 9}
_CS_TEENS = {w: i for i, w in enumerate(
    "deset jedenáct dvanáct třináct čtrnáct patnáct šestnáct sedmnáct osmnáct devatenáct"
    .split(), start=10)}
_CS_SMALL = {
    **_CS_UNITS, **_CS_TEENS, **{w + "i": v for w, v in _CS_TEENS.items() if w != "deset"},
    "nula": 0, "nuly": 0, "jednoho": 1, "jedné": 1, "dvou": 2, "dvěma": 2, "tří": 3,
    "třem": 3, "třech": 3, "třemi": 3, "čtyř": 4, "čtyřem": 4, "čtyřech": 4, "čtyřmi": 4,
    "pěti": 5, "šesti": 6, "sedmi": 7, "osmi": 8, "devíti": 9, "deseti": 10, "sto": 100,
}


def _alt(words: Iterable[str]) -> str:
    return "|".join(sorted(words, key=len, reverse=True))


_EN_WORD = re.compile(
    rf"\b(?:(?P<tens>{_alt(_EN_TENS)})(?:[-\s](?P<unit>{_alt(_EN_UNITS)})\b)?"
    rf"|(?P<small>{_alt(_EN_SMALL)}))\b", re.I)
_CS_WORD = re.compile(
    rf"\b(?:(?P<cunit>{_alt(_CS_UNITS)})a(?P<ctens>{_alt(_CS_TENS)})i?"  # dvaadvacet
    rf"|(?P<tens>{_alt(_CS_TENS)})i?(?:\s+(?P<unit>{_alt(_CS_UNITS)})\b)?"  # dvacet dva
    rf"|(?P<small>{_alt(_CS_SMALL)}))\b", re.I)


def _word_value(m: re.Match[str], tens: dict[str, int], units: dict[str, int],
                small: dict[str, int]) -> int:
    g = {k: (v or "").lower() for k, v in m.groupdict().items()}
    if g.get("ctens"):
        return tens[g["ctens"]] + units[g["cunit"]]
    if g["tens"]:
        return tens[g["tens"]] + units.get(g["unit"], 0)
    return small[g["small"]]


def _word_tokens(text: str) -> Iterator[_Token]:
    for pattern, tens, units, small in ((_EN_WORD, _EN_TENS, _EN_UNITS, _EN_SMALL),
                                        (_CS_WORD, _CS_TENS, _CS_UNITS, _CS_SMALL)):
        for m in pattern.finditer(text):
            value = Decimal(_word_value(m, tens, units, small))
            yield _finish(text, m.start(), m.end(), ((value, 0),), word=True)


def _spread_percent(text: str, tokens: list[_Token]) -> list[_Token]:
    """In "10-20 %" the first end of the range is a percentage too."""
    for i in range(len(tokens) - 2, -1, -1):
        a, b = tokens[i], tokens[i + 1]
        if b.percent and not a.percent and _RANGE_JOIN.fullmatch(text, a.stop, b.start):
            tokens[i] = replace(a, percent=True)
    return tokens


def _scan(text: str) -> list[_Token]:
    """All numbers in text, digits and words, before deciding which of them count."""
    tokens = sorted([*_digit_tokens(text), *_word_tokens(text)], key=lambda t: t.start)
    return _spread_percent(text, tokens)


# --- what does not count in an answer -------------------------------------------------------

_EN_MONTHS = ("(?:January|February|March|April|May|June|July|August|September|October"
              "|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\\.?")
_CS_MONTHS = r"(?i:(?:led|únor|břez|dub|květ|červ|srp|zář|říj|listopad|prosin)\w*)"
_DAY = r"(?:0?[1-9]|[12][0-9]|3[01])"
_MONTH = r"(?:0?[1-9]|1[0-2])"
_YEAR = r"(?:19|20)[0-9]{2}"
_NOT_NUMBERS = [re.compile(p) for p in (
    rf"\b{_YEAR}-[0-9]{{2}}-[0-9]{{2}}(?![0-9])",  # 2024-05-01, also before T12:00
    rf"\b{_DAY}\.\s?{_MONTH}\.\s?{_YEAR}\b",  # 1. 5. 2024, 1.5.2024
    rf"\b{_DAY}/{_MONTH}/(?:{_YEAR}|[0-9]{{2}})\b",  # 01/05/2024
    rf"\b[0-9]{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_EN_MONTHS}(?:,?\s+{_YEAR})?",  # 5 May 2024
    rf"\b{_EN_MONTHS}\s+(?:[0-9]{{1,2}}(?:st|nd|rd|th)?,?\s+)?{_YEAR}\b",  # May 5, 2024
    rf"\b{_EN_MONTHS}\s+[0-9]{{1,2}}(?:st|nd|rd|th)?\b",  # May 5
    rf"\b[0-9]{{1,2}}\.\s*{_CS_MONTHS}(?:\s+{_YEAR})?",  # 1. května 2024
    rf"\b{_CS_MONTHS}\s+{_YEAR}\b",  # květen 2024
    r"(?<![0-9])[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?(?![0-9])",  # 14:30
    r"(?:https?://|www\.)\S+",
    r"\]\([^()\s]*\)",  # a markdown link's target: "[this step](#step-7)"
    r"[\w./-]*\w\.(?:md|txt|py|json|csv|tsx?|jsx?|html?|ya?ml|toml|pdf|docx?)\b",
    r"\b(?:ISO(?:/IEC)?|RFC|ČSN)\s*[0-9]+(?:[-:.][0-9]+)*",
    r"(?i:\b(?:python|versions?|verze|verzi|verzí|release|vydání|postgresql|postgres|django"
    r"|flask|celery|redis|node(?:\.js)?|pgvector|pytest|ruff|mypy)\s+v?[0-9]+(?:\.[0-9]+)*)",
    r"(?i:\b(?:sections?|sekce|sekci|kapitol[aeyu]?|chapter|oddíl\w*)|§)\s*[0-9]+(?:\.[0-9]+)*",
    # list numbering, also bold or italic ("**1.** Compute")
    r"(?m)^[ \t]*(?:#{1,6}[ \t]+|[-*+][ \t]+)?(?:\*\*|__|\*|_)?\(?[0-9]{1,3}[.)]"
    r"(?:\*\*|__|\*|_)?(?=[ \t]|$)",
)]
_ORDINAL_SUFFIX = re.compile(r"(?:st|nd|rd|th)\b", re.I)
# Czech "3. expert": after the dot any space a writer or an editor puts there (tab, no-break,
# narrow no-break, thin).
_CS_ORDINAL = re.compile("\\.[ \t\u00a0\u202f\u2009]+(\\w)")
# The word before a hyphen: all lowercase letters is a word ("error-15.3": a number follows);
# a capital or a digit makes a name (COVID-19, GPT-4, Qwen3.5-9B).
_WORD_BEFORE_HYPHEN = re.compile(r"[\w.]+$")
_CZECH_LETTERS = re.compile("[áéíóúýěščřžůťďňÁÉÍÓÚÝĚŠČŘŽŮŤĎŇ]")
_GLUED_AFTER = re.compile(r"_[^\W_]")  # an underscore and a letter or digit, as in 5_b


def _masks(text: str) -> list[tuple[int, int]]:
    return [m.span() for p in _NOT_NUMBERS for m in p.finditer(text)]


def _is_ordinal(text: str, tok: _Token) -> bool:
    if _ORDINAL_SUFFIX.match(text, tok.end):
        return True  # 3rd, 21st
    m = _CS_ORDINAL.match(text, tok.end)  # Czech "3. expert"; "3. Then" ends a sentence
    return tok.plain and m is not None and m.group(1).islower()


def _is_name(text: str, tok: _Token) -> bool:
    """Digits that belong to a name or label rather than being a quantity."""
    before = text[tok.start - 1] if tok.start else " "
    if before.isalpha() or before in "_#":
        return True  # BM25, v1.2, E_1, #3: part of a name
    if _GLUED_AFTER.match(text, tok.end):
        return True  # 5_b: a name too, never the number 5
    if before == "-" and tok.start > 1:
        word = _WORD_BEFORE_HYPHEN.search(text, 0, tok.start - 1)
        if word and any(c.isalpha() for c in word.group()):
            # "error-15.3" is a number after a hyphenated word; COVID-19, GPT-4 and
            # Qwen3.5-9B are names. A lowercase name ("utf-8") is checked too: the cost is
            # small, as the grounding's own "utf-8" grounds its 8.
            w = word.group()
            return not (w.isalpha() and w.islower())
    return False


def _counts(text: str, tok: _Token, masks: list[tuple[int, int]]) -> bool:
    """Whether an answer token is a quantity to check rather than a date, name or label."""
    if any(s < tok.end and tok.start < e for s, e in masks):
        return False
    if tok.word:
        if tok.text[:3].lower() == "ten" and _CZECH_LETTERS.search(text):
            return False  # Czech "ten" means "that", not 10
        return tok.value != 1  # "one", "jeden", "jedna" are mostly pronouns and articles
    if _is_name(text, tok) or _is_ordinal(text, tok):
        return False
    is_year = tok.plain and len(tok.text) == 4 and 1900 <= tok.value <= 2099
    return not is_year


def _without_citations(text: str, passages: int | None,
                       grounded: Callable[[int], bool] | None) -> str:
    """Every citation blanked in place: offsets stay, and "5[1]000" never becomes 5000."""
    for c in read_citations(text, passages, grounded):
        text = text[:c.start] + "\x00" * (c.end - c.start) + text[c.end:]
    return text


def _answer_tokens(text: str, passages: int | None = None,
                   grounded: Callable[[int], bool] | None = None) -> list[_Token]:
    text = _without_citations(text, passages, grounded)
    masks = _masks(text)
    return [t for t in _scan(text) if _counts(text, t, masks)]


# --- grounding ------------------------------------------------------------------------------

_EXPERT_NOUN = re.compile(r"[ \u00a0]+(?:expert\w*|odborník\w*)\b", re.I)
_EXPERT_COUNT = re.compile(
    r"(?:\bM\b|(?i:num_experts|number of experts|počet expertů))[\"']?\s*[:=]\s*([0-9]+)\b")


def _names_experts(text: str, tok: _Token) -> bool:
    return not tok.percent and _EXPERT_NOUN.match(text, tok.stop) is not None


def _fraction(value: Decimal) -> Decimal:
    """value / 100, exact at any length (division rounds to the context's 28 digits)."""
    sign, digits, exponent = value.as_tuple()
    return Decimal((sign, digits, int(exponent) - 2))  # 14.2 % is 0.142


def _token_values(tok: _Token) -> set[Decimal]:
    values: set[Decimal] = set()
    for v, _ in tok.readings:
        values |= {v, v.copy_abs()} | ({_fraction(v)} if tok.percent else set())
    for part in tok.parts:
        values |= _token_values(part)
    return values


def grounding_values(texts: Iterable[str]) -> frozenset[Decimal]:
    """Numbers found in grounding texts (passages, project data, user messages), read generously.

    Every reading of every number counts: "1,234" gives 1234, 1.234, 1 and 234; "-20 123.48"
    gives -20123.48, -20 and 123.48; and every part of a chain of one separator (1.2.3,
    2024.05.01, 6,8,11). A chain of mixed separators ("[0.585,91)") is read by the scanner only.
    """
    values: set[Decimal] = set()
    for text in texts:
        for tok in _scan(text):
            values |= _token_values(tok)
        for m in re.finditer(r"[0-9]+(?:[.,][0-9]+)*", text):
            parts = re.split("[.,]", m.group())
            if len(parts) == 2:  # 14.19 or 14,19 is one number: 19 alone is not grounded
                values.add(Decimal(".".join(parts)))
            elif len(set(re.findall("[.,]", m.group()))) <= 1:
                values |= {Decimal(p) for p in parts}  # a lone integer, or a one-mark chain
    return frozenset(values)


def _expert_counts(texts: Iterable[str]) -> frozenset[Decimal]:
    """How many experts the grounding says there are ("22 experts", "M = 22")."""
    counts: set[Decimal] = set()
    for text in texts:
        counts |= {t.value for t in _scan(text) if _names_experts(text, t)}
        counts |= {Decimal(m.group(1)) for m in _EXPERT_COUNT.finditer(text)}
    return frozenset(counts)


# --- matching -------------------------------------------------------------------------------

_ROUNDINGS = (ROUND_HALF_UP, ROUND_HALF_EVEN, ROUND_DOWN)  # ROUND_DOWN truncates
_WIDE = Context(prec=200)


def _exact(g: Decimal, value: Decimal, decimals: int) -> Context:
    """A context in which g - value and g at the answer's decimals are exact.

    The default context keeps 28 digits: it rounds longer numbers and refuses to quantize them
    (decimal.InvalidOperation), so a 30-digit number would crash the check.
    """
    low = min(int(g.as_tuple().exponent), int(value.as_tuple().exponent), -decimals)
    need = max(g.adjusted(), value.adjusted()) - low + 3
    return _WIDE if need <= _WIDE.prec else Context(prec=need)


def _grounds(g: Decimal, value: Decimal, decimals: int) -> bool:
    """Whether grounding value g, rounded or truncated to the answer's decimals, gives value.

    Exact decimal arithmetic, no tolerance: 1234567890 never grounds 1234567891.
    """
    if g == value:
        return True
    ctx = _exact(g, value, decimals)
    if ctx.subtract(value, g).copy_abs() >= 1:
        return False  # rounding to whole units or finer never moves a value by a whole unit
    exponent = g.as_tuple().exponent
    if not isinstance(exponent, int) or exponent >= -decimals:
        return False  # g is no more precise than the answer: only equality counts
    step = Decimal(1).scaleb(-decimals)
    return any(g.quantize(step, rounding=r, context=ctx) == value for r in _ROUNDINGS)


def _readings(tok: _Token) -> tuple[Reading, ...]:
    """The readings of a token, and for a percentage also its fraction ("20 %" ~ 0.20)."""
    if not tok.percent:
        return tok.readings
    return tok.readings + tuple((_fraction(v), d + 2) for v, d in tok.readings)


_COMMA_THREE = re.compile("[-\u2212]?[1-9][0-9]{0,2},[0-9]{3}")


def _in_language(tok: _Token, lang: str) -> _Token:
    """The readings of "1,234" the answer's language allows (see the module docstring).

    English: thousands (1234), never the decimal 1.234. Czech: the decimal first, thousands
    still accepted (a model's English habits leak into Czech). Unknown: both, thousands first.
    """
    if lang not in ("en", "cs") or not _COMMA_THREE.fullmatch(tok.text[:tok.end - tok.start]):
        return tok
    whole = tuple(r for r in tok.readings if r[1] == 0)
    frac = tuple(r for r in tok.readings if r[1] != 0)
    return replace(tok, readings=whole if lang == "en" else frac + whole)


def _is_grounded(tok: _Token, values: frozenset[Decimal]) -> bool:
    """Some reading is grounded, or every number of the side-by-side reading is."""
    for v, d in _readings(tok):
        if v in values or any(_grounds(g, v, d) for g in values):
            return True
    return bool(tok.parts) and all(_is_grounded(p, values) for p in tok.parts)


def extract_numbers(text: str) -> list[tuple[str, Decimal, int]]:
    """The numbers of an answer that count, as (as written, value, start offset)."""
    return [(t.text, t.value, t.start) for t in _answer_tokens(text)]


def check_numbers(answer: str, grounding: Iterable[str],
                  pinned: Iterable[Decimal | int | str] = PINNED,
                  passages: int | None = None, lang: str | None = None) -> NumberCheck:
    """Check every number of the answer against the grounding texts and the pinned constants.

    passages (how many the model was given) settles whether "[6, 8, 11]" is three citations
    or a fuzzy triple, exactly as the citation check reads it; lang ("en", "cs", "unknown";
    detected from the answer when None) decides what a comma before three digits means.
    """
    lang = lang or detect_language(answer)
    texts = list(grounding)
    found = grounding_values(texts)
    values = found | frozenset(Decimal(str(p)) for p in pinned)
    experts = _expert_counts(texts)
    mentions = []
    for tok in _answer_tokens(answer, passages, lambda n: Decimal(n) in found):
        tok = _in_language(tok, lang)
        # A count of experts must match a count the grounding names, when it names any.
        pool = experts if experts and _names_experts(answer, tok) else values
        mentions.append(NumberMention(tok.text, tok.value, tok.start, _is_grounded(tok, pool)))
    return NumberCheck(tuple(mentions))
