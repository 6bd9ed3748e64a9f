"""The bundled model's prose answers to the first N dev questions (docs/benchmarks.md, "Prose
answers of the bundled model without the example sentence"): how many repeat the example sentence
the old question prompt held, and how many the prompt_echo check flags.

Run it once on this checkout and once on one from before the change (PYTHONPATH), against the
BeCoMe index and a SmolLM2 server (greedy decoding, 100 tokens):
    .venv/bin/python -m bench.prose_echo --n 8 [--base-url http://127.0.0.1:8081/v1]
"""

from __future__ import annotations

import argparse
import json
import time

import openai

from shared import corpus_store
from shared.config import get_settings
from shared.language import detect_language
from worker import evaluation as ev
from worker.pipeline.echo import check_echo
from worker.pipeline.prompt import build_messages
from worker.pipeline.retrieve import retrieve

EXAMPLE = "The search uses"


def main() -> None:
    """Ask, print each answer's start, then the two counts."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--base-url", default="")
    ap.add_argument("--questions", default="../shared/eval/dev.jsonl")
    args = ap.parse_args()
    s = get_settings()
    client = openai.OpenAI(base_url=args.base_url or s.answer.base_url, api_key="local-no-key",
                           timeout=600)
    rows = []
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        for q in ev.load_questions(args.questions)[: args.n]:
            lang = detect_language(q.question)
            r = retrieve(conn, s, q.question, original=q.question, language=lang)
            t0 = time.monotonic()
            resp = client.chat.completions.create(
                model=s.answer.model, messages=build_messages(q.question, (), r, lang),
                temperature=0, max_tokens=100)
            text = resp.choices[0].message.content or ""
            echo = check_echo(text, [p.text for p in r.passages])
            rows.append({"id": q.id, "answer": text, "example": EXAMPLE in text,
                         "echo": not echo.valid, "s": round(time.monotonic() - t0, 1)})
            print(f"{q.id} {rows[-1]['s']:>6.1f}s {json.dumps(text[:90], ensure_ascii=False)}")
    print(f"{len(rows)} answers: {sum(r['example'] for r in rows)} repeat the old example "
          f"sentence, {sum(r['echo'] for r in rows)} flagged by prompt_echo")


if __name__ == "__main__":
    main()
