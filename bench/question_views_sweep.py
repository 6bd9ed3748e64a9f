"""Question views: retrieval variants on an index built with them, with and
without the Czech translation step, each against the current default with it.

Every variant is a ResearchConfig (worker/evaluation_presets.py; fields as JSON) ranked by the chat turn's code (run_eval,
as `eval retrieval` does) on dev and the held-out set; "+tr" rows translate each Czech question
with the few-shot translator once (greedy, cached in var/sweep/translations-twins.json, shared
with bench.crosslingual_sweep), "+none" rows search it as asked. Each row is compared with the
first variant's "+tr" row (the current default, as a chat turn runs it) by the paired
bootstrap (10,000 resamples), per set and language.

Run (needs an index built with ASSISTANT_QUESTION_VIEWS=en,cs, the embeddings server and the
translator, e.g. under `make run`):
    .venv/bin/python -m bench.question_views_sweep \
        '{"default": {}, "questions": {"question_cs": 1, "question_en": 1}}'
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.captions_sweep import diff_line
from bench.crosslingual_sweep import SETS, cached_translator, metrics_text
from shared import corpus_store
from shared.config import get_settings
from worker import evaluation as ev
from worker.evaluation_presets import ResearchConfig
from worker.pipeline.rewrite import FEWSHOT_PROMPT, translate_fewshot


def main() -> None:
    """Rank every variant with and without translation; print metrics and differences."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("variants", help='JSON: {"name": {ResearchConfig field: value}}')
    ap.add_argument("--translation", nargs="+", default=["tr", "none"], choices=["tr", "none"])
    ap.add_argument("--out", default="var/sweep")
    ap.add_argument("--wait", type=float, default=0.0,
                    help="seconds to wait for another process to cache a translation")
    args = ap.parse_args()
    s = get_settings()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "translations-twins.json"
    own = cached_translator(path, lambda text: {
        "en": translate_fewshot(s.translator, text, 600, FEWSHOT_PROMPT)})

    def translate(text: str) -> tuple[str, str]:
        # Another process may be filling the same cache (--wait seconds): take its entry.
        deadline = time.monotonic() + args.wait
        while time.monotonic() < deadline:
            try:
                cache = json.loads(path.read_text()) if path.exists() else {}
            except ValueError:  # caught mid-write
                cache = {}
            if text in cache:
                return cache[text]["en"], text
            time.sleep(5)
        return own(text)
    how: dict[str, Callable[[str], tuple[str, str]] | None] = {"tr": translate, "none": None}
    variants: dict[str, dict[str, Any]] = json.loads(args.variants)
    base: dict[str, Any] | None = None
    for name, fields in variants.items():
        for t in args.translation:
            runs = {key: ev.run_eval(s, ResearchConfig(**fields), ev.load_questions(path),
                                     lambda: corpus_store.connect(s.corpus_read_dsn,
                                                                  autocommit=True), how[t])
                    for key, path in SETS.items()}
            (out / f"qviews-{name}+{t}.json").write_text(json.dumps(runs, ensure_ascii=False))
            for key, r in runs.items():
                print(f"{name + '+' + t:>24} {key:<7} " + "  ".join(
                    f"{lang} {metrics_text(m)}" for lang, m in r["by_language"].items()),
                    flush=True)
                if base is not None:
                    for lang, part in ev.compare(base[key], r)["by_language"].items():
                        print(f"{'':>26} {lang} {diff_line(part)}", flush=True)
            base = base or runs


if __name__ == "__main__":
    main()
