"""The band above the "I don't know" threshold in which an answer is hedged (Weights.hedge):
the margin below which at most a share of the answers quoted from the expected section fall,
each set's figures from the band of the other sets (leave one set out), then the band of all
the sets and the shipped band's figures.

    python -m bench.hedge_band [--sets all,heldout-quotes,...] [--share 0.15]

Per language: of the answers given, how many are hedged among those to unanswerable questions,
those quoted from elsewhere ("wrong") and those quoted from the expected section ("right")
(docs/benchmarks.md, "An answer that barely clears the threshold").
"""

from __future__ import annotations

import argparse

from bench.decision_fit import rows_of
from worker.pipeline.quotes import WEIGHTS

SETS = ("all,heldout-quotes,heldout-fresh,heldout-fresh2,heldout-fresh3,heldout-fresh4,"
        "heldout-fresh5,heldout-fresh6,heldout-fresh7,heldout-fresh8,heldout-fresh9,"
        "heldout-fresh10")


def band(rows: list[dict], threshold: float, share: float) -> float:
    """The margin over the threshold below which at most `share` of the right answers fall."""
    right = sorted(r["decision"] - threshold for r in rows
                   if r["ans"] and r["first"] and r["decision"] >= threshold and not r["strange"])
    k = int(share * len(right))
    return right[k] if k < len(right) else 0.0


def kind(r: dict) -> str:
    """unans, wrong or right."""
    return "unans" if not r["ans"] else ("right" if r["first"] else "wrong")


def rates(hedges: dict[str, list[bool]]) -> str:
    """Hedged share of each kind of answer given."""
    return ", ".join(f"{k} {sum(v) / len(v):.3f} ({sum(v)} of {len(v)})" if v else f"{k} -"
                     for k, v in hedges.items())


def main(argv: list[str] | None = None) -> None:
    """Print the leave-one-set-out, the pooled band and the shipped band's figures."""
    ap = argparse.ArgumentParser(prog="python -m bench.hedge_band")
    ap.add_argument("--sets", default=SETS)
    ap.add_argument("--share", type=float, default=0.15)
    args = ap.parse_args(argv)
    for lang in ("en", "cs"):
        threshold = WEIGHTS.threshold if lang == "en" else WEIGHTS.threshold_other
        rows = rows_of(args.sets, lang, WEIGHTS)
        given = [r for r in rows if not r["strange"] and r["decision"] >= threshold]
        loso: dict[str, list[bool]] = {"unans": [], "wrong": [], "right": []}
        for hold in dict.fromkeys(r["set"] for r in rows):
            b = band([r for r in rows if r["set"] != hold], threshold, args.share)
            for r in (r for r in given if r["set"] == hold):
                loso[kind(r)].append(r["decision"] - threshold < b)
        shipped: dict[str, list[bool]] = {"unans": [], "wrong": [], "right": []}
        for r in given:
            shipped[kind(r)].append(bool(r["hedged"]))
        print(f"{lang} each set from the others: {rates(loso)}")
        print(f"{lang} band of every set: {band(rows, threshold, args.share):.3f}")
        print(f"{lang} shipped band ({WEIGHTS.hedge if lang == 'en' else WEIGHTS.hedge_other}):"
              f" {rates(shipped)}")


if __name__ == "__main__":
    main()
