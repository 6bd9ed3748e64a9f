"""Time the few-shot translation of Czech questions (the model call a Czech question adds).

Every Czech question of the given files goes to the translator role (Gemma 3 270M under
llama.cpp by default) `--repeat` times, one at a time; prints p50/p95/max in ms, the machine's
load average before and after (the machine is shared; a loaded CPU slows the model), and
each question's translation.

Run (needs the translator server, e.g. under `make run`):
    .venv/bin/python -m bench.translate_time --questions ../shared/eval/dev.jsonl \
        bench/retrieval/heldout.jsonl
"""

from __future__ import annotations

import argparse
import os
import time

from bench.crosslingual_sweep import PROMPTS
from shared.config import get_settings
from shared.language import detect_language
from worker.evaluation import load_questions, percentile
from worker.pipeline.rewrite import translate_fewshot


def main() -> None:
    """Translate each Czech question and print the timing."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--questions", nargs="+", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--prompt", choices=sorted(PROMPTS), default="twins",
                    help="the few-shot prompt: twin examples (default) or the first (v1)")
    args = ap.parse_args()
    prompt = PROMPTS[args.prompt]
    role = get_settings().translator
    texts = [q.question for path in args.questions for q in load_questions(path)
             if detect_language(q.question) == "cs"]
    load_before = os.getloadavg()
    translate_fewshot(role, "Dobrý den", 120, prompt)  # warm-up: load the model pages
    times: list[float] = []
    out: dict[str, str] = {}
    for _ in range(args.repeat):
        for text in texts:
            t0 = time.perf_counter()
            out[text] = translate_fewshot(role, text, 120, prompt)
            times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    for text, english in out.items():
        print(f"{text}\n  -> {english}")
    print(f"model {role.model} at {role.base_url}: {len(texts)} Czech questions x "
          f"{args.repeat}, ms p50 {percentile(times, 0.5):.0f}  p95 "
          f"{percentile(times, 0.95):.0f}  max {times[-1]:.0f}")
    print(f"load average before {load_before[0]:.1f}, after {os.getloadavg()[0]:.1f} "
          f"({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
