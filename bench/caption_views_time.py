"""What the captions' views add to retrieval, per question and language
(docs/benchmarks.md, "Captions shipped with the corpus").

Ranks every dev and held-out question with the default settings and with `hybrid-v3` (no
views), alternately, on the serving index: query vectors are embedded once first and Czech
questions use the sweep's cached translations (var/sweep/translations-twins.json), so the
times are retrieval's own (pgvector queries, BM25, fusion), not the models'.

Run (needs an index built with the views, e.g. ASSISTANT_CORPUS_READ_DSN=... of one):
    .venv/bin/python -m bench.caption_views_time --repeat 3
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench.captions_sweep import cache_query_vectors
from bench.crosslingual_sweep import SETS
from shared import corpus_store
from shared.config import get_settings
from worker import evaluation as ev
from worker.evaluation import percentile
from worker.evaluation_presets import PRESETS
from worker.pipeline.retrieve import RetrievalConfig, rank


def main() -> None:
    """Print p50 / p95 of rank() per language, with and without the views."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--against", default="hybrid-v3",
                    help="the preset to compare with (hybrid-v4: the default without question "
                         "views)")
    ap.add_argument("--translations", default="var/sweep/translations-twins.json",
                    help="cached translations: the sweep's ({question: {en: ...}}) or "
                         "bench.quotes_eval's var/quotes-eval-translations.json "
                         "({question: translation})")
    args = ap.parse_args()
    s = get_settings()
    cache_query_vectors()
    cache = {q: t if isinstance(t, str) else t["en"] for q, t in
             json.loads(Path(args.translations).read_text()).items()}
    questions = [q for path in SETS.values() for q in ev.load_questions(path)
                 if q.expected_source]
    configs = {"default": RetrievalConfig(), args.against: PRESETS[args.against]}
    times: dict[tuple[str, str], list[float]] = {}
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        for warm in (True, False):
            for _ in range(1 if warm else args.repeat):
                for q in questions:
                    lang = ev.detect_language(q.question)
                    if lang == "cs" and q.question not in cache:
                        continue  # no cached translation: not timed (the model is not)
                    query = cache[q.question] if lang == "cs" else q.question
                    for name, config in configs.items():
                        t0 = time.perf_counter()
                        rank(conn, s, config, query, q.question, language=lang)
                        if not warm:
                            times.setdefault((name, lang), []).append(
                                (time.perf_counter() - t0) * 1000)
    for (name, lang), xs in sorted(times.items()):
        xs.sort()
        print(f"{name:>10} {lang} n={len(xs)} p50 {percentile(xs, 0.5):.1f} ms  "
              f"p95 {percentile(xs, 0.95):.1f} ms")


if __name__ == "__main__":
    main()
