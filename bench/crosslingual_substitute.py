"""The FreeDict lead's second form: Czech words replaced by English before Gemma translates.

Each Czech content word with a FreeDict sense that occurs in the index is replaced by its
first corpus-ordered sense (worker/pipeline/bilingual.py), and the mixed text is translated
with the default few-shot prompt; the default retrieval (or the ResearchConfig fields given
as JSON) then ranks with that translation, compared with the sweep's `default` run by the
paired bootstrap. Translations are cached in var/sweep/translations-subst.json.

Run (needs the index, the translator and a `default` sweep run in var/sweep):
    .venv/bin/python -m bench.crosslingual_sweep --prompt twins '{"default": {}}'
    .venv/bin/python -m bench.crosslingual_substitute '{}'
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from bench.crosslingual_sweep import SETS, cached_translator, diff_text, metrics_text
from shared import corpus_store
from shared.config import get_settings
from worker import evaluation as ev
from worker.evaluation_presets import ResearchConfig
from worker.pipeline import bilingual
from worker.pipeline.bm25 import lexical_index
from worker.pipeline.lexicon import CS_STOP, WORD, cs_lemma
from worker.pipeline.rewrite import FEWSHOT_PROMPT, translate_fewshot


def substitute(text: str, table: bilingual.Bilingual, frequencies: dict[str, int]) -> str:
    """The text with each Czech content word the dictionary knows replaced by English."""

    def one(m: re.Match[str]) -> str:
        word = m.group(0).lower()
        if word in CS_STOP or cs_lemma(word) in CS_STOP:
            return m.group(0)
        senses = [w for w in table.english(word, 1, frequencies) if w != word]
        return " ".join(senses) if senses else m.group(0)

    return WORD.sub(one, text)


def main() -> None:
    """Translate the substituted questions once, rank, print metrics and bootstrap diffs."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("config", nargs="?", default="{}", help="ResearchConfig fields as JSON")
    ap.add_argument("--out", default="var/sweep")
    args = ap.parse_args()
    s = get_settings()
    out = Path(args.out)
    table = bilingual.load()
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        frequencies = lexical_index(
            conn, corpus_store.current_index(conn).version).postings.frequencies()

    def make(text: str) -> dict[str, str]:
        mixed = substitute(text, table, frequencies)
        return {"src": mixed, "en": translate_fewshot(s.translator, mixed, 120, FEWSHOT_PROMPT)}

    translate = cached_translator(out / "translations-subst.json", make)
    base = json.loads((out / "default-twins.json").read_text())
    for key, path in SETS.items():
        run = ev.run_eval(s, ResearchConfig(**json.loads(args.config)),
                          ev.load_questions(path),
                          lambda: corpus_store.connect(s.corpus_read_dsn, autocommit=True),
                          translate)
        for lang, m in run["by_language"].items():
            print(f"{key:<7} {lang} {metrics_text(m)}")
        for lang, part in ev.compare(base[key], run)["by_language"].items():
            print(f"{'':>8}{lang} {diff_text(part)}")


if __name__ == "__main__":
    main()
