"""Many retrieval variants on dev + held-out with one translation per Czech question.

The few-shot translation of each Czech question is made once per prompt and cached in
var/sweep/translations-PROMPT.json (greedy, so a rerun gives the same text); every variant
(RetrievalConfig fields as JSON) is then ranked by the same code as `eval retrieval` and
compared with the first variant by the paired bootstrap, per set and language.

`--translations FILE` ranks with fixed translations instead (JSON: Czech question -> English),
e.g. bench/retrieval/oracle-translations.json, written by a person: what retrieval would reach
with a translator that makes no mistakes (no translator needed then).

Run (needs the index and the translator, e.g. under `make run`):
    .venv/bin/python -m bench.crosslingual_sweep --prompt v1 \
        '{"old": {"czech_twins": false, "original_english": 0, "czech_keywords": 0},
          "twins": {"czech_twins": true, "original_english": 0, "czech_keywords": 0}}'
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from shared import corpus_store
from shared.config import get_settings
from worker import evaluation as ev
from worker.pipeline.retrieve import RetrievalConfig
from worker.pipeline.rewrite import FEWSHOT_PROMPT, FEWSHOT_PROMPT_V1, translate_fewshot

SETS = {"dev": "../shared/eval/dev.jsonl", "heldout": "bench/retrieval/heldout.jsonl"}
PROMPTS = {"v1": FEWSHOT_PROMPT_V1, "twins": FEWSHOT_PROMPT}


def main() -> None:
    """Translate once, rank every variant, print metrics and bootstrap differences."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("variants", help='JSON: {"name": {RetrievalConfig field: value}}')
    ap.add_argument("--prompt", choices=sorted(PROMPTS), default="twins")
    ap.add_argument("--translations", type=Path,
                    help="JSON file of fixed translations (Czech -> English) instead of a model")
    ap.add_argument("--out", default="var/sweep")
    args = ap.parse_args()
    s = get_settings()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cache_path = out / f"translations-{args.prompt}.json"
    cache: dict[str, Any] = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    label = args.prompt
    if args.translations is not None:
        fixed = json.loads(args.translations.read_text())
        cache = {cs: {"en": en, "ms": 0.0} for cs, en in fixed.items()}
        label = args.translations.stem

    def translate(text: str) -> tuple[str, str]:
        if text not in cache:
            if args.translations is not None:
                raise SystemExit(f"no fixed translation for {text!r} in {args.translations}")
            t0 = time.perf_counter()
            english = translate_fewshot(s.translator, text, 120, PROMPTS[args.prompt])
            cache[text] = {"en": english, "ms": round((time.perf_counter() - t0) * 1000, 1)}
            cache_path.write_text(json.dumps(cache, ensure_ascii=False, indent=1))
        return cache[text]["en"], text

    base: dict[str, Any] | None = None
    for name, fields in json.loads(args.variants).items():
        runs = {key: ev.run_eval(s, RetrievalConfig(**fields), ev.load_questions(path),
                                 lambda: corpus_store.connect(s.corpus_read_dsn, autocommit=True),
                                 translate) for key, path in SETS.items()}
        (out / f"{name}-{label}.json").write_text(json.dumps(runs, ensure_ascii=False))
        for key, r in runs.items():
            print(f"{name:>24} {key:<7} " + "  ".join(
                f"{lang} {m['hit@1']:.2f}/{m['hit@3']:.2f}/{m['hit@5']:.2f} MRR {m['mrr']:.2f} "
                f"(n={m['n']})" for lang, m in r["by_language"].items()))
            if base is not None:
                for lang, part in ev.compare(base[key], r)["by_language"].items():
                    h, m = part["hit@3"], part["mrr"]
                    print(f"{'':>32} {lang} d@3 {h['mean_diff']:+.3f} [{h['ci95'][0]:+.3f}, "
                          f"{h['ci95'][1]:+.3f}]  dMRR {m['mean_diff']:+.3f} "
                          f"[{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}]")
        base = base or runs


if __name__ == "__main__":
    main()
