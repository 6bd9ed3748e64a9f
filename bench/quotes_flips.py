"""The quotes form under settings of Weights with the shipped thresholds (not recalibrated),
per set and pooled (each later setting against the first by paired bootstrap), and the
questions whose outcome differs from the first setting's.

    python -m bench.quotes_flips SETS NAME=FIELD:VALUE[,FIELD:VALUE] ...

SETS: comma-separated `bench.quotes_eval` sets; each NAME one setting (the first is the
baseline); the field `retrieval` names a retrieval preset or TOML (`eval retrieval
--settings`) to rank with instead of a turn's. Example, names the corpus never uses
(docs/benchmarks.md):

    python -m bench.quotes_flips all,heldout-fresh5 off=strange:0,strange_other:0 \\
        veto=strange:inf,strange_other:inf

and the query adapter against the retrieval before it, the weights as shipped:

    python -m bench.quotes_flips all before=retrieval:hybrid-v5 after=
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from bench import quotes_eval as qe
from worker.evaluation import paired_bootstrap
from worker.pipeline.quotes import WEIGHTS, Weights


def setting(text: str) -> tuple[str, Weights, str | None]:
    """NAME=FIELD:VALUE,... as a name, the defaults with those fields changed, and the
    retrieval settings to rank with (None: a turn's)."""
    name, _, fields = text.partition("=")
    pairs = dict(f.split(":", 1) for f in fields.split(",") if f)
    retrieval = pairs.pop("retrieval", None)
    changes: dict[str, Any] = {k: float(v) for k, v in pairs.items()}
    return name, dataclasses.replace(WEIGHTS, **changes), retrieval


def main(argv: list[str] | None = None) -> None:
    """Print each set's figures per setting, the flips against the first, and the pooled."""
    ap = argparse.ArgumentParser(prog="python -m bench.quotes_flips")
    ap.add_argument("sets")
    ap.add_argument("settings", nargs="+")
    args = ap.parse_args(argv)
    settings = [setting(s) for s in args.settings]
    pooled: dict[tuple[str, str], dict[str, list[float]]] = {}
    for name in args.sets.split(","):
        ranked = {r: qe.collect(name, 5, retrieval=r) for r in {s[2] for s in settings}}
        outcome: dict[str, dict[str, tuple[bool, bool]]] = {}
        for label, weights, retrieval in settings:
            rows = ranked[retrieval]
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
        for label, _w, retrieval in settings[1:]:
            for r in ranked[retrieval]:
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
