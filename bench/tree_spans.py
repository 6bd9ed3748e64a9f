"""The quotes form with and without a file tree's entries as spans (shared/spans.py
_TREE_LINE), paired over the same questions, and the questions whose outcome changed.

    python -m bench.tree_spans [SETS]

SETS: comma-separated `bench.quotes_eval` sets (default: the nine read sets). Shipped weights
and thresholds; span vectors as a turn reads them (docs/benchmarks.md, "A file tree's entries
are quotes").
"""

from __future__ import annotations

import re
import sys

import shared.spans
from bench import quotes_eval as qe
from bench.decision_fit import READ_SETS
from worker.evaluation import paired_bootstrap
from worker.pipeline.quotes import WEIGHTS

NEVER = re.compile(r"(?!x)x")


def outcomes(sets: list[str]) -> dict[str, tuple]:
    """Per question: language, answerable, answered, first quote right, first quote."""
    out = {}
    for name in sets:
        rows = qe.collect(name, 5)
        qe.score(rows, WEIGHTS)
        for r in rows:
            q, chosen = r["q"], r["chosen"]
            out[q["id"]] = (q["language"], bool(q.get("expected_source")), bool(chosen),
                            bool(chosen) and qe._hit(r["passages"][chosen[0].n], q),
                            chosen[0].text[:100] if chosen else "", q["question"][:90])
    return out


def main(argv: list[str] | None = None) -> None:
    """Print the paired rates per language, then each changed question."""
    sets = (argv if argv is not None else sys.argv[1:]) or [READ_SETS]
    names = sets[0].split(",")
    tree = shared.spans._TREE_LINE
    shared.spans._TREE_LINE = NEVER
    try:
        before = outcomes(names)
    finally:
        shared.spans._TREE_LINE = tree
    after = outcomes(names)
    for lang in ("en", "cs"):
        ids = [i for i, v in before.items() if v[0] == lang]
        ans = [i for i in ids if before[i][1]]
        una = [i for i in ids if not before[i][1]]
        for label, chosen, value in (
                ("first quote", ans, lambda v: float(v[3])),
                ("\"I don't know\" answerable", ans, lambda v: float(not v[2])),
                ("\"I don't know\" unanswerable", una, lambda v: float(not v[2]))):
            b = [value(before[i]) for i in chosen]
            a = [value(after[i]) for i in chosen]
            d = paired_bootstrap(b, a)
            print(f"{lang} {label}: {sum(b) / len(b):.3f} -> {sum(a) / len(a):.3f} "
                  f"({d['mean_diff']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}], "
                  f"{len(chosen)})")
    for i, b in before.items():
        a = after[i]
        if b[2:5] != a[2:5]:
            print(f"{i} {b[0]} {'answerable' if b[1] else 'unanswerable'} first {b[3]} -> "
                  f"{a[3]}: {b[5]}\n    before: {b[4]}\n    after:  {a[4]}")


if __name__ == "__main__":
    main()
