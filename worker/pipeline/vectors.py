"""Embeddings of questions and spans, the ones asked for before kept per process: the quotes
form ranks the same popular spans again and again, and its question vectors are the ones the
search already asked for. Span vectors come from the index's span_vectors table when the build
stored them (corpus_jobs/build.py, _embed_spans): a turn then embeds only its question."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import psycopg

from shared import corpus_store
from shared.config import Settings
from shared.models import embed
from shared.passage import Passage
from shared.spans import text_key

VECTOR_CACHE = 4096  # vectors kept per process, as float32 (1.5 kB each at 384 dimensions)

_cache: OrderedDict[tuple[str, str, str], np.ndarray] = OrderedDict()
_lock = threading.Lock()


def stored_vectors(conn: psycopg.Connection, settings: Settings,
                   texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Passage-kind vectors of these texts the index build stored, by text."""
    model_key = f"{settings.embeddings.model}|{settings.embedding_prefix_mode}"
    by_key = {text_key(t): t for t in texts}
    try:
        rows = conn.execute(
            "SELECT content_hash, embedding FROM span_vectors WHERE model = %s AND "
            "content_hash = ANY(%s)", (model_key, list(by_key))).fetchall()
    except (psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedTable):
        # An index built before span vectors existed: embed at question time.
        conn.rollback()
        return {}
    return {by_key[h]: _array(e) for h, e in rows}


def passage_vectors(conn: psycopg.Connection, passages: Sequence[Passage]
                    ) -> list[list[float]] | None:
    """The passages' own index vectors (what the search compared the question with), in
    order; None when one is missing (the quotes form then ranks without them)."""
    ids = [p.id for p in passages]
    rows: dict[str, object] = dict(conn.execute(f"SELECT id, embedding FROM {corpus_store.LIVE_TABLE} "
                             "WHERE id = ANY(%s)", (ids,)).fetchall())
    if any(i not in rows for i in ids):
        return None
    return [_array(rows[i]).tolist() for i in ids]


def _array(value: object) -> np.ndarray:
    """A stored vector as numpy (pgvector gives a Vector or an array, by version)."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy is not None else value, dtype=np.float32)


def cached_vectors(settings: Settings, texts: Sequence[str], kind: str,
                   conn: psycopg.Connection | None = None) -> list[list[float]]:
    """Vectors from the embeddings role, the ones asked for before taken from memory, and
    (with `conn`, passage kind) the ones the index build stored taken from the index."""
    model = settings.embeddings.model
    with _lock:
        have = {t: _cache.get((model, kind, t)) for t in texts}
    missing = [t for t in dict.fromkeys(texts) if have[t] is None]
    if missing and conn is not None and kind == "passage":
        stored = stored_vectors(conn, settings, missing)
        with _lock:
            for t, vector in stored.items():
                have[t] = _cache[(model, kind, t)] = vector
        missing = [t for t in missing if t not in stored]
    if missing:
        fresh = embed(settings.embeddings, missing, kind, settings.embedding_prefix_mode)
        with _lock:
            for t, fresh_vector in zip(missing, fresh, strict=True):
                have[t] = _cache[(model, kind, t)] = np.asarray(fresh_vector, dtype=np.float32)
    with _lock:
        while len(_cache) > VECTOR_CACHE:
            _cache.popitem(last=False)
    return [vec.tolist() for t in texts if (vec := have[t]) is not None]


_adapters: dict[str, np.ndarray | None] = {}
_adapters_lock = threading.Lock()


def query_adapter(conn: psycopg.Connection, version: str) -> np.ndarray | None:
    """The query adapter of index `version` (read once per version), or None."""
    with _adapters_lock:
        if version in _adapters:
            return _adapters[version]
    matrix = corpus_store.query_adapter(conn, version)
    with _adapters_lock:
        if len(_adapters) > 4:
            _adapters.clear()
        _adapters[version] = matrix
    return matrix


def adapted(vector: list[float], matrix: np.ndarray) -> list[float]:
    """A query vector through the adapter, back to unit length."""
    z = np.asarray(vector, dtype=np.float32) @ matrix
    norm = float(np.linalg.norm(z))
    return (z / norm if norm > 0 else z).tolist()
