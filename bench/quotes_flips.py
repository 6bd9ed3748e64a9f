"""The quotes form under settings of Weights with the shipped thresholds (not recalibrated),
per set and pooled (each later setting against the first by paired bootstrap), and the
questions whose outcome differs from the first setting's.

    python -m bench.quotes_flips SETS NAME=FIELD:VALUE[,FIELD:VALUE] ...

SETS: comma-separated `bench.quotes_eval` sets; each NAME one setting (the first is the
baseline). Example, names the corpus never uses (docs/benchmarks.md):

    python -m bench.quotes_flips all,heldout-fresh5 off=strange:0,strange_other:0 \\
        veto=strange:inf,strange_other:inf
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from bench import quotes_eval as qe
from worker.evaluation import paired_bootstrap
from worker.pipeline.quotes import WEIGHTS, Weights


def setting(text: str) -> tuple[str, Weights]:
    """NAME=FIELD:VALUE,... as a name and the defaults with those fields changed."""
    name, _, fields = text.partition("=")
    changes: dict[str, Any] = {k: float(v) for k, v in (f.split(":") for f in fields.split(",")
                                                       if f)}
    return name, dataclasses.replace(WEIGHTS, **changes)


def main(argv: list[str] | None = None) -> None:
    """Print each set's figures per setting, the flips against the first, and the pooled."""
    ap = argparse.ArgumentParser(prog="python -m bench.quotes_flips")
    ap.add_argument("sets")
    ap.add_argument("settings", nargs="+")
    args = ap.parse_args(argv)
    settings = [setting(s) for s in args.settings]
    pooled: dict[tuple[str, str], dict[str, list[float]]] = {}
    for name in args.sets.split(","):
        rows = qe.collect(name, 5)
        outcome: dict[str, dict[str, tuple[bool, bool]]] = {}
        for label, weights in settings:
            print(name, label, json.dumps(qe.score(rows, weights)))
            outcome[label] = {}
            for r in rows:
                q = r["q"]
                hit = bool(r["chosen"]) and qe._hit(r["passages"][r["chosen"][0].n], q)
                outcome[label][q["id"]] = (bool(r["chosen"]), hit)
                d = pooled.setdefault((label, q["language"]),
                                      {"first": [], "idk_ans": [], "idk_unans": []})
                if q.get("expected_source"):
                    d["first"].append(float(hit))
                    d["idk_ans"].append(0.0 if r["chosen"] else 1.0)
                else:
                    d["idk_unans"].append(0.0 if r["chosen"] else 1.0)
        base = settings[0][0]
        for label, _w in settings[1:]:
            for r in rows:
                q = r["q"]
                if outcome[base][q["id"]][0] != outcome[label][q["id"]][0]:
                    kind = "answerable" if q.get("expected_source") else "unanswerable"
                    was = " (its first quote was right)" if outcome[base][q["id"]][1] else ""
                    said = "answers" if outcome[label][q["id"]][0] else "I don't know"
                    print(f"  {label}: {q['id']} {q['language']} {kind}{was} now {said}: "
                          f"{q['question'][:80]}")
    for (label, lang), d in sorted(pooled.items()):
        print("pooled", label, lang, {k: (round(sum(v) / len(v), 3), len(v))
                                      for k, v in d.items() if v})
        base_d = pooled[(settings[0][0], lang)]
        if label != settings[0][0]:
            # The same questions in the same order under each setting: paired.
            for k, v in d.items():
                if v:
                    b = paired_bootstrap(base_d[k], v)
                    print(f"  {label} - {settings[0][0]} {lang} {k}: {b['mean_diff']:+.3f} "
                          f"[{b['ci95'][0]:+.3f}, {b['ci95'][1]:+.3f}]")


if __name__ == "__main__":
    main()
