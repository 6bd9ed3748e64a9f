"""Corpus build against the real PostgreSQL+pgvector and embedding server."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import psycopg
import pytest

from assistant_cli import stack
from corpus_jobs.build import build_index
from corpus_jobs.manifest import load_manifest
from shared import corpus_store
from shared.config import Settings
from tests.conftest import PG_PORT

DB = "corpus_buildtest"


@pytest.fixture()
def build_env(services: stack.Supervisor, settings: Settings, tmp_path: Path
              ) -> tuple[Settings, Path]:
    """A fresh database of its own (the shared test index stays untouched) and a tiny corpus."""
    from shared import keys
    from shared.redis_client import redis_client

    redis_client(settings).delete(keys.CORPUS_REBUILD_LOCK)
    admin = f"postgresql://postgres@127.0.0.1:{PG_PORT}/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    stack.bootstrap_corpus_db(admin, DB, "corpus_owner", "corpus_reader")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\n## One\n\nThe first section.\n\n## Two\n\nSecond.\n")
    (docs / "b.md").write_text("# Beta\n\nBeta explains the best compromise.\n")
    (tmp_path / "m.toml").write_text('name = "t"\nroot = "."\ninclude = ["docs/*.md"]\n')
    s = dataclasses.replace(
        settings,
        corpus_dsn=f"postgresql://corpus_owner@127.0.0.1:{PG_PORT}/{DB}",
        corpus_read_dsn=f"postgresql://corpus_reader@127.0.0.1:{PG_PORT}/{DB}")
    return s, tmp_path


def test_build_is_incremental_and_a_no_op_when_unchanged(build_env: tuple[Settings, Path]
                                                         ) -> None:
    s, root = build_env
    manifest = load_manifest(root / "m.toml")
    first = build_index(s, manifest)
    assert not first.no_op and first.documents == 2
    assert first.passages == 3 and first.embedded == 3  # "# Alpha" has no text of its own

    again = build_index(s, manifest)
    assert again.no_op and again.embedded == 0 and again.version == first.version

    (root / "docs" / "b.md").write_text("# Beta\n\nBeta now says something else.\n")
    changed = build_index(s, manifest)
    assert not changed.no_op and changed.version != first.version
    assert changed.embedded == 1, "only the changed passage is embedded again"

    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        info = corpus_store.current_index(conn)
        assert info.version == changed.version and info.passages == 3
        texts = {p.text for p in corpus_store.all_passages(conn)}
        assert "Beta now says something else." in texts
        assert conn.execute("SELECT count(*) FROM indexes WHERE current").fetchone() == (1,)


def test_reader_role_can_read_but_not_write(build_env: tuple[Settings, Path]) -> None:
    s, root = build_env
    build_index(s, load_manifest(root / "m.toml"))
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM passages").fetchone() == (3,)
        for statement in ("DELETE FROM passages", "UPDATE indexes SET current = false",
                          "DROP TABLE passages", "CREATE TABLE evil (x int)",
                          "SELECT * FROM embedding_cache", "DELETE FROM passage_captions",
                          "DROP TABLE passage_captions"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)


def test_every_span_is_embedded_once_by_the_build_and_the_reader_can_read_them(
        build_env: tuple[Settings, Path]) -> None:
    """The quotes form's spans get their vectors at build time (a turn embeds only its
    question); readable, not writable, by the worker's reader; none embedded twice."""
    from shared.spans import embed_text, passage_spans, text_key

    s, root = build_env
    (root / "docs" / "b.md").write_text(
        "# Beta\n\nBeta explains the best compromise. It is the midpoint of two.\n\n"
        "- The mean counts every opinion.\n- The median ignores the extremes.\n")
    first = build_index(s, load_manifest(root / "m.toml"))
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        passages = corpus_store.all_passages(conn)
        keys = {text_key(embed_text(p, span)) for p, spans in
                zip(passages, passage_spans(passages, passages), strict=True) for span in spans}
        stored = {r[0] for r in conn.execute("SELECT content_hash FROM span_vectors")}
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM span_vectors")
    assert len(keys) >= 4 and keys == stored and first.spans_embedded == len(keys)
    again = build_index(s, load_manifest(root / "m.toml"))
    assert again.no_op and again.spans_embedded == 0, "nothing embedded twice"
    # An index built before span vectors existed gains them on its next (no-op) build.
    with psycopg.connect(s.corpus_dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM span_vectors")
    later = build_index(s, load_manifest(root / "m.toml"))
    assert later.no_op and later.spans_embedded == len(keys)


def test_dense_search_finds_the_matching_passage(build_env: tuple[Settings, Path]) -> None:
    from shared.models import embed

    s, root = build_env
    build_index(s, load_manifest(root / "m.toml"))
    vec = embed(s.embeddings, ["best compromise"], "query", s.embedding_prefix_mode)[0]
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        hits = corpus_store.dense_search(conn, vec, 2)
        best = {p.id: p for p in corpus_store.all_passages(conn)}[hits[0][0]]
    assert best.source == "docs/b.md"
    assert 0 < hits[0][1] <= 1


def test_killed_build_leaves_the_previous_index_serving_and_resumes(
        build_env: tuple[Settings, Path]) -> None:
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO, TEST_ENV

    s, root = build_env
    first = build_index(s, load_manifest(root / "m.toml"))
    # A second corpus large enough that its embedding takes several batches.
    for i in range(12):
        (root / "docs" / f"extra{i}.md").write_text(
            f"# Extra {i}\n\n" + "\n\n".join(f"## Part {j}\n\nFact {i}.{j} about the method."
                                           for j in range(8)))
    env = {**os.environ, **TEST_ENV, "ASSISTANT_CORPUS_DSN": s.corpus_dsn,
           "ASSISTANT_CORPUS_READ_DSN": s.corpus_read_dsn}
    proc = subprocess.Popen([sys.executable, "-m", "assistant_cli.cli", "corpus", "build",
                             "--manifest", str(root / "m.toml")], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    owner = psycopg.connect(s.corpus_dsn, autocommit=True)
    try:
        deadline = time.monotonic() + 60
        cached = 0
        while time.monotonic() < deadline and proc.poll() is None:
            cached = owner.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
            if cached >= 3 + 16:  # at least one batch of the new corpus is stored
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the build finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        owner.close()
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        assert corpus_store.current_index(conn).version == first.version
        assert conn.execute("SELECT count(*) FROM passages").fetchone() == (3,)
    resumed = build_index(s, load_manifest(root / "m.toml"))
    assert not resumed.no_op and resumed.passages == 3 + 12 * 8
    assert resumed.embedded < 12 * 8, "what the killed build stored is not embedded again"
    assert json.dumps(resumed.__dict__)
    from shared import keys
    from shared.redis_client import redis_client

    ttl = redis_client(s).ttl(keys.CORPUS_REBUILD_LOCK)
    assert ttl <= 60, "a killed build's lock is a short lease, not a 3-hour block"


def test_rebuilds_never_overlap(build_env: tuple[Settings, Path]) -> None:
    from corpus_jobs.build import locked_build
    from shared import keys
    from shared.redis_client import redis_client

    s, root = build_env
    lock = redis_client(s).lock(keys.CORPUS_REBUILD_LOCK, timeout=30)
    assert lock.acquire(blocking=False)
    try:
        assert locked_build(s, load_manifest(root / "m.toml")) is None
    finally:
        lock.release()
    report = locked_build(s, load_manifest(root / "m.toml"))
    assert report is not None and not report.no_op


def test_the_rebuild_lock_is_renewed_while_a_long_build_runs(
        build_env: tuple[Settings, Path], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    import time

    from corpus_jobs import build
    from shared import keys
    from shared.redis_client import redis_client

    s, root = build_env
    r = redis_client(s)
    held: list[int] = []

    def slow_build(*_args: object, **_kwargs: object) -> str:
        # Three lease lengths: the lock must still be there at the end, renewed by its thread.
        for _ in range(9):
            time.sleep(0.35)
            held.append(int(r.exists(keys.CORPUS_REBUILD_LOCK)))
        return "built"

    monkeypatch.setattr(build, "LOCK_LEASE_S", 1)
    monkeypatch.setattr(build, "build_index", slow_build)
    assert build.locked_build(s, load_manifest(root / "m.toml")) == "built"
    assert held == [1] * 9, held
    assert not r.exists(keys.CORPUS_REBUILD_LOCK)
    assert "rebuild lock" not in caplog.text


def test_worker_rebuilds_bm25_once_per_new_index_version(build_env: tuple[Settings, Path]
                                                         ) -> None:
    from worker.pipeline.bm25 import lexical_index

    s, root = build_env
    v1 = build_index(s, load_manifest(root / "m.toml")).version
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        a = lexical_index(conn, v1)
        assert lexical_index(conn, v1) is a, "same version: cached"
        (root / "docs" / "c.md").write_text("# Gamma\n\nNew words: zebra.\n")
        v2 = build_index(s, load_manifest(root / "m.toml")).version
        b = lexical_index(conn, v2)
        assert b is not a and b.version == v2
        assert b.top("zebra", 3)[0][0] in b.by_id


def test_run_waits_for_a_build_that_holds_the_lock(
        build_env: tuple[Settings, Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """docs/spec/behaviour.md B-10: `run`'s start-up build takes the lock the CLI and beat share:
    while another build holds it, run waits, then builds."""
    import threading
    import time

    from assistant_cli import run
    from shared import keys
    from shared.redis_client import redis_client

    s, root = build_env
    s = dataclasses.replace(s, corpus_manifest=str(root / "m.toml"))
    monkeypatch.setattr(run, "BUILD_POLL_S", 0.1)
    lock = redis_client(s).lock(keys.CORPUS_REBUILD_LOCK, timeout=30, thread_local=False)
    assert lock.acquire(blocking=False)
    threading.Timer(1.0, lock.release).start()
    started = time.monotonic()
    run.build_default_index(s)
    assert time.monotonic() - started >= 0.9, "it did not wait for the lock"
    err = capsys.readouterr()
    assert "another index build is running" in err.err and "built" in err.out
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM passages").fetchone() == (3,)
