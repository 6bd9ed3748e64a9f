"""The quotes form's "I don't know" decision as a logistic fit of its signals, each read set's
figures from a fit on the others (leave one set out), against the shipped decision with its
threshold chosen the same way.

    python -m bench.decision_fit [--language cs] [--features question,coverage,confidence,fitted]
        [--sets all,heldout-quotes,...] [--shipped FIELD:VALUE,...]

Per question (as `bench.quotes_eval.score` computes them): `match` the best span's match,
`coverage`, `confidence` the best fused score of the passages coverage reads, `question` the
best question-view similarity, `known` the share of the question's words the corpus knows,
`fitted` the best similarity through the query adapter. A question naming something the corpus
never uses is vetoed either way. The threshold of each fold is chosen on its training sets by
`quotes_eval.calibrate`'s rule. Prints the pooled rates, then the weights of a fit on every
set, scaled so that coverage weighs as the shipped decision's, and the threshold the rule gives
them (docs/benchmarks.md, "The Czech decision from the question views and the adapter").
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

from bench import quotes_eval as qe
from bench.quotes_flips import setting
from worker.pipeline.quotes import WEIGHTS, Weights, retrieval_confidence

READ_SETS = ("all,heldout-quotes,heldout-fresh,heldout-fresh2,heldout-fresh3,heldout-fresh4,"
             "heldout-fresh5,heldout-fresh6,heldout-fresh7")
SIGNALS = {"match": "best", "coverage": "cov", "question": "views", "known": "known",
           "fitted": "fit"}


def threshold(scores: Sequence[float], answerable: Sequence[bool]) -> float:
    """quotes_eval.gap_threshold over scores marked answerable or not (the lowest score when
    none qualifies)."""
    best = qe.gap_threshold([s for s, a in zip(scores, answerable, strict=True) if a],
                            [s for s, a in zip(scores, answerable, strict=True) if not a])
    return best[0] if best is not None else min(scores, default=0.0)


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 3000,
        rate: float = 0.1) -> tuple[np.ndarray, float]:
    """Logistic regression by gradient descent on standardized columns."""
    w, b = np.zeros(x.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ w + b)))
        w -= rate * (x.T @ (p - y) / len(y) + l2 * w / len(y))
        b -= rate * float(np.mean(p - y))
    return w, b


def rows_of(sets: str, language: str, weights: Weights) -> list[dict]:
    """Each question's signals, the decision of `weights` and whether its first quote, when
    answered, is right."""
    out = []
    for name in sets.split(","):
        rows = qe.collect(name, 5, language=language)
        qe.score(rows, weights)
        for r in rows:
            q = r["q"]
            out.append({"set": name, "ans": bool(q.get("expected_source")),
                        "strange": bool(r["strange"]), "decision": r["decision"],
                        # The ranking's first span, answered or not: whether a decision
                        # answers is each arm's own (from `chosen` it was the shipped one's).
                        "first": bool(r["rank_hit"]),
                        "confidence": retrieval_confidence(r["passages"]),
                        "hedged": bool(r["hedged"]),
                        **{k: float(r[v]) for k, v in SIGNALS.items()}})
    return out


def main(argv: list[str] | None = None) -> None:
    """Print the leave-one-set-out rates of the fit and of the shipped decision."""
    ap = argparse.ArgumentParser(prog="python -m bench.decision_fit")
    ap.add_argument("--language", default="cs", choices=("en", "cs"))
    ap.add_argument("--features", default="question,coverage,confidence,fitted")
    ap.add_argument("--sets", default=READ_SETS)
    ap.add_argument("--shipped", default="", metavar="FIELD:VALUE,...",
                    help="the decision to compare with: the shipped Weights with these fields")
    args = ap.parse_args(argv)
    names = args.features.split(",")
    rows = rows_of(args.sets, args.language, setting("shipped=" + args.shipped)[1])
    plain = [r for r in rows if not r["strange"]]
    out: dict[str, list[tuple[bool, bool, dict]]] = {"shipped": [], "fit": []}
    for hold in dict.fromkeys(r["set"] for r in rows):
        train = [r for r in plain if r["set"] != hold]
        vetoed = [r["ans"] for r in rows if r["set"] != hold and r["strange"]]
        x = np.array([[r[n] for n in names] for r in train])
        mu, sd = x.mean(0), x.std(0) + 1e-9
        w, b = fit((x - mu) / sd, np.array([float(r["ans"]) for r in train]))
        t_fit = threshold(list((x - mu) / sd @ w + b) + [-1e9] * len(vetoed),
                          [r["ans"] for r in train] + vetoed)
        t_now = threshold([r["decision"] for r in train] + [-1e9] * len(vetoed),
                          [r["ans"] for r in train] + vetoed)
        for r in (r for r in rows if r["set"] == hold):
            s = float((np.array([r[n] for n in names]) - mu) / sd @ w + b)
            out["fit"].append((r["ans"], r["strange"] or s < t_fit, r))
            out["shipped"].append((r["ans"], r["strange"] or r["decision"] < t_now, r))
    for label, got in out.items():
        idk_ans = [i for a, i, _ in got if a]
        idk_una = [i for a, i, _ in got if not a]
        first = [(not i) and r["first"] for a, i, r in got if a]
        print(f"{args.language} {label:8} \"I don't know\" answerable {np.mean(idk_ans):.3f} "
              f"unanswerable {np.mean(idk_una):.3f}, first quote {np.mean(first):.3f} "
              f"({len(idk_ans)} / {len(idk_una)})")
    vetoed = [r["ans"] for r in rows if r["strange"]]
    t_now = threshold([r["decision"] for r in plain] + [-1e9] * len(vetoed),
                      [r["ans"] for r in plain] + vetoed)
    print(f"shipped decision's threshold on every set: {t_now:.3f}")
    x = np.array([[r[n] for n in names] for r in plain])
    mu, sd = x.mean(0), x.std(0) + 1e-9
    w, _ = fit((x - mu) / sd, np.array([float(r["ans"]) for r in plain]))
    raw = w / sd
    scale = (WEIGHTS.coverage_other if args.language == "cs" else WEIGHTS.coverage) / \
        raw[names.index("coverage")] if "coverage" in names else 1.0
    weights = raw * scale
    t = threshold(list(x @ weights) + [-1e9] * len(vetoed), [r["ans"] for r in plain] + vetoed)
    print("fit on every set:", ", ".join(f"{n} {v:.2f}" for n, v in zip(names, weights,
                                                                      strict=True)),
          f"threshold {t:.3f}")


if __name__ == "__main__":
    main()
