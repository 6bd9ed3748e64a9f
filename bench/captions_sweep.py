"""Captions off / English / English + Czech, by paired bootstrap (docs/benchmarks.md, "Captions
shipped with the corpus").

One index per caption setting (each built into a database of its own with
ASSISTANT_CAPTION_LANGUAGES=off / en / en,cs and `corpus build --dsn`), every retrieval mode
(dense, bm25, hybrid: the default's settings with that mode), each with and without the
few-shot translation of Czech questions (made once per question and cached, as in
bench.crosslingual_sweep). Every row is compared with the first caption setting of the same
mode and translation, and the translation with no translation on the same index, per set
(dev, held-out) and language: hit@3, hit@5 and MRR differences with 95% intervals.

Run (needs the indexes and, for the translation, the translator):
    .venv/bin/python -m bench.captions_sweep \
        '{"off": "postgresql://corpus_reader@127.0.0.1:5433/corpus_cap_off",
          "en": "postgresql://corpus_reader@127.0.0.1:5433/corpus_cap_en",
          "both": "postgresql://corpus_reader@127.0.0.1:5433/corpus_cap_both"}'
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from bench.crosslingual_sweep import PROMPTS, SETS, cached_translator, metrics_text
from shared import corpus_store
from shared.config import get_settings
from worker import evaluation as ev
from worker.pipeline import retrieve
from worker.pipeline.retrieve import RetrievalConfig
from worker.pipeline.rewrite import translate_fewshot

MODES = ("hybrid", "dense", "bm25")


def cache_query_vectors() -> None:
    """Embed each query text once for the whole sweep (greedy model, same vector every time):
    the rows differ in the index and the settings, never in a question's vector."""
    embed = retrieve._vectors
    seen: dict[tuple[str, ...], list[list[float]]] = {}

    def vectors(settings: Any, texts: list[str]) -> list[list[float]]:
        key = (settings.embeddings.model, *texts)
        if key not in seen:
            seen[key] = embed(settings, texts)
        return seen[key]

    retrieve._vectors = vectors  # type: ignore[assignment]


def diff_line(part: dict[str, Any]) -> str:
    """hit@3, hit@5 and MRR differences of one language with their 95% intervals."""
    return "  ".join(
        f"d{m.replace('hit', '')} {part[m]['mean_diff']:+.3f} [{part[m]['ci95'][0]:+.3f}, "
        f"{part[m]['ci95'][1]:+.3f}]" for m in ("hit@3", "hit@5", "mrr"))


def main() -> None:
    """Rank every (captions, mode, translation) row; print metrics and bootstrap differences."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("indexes", help='JSON: {"caption setting": "read DSN of its index"}')
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--translation", nargs="+", default=["none", "fewshot"],
                    choices=["fewshot", "none"])
    ap.add_argument("--out", default="var/sweep")
    args = ap.parse_args()
    s = get_settings()
    cache_query_vectors()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    translate = cached_translator(
        out / "translations-twins.json",
        lambda text: {"en": translate_fewshot(s.translator, text, 120, PROMPTS["twins"])})
    indexes: dict[str, str] = json.loads(args.indexes)
    runs: dict[tuple[str, str, str], dict[str, Any]] = {}
    for mode in args.modes:
        for how in args.translation:
            for caps, dsn in indexes.items():
                settings = dataclasses.replace(s, corpus_read_dsn=dsn)
                config = RetrievalConfig(mode=mode)
                runs[(caps, mode, how)] = r = {
                    key: ev.run_eval(settings, config, ev.load_questions(path),
                                     lambda d=dsn: corpus_store.connect(d, autocommit=True),
                                     translate if how == "fewshot" else None)
                    for key, path in SETS.items()}
                name = f"{caps}-{mode}-{how}"
                (out / f"captions-{name}.json").write_text(json.dumps(r, ensure_ascii=False))
                for key, rep in r.items():
                    print(f"{name:>22} {key:<7} " + "  ".join(
                        f"{lang} {metrics_text(m)}" for lang, m in rep["by_language"].items()),
                        flush=True)
                _compare(runs, (next(iter(indexes)), mode, how), (caps, mode, how))
                _compare(runs, (caps, mode, "none"), (caps, mode, how))


def _compare(runs: dict[tuple[str, str, str], dict[str, Any]], base: tuple[str, str, str],
             row: tuple[str, str, str]) -> None:
    """Print row - base per set and language, when both were run and differ."""
    if base == row or base not in runs or row not in runs:
        return
    for key in runs[row]:
        for lang, part in ev.compare(runs[base][key], runs[row][key])["by_language"].items():
            print(f"{'':>10} vs {'-'.join(base):<20} {key:<7} {lang} {diff_line(part)}",
                  flush=True)


if __name__ == "__main__":
    main()
