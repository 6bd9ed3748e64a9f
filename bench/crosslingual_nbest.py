"""Two translations per Czech question (both few-shot prompts), fused: does n-best help?

Each Czech question is ranked with the default RetrievalConfig once per translation (the
translations cached by bench.crosslingual_sweep, `--prompt twins` and `--prompt v1`), and the
two rankings are fused by RRF; compared with the default (one translation, sweep variant
`new`) by the paired bootstrap. English questions are ranked once, as always.

Run after the sweep has cached both prompts' translations and its `new` variant:
    .venv/bin/python -m bench.crosslingual_sweep --prompt twins '{"new": {}}'
    .venv/bin/python -m bench.crosslingual_sweep --prompt v1 '{"new": {}}'
    .venv/bin/python -m bench.crosslingual_nbest
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.crosslingual_sweep import SETS, diff_text, metrics_text
from shared import corpus_store
from shared.config import get_settings
from shared.language import detect_language
from worker import evaluation as ev
from worker.pipeline.bm25 import lexical_index
from worker.pipeline.fusion import fuse
from worker.pipeline.retrieve import RetrievalConfig, rank


def main() -> None:
    """Rank with both translations, fuse, print metrics and the bootstrap against one."""
    s = get_settings()
    out = Path("var/sweep")
    both = [json.loads((out / f"translations-{p}.json").read_text()) for p in ("twins", "v1")]
    base = json.loads((out / "new-twins.json").read_text())
    config = RetrievalConfig(candidates=2 * ev.MRR_DEPTH)
    for key, path in SETS.items():
        rows: list[dict[str, Any]] = []
        with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
            lexical = lexical_index(conn, corpus_store.current_index(conn).version)
            for q in ev.load_questions(path):
                if not q.expected_source:
                    continue
                lang = detect_language(q.question)
                texts = [t[q.question]["en"] for t in both] if lang == "cs" else [q.question]
                ranked = fuse([rank(conn, s, config, text, q.question, limit=20,
                                    language=lang)[1] for text in texts])
                passages = [lexical.by_id[pid] for pid, _ in ranked[: ev.MRR_DEPTH]]
                rows.append({"id": q.id, "language": q.language,
                             "rank": ev.first_hit(passages, q)})
        for lang in ("cs", "en"):
            m = ev.metrics([r["rank"] for r in rows if r["language"] == lang])
            print(f"{key:<7} {lang} {metrics_text(m)}")
        c = ev.compare(base[key], {"questions": rows})["by_language"]["cs"]
        print(f"{'':>10} cs vs one translation: {diff_text(c)}")


if __name__ == "__main__":
    main()
