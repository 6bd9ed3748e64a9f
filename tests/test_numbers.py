"""Number check (docs/spec/behaviour.md B-25): table-driven cases in English and Czech; each case
says why it exists."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import NamedTuple

import pytest

from worker.pipeline.numbers import (
    PINNED,
    NumberCheck,
    NumberMention,
    check_numbers,
    extract_numbers,
    grounding_values,
)


class Extract(NamedTuple):
    id: str
    text: str
    expected: list[tuple[str, float]]  # (as written, value) of the numbers that count
    reason: str


EXTRACT = [
    # plain numbers, decimal marks
    Extract("integer-en", "There are 22 experts.", [("22", 22)],
            "the simplest count"),
    Extract("decimal-point-en", "The maximum error is 2.20.", [("2.20", 2.2)],
            "a sentence-ending dot is not a decimal mark; trailing zero kept as written"),
    Extract("decimal-comma-cs", "Maximální chyba je 14,19.", [("14,19", 14.19)],
            "Czech writes the decimal mark as a comma"),
    Extract("leading-dot", "an error of .5 units", [(".5", 0.5)],
            "a decimal without the leading zero"),
    Extract("bold-markdown", "Δmax = **0.50**", [("0.50", 0.5)],
            "markdown emphasis around a number does not hide it"),
    Extract("reference-triple-en", "Γ = (10.00, 15.67, 22.33)",
            [("10.00", 10), ("15.67", 15.67), ("22.33", 22.33)],
            "a fuzzy triple written with comma and space gives three numbers"),
    Extract("triple-no-spaces", "Land use (6,8,11) is the median.",
            [("6", 6), ("8", 8), ("11", 11)],
            "three comma-joined groups that are not thousands are a list, not 6.8"),
    Extract("triple-decimals-no-spaces", "(5.5,8.5,13)", [("5.5", 5.5), ("8.5", 8.5), ("13", 13)],
            "a list of decimals joined by commas"),
    Extract("bracket-triple-not-citation", "The median is [6, 8, 11].",
            [("6", 6), ("8", 8), ("11", 11)],
            "the issue: a fuzzy triple in brackets is not a citation, its numbers are checked"),
    Extract("triple-cs-semicolons", "Medián je (5,5; 8,5; 13).",
            [("5,5", 5.5), ("8,5", 8.5), ("13", 13)],
            "a Czech triple separates decimal-comma values with semicolons"),
    Extract("pair-decimal-comma", "hodnota 6,8", [("6,8", 6.8)],
            "two comma-joined groups read as a decimal comma"),
    # citations
    Extract("citation-marker", "The mean is 15.67 [1].", [("15.67", 15.67)],
            "a citation marker [n] is not a number"),
    Extract("citation-adjacent", "as the method says [2][3]", [],
            "adjacent citation markers are not numbers"),
    Extract("citation-two-digit", "viz [12]", [],
            "a two-digit citation marker is not a number"),
    # thousands separators
    Extract("thousands-comma-multi", "a budget of 1,000,000 CZK", [("1,000,000", 1_000_000)],
            "English thousands commas, unambiguous with two groups"),
    Extract("thousands-comma-single", "1,000 experts", [("1,000", 1000)],
            "one comma before three digits reads first as English thousands"),
    Extract("thousands-comma-decimal", "12,345.67 CZK", [("12,345.67", 12345.67)],
            "English thousands with a decimal point"),
    Extract("thousands-space", "rozpočet 1 000 Kč", [("1 000", 1000)],
            "a normal space groups thousands when a 3-digit group follows"),
    Extract("thousands-nbsp-decimal-comma", "1\u00a0000,5 Kč", [("1\u00a0000,5", 1000.5)],
            "a no-break space groups thousands, a comma is the decimal mark"),
    Extract("thousands-narrow-nbsp", "57\u202f300 mil.", [("57\u202f300", 57300)],
            "a narrow no-break space groups thousands"),
    Extract("thousands-thin-space-multi", "1\u2009000\u2009000", [("1\u2009000\u2009000", 1e6)],
            "a thin space groups thousands, more than one group"),
    Extract("thousands-dot-cs-multi", "1.000.000 Kč", [("1.000.000", 1_000_000)],
            "Czech dot thousands, unambiguous with two groups"),
    Extract("thousands-dot-cs-decimal", "10.000,5 Kč", [("10.000,5", 10000.5)],
            "Czech dot thousands with a decimal comma, unambiguous"),
    Extract("ambiguous-dot-three-digits", "hodnota 10.000", [("10.000", 10.0)],
            "a single dot before three digits reads first as a decimal point"),
    Extract("space-four-digit-first-group", "in 2024 100 experts", [("100", 100)],
            "a 4-digit first group is not a thousands group: a year then a count"),
    Extract("space-two-digit-group", "values 10 15", [("10", 10), ("15", 15)],
            "a space before two digits does not group thousands"),
    Extract("space-leading-zero", "scale 0 100", [("0", 0), ("100", 100)],
            "a group starting with 0 does not take thousands"),
    # percentages
    Extract("percent-glued", "up to 20% is high", [("20%", 20)],
            "percent sign right after the digits"),
    Extract("percent-space-cs", "chyba 14,2 % šířky", [("14,2 %", 14.2)],
            "Czech puts a space before the percent sign"),
    Extract("percent-nbsp", "14,2\u00a0%", [("14,2\u00a0%", 14.2)],
            "a no-break space before the percent sign"),
    Extract("percent-word-en", "about 20 percent", [("20 percent", 20)],
            "percent written as a word"),
    Extract("percent-word-cs", "asi 20 procent", [("20 procent", 20)],
            "Czech percent word"),
    Extract("percent-word-cs-declined", "o 40 procenty", [("40 procenty", 40)],
            "a declined Czech percent word"),
    # signs and ranges
    Extract("negative-hyphen", "a change of -3 points", [("-3", -3)],
            "a hyphen-minus after a space is a sign"),
    Extract("negative-unicode-minus", "změna −0,5", [("−0,5", -0.5)],
            "U+2212 minus with a decimal comma"),
    Extract("negative-in-parens", "(−3, 5)", [("−3", -3), ("5", 5)],
            "a minus after an opening bracket is a sign"),
    Extract("range-hyphen", "10-20 experts", [("10", 10), ("20", 20)],
            "a hyphen between digits is a range, not a negative 20"),
    Extract("range-en-dash", "10–20 expertů", [("10", 10), ("20", 20)],
            "an en dash range: both ends are numbers"),
    Extract("range-spaced-dash", "from 10 – 20", [("10", 10), ("20", 20)],
            "a spaced en dash is a range, never a minus"),
    Extract("range-percent", "10–20 %", [("10", 10), ("20 %", 20)],
            "the range end keeps its own text; the percent spreads only for matching"),
    # dates and times
    Extract("date-iso", "On 2024-05-01 the error was 14.2.", [("14.2", 14.2)],
            "an ISO date is not a number; the value next to it is"),
    Extract("date-cs-numeric", "Dne 1. 5. 2024 byla chyba 2,2.", [("2,2", 2.2)],
            "a Czech date with spaces"),
    Extract("date-cs-compact", "Dne 1.5.2024 hotovo", [],
            "a Czech date without spaces is not a list 1.5 and 2024"),
    Extract("date-en-month-year", "In May 2024 the error was 5.97.", [("5.97", 5.97)],
            "month and year"),
    Extract("date-en-day-month-year", "on 5 May 2024", [],
            "day month year"),
    Extract("date-en-month-day-year", "on May 5, 2024", [],
            "US style month day, year"),
    Extract("date-en-ordinal-day", "on the 3rd of March", [],
            "ordinal day of a month"),
    Extract("date-cs-month-name", "1. května 2024", [],
            "a Czech date with a declined month name"),
    Extract("date-cs-month-year", "v květnu 2024 bylo 13 expertů", [("13", 13)],
            "Czech month and year; the count after it still counts"),
    Extract("date-slash", "on 01/05/2024", [],
            "a slash date"),
    Extract("time", "at 14:30", [],
            "a clock time is not a quantity"),
    Extract("iso-datetime", "calculated_at 2024-05-01T12:00:00Z", [],
            "a timestamp from project data: date, hour glued to T, minutes"),
    # years
    Extract("bare-year", "BeCoMe was published in 2019.", [],
            "a bare 4-digit year 1900-2099 is a date, not checked"),
    Extract("year-range", "between 2020–2024", [],
            "a range of years"),
    Extract("four-digits-not-year", "about 2150 CZK", [("2150", 2150)],
            "four plain digits outside 1900-2099 are a quantity"),
    Extract("year-with-separator", "2 000 experts", [("2 000", 2000)],
            "a grouped 2 000 is a quantity, not a year"),
    Extract("year-decimal", "ratio 2019.5", [("2019.5", 2019.5)],
            "a decimal in the year range is not a year"),
    # list numbering
    Extract("list-numbering", "1. Compute\n2) Sort\n   3. Average", [],
            "list numbers at a line start, with dot or bracket, indented too"),
    Extract("list-heading", "### 3. Median\ntext", [],
            "a numbered markdown heading"),
    Extract("list-item-content", "1. The mean is 15.67", [("15.67", 15.67)],
            "numbers inside a list item still count"),
    Extract("line-start-decimal", "14.19 is the peak", [("14.19", 14.19)],
            "a decimal at a line start is not list numbering"),
    # versions, names, codes, paths
    Extract("version-python", "Python 3.11 is required", [],
            "a version after a product word"),
    Extract("version-v", "release v1.2.3", [],
            "a v-prefixed version"),
    Extract("version-dotted", "see 1.2.3 of the changelog", [],
            "three dotted parts are a version or section, not a quantity"),
    Extract("version-cs", "ve verzi 2.1", [],
            "Czech word for version"),
    Extract("bare-3.11", "a ratio of 3.11", [("3.11", 3.11)],
            "3.11 without a version context is a number"),
    Extract("name-covid", "during COVID-19 the board met", [],
            "a name with a hyphenated number"),
    Extract("name-gpt-utf", "GPT-4 output in UTF-8", [],
            "more names with hyphenated numbers"),
    Extract("name-glued", "BM25 and E_1 and #3", [],
            "digits glued to letters, an underscore or a hash are part of a name"),
    Extract("iso-code", "ISO 8601 and ISO 639-1", [],
            "standard codes"),
    Extract("url", "see http://localhost:8000/api/v1", [],
            "a URL"),
    Extract("file-path", "read results/2/budget.txt", [],
            "a file path, even with a bare number component"),
    Extract("section-ref", "section 6 and § 3", [],
            "references to document sections"),
    Extract("ordinal-en", "the 3rd and 21st opinion", [],
            "English ordinals name positions"),
    Extract("ordinal-cs", "Nejnižší těžiště má 3. expert.", [],
            "a Czech ordinal before a lowercase word"),
    Extract("cs-sentence-end", "Expertů je 13. Pak", [("13", 13)],
            "a number ending a sentence is not an ordinal"),
    Extract("expert-label", "Expert 7 said", [("7", 7)],
            "a pseudonym number after a space still counts"),
    # numbers as words
    Extract("words-en-hyphen", "twenty-two experts", [("twenty-two", 22)],
            "English compound with a hyphen"),
    Extract("words-en-space", "twenty two experts", [("twenty two", 22)],
            "English compound with a space"),
    Extract("words-en-teen", "Thirteen experts answered", [("Thirteen", 13)],
            "English teen, capitalised"),
    Extract("words-en-twenty-one", "twenty-one", [("twenty-one", 21)],
            "one is fine inside a compound"),
    Extract("words-en-one-skipped", "one of the experts", [],
            "'one' alone is mostly a pronoun"),
    Extract("words-en-percent", "twenty percent", [("twenty percent", 20)],
            "a word number with a percent word"),
    Extract("words-en-substring", "often a tone to attend", [],
            "number words inside other words do not count"),
    Extract("words-en-ten", "ten experts", [("ten", 10)],
            "'ten' counts in English text"),
    Extract("words-cs-compound", "dvaadvacet expertů", [("dvaadvacet", 22)],
            "Czech unit-a-tens compound"),
    Extract("words-cs-compound-declined", "u dvaadvaceti expertů", [("dvaadvaceti", 22)],
            "declined Czech compound"),
    Extract("words-cs-tens-unit", "dvacet dva expertů", [("dvacet dva", 22)],
            "Czech tens then unit"),
    Extract("words-cs-teen", "třináct expertů", [("třináct", 13)],
            "Czech teen"),
    Extract("words-cs-declined", "se třemi experty", [("třemi", 3)],
            "declined Czech unit"),
    Extract("words-cs-jeden-skipped", "jeden z expertů", [],
            "'jeden' is mostly 'one of', an article-like use"),
    Extract("words-cs-ten-demonstrative", "ten výsledek je správný", [],
            "Czech 'ten' means 'that', not 10"),
    Extract("words-cs-percent", "dvacet procent", [("dvacet procent", 20)],
            "Czech word number with a percent word"),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in EXTRACT])
def test_extract(case: Extract) -> None:
    found = extract_numbers(case.text)
    # Values are exact decimals: 2.2 is Decimal("2.2"), never the float 2.2000000000000002.
    assert [(t, v) for t, v, _ in found] == [(t, Decimal(str(v))) for t, v in case.expected], \
        case.reason
    for text, _, start in found:  # the offset points at what was written
        assert case.text[start:start + len(text)] == text


class Ground(NamedTuple):
    id: str
    answer: str
    grounding: tuple[str, ...]
    unconfirmed: tuple[str, ...]
    reason: str


FLOODS = "ΓΩMean = (11.54, 14.19, 17.19), centroid 14.31, Δmax = 5.97, M = 13"
BUDGET = "num_experts: 22; Γ = (32.05, 52.50, 66.14); Δmax = 2.2; Ω = (35.0, 50.0, 52.5)"

GROUND = [
    Ground("exact", "The peak is 14.19.", (FLOODS,), (),
           "the same value as the data"),
    Ground("rounded-half-up", "The peak is about 14.2.", (FLOODS,), (),
           "the issue: data 14.19 grounds 14.2"),
    Ground("truncated", "The peak is 14.1.", (FLOODS,), (),
           "a truncated value counts"),
    Ground("rounded-integer", "Vrchol je asi 14.", (FLOODS,), (),
           "the issue: data 14.19 grounds 14"),
    Ground("trailing-zero", "Δmax = 2.20", (BUDGET,), (),
           "the issue: data 2.2 grounds 2.20"),
    Ground("trailing-zero-half", "Δmax = 0.50", ("Δmax = 0.5",), (),
           "the issue: 0.5 grounds 0.50"),
    Ground("more-precise-than-data", "The peak is 14.19.", ("peak 14.2",), ("14.19",),
           "an answer cannot be more precise than its data"),
    Ground("wrong-rounding", "The peak is 14.3.", ("peak 14.19",), ("14.3",),
           "14.3 is neither a rounding nor a truncation of 14.19"),
    Ground("near-miss-same-decimals", "The peak is 14.18.", (FLOODS,), ("14.18",),
           "a value off by one in the last decimal is not grounded"),
    Ground("fake-precision", "The peak is 14.0.", (FLOODS,), ("14.0",),
           "14.19 rounds to 14.2 at one decimal, never to 14.0"),
    Ground("fraction-digits-not-grounding", "19 experts", ("the peak is 14.19",), ("19",),
           "the decimals of 14.19 do not ground a separate 19"),
    Ground("comma-answer-point-data", "Vrchol je 14,2.", (FLOODS,), (),
           "a Czech decimal comma matches data written with a point"),
    Ground("comma-data-point-answer", "Δmax is 5.97.", ("Δmax = 5,97",), (),
           "data written with a decimal comma grounds a decimal point"),
    Ground("banker-rounding", "about 0.12", ("0.125",), (),
           "round half to even is accepted"),
    Ground("half-up-rounding", "about 0.13", ("0.125",), (),
           "round half up is accepted too"),
    Ground("decimal-exact-rounding", "about 2.68", ("2.675",), (),
           "2.675 rounds half up to 2.68 as written, despite binary floats"),
    Ground("negative-rounding", "změna −3,5", ("change -3.46",), (),
           "rounding a negative value"),
    Ground("pinned-thresholds", "Up to 20 % is high and up to 40 % moderate agreement.", (), (),
           "20 and 40 are pinned constants"),
    Ground("pinned-divisors", "Gx = (A + C + B) / 3 and Δmax = |Γ − Ω| / 2", (), (),
           "the divisors 2 and 3 are pinned"),
    Ground("pinned-100", "a share of 100 %", (), (),
           "100 is pinned for percentages"),
    Ground("unpinned-50", "up to 50 % is high", (), ("50 %",),
           "only the listed constants are pinned"),
    Ground("percent-vs-fraction", "a share of 14 %", ("ratio 0.14",), (),
           "the issue: a percentage matches its fraction in the data"),
    Ground("percent-rounded-fraction", "about 21 %", ("ratio 0.2051",), (),
           "a percentage matches a rounded fraction"),
    Ground("percent-decimal-fraction", "14,2 %", ("ratio 0.142",), (),
           "14.2 % is 0.142 exactly, no float noise"),
    Ground("fraction-vs-percent-data", "a ratio of 0.25", ("25 %",), (),
           "a fraction is grounded by a percentage in the data"),
    Ground("percent-wrong", "about 25 %", ("ratio 0.2",), ("25 %",),
           "a percentage whose fraction is not in the data"),
    Ground("range-both-ends", "between 10–25 experts", ("at least 10",), ("25",),
           "the issue: both ends of a range are checked"),
    Ground("range-percent-spreads", "15–25 %", ("shares 0.15 and 0.25",), (),
           "the first end of a percentage range is a percentage too"),
    Ground("negative-needs-negative", "a change of -3.5", ("3.5",), ("-3.5",),
           "the sign is part of the claim"),
    Ground("negative-grounded", "změna −3,5", ("změna -3.5",), (),
           "U+2212 minus in the answer matches a hyphen-minus in the data"),
    Ground("absolute-of-negative", "a difference of 3.5", ("change -3.5",), (),
           "grounding is generous: a negative grounds its magnitude"),
    Ground("thousands-vs-plain", "rozpočet 57 300 Kč", ("budget 57300",), (),
           "a grouped answer matches ungrouped data"),
    Ground("ambiguous-comma-cs-reading", "hodnota 1,500", ("value 1.5",), (),
           "the Czech decimal reading of 1,500 is still accepted"),
    Ground("ambiguous-dot-thousands", "10.000 Kč", ("budget 10 000",), (),
           "the thousands reading of 10.000 is still accepted"),
    Ground("user-message", "With a scale of 0 to 50 the share is 4.4 %.",
           ("What if the scale were 0 to 50?", "Δmax 2.2 and 4.4 % of the width"), (),
           "the user's own message grounds numbers"),
    Ground("words-grounded-en", "twenty-two experts answered", (BUDGET,), (),
           "a number word matches a count in the data"),
    Ground("words-ungrounded-cs", "Odpovědělo sedmnáct expertů.", (BUDGET,), ("sedmnáct",),
           "a Czech number word not in the data is unconfirmed"),
    Ground("expert-binding", "13 experts answered", (BUDGET, "opinion (13, 15, 20)"), ("13",),
           "bound to its quantity: 13 appears in the data but the expert count is 22"),
    Ground("expert-binding-cs-words", "Odpovědělo třináct expertů.", ("M = 22", "(13, 15, 20)"),
           ("třináct",), "binding works for Czech words too"),
    Ground("expert-binding-ok", "22 experts answered", ('"num_experts": 22, "x": 13',), (),
           "the count the data names grounds the expert count"),
    Ground("expert-binding-passage", "the example has 3 experts", (BUDGET, "3 experts (10,15,20)"),
           (), "a count stated as 'N experts' in a passage is a bound count too"),
    Ground("expert-binding-fallback", "7 experts", ("opinions: 7, 8, 9",), (),
           "without any count in the grounding, the plain rule applies"),
    Ground("year-not-checked", "In 2019 the error was 5.97.", (FLOODS,), (),
           "a year is not checked even though the data has no 2019"),
    Ground("citation-not-checked", "Δmax is 2.2 [7].", (BUDGET,), (),
           "a citation marker is not checked against the data"),
    Ground("case-study-mix", "The floods error is 6.8.", (FLOODS,), ("6.8",),
           "the case-study page number is not in the repo data"),
    Ground("several-in-order", "7.1, then 8.2 and 5.97", (FLOODS,), ("7.1", "8.2"),
           "unconfirmed texts come in order of appearance"),
    Ground("list-numbers-in-grounding", "step 4 computes Δmax", ("1. Centroid\n4. Maximum error",),
           (), "grounding is generous: list numbers there ground a step number"),
    Ground("triple-checked", "The median is [6, 8, 12].", ("Ω = (6, 8, 11)",), ("12",),
           "a bracketed triple is checked, not skipped as a citation"),
    Ground("budget-cs-full", "Kompromis je (33,52; 51,25; 59,32), chyba 2,2 a 22 expertů [1].",
           ("ΓΩMean = (33.52, 51.25, 59.32)", BUDGET), (),
           "a realistic Czech answer where every number is grounded"),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in GROUND])
def test_grounding(case: Ground) -> None:
    check = check_numbers(case.answer, case.grounding)
    assert check.mentions, "a grounding case must have numbers to check"
    assert check.unconfirmed == case.unconfirmed, case.reason
    assert check.valid == (not case.unconfirmed)


def test_pinned_can_be_replaced() -> None:
    assert 20.0 in PINNED and 40.0 in PINNED and 2.0 in PINNED and 3.0 in PINNED
    assert check_numbers("up to 20 %", ()).valid
    assert check_numbers("up to 20 %", (), pinned=()).unconfirmed == ("20 %",)
    assert check_numbers("up to 50 %", (), pinned=(50,)).valid


def test_grounding_values_are_generous() -> None:
    values = grounding_values(["v1.2.3 on 2024-05-01", "1. first", "20 %", "−3.5", "třináct"])
    for v in ("1", "2", "3", "2024", "5", "20", "0.2", "-3.5", "3.5", "13"):
        assert Decimal(v) in values, v
    assert Decimal(19) not in grounding_values(["14.19"])


def test_grounding_may_be_a_generator() -> None:
    def texts() -> Iterator[str]:
        yield "M = 22"
        yield "Δmax = 5.97"
    check = check_numbers("22 experts, Δmax 5.97", texts())
    assert check.valid and len(check.mentions) == 2


def test_mentions_carry_text_value_offset() -> None:
    answer = "Chyba je 14,2 % a −3 [1]."
    check = check_numbers(answer, ("0.142",))
    assert check.mentions == (NumberMention("14,2 %", Decimal("14.2"), 9, True),
                              NumberMention("−3", Decimal(-3), 18, False))
    assert check.unconfirmed == ("−3",) and not check.valid
    assert NumberCheck(()).valid and NumberCheck(()).unconfirmed == ()


# --- a peer suite's disagreements, each case with its reason -------------------------------

PEER_EXTRACT = [
    Extract("stripping-never-joins", "about 5[1]000 experts", [("5", 5), ("000", 0)],
            "a citation between digits is blanked in place: never 5000"),
    Extract("stripping-never-joins-spaced", "about 5 [1] 000", [("5", 5), ("000", 0)],
            "nor does removing it leave '5  000' to be read as thousands"),
    Extract("stripping-never-joins-cs", "rozpočet 5[Zdroj 1]000 Kč", [("5", 5), ("000", 0)],
            "the same in Czech, with a labelled citation"),
    Extract("interval-cs", "třída [0,585; 91) ji obsahuje", [("0,585", 0.585), ("91", 91)],
            "a Czech half-open interval: two numbers, never 585.91 or a citation"),
    Extract("bold-list-number-cs", "**1.** Spočítejte průměr\n**2.** Seřaďte", [],
            "Czech bold list numbers"),
    Extract("model-name-cs", "běží na Qwen3.5-9B a GPT-4", [], "model names in Czech text"),
    Extract("labelled-citation-en", "As stated [Source 12], the value is 7.", [("7", 7)],
            "digits inside a labelled citation are not numbers"),
    Extract("labelled-citation-cs", "Jak uvádí [Zdroj 2] a [Pasáž 3], je to 7.", [("7", 7)],
            "Czech labels likewise"),
    Extract("labelled-citation-ru", "[Источник 4] и [Фрагмент 5]: 7", [("7", 7)],
            "Russian labels likewise"),
    Extract("fullwidth-citation", "值 【1】 and ［２］ and 7", [("7", 7)],
            "full-width brackets and digits are citations, not numbers"),
    Extract("range-citation", "see [1-3] and [3–1], then 7", [("7", 7)],
            "ranges of passages are citations, not a range of numbers"),
    Extract("list-citation", "see [1, 2] then 7", [("7", 7)],
            "a two-item list of passage numbers is a citation"),
    Extract("doc-citation", "see [doc1] then 7", [("7", 7)], "a glued label"),
    Extract("interval-not-joined", "the class [0.585,91) holds it", [("0.585", 0.585), ("91", 91)],
            "a half-open interval is two numbers, never 585.91"),
    Extract("word-hyphen-number-en", "the reported error-15.3 is large", [("15.3", 15.3)],
            "a number after a lowercase hyphenated word is a number, not a name"),
    Extract("word-hyphen-number-cs", "uvedená chyba-15,3 je velká", [("15,3", 15.3)],
            "the same in Czech with a decimal comma"),
    Extract("model-name", "it runs on Qwen3.5-9B and Llama-3.1", [],
            "model names with digits and capitals are names"),
    Extract("lowercase-word-integer", "the top-5 results", [("5", 5)],
            "after a lowercase hyphenated word an integer counts too (the known cost: utf-8)"),
    Extract("bold-list-number", "**1.** Compute the mean\n**2.** Sort", [],
            "bold list numbers at a line start are list numbering"),
    Extract("italic-list-number", "_3)_ Average", [], "italic list numbers too"),
    Extract("ordinal-cs-tab", "Nejnižší těžiště má 3.\texpert.", [],
            "a Czech ordinal followed by a tab"),
    Extract("ordinal-cs-narrow-nbsp", "Nejvyšší odhad dal 2.\u202fexpert.", [],
            "a Czech ordinal followed by a narrow no-break space (U+202F)"),
    Extract("ordinal-cs-thin", "Nejvyšší odhad dal 2.\u2009expert.", [],
            "a Czech ordinal followed by a thin space"),
    Extract("big-exact", "about 1234567891 CZK", [("1234567891", 1234567891)],
            "a big integer is read exactly"),
    Extract("negative-space-grouped", "a change of -20 123.48", [("-20 123.48", -20123.48)],
            "one mention; its readings (one number, or -20 and 123.48) are matched"),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in PEER_EXTRACT])
def test_peer_extract(case: Extract) -> None:
    test_extract(case)


PEER_GROUND = [
    Ground("exact-big-differs", "The budget is 1234567891 CZK.", ("budget 1234567890",),
           ("1234567891",), "exact decimals: no relative tolerance lets a big number pass"),
    Ground("exact-big-equal", "The budget is 1234567890 CZK.", ("budget 1234567890",), (),
           "the same big number is grounded"),
    Ground("exact-big-grouped-cs", "Rozpočet je 1 234 567 891 Kč.", ("budget 1234567890",),
           ("1 234 567 891",), "the same in Czech grouping"),
    Ground("exact-decimal-tail", "The ratio is 0.1000000001.", ("ratio 0.1",),
           ("0.1000000001",), "no tolerance in the decimals either"),
    Ground("stripping-never-joins", "The budget is 5[1]000 CZK.", ("budget 5000",),
           ("5", "000"), "5000 is never assembled around a citation"),
    Ground("grounding-negative-space", "The change is -20 and the level 123.48.",
           ("change -20 123.48",), (), "'-20 123.48' in the grounding is also two numbers"),
    Ground("grounding-negative-space-joined", "The total is 20123.48.", ("total 20 123.48",), (),
           "and still one number when grouped"),
    Ground("answer-space-pair", "The values are -20 123.48.", ("values -20 and 123.48",), (),
           "an answer's '-20 123.48' is grounded by -20 and 123.48 side by side"),
    Ground("interval-grounding", "The value is 585.91.", ("class [0.585,91)",), ("585.91",),
           "an interval in the grounding is not 585.91"),
    Ground("interval-grounding-ends", "It lies between 0.585 and 91.", ("class [0.585,91)",), (),
           "its two ends are grounded"),
    Ground("comma-pair-en", "The values are 1,234 as listed.", ("values 1 and 234",), (),
           "the issue's 8%: '1,234' beside data holding 1 and 234 has a supported reading"),
    Ground("comma-pair-cs", "Výsledné hodnoty jsou 1,234.", ("hodnoty 1 a 234",), (),
           "the same reading in a Czech answer"),
    Ground("comma-thousands-en", "The values are 1,234 as listed.", ("total 1234",), (),
           "English: a comma before three digits is thousands"),
    Ground("comma-decimal-cs", "Výsledná hodnota je 1,234.", ("value 1.234",), (),
           "Czech: the comma is the decimal mark"),
    Ground("comma-thousands-cs", "Výsledná částka je 5,000 Kč.", ("budget 5000",), (),
           "Czech: the thousands reading is still accepted (prefer no flag)"),
    Ground("comma-not-decimal-en", "The budget is 5,000 and that is all.", ("the value 5",),
           ("5,000",), "English: 5,000 is five thousand, never the decimal 5.000"),
    Ground("comma-decimal-not-pair-cs", "Výsledná hodnota je 7,1.", ("items 7 and 1",),
           ("7,1",), "Czech 7,1 is 7.1 only: a pair reading needs three digits after the comma"),
    Ground("word-hyphen-checked", "The reported error-15.3 is large.", ("error 15.2",),
           ("15.3",), "after a hyphenated word the number is checked, not skipped as a name"),
    Ground("word-hyphen-grounded", "The reported error-15.3 is large.", ("error 15.3",), (),
           "and grounded when the data has it"),
    Ground("lowercase-name-grounded", "Files are read as utf-8.", ("All files are utf-8.",), (),
           "a lowercase name is checked, and the grounding's own copy grounds it"),
    Ground("labelled-citation-not-number", "It is 7 [Source 12] and 8 【9】.", ("7 and 8",), (),
           "digits inside labelled or full-width citations are never checked"),
    Ground("czech-triple-decimals", "Trojice je [10,5; 15,5; 21,5].", ("(10.5, 15.5, 21.5)",), (),
           "a Czech decimal triple in brackets is data and grounded"),
    Ground("bold-list-and-value", "**1.** The mean is 15.67\n**2.** The error 2.2",
           ("mean 15.67, error 2.2",), (), "list numbers are skipped, values checked"),
    Ground("model-name-and-value", "Qwen3.5-9B reports 0.91.", ("score 0.91",), (),
           "a model name next to a grounded value: only the value is checked"),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in PEER_GROUND])
def test_peer_grounding(case: Ground) -> None:
    test_grounding(case)


def test_triple_uses_the_passage_count() -> None:
    # [1, 2, 3] with three passages: passage numbers explain it as well as the data: a citation.
    assert check_numbers("see [1, 2, 3] for 7", ("7", "1, 2, 3"), passages=3).unconfirmed == ()
    assert len(check_numbers("see [1, 2, 3] for 7", ("7",), passages=3).mentions) == 1
    # [6, 8, 12] with three passages and data (6, 8, 11): a triple, so 12 is checked.
    check = check_numbers("the median is [6, 8, 12]", ("Ω = (6, 8, 11)",), passages=3)
    assert check.unconfirmed == ("12",)


# --- the peer suite's remaining disagreements, each case with its reason ---------------------

BIG = "1234567890123456789012345678"  # 28 digits: the default decimal context's precision

PEER_REMAINING_EXTRACT = [
    Extract("underscore-name", "set 5_b to the mean", [],
            "digits glued to an underscore and a letter are a name (like E_1), not 5"),
    Extract("link-target", "as [this step](#step-7) says, 4 experts", [("4", 4)],
            "digits inside a markdown link target are part of an address, not a number"),
    Extract("link-target-url", "see [the guide](docs/guide.md#part-3) for 9 steps", [("9", 9)],
            "a relative link target likewise"),
    Extract("interval-open-closed", "the class (83,24] holds it", [("83", 83), ("24", 24)],
            "a half-open interval: two integers, never the decimal 83.24"),
    Extract("interval-closed-open", "the class [53,88) holds it", [("53", 53), ("88", 88)],
            "the other half-open shape"),
    Extract("parenthesised-decimal-cs", "průměr (83,24) je nízký", [("83,24", 83.24)],
            "matching parentheses keep the Czech decimal comma: only the mixed shape is an "
            "interval"),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in PEER_REMAINING_EXTRACT])
def test_peer_remaining_extract(case: Extract) -> None:
    test_extract(case)


PEER_REMAINING_GROUND = [
    Ground("grouped-decimal-not-a-pair", "It is 1,234.56 in total.", ("1 and 234.56",),
           ("1,234.56",), "the docstring's table: 12,345.67 is thousands, never two numbers"),
    Ground("grouped-decimal-thousands", "It is 1,234.56 in total.", ("total 1234.56",), (),
           "its thousands reading is grounded"),
    Ground("beyond-28-digits-rounded", f"It is {BIG}.13", (f"value={BIG}.1234567",),
           (f"{BIG}.13",), "the issue's crash: .1234567 rounds to .12, never .13, and the "
                           "check must not raise"),
    Ground("beyond-28-digits-truncated", f"It is {BIG}.12", (f"value={BIG}.1234567",), (),
           "a 30-digit truncation is grounded exactly"),
    Ground("beyond-28-digits-negation", f"It is -{BIG}.99", (f"value -{BIG[:-1]}9",),
           (f"-{BIG}.99",), "negation is exact: -...678.99 never rounds to -...679"),
    Ground("beyond-28-digits-negation-grounded", f"It is -{BIG}.99", (f"value -{BIG}.99",), (),
           "the same negative is grounded"),
    Ground("beyond-28-digits-percent", f"a share of {BIG}.5 %", (f"ratio {BIG[:-2]}.78",),
           (f"{BIG}.5 %",), "a percentage's fraction (...56.785) is exact too: rounded to 28 "
                            "digits it would be the ratio's ...56.78"),
    Ground("beyond-28-digits-percent-grounded", f"a share of {BIG}.5 %",
           (f"ratio {BIG[:-2]}.785",), (), "the exact fraction grounds it"),
    Ground("underscore-name-grounded", "Set 5_b to 7.", ("value 7",), (),
           "5_b is a name: only 7 is checked"),
    Ground("link-target-grounded", "As [this step](#step-7) says, Δmax is 2.2.", ("Δmax 2.2",),
           (), "the link target's 7 is not checked"),
    Ground("interval-grounded-by-itself", "It lies in (83,24] and [53,88).",
           ("classes (83,24] and [53,88)",), (),
           "every value of the answer is in the grounding: no flag"),
    Ground("interval-grounded-by-integers", "It lies in (83,24].", ("from 24 to 83",), (),
           "the interval's two integers are grounded by the same integers"),
    Ground("interval-not-a-decimal", "It lies in (83,24].", ("value 83.24",), ("24",),
           "the interval's 24 is no part of the decimal 83.24 (whose rounding grounds 83)"),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in PEER_REMAINING_GROUND])
def test_peer_remaining_grounding(case: Ground) -> None:
    test_grounding(case)
