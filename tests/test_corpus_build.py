"""Corpus build against the real PostgreSQL+pgvector and embedding server."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import psycopg
import pytest

from corpus_jobs import stack
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
                          "SELECT * FROM embedding_cache"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)


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
