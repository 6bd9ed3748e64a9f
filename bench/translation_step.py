"""Does the few-shot translation help a Czech question, and can one tell when? Per Czech
question of the sets: the e5 cosine of its own vector and its translation's, and the expected
passage's place with and without the translation (`gate`); or the quotes form's figures when
retrieval ranks by the question's own words while the spans and the decision still read the
translation (`own`), or when the translations come from another few-shot prompt file
(`prompt FILE`, cached apart from the turn's; bench/translate_fewshot_everyday.txt adds six
everyday questions to the turn's examples):

    python -m bench.translation_step gate [SETS]
    python -m bench.translation_step own [SETS]
    python -m bench.translation_step prompt bench/translate_fewshot_everyday.txt [SETS]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from bench import quotes_eval as qe
from bench.hedge_band import SETS
from shared import corpus_store
from shared.config import settings_from_env
from worker.pipeline.quotes import WEIGHTS
from worker.pipeline.retrieve import RetrievalConfig, rank
from worker.pipeline.rewrite import complete_line
from worker.pipeline.vectors import cached_vectors

GATES = (0.80, 0.84, 0.86, 0.88, 0.90)


def _rr(place: int | None) -> float:
    return 1 / place if place else 0.0


def gate(sets: str) -> None:
    """MRR with and without the translation, by the cosine's quintile and under each gate."""
    s = settings_from_env()
    config = dataclasses.replace(RetrievalConfig.from_settings(s), top_k=5)
    rows: list[dict[str, Any]] = []
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        for name in sets.split(","):
            for q in qe.questions(name):
                if q["language"] != "cs" or not q.get("expected_source"):
                    continue
                own = q["question"]
                t = qe._translated(s, own)
                a, b = cached_vectors(s, [own, t], "query", conn)
                row: dict[str, Any] = {"cos": float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))}
                for label, query in (("with", t), ("without", own)):
                    _v, ranked, lex = rank(conn, s, config, query, own, language="cs")
                    ps = [lex.by_id[pid] for pid, _ in ranked if pid in lex.by_id]
                    row[label] = next((i for i, p in enumerate(ps, 1) if qe._hit(p, q)), None)
                rows.append(row)
    print(f"{len(rows)} answerable Czech questions: MRR with the translation "
          f"{statistics.mean(_rr(r['with']) for r in rows):.3f}, without "
          f"{statistics.mean(_rr(r['without']) for r in rows):.3f}")
    ordered = sorted(rows, key=lambda r: r["cos"])
    for i in range(5):
        part = ordered[i * len(ordered) // 5:(i + 1) * len(ordered) // 5]
        if part:
            print(f"  cosine {part[0]['cos']:.3f}-{part[-1]['cos']:.3f}: MRR with "
                  f"{statistics.mean(_rr(r['with']) for r in part):.3f}, without "
                  f"{statistics.mean(_rr(r['without']) for r in part):.3f}")
    for tau in GATES:
        kept = [r["with"] if r["cos"] >= tau else r["without"] for r in rows]
        print(f"  translation only at cosine >= {tau:.2f}: MRR "
              f"{statistics.mean(_rr(x) for x in kept):.3f} "
              f"({sum(r['cos'] < tau for r in rows)} searched as asked)")


def figures(sets: str) -> None:
    """The quotes form's pooled figures per language (quotes_eval.score over every set's rows)."""
    rows = [r for name in sets.split(",") for r in qe.collect(name, 5)]
    for lang, got in sorted(qe.score(rows, WEIGHTS).items()):
        print(lang, {k: v for k, v in got.items() if v})


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.translation_step")
    ap.add_argument("what", choices=("gate", "own", "prompt"))
    ap.add_argument("args", nargs="*")
    args = ap.parse_args(argv)
    if args.what == "gate":
        gate(args.args[0] if args.args else SETS)
        return
    if args.what == "own":
        ranking = qe.rank

        def own_words(conn, s, config, search, original, language=None):  # type: ignore[no-untyped-def]
            return ranking(conn, s, config, original, original, language=language)

        qe.rank = own_words
        figures(args.args[0] if args.args else SETS)
        return
    prompt_file = args.args[0]
    qe.TRANSLATIONS = Path(f"var/quotes-eval-translations-{Path(prompt_file).stem}.json")
    head = Path(prompt_file).read_text(encoding="utf-8").rstrip()
    # As rewrite.translate_fewshot does with the turn's prompt file.
    qe.translate_fewshot = lambda role, text: complete_line(
        role, head.format(text=" ".join(text.split())), 30) or text
    figures(args.args[1] if len(args.args) > 1 else SETS)


if __name__ == "__main__":
    main()
