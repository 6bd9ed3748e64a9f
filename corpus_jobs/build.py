"""Build a corpus index: collect passages, embed what is new, swap a staging table in atomically."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from corpus_jobs import adapter
from corpus_jobs.caption_file import load_caption_file
from corpus_jobs.loaders import LoadedPiece, Source, include_target, loader_for, loaders_version
from corpus_jobs.manifest import Manifest
from corpus_jobs.questions import load_question_file, question_views
from corpus_jobs.vector_file import ShippedVectors
from shared import corpus_store
from shared.config import Settings
from shared.errors import ModelError
from shared.models import embed
from shared.passage import Passage
from shared.spans import embed_text, passage_spans, text_key

if TYPE_CHECKING:
    from corpus_jobs.captions import Plan

CHUNK_SIZE = 500
EMBED_TIMEOUT_S = 300.0
log = logging.getLogger(__name__)
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class BuildReport:
    """What a build did."""

    version: str
    no_op: bool
    documents: int
    passages: int
    embedded: int
    seconds: float
    # Pieces whose captions came from the file, the cache, the caption role, or none; pieces
    # the file has an older text of (`changed`); file entries no piece matches (`stale`).
    captions: dict[str, int] = field(default_factory=dict)
    caption_calls: int = 0
    # Quotable spans newly embedded into the cache (the quotes form reads them; _embed_spans).
    spans_embedded: int = 0
    # Question views from the manifest's questions file: passages with questions, questions,
    # passages the file has an older text of (`changed`, they get none), file entries no
    # passage matches (`stale`); and how many question vectors were newly embedded.
    questions: dict[str, int] = field(default_factory=dict)
    questions_embedded: int = 0
    # Vectors taken from the manifest's vectors file instead of the embeddings role.
    vectors_from_file: int = 0


def _pieces_of(manifest: Manifest, path: Path, rel: str, raw: str, rels: set[str],
               done: set[str]) -> list[LoadedPiece]:
    """Load one public file with its suffix's loader; an include stub yields its target once
    (or nothing)."""
    lang = manifest.language_of(rel)
    if path.suffix.lower() == ".md" and (target := include_target(raw)) is not None:
        if target in rels or target in done:
            return []  # the included README is indexed once, as itself
        target_path = (manifest.root / target).resolve()
        if not target_path.is_file() or not target_path.is_relative_to(manifest.root):
            log.warning("%s: include target %s not found", rel, target)
            return []
        path, rel = target_path, target
        raw = target_path.read_text(encoding="utf-8", errors="replace")
    done.add(rel)
    return loader_for(path).load(Source(path, rel, raw, manifest.root, lang), CHUNK_SIZE)


def _local_pieces(manifest: Manifest, path: Path) -> list[LoadedPiece]:
    """Load one local-layer file, marked as a local copy with no URL."""
    assert manifest.local_dir is not None
    rel = manifest.local_rel(path)
    loader = loader_for(path)
    raw = "" if loader.binary else path.read_text(encoding="utf-8", errors="replace")
    return loader.load(Source(path, rel, raw, manifest.local_dir, manifest.language, local=True),
                       CHUNK_SIZE)


def index_text(piece: LoadedPiece, caption: str = "") -> str:
    """What search sees: caption, title > heading path, section lead, then the text."""
    head = "\n".join(x for x in (caption, f"{piece.title} > {piece.section}", piece.context) if x)
    return f"{head}\n{piece.text}"


def collect(manifest: Manifest, captions: dict[str, str] | None = None
            ) -> tuple[list[Passage], str, int]:
    """Passages of every manifest file, the corpus content hash, and the document count."""
    pieces, corpus_hash, documents = load_pieces(manifest)
    return to_passages(pieces, captions or {}), corpus_hash, documents


def load_pieces(manifest: Manifest) -> tuple[list[LoadedPiece], str, int]:
    """Every loaded piece, the corpus content hash and the document count."""
    digest = hashlib.sha256(f"chunk={CHUNK_SIZE};loaders={loaders_version()}".encode())
    files = manifest.files()
    rels = {manifest.rel(p) for p in files}
    done: set[str] = set()
    pieces: list[LoadedPiece] = []
    for path in files:
        rel = manifest.rel(path)
        raw_bytes = path.read_bytes()
        digest.update(rel.encode() + b"\0" + raw_bytes + b"\0")
        raw = "" if loader_for(path).binary else raw_bytes.decode("utf-8", errors="replace")
        pieces.extend(_pieces_of(manifest, path, rel, raw, rels, done))
    local = manifest.local_files()
    for path in local:
        digest.update(b"local\0" + path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        pieces.extend(_local_pieces(manifest, path))
    return pieces, digest.hexdigest(), len(done) + len(local)


def to_passages(pieces: list[LoadedPiece], captions: dict[str, str]) -> list[Passage]:
    """Passages with stable ids (duplicates dropped) and their index text."""
    from corpus_jobs.captions import caption_key

    passages: list[Passage] = []
    seen: set[str] = set()
    for piece in pieces:
        pid = passage_id(piece)
        if pid in seen:  # the same text under the same heading twice adds nothing
            continue
        seen.add(pid)
        passages.append(Passage(pid, piece.source, piece.title, piece.section, piece.lang,
                                piece.text, index_text(piece, captions.get(caption_key(piece), "")),
                                piece.local))
    return passages


def caption_views(pieces: list[LoadedPiece], plan: Plan, views: tuple[str, ...]
                  ) -> list[tuple[str, str, str]]:
    """(passage id, language, caption) for every piece with a caption in a view language."""
    from corpus_jobs.captions import caption_key

    out: dict[tuple[str, str], str] = {}
    for piece in pieces:
        caps = plan.captions.get(caption_key(piece), {})
        for lang in views:
            if caps.get(lang):
                out.setdefault((passage_id(piece), lang), caps[lang])
    return [(pid, lang, caption) for (pid, lang), caption in out.items()]


def passage_id(piece: LoadedPiece) -> str:
    """A passage's stable id: its place and its text."""
    return hashlib.sha1(f"{piece.source}\0{piece.section}\0{piece.text}".encode()).hexdigest()[:20]


def _reader_role(settings: Settings) -> str:
    user = conninfo_to_dict(settings.corpus_read_dsn).get("user")
    if not user:
        raise psycopg.ProgrammingError("ASSISTANT_CORPUS_READ_DSN names no user")
    return str(user)


def _cached_embeddings(conn: psycopg.Connection, model: str, hashes: list[str],
                       table: str = "embedding_cache") -> dict[str, np.ndarray]:
    """The vectors of these keys in a cache table (embedding_cache or span_vectors)."""
    rows = conn.execute(sql.SQL(
        "SELECT content_hash, embedding FROM {} WHERE model = %s AND content_hash = ANY(%s)"
    ).format(sql.Identifier(table)), (model, hashes)).fetchall()
    return {h: np.asarray(e.to_numpy() if hasattr(e, "to_numpy") else e, dtype=np.float32)
            for h, e in rows}


def _embed_missing(conn: psycopg.Connection, settings: Settings, passages: list[Passage],
                   shipped: ShippedVectors, progress: Progress | None
                   ) -> tuple[dict[str, np.ndarray], int]:
    """Embeddings for every passage; new ones are committed batch by batch so a killed
    build resumes without re-embedding what it already stored."""
    return _embed_texts(conn, settings, {p.content_hash: p.index_text for p in passages},
                        shipped, progress)


def model_key(settings: Settings) -> str:
    """The caches' model key: the same model with another prefix mode embeds otherwise."""
    return f"{settings.embeddings.model}|{settings.embedding_prefix_mode}"


def _from_file(conn: psycopg.Connection, shipped: ShippedVectors, table: str, model: str,
               missing: list[str]) -> dict[str, np.ndarray]:
    """The vectors file's vectors of the `missing` keys, stored in the cache `table` as if
    just embedded (the next build, and the worker for spans, read them there)."""
    found = shipped.take(table, model, missing)
    if found:
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s) ON CONFLICT DO NOTHING")
                            .format(sql.Identifier(table)),
                            [(h, model, v) for h, v in found.items()])
    return found


def _embed_texts(conn: psycopg.Connection, settings: Settings, by_hash: dict[str, str],
                 shipped: ShippedVectors, progress: Progress | None = None,
                 kind: str = "passage") -> tuple[dict[str, np.ndarray], int]:
    """Embeddings (as `kind`, passage or query) of texts by content hash, from the cache, the
    vectors file or the embeddings role (a query's hash must say so: the cache's key is hash
    and model)."""
    model = model_key(settings)
    have = _cached_embeddings(conn, model, list(by_hash))
    missing = [h for h in by_hash if h not in have]
    have.update(_from_file(conn, shipped, "embedding_cache", model, missing))
    missing = [h for h in missing if h not in have]
    done = 0
    for start in range(0, len(missing), 16):
        batch = missing[start:start + 16]
        # A build is a batch job: a busy embedding server may take minutes for one batch.
        vectors = embed(settings.embeddings, [by_hash[h] for h in batch], kind,
                        settings.embedding_prefix_mode, timeout_s=EMBED_TIMEOUT_S)
        with conn.transaction():
            for h, v in zip(batch, vectors, strict=True):
                arr = np.asarray(v, dtype=np.float32)
                conn.execute("INSERT INTO embedding_cache VALUES (%s, %s, %s) "
                             "ON CONFLICT DO NOTHING", (h, model, arr))
                have[h] = arr
        done += len(batch)
        if progress:
            progress(done, len(missing))
    return have, len(missing)


def _caption_hash(lang: str, caption: str) -> str:
    return hashlib.sha256(f"caption\0{lang}\0{caption}".encode()).hexdigest()


def _question_hash(lang: str, question: str) -> str:
    return hashlib.sha256(f"question\0query\0{lang}\0{question}".encode()).hexdigest()


def _embed_spans(conn: psycopg.Connection, settings: Settings,
                 passages: list[Passage], shipped: ShippedVectors) -> int:
    """Every quotable span's vector in span_vectors, keyed like a passage's cached one (hash
    of the embedded text, model): the quotes form reads them at question time instead of
    asking the embeddings role (worker/pipeline/vectors.py), or from the vectors file.
    Returns how many were newly embedded; a failing embeddings role leaves the rest to
    question time (the index already serves)."""
    model = model_key(settings)
    unique = list({p.id: p for p in passages}.values())
    texts: dict[str, str] = {}
    for p, spans in zip(unique, passage_spans(unique, unique), strict=True):
        for span in spans:
            text = embed_text(p, span)
            texts[text_key(text)] = text
    hashes = list(texts)
    have = {r[0] for r in conn.execute(
        "SELECT content_hash FROM span_vectors WHERE model = %s AND content_hash = ANY(%s)",
        (model, hashes)).fetchall()}
    missing = [h for h in hashes if h not in have]
    given = _from_file(conn, shipped, "span_vectors", model, missing)
    missing = [h for h in missing if h not in given]
    done = 0
    for start in range(0, len(missing), 32):
        batch = missing[start:start + 32]
        try:
            vectors = embed(settings.embeddings, [texts[h] for h in batch], "passage",
                            settings.embedding_prefix_mode, timeout_s=EMBED_TIMEOUT_S)
        except ModelError as exc:
            log.warning("span vectors: %d of %d embedded, the rest at question time (%s)",
                        done, len(missing), type(exc).__name__)
            break
        with conn.transaction():
            for h, v in zip(batch, vectors, strict=True):
                conn.execute("INSERT INTO span_vectors VALUES (%s, %s, %s) "
                             "ON CONFLICT DO NOTHING", (h, model,
                                                        np.asarray(v, dtype=np.float32)))
        done += len(batch)
    return done


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


def _write_views(conn: psycopg.Connection, settings: Settings, table: str, column: str,
                 rows: list[tuple[str, str, str]], hashed: Callable[[str, str], str],
                 reader: str, shipped: ShippedVectors, kind: str = "passage",
                 key: str = "id, lang") -> int:
    """A staging table of views (passage id, language, the view's text in `column`, its
    embedding as `kind`), maybe empty; returns how many texts were embedded (the others came
    from the cache or the vectors file)."""
    vectors, embedded = _embed_texts(
        conn, settings, {hashed(lang, t): t for _pid, lang, t in rows}, shipped, kind=kind)
    staging = sql.Identifier(table)
    with conn.transaction():
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(staging))
        conn.execute(sql.SQL(
            "CREATE TABLE {} (id text NOT NULL, lang text NOT NULL, {} text NOT NULL, "
            "embedding vector({}) NOT NULL, PRIMARY KEY ({}))").format(
            staging, sql.Identifier(column), sql.Literal(settings.embedding_dim),
            sql.SQL(key)))
        with conn.cursor().copy(sql.SQL("COPY {} (id, lang, {}, embedding) FROM STDIN")
                                .format(staging, sql.Identifier(column))) as copy:
            for pid, lang, text in rows:
                vec = vectors[hashed(lang, text)]
                copy.write_row((pid, lang, text, "[" + ",".join(f"{x:.7g}" for x in vec)
                                + "]"))
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(staging, sql.Identifier(reader)))
    return embedded


def _write_caption_views(conn: psycopg.Connection, settings: Settings,
                         views: list[tuple[str, str, str]], reader: str,
                         shipped: ShippedVectors) -> int:
    """The staging table of caption views (passage id, language, caption, its embedding)."""
    return _write_views(conn, settings, corpus_store.CAPTIONS_STAGING_TABLE, "caption", views,
                        _caption_hash, reader, shipped)


def _write_question_views(conn: psycopg.Connection, settings: Settings,
                          rows: list[tuple[str, str, str]], reader: str,
                          shipped: ShippedVectors) -> int:
    """The staging table of question views (passage id, language, question, its embedding).
    A question is embedded as a query: a person's question is compared with it (e5's
    symmetric use), not with a passage."""
    return _write_views(conn, settings, corpus_store.QUESTIONS_STAGING_TABLE, "question", rows,
                        _question_hash, reader, shipped, kind="query",
                        key="id, lang, question")


def _write_adapter(conn: psycopg.Connection, version: str, reader: str, fitted: bool
                   ) -> dict[str, float] | None:
    """The staging table of the query adapter (corpus_jobs/adapter.py), fitted on the staged
    question views and passages; none (and no table) when the index has no question views.
    Returns what the fit read and how long it took."""
    staging = sql.Identifier(corpus_store.ADAPTER_STAGING_TABLE)
    conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(staging))
    if not fitted:
        return None
    started = time.monotonic()
    rows = conn.execute(sql.SQL("SELECT id, embedding FROM {} ORDER BY id").format(
        sql.Identifier(corpus_store.STAGING_TABLE))).fetchall()
    place = {pid: n for n, (pid, _vec) in enumerate(rows)}
    asked = [(place[pid], vec) for pid, vec in conn.execute(sql.SQL(
        "SELECT id, embedding FROM {} ORDER BY id, lang, question").format(
        sql.Identifier(corpus_store.QUESTIONS_STAGING_TABLE))).fetchall() if pid in place]
    if not asked:
        return None
    matrix = adapter.fit(np.stack([v.to_numpy() for _n, v in asked]),
                         np.array([n for n, _v in asked]),
                         np.stack([v.to_numpy() for _pid, v in rows]))
    with conn.transaction():
        conn.execute(sql.SQL("CREATE TABLE {} (version text PRIMARY KEY, dim integer NOT NULL, "
                             "matrix bytea NOT NULL)").format(staging))
        conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(staging),
                     (version, matrix.shape[0], matrix.astype(np.float32).tobytes()))
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(staging, sql.Identifier(reader)))
    return {"questions": len(asked), "seconds": round(time.monotonic() - started, 1)}


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
                # The caption views belong to the passages they were written with.
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(
                    sql.Identifier(corpus_store.CAPTIONS_TABLE)))
                conn.execute(sql.SQL("ALTER TABLE IF EXISTS {} RENAME TO {}").format(
                    sql.Identifier(corpus_store.CAPTIONS_STAGING_TABLE),
                    sql.Identifier(corpus_store.CAPTIONS_TABLE)))
                # So do the question views.
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(
                    sql.Identifier(corpus_store.QUESTIONS_TABLE)))
                conn.execute(sql.SQL("ALTER TABLE IF EXISTS {} RENAME TO {}").format(
                    sql.Identifier(corpus_store.QUESTIONS_STAGING_TABLE),
                    sql.Identifier(corpus_store.QUESTIONS_TABLE)))
                # And the query adapter fitted on them.
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(
                    sql.Identifier(corpus_store.ADAPTER_TABLE)))
                conn.execute(sql.SQL("ALTER TABLE IF EXISTS {} RENAME TO {}").format(
                    sql.Identifier(corpus_store.ADAPTER_STAGING_TABLE),
                    sql.Identifier(corpus_store.ADAPTER_TABLE)))
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
        # The worker reads the span vectors (_embed_spans); the passage cache stays private.
        conn.execute(sql.SQL("GRANT SELECT ON span_vectors TO {}").format(
            sql.Identifier(reader)))


SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(7341)"


def build_index(settings: Settings, manifest: Manifest, *, force: bool = False,
                progress: Progress | None = None,
                caption_progress: Progress | None = None) -> BuildReport:
    """Build (or skip, when the corpus is unchanged) and swap in a new index."""
    from corpus_jobs import captions as caps

    started = time.monotonic()
    pieces, content_hash, documents = load_pieces(manifest)
    languages = settings.caption_languages
    views = settings.caption_views
    # Every language the index needs a caption in: in front of the text, or as a view.
    wanted = tuple(dict.fromkeys(languages + views))
    file = load_caption_file(manifest.captions) \
        if manifest.captions is not None and wanted else None
    role = settings.captions if wanted else None
    asked = settings.question_views
    qfile = load_question_file(manifest.questions) \
        if manifest.questions is not None and asked else None
    questions = question_views(pieces, qfile, asked)
    reader = _reader_role(settings)
    # The vectors file, read only when a vector is missing from the cache (a no-op reads none).
    shipped = ShippedVectors(manifest.vectors)
    with corpus_store.connect(settings.corpus_dsn, autocommit=True) as conn:
        ensure_schema(conn, reader)
        caps.ensure_cache(conn)
        # The file, then the cache (no model call); the caption role only for what both lack.
        plan = caps.plan(conn, pieces, wanted, file, role.model if role else "")
        calls = caps.fill(conn, role, pieces, plan, wanted, caption_progress) \
            if role is not None and plan.missing(wanted) else 0
        # The version covers the content and everything that changes what gets indexed
        # (the views only when there are some, so an index without them keeps its version).
        corpus_hash = hashlib.sha256("|".join((
            content_hash, settings.embeddings.model, settings.embedding_prefix_mode,
            plan.digest(languages), *([f"views={plan.digest(views)}"] if views else []),
            *([f"questions={questions.digest()}", f"adapter={adapter.fitted_by()}"]
              if questions.rows else []))
        ).encode()).hexdigest()
        version = corpus_hash[:12]
        counts = plan.counts()
        current = conn.execute("SELECT corpus_hash FROM indexes WHERE current").fetchone()
        from corpus_jobs.captions import caption_key

        passages = to_passages(pieces, {caption_key(p): plan.text(caption_key(p), languages)
                                        for p in pieces})
        if not force and current == (corpus_hash,):
            # Unchanged, but an index built before span vectors existed gains them here.
            spans = _embed_spans(conn, settings, passages, shipped)
            return BuildReport(version, True, documents, len(pieces), 0,
                               time.monotonic() - started, counts, calls, spans,
                               questions.counts(), vectors_from_file=shipped.used)
        vectors, embedded = _embed_missing(conn, settings, passages, shipped, progress)
        view_rows = caption_views(pieces, plan, views)
        view_embedded = _write_caption_views(conn, settings, view_rows, reader, shipped)
        question_embedded = _write_question_views(conn, settings, questions.rows, reader,
                                                  shipped)
        _write_staging(conn, settings, passages, vectors, reader)
        fitted = _write_adapter(conn, version, reader, bool(questions.rows))
        seconds = time.monotonic() - started
        _swap(conn, {
            "version": version, "corpus_hash": corpus_hash, "manifest": manifest.name,
            "embedding_model": settings.embeddings.model, "dim": settings.embedding_dim,
            "settings": json.dumps({"chunk_size": CHUNK_SIZE,
                                    "prefix_mode": settings.embedding_prefix_mode,
                                    "caption_languages": list(languages),
                                    "caption_views": list(views),
                                    "question_views": list(asked) if questions.rows else [],
                                    "questions_file": manifest.questions.name
                                    if qfile is not None and manifest.questions else None,
                                    "questions": questions.counts(),
                                    "query_adapter": fitted,
                                    "captions_file": manifest.captions.name
                                    if file is not None and manifest.captions else None,
                                    "caption_model": role.model if role else None,
                                    "captions": counts}),
            "documents": documents, "passages": len({p.id for p in passages}),
            "embedded": embedded, "seconds": seconds,
        })
        # After the swap: the index serves while its spans are embedded.
        spans = _embed_spans(conn, settings, passages, shipped)
    log.info("index %s: captions %s, %d caption calls, %d caption views (%d embedded), "
             "question views %s (%d embedded), query adapter %s, %d span vectors embedded, "
             "%d vectors from the vectors file", version, counts, calls, len(view_rows),
             view_embedded, questions.counts(), question_embedded, fitted, spans,
             shipped.used)
    return BuildReport(version, False, documents, len(passages), embedded, seconds, counts,
                       calls, spans, questions.counts(), question_embedded, shipped.used)


def locked_build(settings: Settings, manifest: Manifest, *, force: bool = False,
                 progress: Progress | None = None) -> BuildReport | None:
    """build_index under the Redis lock shared by the CLI and beat; None if another holds it.

    The lock is a short lease renewed while the build runs, so a build killed half way
    (SIGKILL, a lost machine) blocks the next one for at most LOCK_LEASE_S seconds.
    """
    import threading

    import redis

    from shared import keys
    from shared.redis_client import redis_client

    # thread_local=False: the lease is renewed from another thread, and redis-py keeps a
    # thread-local lock's token only in the thread that acquired it.
    lock = redis_client(settings).lock(keys.CORPUS_REBUILD_LOCK, timeout=LOCK_LEASE_S,
                                       blocking=False, thread_local=False)
    if not lock.acquire():
        return None
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(LOCK_LEASE_S / 3):
            try:
                lock.extend(LOCK_LEASE_S, replace_ttl=True)
            except (redis.exceptions.LockError, redis.RedisError) as exc:
                log.warning("could not renew the rebuild lock: %s", type(exc).__name__)

    renewer = threading.Thread(target=renew, name="rebuild-lock", daemon=True)
    renewer.start()
    try:
        return build_index(settings, manifest, force=force, progress=progress)
    finally:
        stop.set()
        renewer.join(timeout=5)
        try:
            lock.release()
        except (redis.exceptions.LockError, redis.RedisError) as exc:  # lease already gone
            log.warning("rebuild lock already gone: %s", type(exc).__name__)


LOCK_LEASE_S = 60
LOCK_TIMEOUT_S = 3 * 3600  # the Celery task's own time limit


def served_vectors(conn: psycopg.Connection, settings: Settings) -> tuple[dict[str, dict[
        str, np.ndarray]], int]:
    """The cached vectors of the serving index, per cache table by key (its passages, caption
    and question views, and spans: what a vectors file ships), and how many it lacks."""
    passages = corpus_store.all_passages(conn)
    keys = {
        "embedding_cache": {p.content_hash for p in passages}
        | {_caption_hash(lang, c) for _pid, lang, c in corpus_store.caption_views(conn)}
        | {_question_hash(lang, q) for _pid, lang, q in corpus_store.question_views(conn)},
        "span_vectors": {text_key(embed_text(p, span)) for p, spans
                         in zip(passages, passage_spans(passages, passages), strict=True)
                         for span in spans},
    }
    model = model_key(settings)
    out = {table: _cached_embeddings(conn, model, list(wanted), table)
           for table, wanted in keys.items()}
    return out, sum(len(w) for w in keys.values()) - sum(len(v) for v in out.values())
