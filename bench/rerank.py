"""The optional rerank (docs/spec/behaviour.md B-15) against the search's own order, with the
environment's translation role (as `make run` serves it: the bundled SmolLM2-135M):
hit@1/3/5 of the expected section, how many questions lose every passage, and the time a
rerank adds.

    python -m bench.rerank [SETS]   # comma-separated bench.quotes_eval sets; default all

The search runs as a chat turn's does (the Czech translation included) with the rerank's
CANDIDATES; the expected section is matched as bench.quotes_eval matches it.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench import quotes_eval as qe
from shared.config import settings_from_env
from shared.errors import ModelError
from worker.evaluation import paired_bootstrap
from worker.pipeline.rerank import CANDIDATES, KEEP, rerank


def _rank(passages, q) -> int | None:
    return next((i for i, p in enumerate(passages, 1) if qe._hit(p, q)), None)


def main(argv: list[str] | None = None) -> None:
    """Print, per language, the search's and the rerank's hit@1/3/5, failures and times."""
    ap = argparse.ArgumentParser(prog="python -m bench.rerank")
    ap.add_argument("sets", nargs="?", default="all")
    args = ap.parse_args(argv)
    s = settings_from_env()
    by: dict[str, dict[str, list]] = {}
    for name in args.sets.split(","):
        for r in qe.collect(name, CANDIDATES):
            q = r["q"]
            if not q.get("expected_source"):
                continue
            d = by.setdefault(q["language"], {"base": [], "rerank": [], "ms": [], "failed": [],
                                             "empty": []})
            t0 = time.perf_counter()
            try:
                kept = rerank(s.translation, q["question"], r["passages"], timeout_s=120)
                failed = False
            except ModelError:
                kept, failed = tuple(r["passages"][:KEEP]), True
            d["ms"].append((time.perf_counter() - t0) * 1000)
            d["failed"].append(failed)
            d["empty"].append(not kept)
            d["base"].append(_rank(r["passages"][:KEEP], q))
            d["rerank"].append(_rank(kept, q))
    for lang, d in sorted(by.items()):
        n = len(d["base"])
        print(f"{lang}: {n} answerable questions, model {s.translation.model}")
        for k in (1, 3, 5):
            a = [float(x is not None and x <= k) for x in d["base"]]
            b = [float(x is not None and x <= k) for x in d["rerank"]]
            boot = paired_bootstrap(a, b)
            lo, hi = boot["ci95"]
            print(f"  hit@{k}: search {statistics.mean(a):.3f}  rerank {statistics.mean(b):.3f}"
                  f"  ({boot['mean_diff']:+.3f} [{lo:+.3f}, {hi:+.3f}])")
        ms = sorted(d["ms"])
        print(f"  reply unreadable (search order kept): {sum(d['failed'])}; nothing kept: "
              f"{sum(d['empty'])}; time p50 {ms[len(ms) // 2]:.0f} ms, "
              f"p95 {ms[min(len(ms) - 1, int(len(ms) * 0.95))]:.0f} ms")


if __name__ == "__main__":
    main()
