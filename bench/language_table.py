"""Writes shared/language_trigrams.json: how much more Czech than English each letter trigram
of a word is, from the word forms of simplemma's Czech and English dictionaries (Czech without
its diacritics, as people often type it). shared.language reads it only where its word lists
leave a question's language unsure.

Run: .venv/bin/python -m bench.language_table [--check]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter

from shared.language import TRIGRAMS, plain, trigrams

DIGITS = 3  # the log ratios' decimals: enough to decide, a small file


def counts(lang: str) -> Counter[str]:
    """The letter trigrams of every plain a-z word form of one simplemma dictionary."""
    from simplemma.strategies import DefaultDictionaryFactory

    out: Counter[str] = Counter()
    for key in DefaultDictionaryFactory().get_dictionary(lang).keys():
        word = plain((key.decode() if isinstance(key, bytes) else str(key)).lower())
        if re.fullmatch(r"[a-z]+", word):
            out.update(trigrams(word))
    return out


def table() -> dict:
    """Each trigram's log ratio, Czech over English, add-one smoothed; and the unseen one's."""
    cs, en = counts("cs"), counts("en")
    vocabulary = len(set(cs) | set(en))
    cs_total, en_total = sum(cs.values()) + vocabulary, sum(en.values()) + vocabulary
    ratios = {g: round(math.log((cs[g] + 1) / cs_total) - math.log((en[g] + 1) / en_total),
                       DIGITS) for g in sorted(set(cs) | set(en))}
    return {"about": "log P(trigram | Czech) - log P(trigram | English), simplemma's "
                     "dictionaries' word forms; made by bench/language_table.py",
            "unseen": round(math.log(1 / cs_total) - math.log(1 / en_total), DIGITS),
            "ratios": ratios}


def main(argv: list[str] | None = None) -> int:
    """Write the table (or, with --check, say whether the shipped one is current)."""
    ap = argparse.ArgumentParser(prog="python -m bench.language_table")
    ap.add_argument("--check", action="store_true", help="compare, do not write")
    args = ap.parse_args(argv)
    text = json.dumps(table(), ensure_ascii=True, separators=(",", ":"), sort_keys=True) + "\n"
    if args.check:
        current = TRIGRAMS.read_text(encoding="utf-8") == text
        print("current" if current else f"{TRIGRAMS} differs: run python -m bench.language_table")
        return 0 if current else 1
    TRIGRAMS.write_text(text, encoding="utf-8")
    print(f"wrote {TRIGRAMS} ({len(text) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
