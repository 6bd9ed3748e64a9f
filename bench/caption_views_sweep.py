"""Captions as views of their own, a glossary for the translator, and fusion weights
(docs/benchmarks.md, "Second round: captions as views of their own").

A prototype on the serving index (English captions in the passages' text): for a Czech
question, extra rankings over the passages' captions alone, fused with the chat turn's:
  cs_dense  the question's own wording by meaning over the Czech captions' vectors,
  cs_bm25   its lemmas (diacritics folded) by BM25 over the Czech captions,
  en_dense  the translation by meaning over the English captions' vectors,
  en_bm25   the translation by BM25 over the English captions,
each with its RRF weight (0 = off). The caption vectors are computed once with the running
embeddings server and kept in var/caption-views/ (not in the repository). `base` reweights the
chat turn's own rankings of a translated Czech question, in their order: dense translation
(English pages), dense original, dense original (English pages), BM25 translation (English
pages), BM25 original, Czech keywords; `english_dense` is the weight of an English
question's wording by meaning over the English captions. `prompt` picks the translation: "twins" (the chat
turn's), or "glossary" (the same prompt with the app's own short label pairs whose Czech side
the question contains, as examples just before it).

Run (needs the serving index, the embeddings server and the translator, e.g. `make run`):
    .venv/bin/python -m bench.caption_views_sweep \
        '{"default": {}, "cs": {"views": {"cs_dense": 1, "cs_bm25": 1}}}'
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
from rank_bm25 import BM25Okapi

from bench.captions_sweep import cache_query_vectors, diff_line
from bench.crosslingual_sweep import SETS, cached_translator, metrics_text
from bench.glossary import build_glossary, translate_with_glossary
from corpus_jobs.build import load_pieces
from corpus_jobs.caption_file import load_caption_file
from corpus_jobs.captions import caption_key
from corpus_jobs.manifest import load_manifest
from shared import corpus_store
from shared.config import get_settings
from shared.models import embed
from worker import evaluation as ev
from worker.evaluation_presets import ResearchConfig
from worker.pipeline import retrieve
from worker.pipeline.bm25 import Postings, tokenize
from worker.pipeline.lexicon import aligned_pairs
from worker.pipeline.rewrite import translate_fewshot

VAR = Path("var/caption-views")
MANIFEST = "corpus_jobs/manifests/become.toml"
VIEWS = ("cs_dense", "cs_bm25", "en_dense", "en_bm25")


def caption_table() -> dict[str, dict[str, str]]:
    """Passage id -> {"en": caption, "cs": caption}, as the build computes ids and keys."""
    manifest = load_manifest(Path(MANIFEST))
    pieces, _, _ = load_pieces(manifest)
    assert manifest.captions is not None
    entries = load_caption_file(manifest.captions).entries
    out: dict[str, dict[str, str]] = {}
    for piece in pieces:
        pid = hashlib.sha1(
            f"{piece.source}\0{piece.section}\0{piece.text}".encode()).hexdigest()[:20]
        entry = entries.get(caption_key(piece))
        if entry is not None:
            out[pid] = entry.captions
    return out


class Views:
    """Caption rankings over one caption language: dense (cached vectors) and BM25."""

    def __init__(self, settings: Any, table: dict[str, dict[str, str]], lang: str) -> None:
        self.ids = [pid for pid, caps in sorted(table.items()) if caps.get(lang)]
        texts = [table[pid][lang] for pid in self.ids]
        digest = hashlib.sha1(("\n".join(texts) + settings.embeddings.model).encode())
        path = VAR / f"vectors-{lang}-{digest.hexdigest()[:12]}.npy"
        if path.exists():
            self.vectors = np.load(path)
        else:
            VAR.mkdir(parents=True, exist_ok=True)
            vecs = embed(settings.embeddings, texts, "passage", settings.embedding_prefix_mode,
                         timeout_s=600)
            self.vectors = np.asarray(vecs, dtype=np.float32)
            np.save(path, self.vectors)
        self.vectors /= np.linalg.norm(self.vectors, axis=1, keepdims=True)
        czech = lang == "cs"
        self.czech = czech
        docs = [tokenize(t, folded=czech, lemmas=czech, split=True) or [""] for t in texts]
        self.postings = Postings(BM25Okapi(docs))

    def dense(self, vector: list[float], k: int) -> list[tuple[str, float]]:
        """Best k passages by the cosine of the query vector and their caption's."""
        v = np.asarray(vector, dtype=np.float32)
        sims = self.vectors @ (v / np.linalg.norm(v))
        best = np.argsort(-sims)[:k]
        return [(self.ids[i], float(sims[i])) for i in best]

    def words(self, text: str, k: int) -> list[tuple[str, float]]:
        """Best k passages by BM25 of the query's tokens over the captions."""
        tokens = tokenize(text, folded=self.czech, lemmas=self.czech, split=True)
        scores = self.postings.scores(tokens)
        best = np.argsort(-scores)[:k]
        return [(self.ids[i], float(scores[i])) for i in best if scores[i] > 0]


def install(views: dict[str, Views], plan: dict[str, Any]) -> None:
    """Wrap retrieve._rankings: the plan's caption views and base weights for a Czech question."""
    original = retrieve._rankings

    def rankings(search: Any, query: str, own: str, expansion: str, czech: bool
                 ) -> tuple[list[Any], list[float]]:
        out, weights = original(search, query, own, expansion, czech)
        if not czech:
            # An English question by meaning over the English captions (`english_dense`).
            if plan.get("english_dense"):
                k = int(plan.get("view_candidates", search.config.candidates))
                out.append(views["en"].dense(search.vectors([query])[0], k))
                weights.append(float(plan["english_dense"]))
            return out, weights
        base = plan.get("base")
        if base is not None and len(base) == len(weights):
            weights = [w * b for w, b in zip(weights, base, strict=True)]
        w = plan.get("views", {})
        k = int(plan.get("view_candidates", search.config.candidates))
        translated = own != query
        if w.get("cs_dense"):
            out.append(views["cs"].dense(search.vectors([own])[0], k))
            weights.append(float(w["cs_dense"]))
        if w.get("cs_bm25"):
            out.append(views["cs"].words(own, k))
            weights.append(float(w["cs_bm25"]))
        if translated and w.get("en_dense"):
            out.append(views["en"].dense(search.vectors([query])[0], k))
            weights.append(float(w["en_dense"]))
        if translated and w.get("en_bm25"):
            out.append(views["en"].words(query, k))
            weights.append(float(w["en_bm25"]))
        return out, weights

    retrieve._rankings = rankings  # type: ignore[assignment]
    install.restore = lambda: setattr(retrieve, "_rankings", original)  # type: ignore[attr-defined]


def main() -> None:
    """Rank every variant on dev and held-out; print metrics and differences to the first."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("variants", help='JSON: {"name": {"config": {...}, "views": {...}, '
                                     '"base": [...], "view_candidates": n, "prompt": "..."}}')
    ap.add_argument("--out", default="var/sweep")
    args = ap.parse_args()
    s = get_settings()
    cache_query_vectors()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = caption_table()
    pieces, _, _ = load_pieces(load_manifest(Path(MANIFEST)))
    glossary = build_glossary(aligned_pairs((p.source, p.section, p.text) for p in pieces))
    views = {lang: Views(s, table, lang) for lang in ("en", "cs")}
    translators = {
        "twins": cached_translator(out / "translations-twins.json", lambda text: {
            "en": translate_fewshot(s.translator, text, 120)}),
        "glossary": cached_translator(out / "translations-glossary.json", lambda text: {
            "en": translate_with_glossary(s.translator, text, glossary, 120)}),
    }
    variants: dict[str, dict[str, Any]] = json.loads(args.variants)
    runs: dict[str, dict[str, Any]] = {}
    first = next(iter(variants))
    for name, plan in variants.items():
        config = ResearchConfig(**plan.get("config", {}))
        install(views, plan)
        try:
            runs[name] = r = {
                key: ev.run_eval(s, config, ev.load_questions(path),
                                 lambda: corpus_store.connect(s.corpus_read_dsn, autocommit=True),
                                 translators[plan.get("prompt", "twins")])
                for key, path in SETS.items()}
        finally:
            install.restore()  # type: ignore[attr-defined]
        (out / f"views-{name}.json").write_text(json.dumps(r, ensure_ascii=False))
        for key, rep in r.items():
            print(f"{name:>16} {key:<7} " + "  ".join(
                f"{lang} {metrics_text(m)}" for lang, m in rep["by_language"].items()),
                flush=True)
        if name != first:
            for key in r:
                for lang, part in ev.compare(runs[first][key], r[key])["by_language"].items():
                    print(f"{'':>10} vs {first:<10} {key:<7} {lang} {diff_line(part)}",
                          flush=True)


if __name__ == "__main__":
    main()
