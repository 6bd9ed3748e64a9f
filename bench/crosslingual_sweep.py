"""Many retrieval variants on dev + held-out with one translation per Czech question.

The few-shot translation of each Czech question is made once per prompt and cached in
var/sweep/translations-PROMPT.json (greedy, so a rerun gives the same text); every variant
(ResearchConfig fields as JSON, worker/evaluation_presets.py) is then ranked by the same code as `eval retrieval` and
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shared import corpus_store
from shared.config import get_settings
from worker import evaluation as ev
from worker.evaluation_presets import ResearchConfig
from worker.pipeline.rewrite import FEWSHOT_PROMPT, FEWSHOT_PROMPT_V1, translate_fewshot

SETS = {"dev": "../shared/eval/dev.jsonl", "heldout": "bench/retrieval/heldout.jsonl"}
PROMPTS = {"v1": FEWSHOT_PROMPT_V1, "twins": FEWSHOT_PROMPT}


def metrics_text(m: dict[str, Any]) -> str:
    """'hit@1/hit@3/hit@5 MRR m (n=k)' of one language's metrics."""
    return (f"{m['hit@1']:.2f}/{m['hit@3']:.2f}/{m['hit@5']:.2f} MRR {m['mrr']:.2f} "
            f"(n={m['n']})")


def diff_text(part: dict[str, Any]) -> str:
    """The paired-bootstrap hit@3 and MRR differences of one language, with 95% intervals."""
    h, m = part["hit@3"], part["mrr"]
    return (f"d@3 {h['mean_diff']:+.3f} [{h['ci95'][0]:+.3f}, {h['ci95'][1]:+.3f}]  "
            f"dMRR {m['mean_diff']:+.3f} [{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}]")


def cached_translator(path: Path, make: Callable[[str], dict[str, Any]]
                      ) -> Callable[[str], tuple[str, str]]:
    """run_eval's translate: each Czech question's entry ({"en": ..., ...}) made once by
    `make`, timed, and kept in the JSON file at `path` (greedy decoding: reruns agree)."""
    cache: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}

    def translate(text: str) -> tuple[str, str]:
        if text not in cache:
            t0 = time.perf_counter()
            entry = make(text)
            cache[text] = {**entry, "ms": round((time.perf_counter() - t0) * 1000, 1)}
            path.write_text(json.dumps(cache, ensure_ascii=False, indent=1))
        return cache[text]["en"], text

    return translate


def main() -> None:
    """Translate once, rank every variant, print metrics and bootstrap differences."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("variants", help='JSON: {"name": {ResearchConfig field: value}}')
    ap.add_argument("--prompt", choices=sorted(PROMPTS), default="twins")
    ap.add_argument("--translations", type=Path,
                    help="JSON file of fixed translations (Czech -> English) instead of a model")
    ap.add_argument("--out", default="var/sweep")
    args = ap.parse_args()
    s = get_settings()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    label = args.prompt
    translate: Callable[[str], tuple[str, str]]
    if args.translations is not None:
        fixed: dict[str, str] = json.loads(args.translations.read_text())
        label = args.translations.stem

        def from_file(text: str) -> tuple[str, str]:
            if text not in fixed:
                raise SystemExit(f"no fixed translation for {text!r} in {args.translations}")
            return fixed[text], text

        translate = from_file
    else:
        translate = cached_translator(
            out / f"translations-{args.prompt}.json",
            lambda text: {"en": translate_fewshot(s.translator, text, 120,
                                                  PROMPTS[args.prompt])})

    base: dict[str, Any] | None = None
    for name, fields in json.loads(args.variants).items():
        runs = {key: ev.run_eval(s, ResearchConfig(**fields), ev.load_questions(path),
                                 lambda: corpus_store.connect(s.corpus_read_dsn, autocommit=True),
                                 translate) for key, path in SETS.items()}
        (out / f"{name}-{label}.json").write_text(json.dumps(runs, ensure_ascii=False))
        for key, r in runs.items():
            print(f"{name:>24} {key:<7} " + "  ".join(
                f"{lang} {metrics_text(m)}" for lang, m in r["by_language"].items()))
            if base is not None:
                for lang, part in ev.compare(base[key], r)["by_language"].items():
                    print(f"{'':>32} {lang} {diff_text(part)}")
        base = base or runs


if __name__ == "__main__":
    main()
