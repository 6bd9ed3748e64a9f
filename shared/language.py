"""Language detection: Czech, English or unknown (Slovak is not Czech; short text is unknown)."""

from __future__ import annotations

import re

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
    "about as be been".split())
SLOVAK_WORDS = frozenset("je aký aká aké prečo kde ako sú nie čo ktorý ktorá ktoré".split())


def detect_language(text: str) -> str:
    """'cs', 'en' or 'unknown'; unsure is unknown, so no language line is added
    (docs/spec/behaviour.md B-23)."""
    words = [w.lower() for w in WORD.findall(text)]
    if len(words) < 2:
        return "unknown"
    letters = set(text)
    if letters & SLOVAK_ONLY_LETTERS:
        return "unknown"
    cs = sum(w in CZECH_WORDS for w in words) + 2 * len(letters & CZECH_ONLY_LETTERS)
    cs += sum(1 for w in words if set(w) & CZECH_LETTERS)
    en = sum(w in ENGLISH_WORDS for w in words)
    sk = sum(w in SLOVAK_WORDS and w not in CZECH_WORDS for w in words)
    if sk and not letters & CZECH_ONLY_LETTERS:
        return "unknown"
    if cs >= 2 and cs > 2 * en:
        return "cs"
    if en >= 1 and en > 2 * cs and not letters & CZECH_LETTERS:
        return "en"
    return "unknown"
