"""Retrieval speed at 1k/10k/100k passages (model calls excluded), with the component split.

Synthetic copies of the BeCoMe passages (their vectors jittered and renormalised, their texts
tagged) are written through the real staging + swap code into a database of their own; then
each question's precomputed query vector and text go through pgvector, BM25 and RRF.

Run (needs a running PostgreSQL+pgvector and the embeddings server, e.g. under `make run`):
    .venv/bin/python -m bench.retrieval_speed --sizes 1000 10000 100000
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import resource
import statistics
import time

import numpy as np

from assistant_cli import stack
from corpus_jobs.build import _swap, _write_staging, collect, ensure_schema
from corpus_jobs.manifest import load_manifest
from shared import corpus_store
from shared.config import get_settings
from shared.models import embed
from shared.passage import Passage
from worker.evaluation import load_questions
from worker.pipeline.bm25 import lexical_index, tokenize
from worker.pipeline.fusion import fuse


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of values, in ms."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def synthetic(base: list[Passage], vectors: dict[str, np.ndarray], n: int, seed: int = 7
              ) -> tuple[list[Passage], dict[str, np.ndarray]]:
    """n passages: copies of base, each copy's vector jittered and text tagged."""
    rng = np.random.default_rng(seed)
    out: list[Passage] = []
    vecs: dict[str, np.ndarray] = {}
    for i in range(n):
        p = base[i % len(base)]
        copy = i // len(base)
        text = p.text if copy == 0 else f"{p.text} (copy {copy})"
        index_text = p.index_text if copy == 0 else f"{p.index_text} (copy {copy})"
        q = dataclasses.replace(p, id=hashlib.sha1(f"{p.id}{copy}".encode()).hexdigest()[:20],
                                text=text, index_text=index_text)
        v = vectors[p.content_hash] + rng.normal(0, 0.02 if copy else 0, len(
            vectors[p.content_hash])).astype(np.float32)
        vecs[q.content_hash] = v / np.linalg.norm(v)
        out.append(q)
    return out, vecs


def main() -> None:
    """Build each size, then time retrieval for every dev + held-out question."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--admin-dsn", default="postgresql://postgres@127.0.0.1:5433/postgres")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reuse", action="store_true", help="keep an index built by a former run")
    args = ap.parse_args()
    settings = get_settings()
    base, _, _ = collect(load_manifest("corpus_jobs/manifests/become.toml"))
    print(f"embedding {len(base)} base passages …", flush=True)
    base_vecs = dict(zip([p.content_hash for p in base],
                         [np.asarray(v, dtype=np.float32) for v in embed(
                             settings.embeddings, [p.index_text for p in base], "passage",
                             settings.embedding_prefix_mode)], strict=True))
    questions = [q.question for f in ("../shared/eval/dev.jsonl", "bench/retrieval/heldout.jsonl")
                 for q in load_questions(f)]
    qvecs = embed(settings.embeddings, questions, "query", settings.embedding_prefix_mode)
    print(f"{'passages':>9} {'build s':>8} {'bm25 build s':>12} {'dense p50/p95':>14} "
          f"{'bm25 p50/p95':>13} {'fuse p50':>8} {'total p50/p95':>14} {'RSS MB':>7} "
          f"{'rank-bm25 get_scores p50/p95':>29}")
    for n in args.sizes:
        db = f"corpus_bench_{n}"
        stack.bootstrap_corpus_db(args.admin_dsn, db, "corpus_owner", "corpus_reader")
        owner = args.admin_dsn.rsplit("/", 1)[0].replace("postgres@", "corpus_owner@") + f"/{db}"
        reader = owner.replace("corpus_owner@", "corpus_reader@")
        s = dataclasses.replace(settings, corpus_dsn=owner, corpus_read_dsn=reader)
        t0 = time.monotonic()
        with corpus_store.connect(owner, autocommit=True) as conn:
            ensure_schema(conn, "corpus_reader")
            have = conn.execute("SELECT version FROM indexes WHERE current").fetchone()
            if not (args.reuse and have == (f"bench{n}",)):
                passages, vecs = synthetic(base, base_vecs, n)
                _write_staging(conn, s, passages, vecs, "corpus_reader")
                _swap(conn, {"version": f"bench{n}", "corpus_hash": f"bench{n}",
                             "manifest": "bench", "embedding_model": settings.embeddings.model,
                             "dim": settings.embedding_dim, "settings": "{}", "documents": 0,
                             "passages": n, "embedded": 0, "seconds": 0})
        build_s = time.monotonic() - t0
        dense_t, bm25_t, fuse_t, total_t, plain_t = [], [], [], [], []
        with corpus_store.connect(reader, autocommit=True) as conn:
            t0 = time.monotonic()
            lexical = lexical_index(conn, f"bench{n}")
            bm25_build = time.monotonic() - t0
            for _ in range(args.repeat):
                for text, vec in zip(questions, qvecs, strict=True):
                    a = time.perf_counter()
                    dense = corpus_store.dense_search(conn, vec, settings.candidates)
                    b = time.perf_counter()
                    lex = lexical.top(text, settings.candidates)
                    c = time.perf_counter()
                    fuse([dense, lex])[: settings.top_k]
                    d = time.perf_counter()
                    lexical.bm25.get_scores(tokenize(text, split=True))  # rank-bm25 itself, for scale
                    e = time.perf_counter()
                    plain_t.append(e - d)
                    dense_t.append(b - a)
                    bm25_t.append(c - b)
                    fuse_t.append(d - c)
                    total_t.append(d - a)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{n:>9} {build_s:>8.1f} {bm25_build:>12.1f} "
              f"{pct(dense_t, .5):>6.1f}/{pct(dense_t, .95):<7.1f} "
              f"{pct(bm25_t, .5):>6.1f}/{pct(bm25_t, .95):<6.1f} {pct(fuse_t, .5):>8.2f} "
              f"{pct(total_t, .5):>6.1f}/{pct(total_t, .95):<7.1f} {rss:>7.0f} "
              f"{pct(plain_t, .5):>14.1f}/{pct(plain_t, .95):<7.1f}", flush=True)
        print(f"{'':>9} mean over {len(total_t)} queries: dense "
              f"{statistics.mean(dense_t) * 1000:.1f} ms, bm25 (postings) "
              f"{statistics.mean(bm25_t) * 1000:.1f} ms, rank-bm25 get_scores "
              f"{statistics.mean(plain_t) * 1000:.1f} ms", flush=True)


if __name__ == "__main__":
    main()
