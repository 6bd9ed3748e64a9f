"""Where a weak match begins (docs/benchmarks.md, "Weak matches"): fused scores of the passages a
turn gives the model, on questions the documentation answers and on questions it cannot.

Each question is searched as a turn searches it (a Czech one through the offline few-shot
translator when the settings use it, translations cached as in bench.crosslingual_sweep;
with ASSISTANT_TRANSLATE_QUERIES=off in its own words, as a turn searches it when the
translator fails). Scores are shares of the best possible fused sum, so they compare across
the number of rankings a translation adds. For
every threshold of a grid it prints, per language: the share of the expected passages in the
top_k labelled weak (support hidden: should be near 0), the share of answerable questions
whose every passage is weak, and the share of unanswerable questions whose every passage is
weak (off-topic recognised: should be high). The thresholds in worker/pipeline/weak.py are,
per language, the highest that label at most --max-hits-weak of the expected passages weak on
dev + held-out.

Run (needs the BeCoMe index, the embeddings server and the translator, e.g. under `make run`):
    .venv/bin/python -m bench.weak_matches [--out var/weak] [--cached-only]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.crosslingual_sweep import cached_translator
from shared import corpus_store
from shared.config import get_settings
from shared.language import detect_language
from worker import evaluation as ev
from worker.pipeline.retrieve import retrieve
from worker.pipeline.rewrite import translate_fewshot
from worker.pipeline.weak import WEAK_BELOW

SETS = {"dev": "../shared/eval/dev.jsonl", "heldout": "bench/retrieval/heldout.jsonl",
        "unanswerable": "bench/retrieval/heldout-unanswerable.jsonl"}
GRID = [round(0.30 + 0.025 * i, 3) for i in range(21)]


def collect(out: Path, cached_only: bool = False) -> list[dict[str, Any]]:
    """Per question: language, answerable, and (score, expected?) of each passage given
    (`cached_only`: Czech questions without a cached translation are left out)."""
    s = get_settings()
    cache = out / "translations.json"
    known = set(json.loads(cache.read_text())) if cache.exists() else set()
    translate = cached_translator(cache,
                                  lambda text: {"en": translate_fewshot(s.translator, text, 120)})
    rows = []
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        for name, path in SETS.items():
            for q in ev.load_questions(path):
                lang = detect_language(q.question)
                if cached_only and lang == "cs" and s.fewshot_translates \
                        and q.question not in known:
                    continue
                search = translate(q.question)[0] if lang == "cs" and s.fewshot_translates \
                    else q.question
                got = retrieve(conn, s, search, original=q.question, language=lang)
                rows.append({"set": name, "id": q.id, "language": q.language,
                             "answerable": bool(q.expected_source),
                             "passages": [{"score": p.score, "expected": any(
                                 ev.location_matches(p, src, loc) for src, loc in q.targets)}
                                 for p in got.passages]})
    return rows


def table(rows: list[dict[str, Any]], t: float) -> dict[str, dict[str, float | int]]:
    """The three shares at threshold t, per language."""
    out = {}
    for lang in ("en", "cs"):
        part = [r for r in rows if lang in ("all", r["language"])]
        hits = [p for r in part if r["answerable"] for p in r["passages"] if p["expected"]]
        ans = [r for r in part if r["answerable"]]
        una = [r for r in part if not r["answerable"]]

        def all_weak(r: dict[str, Any]) -> bool:
            return all(p["score"] < t for p in r["passages"])

        out[lang] = {"expected_weak": round(sum(p["score"] < t for p in hits) / len(hits), 3)
                     if hits else 0.0, "expected_n": len(hits),
                     "answerable_all_weak": round(sum(map(all_weak, ans)) / len(ans), 3)
                     if ans else 0.0, "answerable_n": len(ans),
                     "unanswerable_all_weak": round(sum(map(all_weak, una)) / len(una), 3)
                     if una else 0.0, "unanswerable_n": len(una)}
    return out


def main() -> None:
    """Collect the scores once (cached in --out), then print the grid."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="var/weak")
    ap.add_argument("--max-hits-weak", type=float, default=0.05)
    ap.add_argument("--cached-only", action="store_true",
                    help="leave out Czech questions whose translation is not cached yet")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = collect(out, args.cached_only)
    (out / "scores.json").write_text(json.dumps(rows, indent=1))
    print("threshold  lang  expected-weak  answerable-all-weak  unanswerable-all-weak")
    best: dict[str, float] = {}
    for t in GRID:
        tab = table(rows, t)
        for lang, m in tab.items():
            print(f"{t:>9.3f}  {lang:<4}  {m['expected_weak']:>6.3f} (n={m['expected_n']:>3})"
                  f"  {m['answerable_all_weak']:>6.3f} (n={m['answerable_n']:>3})"
                  f"  {m['unanswerable_all_weak']:>6.3f} (n={m['unanswerable_n']:>3})")
            if m["expected_weak"] <= args.max_hits_weak:
                best[lang] = t
    print(f"highest threshold with at most {args.max_hits_weak:.0%} of the expected passages "
          f"weak: {best}; worker/pipeline/weak.py uses {WEAK_BELOW}")
    for lang, t in WEAK_BELOW.items():
        print(f"at {lang} {t}: {json.dumps(table(rows, t)[lang])}")


if __name__ == "__main__":
    main()
