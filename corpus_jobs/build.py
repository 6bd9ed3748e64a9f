"""Build a corpus index: collect passages, embed what is new, swap a staging table in atomically."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from corpus_jobs.chunker import chunk_markdown, title_of
from corpus_jobs.manifest import Manifest
from shared import corpus_store
from shared.config import Settings
from shared.models import embed

CHUNK_SIZE = 500
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Passage:
    """A passage ready to store; `index_text` is what search sees, `text` what the model sees."""

    id: str
    source: str
    title: str
    section: str
    lang: str
    text: str
    index_text: str
    local: bool

    @property
    def content_hash(self) -> str:
        """Hash of what gets embedded, the key of the embedding cache."""
        return hashlib.sha256(self.index_text.encode()).hexdigest()


@dataclass(frozen=True)
class BuildReport:
    """What a build did."""

    version: str
    no_op: bool
    documents: int
    passages: int
    embedded: int
    seconds: float


def collect(manifest: Manifest) -> tuple[list[Passage], str, int]:
    """Passages of every manifest file, the corpus content hash, and the document count."""
    passages: list[Passage] = []
    digest = hashlib.sha256(f"chunk={CHUNK_SIZE}".encode())
    files = manifest.files()
    for path in files:
        rel = path.relative_to(manifest.root).as_posix()
        raw = path.read_text(encoding="utf-8", errors="replace")
        digest.update(rel.encode() + b"\0" + raw.encode() + b"\0")
        title = title_of(raw, path.stem)
        for n, piece in enumerate(chunk_markdown(raw, CHUNK_SIZE)):
            section = piece.section or f"# {title}"
            index_text = f"{title} > {section}\n{piece.text}"
            pid = hashlib.sha1(f"{rel}\0{n}\0{piece.text}".encode()).hexdigest()[:20]
            passages.append(Passage(pid, rel, title, section, manifest.language, piece.text,
                                    index_text, False))
    return passages, digest.hexdigest(), len(files)


def _reader_role(settings: Settings) -> str:
    user = conninfo_to_dict(settings.corpus_read_dsn).get("user")
    if not user:
        raise psycopg.ProgrammingError("ASSISTANT_CORPUS_READ_DSN names no user")
    return str(user)


def _cached_embeddings(conn: psycopg.Connection, model: str,
                       hashes: list[str]) -> dict[str, np.ndarray]:
    rows = conn.execute(
        "SELECT content_hash, embedding FROM embedding_cache "
        "WHERE model = %s AND content_hash = ANY(%s)", (model, hashes)).fetchall()
    return {h: np.asarray(e.to_numpy() if hasattr(e, "to_numpy") else e, dtype=np.float32)
            for h, e in rows}


def _embed_missing(conn: psycopg.Connection, settings: Settings, passages: list[Passage],
                   progress: Progress | None) -> tuple[dict[str, np.ndarray], int]:
    """Embeddings for every passage; new ones are committed batch by batch so a killed
    build resumes without re-embedding what it already stored."""
    model_key = f"{settings.embeddings.model}|{settings.embedding_prefix_mode}"
    by_hash = {p.content_hash: p.index_text for p in passages}
    have = _cached_embeddings(conn, model_key, list(by_hash))
    missing = [h for h in by_hash if h not in have]
    done = 0
    for start in range(0, len(missing), 16):
        batch = missing[start:start + 16]
        vectors = embed(settings.embeddings, [by_hash[h] for h in batch], "passage",
                        settings.embedding_prefix_mode)
        with conn.transaction():
            for h, v in zip(batch, vectors, strict=True):
                arr = np.asarray(v, dtype=np.float32)
                conn.execute("INSERT INTO embedding_cache VALUES (%s, %s, %s) "
                             "ON CONFLICT DO NOTHING", (h, model_key, arr))
                have[h] = arr
        done += len(batch)
        if progress:
            progress(done, len(missing))
    return have, len(missing)


def _write_staging(conn: psycopg.Connection, settings: Settings, passages: list[Passage],
                   vectors: dict[str, np.ndarray], reader: str) -> None:
    staging = sql.Identifier(corpus_store.STAGING_TABLE)
    with conn.transaction():
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(staging))
        conn.execute(sql.SQL(
            "CREATE TABLE {} (id text PRIMARY KEY, source text NOT NULL, title text NOT NULL, "
            "section text NOT NULL, lang text NOT NULL, text text NOT NULL, "
            "index_text text NOT NULL, local boolean NOT NULL, embedding vector({}) NOT NULL)"
        ).format(staging, sql.Literal(settings.embedding_dim)))
        with conn.cursor().copy(sql.SQL(
                "COPY {} (id, source, title, section, lang, text, index_text, local, embedding) "
                "FROM STDIN").format(staging)) as copy:
            seen: set[str] = set()
            for p in passages:
                if p.id in seen:
                    continue
                seen.add(p.id)
                vec = "[" + ",".join(f"{x:.7g}" for x in vectors[p.content_hash]) + "]"
                copy.write_row((p.id, p.source, p.title, p.section, p.lang, p.text,
                                p.index_text, p.local, vec))
        index_name = sql.Identifier(f"passages_hnsw_{int(time.time() * 1000)}")
        conn.execute(sql.SQL("CREATE INDEX {} ON {} USING hnsw (embedding vector_cosine_ops)")
                     .format(index_name, staging))
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(staging, sql.Identifier(reader)))


def _swap(conn: psycopg.Connection, record: dict[str, object], attempts: int = 5) -> None:
    """Swap staging in and mark the new version current, in one short transaction."""
    live = sql.Identifier(corpus_store.LIVE_TABLE)
    old = sql.Identifier(corpus_store.LIVE_TABLE + "_old")
    for attempt in range(attempts):
        try:
            with conn.transaction():
                conn.execute("SET LOCAL lock_timeout = '2s'")
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(old))
                conn.execute(sql.SQL("ALTER TABLE IF EXISTS {} RENAME TO {}").format(live, old))
                conn.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(
                    sql.Identifier(corpus_store.STAGING_TABLE), live))
                conn.execute("UPDATE indexes SET current = false WHERE current")
                conn.execute(
                    "INSERT INTO indexes (version, corpus_hash, manifest, embedding_model, dim, "
                    "settings, documents, passages, embedded, build_seconds, current) VALUES "
                    "(%(version)s, %(corpus_hash)s, %(manifest)s, %(embedding_model)s, %(dim)s, "
                    "%(settings)s, %(documents)s, %(passages)s, %(embedded)s, %(seconds)s, true) "
                    "ON CONFLICT (version) DO UPDATE SET current = true, built_at = now(), "
                    "build_seconds = EXCLUDED.build_seconds, embedded = EXCLUDED.embedded",
                    record)
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(old))
            return
        except psycopg.errors.LockNotAvailable:
            time.sleep(0.5 * (attempt + 1))
    raise TimeoutError("could not take the lock to swap the index in")


def ensure_schema(conn: psycopg.Connection, reader: str) -> None:
    """Create the index tables if missing and let the reader see the version table."""
    with conn.transaction():
        conn.execute(SCHEMA_LOCK)
        conn.execute(corpus_store.SCHEMA_SQL)
        conn.execute(sql.SQL("GRANT SELECT ON indexes TO {}").format(sql.Identifier(reader)))


SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(7341)"


def build_index(settings: Settings, manifest: Manifest, *, force: bool = False,
                progress: Progress | None = None) -> BuildReport:
    """Build (or skip, when the corpus is unchanged) and swap in a new index."""
    started = time.monotonic()
    passages, corpus_hash, documents = collect(manifest)
    version = corpus_hash[:12]
    reader = _reader_role(settings)
    with corpus_store.connect(settings.corpus_dsn, autocommit=True) as conn:
        ensure_schema(conn, reader)
        current = conn.execute("SELECT corpus_hash, embedding_model FROM indexes WHERE current"
                               ).fetchone()
        if not force and current == (corpus_hash, settings.embeddings.model):
            return BuildReport(version, True, documents, len(passages), 0,
                               time.monotonic() - started)
        vectors, embedded = _embed_missing(conn, settings, passages, progress)
        _write_staging(conn, settings, passages, vectors, reader)
        seconds = time.monotonic() - started
        _swap(conn, {
            "version": version, "corpus_hash": corpus_hash, "manifest": manifest.name,
            "embedding_model": settings.embeddings.model, "dim": settings.embedding_dim,
            "settings": json.dumps({"chunk_size": CHUNK_SIZE,
                                    "prefix_mode": settings.embedding_prefix_mode}),
            "documents": documents, "passages": len({p.id for p in passages}),
            "embedded": embedded, "seconds": seconds,
        })
    return BuildReport(version, False, documents, len(passages), embedded, seconds)


def locked_build(settings: Settings, manifest: Manifest, *, force: bool = False,
                 progress: Progress | None = None) -> BuildReport | None:
    """build_index under the Redis lock shared by the CLI and beat; None if another holds it."""
    from shared import keys
    from shared.redis_client import redis_client

    lock = redis_client(settings).lock(keys.CORPUS_REBUILD_LOCK, timeout=LOCK_TIMEOUT_S,
                                       blocking=False)
    if not lock.acquire():
        return None
    try:
        return build_index(settings, manifest, force=force, progress=progress)
    finally:
        lock.release()


LOCK_TIMEOUT_S = 3 * 3600
