"""The quotes form with and without an interface group of labels as one span (shared/spans.py
_labels), paired over the same questions, and the questions whose first quote changed or is
such a group.

    python -m bench.labels_spans [SETS]

SETS: comma-separated `bench.quotes_eval` sets (default: the twelve sets read so far). Shipped
weights and thresholds; span vectors as a turn reads them (docs/benchmarks.md, "An interface
group of labels is quoted as its labels").
"""

from __future__ import annotations

import statistics
import sys

from bench import quotes_eval as qe
from bench.hedge_band import SETS
from worker.evaluation import paired_bootstrap
from worker.pipeline.quotes import WEIGHTS


def main(argv: list[str]) -> None:
    """Print the changed questions, then per language the first quote and "I don't know"
    without the groups and with them."""
    sets = (argv[0] if argv else SETS).split(",")
    got: dict[str, dict[str, list[float]]] = {}
    for name in sets:
        rows = qe.collect(name, 5)
        without = [dict(r, spans=[[s for s in per if s.kind != "labels"] for per in r["spans"]])
                   for r in rows]
        qe.score(without, WEIGHTS)
        qe.score(rows, WEIGHTS)
        for a, b in zip(without, rows, strict=True):
            q = a["q"]
            d = got.setdefault(q["language"], {k: [] for k in ("a", "b", "ia", "ib", "ua",
                                                               "ub")})
            said = b["chosen"][0] if b["chosen"] else None
            if not q.get("expected_source"):
                d["ua"].append(float(not a["chosen"]))
                d["ub"].append(float(not b["chosen"]))
                if said is not None and said.span.kind == "labels":
                    print(f"{q['id']} unanswerable, quoted a group: {said.text[:70]}")
                continue
            fa = bool(a["chosen"]) and qe._hit(a["passages"][a["chosen"][0].n], q)
            fb = said is not None and qe._hit(b["passages"][said.n], q)
            d["a"].append(float(fa))
            d["b"].append(float(fb))
            d["ia"].append(float(not a["chosen"]))
            d["ib"].append(float(not b["chosen"]))
            if fa != fb or (said is not None and said.span.kind == "labels"):
                print(f"{q['id']} {'right' if fb else 'wrong'} (was {'right' if fa else 'wrong'}):"
                      f" {said.text[:70] if said else 'I dont know'}")
    for lang, d in got.items():
        diff = paired_bootstrap(d["a"], d["b"])
        print(f"{lang} first quote {statistics.mean(d['a']):.3f} -> "
              f"{statistics.mean(d['b']):.3f} ({diff['mean_diff']:+.3f} "
              f"[{diff['ci95'][0]:+.3f}, {diff['ci95'][1]:+.3f}]); \"I don't know\" answerable "
              f"{statistics.mean(d['ia']):.3f} -> {statistics.mean(d['ib']):.3f}, unanswerable "
              f"{statistics.mean(d['ua']):.3f} -> {statistics.mean(d['ub']):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
