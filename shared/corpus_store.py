"""The corpus index schema in PostgreSQL+pgvector, and the read side used by the service."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from shared.errors import IndexMissing, Unavailable
from shared.passage import PASSAGE_COLUMNS, Passage

LIVE_TABLE = "passages"
STAGING_TABLE = "passages_staging"
# Captions as views of their own (docs/benchmarks.md, "Captions shipped with the corpus"): a
# passage's caption in a language, searched apart from its text; written and swapped in with the
# passages. An index built without them has no such table and serves without the views.
CAPTIONS_TABLE = "passage_captions"
CAPTIONS_STAGING_TABLE = "passage_captions_staging"
# Question views: the questions a passage answers, from the manifest's questions
# file, each embedded (as a query: a person's question is compared with them) and searched
# apart from the text; written and swapped in with the passages, like the captions' views.
QUESTIONS_TABLE = "passage_questions"
QUESTIONS_STAGING_TABLE = "passage_questions_staging"
# The query adapter fitted on the question views (corpus_jobs/adapter.py): one row, the map's
# float32 bytes with the version of the index it was fitted for; swapped in with the passages.
# An index without question views has none.
ADAPTER_TABLE = "query_adapter"
ADAPTER_STAGING_TABLE = "query_adapter_staging"

SCHEMA_SQL = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS indexes (
    version       text PRIMARY KEY,
    corpus_hash   text NOT NULL,
    manifest      text NOT NULL,
    embedding_model text NOT NULL,
    dim           integer NOT NULL,
    settings      jsonb NOT NULL,
    documents     integer NOT NULL,
    passages      integer NOT NULL,
    embedded      integer NOT NULL,
    build_seconds double precision NOT NULL,
    built_at      timestamptz NOT NULL DEFAULT now(),
    current       boolean NOT NULL DEFAULT false
);
CREATE UNIQUE INDEX IF NOT EXISTS indexes_one_current ON indexes (current) WHERE current;
CREATE TABLE IF NOT EXISTS embedding_cache (
    content_hash text NOT NULL,
    model        text NOT NULL,
    embedding    vector NOT NULL,
    PRIMARY KEY (content_hash, model)
);
CREATE TABLE IF NOT EXISTS span_vectors (
    content_hash text NOT NULL,
    model        text NOT NULL,
    embedding    vector NOT NULL,
    PRIMARY KEY (content_hash, model)
);
"""
# span_vectors: the quotes form's quotable spans embedded once by the build (keyed by the hash
# of the embedded text and the model, like embedding_cache), readable by the worker's reader.


@dataclass(frozen=True)
class IndexInfo:
    """The index version currently serving."""

    version: str
    embedding_model: str
    dim: int
    passages: int


def connect(dsn: str, **kwargs: Any) -> psycopg.Connection:
    """Open a connection with pgvector types registered; maps failures to Unavailable."""
    try:
        conn = psycopg.connect(dsn, connect_timeout=5, **kwargs)
    except psycopg.OperationalError as exc:
        raise Unavailable("corpus database unreachable") from exc
    register_vector(conn)
    return conn


def current_index(conn: psycopg.Connection) -> IndexInfo:
    """The serving index, or IndexMissing when none was built."""
    try:
        row = conn.execute(
            "SELECT version, embedding_model, dim, passages FROM indexes WHERE current"
        ).fetchone()
    except psycopg.errors.UndefinedTable:
        conn.rollback()
        raise IndexMissing("no indexes table") from None
    if row is None:
        raise IndexMissing("no current index")
    return IndexInfo(*row)


def all_passages(conn: psycopg.Connection) -> list[Passage]:
    """Every passage of the live index, in a stable order (for BM25)."""
    rows = conn.execute(f"SELECT {PASSAGE_COLUMNS} FROM {LIVE_TABLE} ORDER BY id").fetchall()
    return [Passage(*r) for r in rows]


def caption_views(conn: psycopg.Connection) -> list[tuple[str, str, str]]:
    """(passage id, language, caption) of the serving index's caption views, in a stable
    order; none for an index built without them."""
    try:
        rows = conn.execute(
            f"SELECT id, lang, caption FROM {CAPTIONS_TABLE} ORDER BY lang, id").fetchall()
    except psycopg.errors.UndefinedTable:
        conn.rollback()
        return []
    return [(r[0], r[1], r[2]) for r in rows]


def caption_search(conn: psycopg.Connection, vector: list[float], k: int, lang: str
                   ) -> list[tuple[str, float]]:
    """Passages whose caption in `lang` is nearest by cosine distance: (id, similarity); none
    for an index built without caption views."""
    vec = np.asarray(vector, dtype=np.float32)
    try:
        rows = conn.execute(
            f"SELECT id, 1 - (embedding <=> %(v)s) AS sim FROM {CAPTIONS_TABLE} "
            "WHERE lang = %(lang)s ORDER BY embedding <=> %(v)s LIMIT %(k)s",
            {"v": vec, "k": k, "lang": lang}).fetchall()
    except psycopg.errors.UndefinedTable:
        conn.rollback()
        return []
    return [(r[0], float(r[1])) for r in rows]


def question_views(conn: psycopg.Connection) -> list[tuple[str, str, str]]:
    """(passage id, language, question) of the serving index's question views, in a stable
    order; none for an index built without them."""
    try:
        rows = conn.execute(
            f"SELECT id, lang, question FROM {QUESTIONS_TABLE} ORDER BY lang, id, question"
        ).fetchall()
    except psycopg.errors.UndefinedTable:
        conn.rollback()
        return []
    return [(r[0], r[1], r[2]) for r in rows]


def view_search(conn: psycopg.Connection, vector: list[float], k: int, lang: str,
                tables: tuple[str, ...] = (QUESTIONS_TABLE,)) -> list[tuple[str, float]]:
    """Passages whose nearest view in `lang` (a question of QUESTIONS_TABLE, a caption of
    CAPTIONS_TABLE, or either: one ranking of both) is nearest by cosine: (id, the best
    view's similarity), best first; none for an index built without those views."""
    vec = np.asarray(vector, dtype=np.float32)
    parts = []
    for table in tables:
        if not _exists(conn, table):
            continue
        parts.append(f"SELECT id, embedding <=> %(v)s AS d FROM {table} WHERE lang = %(lang)s")
    if not parts:
        return []
    rows = conn.execute(
        f"SELECT id, 1 - min(d) AS sim FROM ({' UNION ALL '.join(parts)}) v "
        "GROUP BY id ORDER BY min(d) LIMIT %(k)s", {"v": vec, "k": k, "lang": lang}).fetchall()
    return [(r[0], float(r[1])) for r in rows]


def question_similarity(conn: psycopg.Connection, vectors: list[list[float]],
                        ids: list[str]) -> float:
    """The best cosine similarity of any of `vectors` with a question view (any language)
    of the passages `ids`; 0 for an index without question views."""
    return max(question_similarities(conn, vectors, ids).values(), default=0.0)


def question_similarities(conn: psycopg.Connection, vectors: list[list[float]],
                          ids: list[str]) -> dict[str, float]:
    """Per passage of `ids`: the best cosine similarity of any of `vectors` with one of its
    question views (any language); empty for an index without question views."""
    if not ids or not vectors or not _exists(conn, QUESTIONS_TABLE):
        return {}
    best: dict[str, float] = {}
    for vector in vectors:
        rows = conn.execute(
            f"SELECT id, max(1 - (embedding <=> %(v)s)) FROM {QUESTIONS_TABLE} "
            "WHERE id = ANY(%(ids)s) GROUP BY id",
            {"v": np.asarray(vector, dtype=np.float32), "ids": ids}).fetchall()
        for pid, sim in rows:
            if sim is not None:
                best[pid] = max(best.get(pid, 0.0), float(sim))
    return best


def query_adapter(conn: psycopg.Connection, version: str) -> np.ndarray | None:
    """The query adapter fitted for index `version` (dim x dim), or None when that index has
    none."""
    if not _exists(conn, ADAPTER_TABLE):
        return None
    row = conn.execute(f"SELECT dim, matrix FROM {ADAPTER_TABLE} WHERE version = %s",
                       (version,)).fetchone()
    if row is None:
        return None
    dim, raw = row
    return np.frombuffer(bytes(raw), dtype=np.float32).reshape(dim, dim)


def _exists(conn: psycopg.Connection, table: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
    return bool(row and row[0])


def dense_search(conn: psycopg.Connection, vector: list[float], k: int,
                 lang: str | None = None) -> list[tuple[str, float]]:
    """Nearest passages by cosine distance (optionally of one language): (id, similarity)."""
    vec = np.asarray(vector, dtype=np.float32)
    where = "WHERE lang = %(lang)s " if lang else ""
    rows = conn.execute(
        f"SELECT id, 1 - (embedding <=> %(v)s) AS sim FROM {LIVE_TABLE} {where}"
        "ORDER BY embedding <=> %(v)s LIMIT %(k)s",
        {"v": vec, "k": k, "lang": lang},
    ).fetchall()
    return [(r[0], float(r[1])) for r in rows]
