"""Retrieval with two few-shot translators, paired question by question.

Each Czech question of the sets is translated by translator A (the settings' translator role)
and by translator B (`--b-url`, the same model name), each translation made once and cached in
`--out`; both are ranked by what a chat turn runs (`eval retrieval`'s `chat` settings) and B is
compared with A by the paired bootstrap, per set. Also prints each translator's time per
question (one at a time, as a turn calls it).

Run (needs the index and both translator servers, e.g. `make run` and a second llama.cpp server):
    .venv/bin/python -m bench.translator_compare --b-url http://127.0.0.1:8093/v1 \
        --sets ../shared/eval/dev.jsonl bench/retrieval/heldout.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from bench.crosslingual_sweep import cached_translator, diff_text, metrics_text
from shared import corpus_store
from shared.config import ModelRole, get_settings
from worker import evaluation as ev
from worker.pipeline.rewrite import translate_fewshot


def main() -> None:
    """Translate with A and B, rank both, print metrics, differences and times."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--b-url", required=True, help="translator B's OpenAI-compatible base URL")
    ap.add_argument("--sets", nargs="+", required=True, help="question files (JSONL)")
    ap.add_argument("--out", default="var/translator-compare")
    args = ap.parse_args()
    s = get_settings()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    roles = {"A": s.translator, "B": dataclasses.replace(s.translator, base_url=args.b_url)}
    config, _ = ev.load_config(ev.CHAT, s)
    print(f"load average before {os.getloadavg()[0]:.1f}")
    for path in args.sets:
        questions = ev.load_questions(path)
        runs = {}
        for name, role in roles.items():
            def make(text: str, role: ModelRole = role) -> dict[str, Any]:
                return {"en": translate_fewshot(role, text, 120)}

            translate = cached_translator(out / f"translations-{name}.json", make)
            runs[name] = ev.run_eval(s, config, questions, lambda: corpus_store.connect(
                s.corpus_read_dsn, autocommit=True), translate)
        cs = {name: r["by_language"].get("cs") for name, r in runs.items()}
        if not cs["A"]:
            continue
        print(f"{Path(path).name}: A cs {metrics_text(cs['A'])}\n"
              f"{'':>{len(Path(path).name)}}  B cs {metrics_text(cs['B'])}\n"
              f"{'':>{len(Path(path).name)}}  B-A "
              + diff_text(ev.compare(runs["A"], runs["B"])["by_language"]["cs"]))
    for name in roles:
        cache = json.loads((out / f"translations-{name}.json").read_text())
        ms = sorted(v["ms"] for v in cache.values())
        print(f"translator {name}: {len(ms)} Czech questions, ms p50 "
              f"{ev.percentile(ms, .5):.0f} p95 {ev.percentile(ms, .95):.0f}")
    print(f"load average after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
