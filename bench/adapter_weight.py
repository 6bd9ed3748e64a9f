"""The query adapter's weight in the fused ranking (or another number of the ranking,
`--field`): retrieval hit@1 / @3 / @5 and MRR per language for each value, as a chat turn
searches (Czech through the few-shot translation, cached as bench.quotes_eval caches it), each
value against the first by paired bootstrap:

    python -m bench.adapter_weight SETS WEIGHT[,WEIGHT...] [--field NAME]

e.g. `python -m bench.adapter_weight all,heldout-fresh12 2,12,20`, or the fused list's order
`python -m bench.adapter_weight heldout-fresh15 60,3 --field order_k`.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics

from bench import quotes_eval as qe
from shared import corpus_store
from shared.config import settings_from_env
from worker.evaluation import paired_bootstrap
from worker.evaluation_presets import research
from worker.pipeline.retrieve import RetrievalConfig, rank

TOP = 10


def places(sets: str, weights: list[float], field: str = "adapted"
           ) -> dict[float, dict[str, list[int | None]]]:
    """Per value of `field` and language, each answerable question's expected passage's
    place."""
    s = settings_from_env()
    base = dataclasses.replace(research(RetrievalConfig.from_settings(s)), top_k=TOP)
    out: dict[float, dict[str, list[int | None]]] = {w: {"en": [], "cs": []} for w in weights}
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        for name in sets.split(","):
            for q in qe.questions(name):
                if not q.get("expected_source"):
                    continue
                lang = q["language"]
                search = qe._translated(s, q["question"]) if lang == "cs" else q["question"]
                for w in weights:
                    value = int(w) if isinstance(getattr(base, field), int) else w
                    config = dataclasses.replace(base, **{field: value})
                    _v, ranked, lexical = rank(conn, s, config, search, q["question"],
                                               language=lang)
                    found = [lexical.by_id[pid] for pid, _ in ranked if pid in lexical.by_id]
                    out[w][lang].append(next((i for i, p in enumerate(found, 1)
                                              if qe._hit(p, q)), None))
    return out


def _hit(place: int | None, k: int) -> float:
    return 1.0 if place is not None and place <= k else 0.0


def _rr(place: int | None) -> float:
    return 1.0 / place if place else 0.0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.adapter_weight")
    ap.add_argument("sets")
    ap.add_argument("weights")
    ap.add_argument("--field", default="adapted", help="the ResearchConfig number to vary")
    args = ap.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",")]
    got = places(args.sets, weights, args.field)
    first = weights[0]
    for w in weights:
        for lang in ("en", "cs"):
            xs = got[w][lang]
            if not xs:
                continue
            line = " ".join(f"hit@{k} {statistics.mean(_hit(x, k) for x in xs):.3f}"
                            for k in (1, 3, 5))
            line += f" MRR {statistics.mean(_rr(x) for x in xs):.3f}"
            if w != first:
                for label, f in (("hit@1", lambda x: _hit(x, 1)), ("MRR", _rr)):
                    b = paired_bootstrap([f(x) for x in got[first][lang]],
                                         [f(x) for x in xs])
                    line += f"; {label} {b['mean_diff']:+.3f} {list(b['ci95'])}"
            print(f"{args.field} {w:g} {lang} (n={len(xs)}): {line}")


if __name__ == "__main__":
    main()
