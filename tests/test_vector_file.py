"""The vectors file shipped next to a manifest (corpus_jobs/vector_file.py): a first build
takes its vectors instead of asking the embeddings role, a changed passage is embedded anew,
and `corpus vectors --export` writes it; against the real PostgreSQL+pgvector and embedding
server."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import psycopg
import pytest

from assistant_cli import stack
from assistant_cli.cli import main
from corpus_jobs.build import build_index
from corpus_jobs.manifest import load_manifest
from corpus_jobs.vector_file import ShippedVectors, dump_vector_file, load_vector_file
from shared import corpus_store
from shared.config import Settings
from shared.errors import ConfigError
from tests.conftest import PG_PORT
from tests.test_captions import DOCS, _with_questions

DB = "corpus_vectortest"
ADMIN = f"postgresql://postgres@127.0.0.1:{PG_PORT}/postgres"


def _fresh_database() -> None:
    """The corpus database of a new machine: no index, empty caches."""
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    stack.bootstrap_corpus_db(ADMIN, DB, "corpus_owner", "corpus_reader")


@pytest.fixture()
def corpus(services: stack.Supervisor, settings: Settings, tmp_path: Path
           ) -> tuple[Settings, Path]:
    """A database of its own and a tiny corpus whose manifest names a questions file."""
    from shared import keys
    from shared.redis_client import redis_client

    redis_client(settings).delete(keys.CORPUS_REBUILD_LOCK)
    _fresh_database()
    (tmp_path / "docs").mkdir()
    for name, text in DOCS.items():
        (tmp_path / "docs" / name).write_text(text)
    (tmp_path / "m.toml").write_text('name = "t"\nroot = "."\ninclude = ["docs/*.md"]\n')
    s = dataclasses.replace(
        settings, corpus_dsn=f"postgresql://corpus_owner@127.0.0.1:{PG_PORT}/{DB}",
        corpus_read_dsn=f"postgresql://corpus_reader@127.0.0.1:{PG_PORT}/{DB}")
    s, _manifest = _with_questions(s, tmp_path, english=True)
    return dataclasses.replace(s, question_views=("en", "cs")), tmp_path


def _served(s: Settings) -> dict[str, np.ndarray]:
    """Every vector the serving index searches, by what it is a vector of."""
    with corpus_store.connect(s.corpus_dsn, autocommit=True) as conn:
        rows = conn.execute(f"SELECT 'p ' || id, embedding FROM {corpus_store.LIVE_TABLE} "
                            f"UNION ALL SELECT 'q ' || id || lang || question, embedding "
                            f"FROM {corpus_store.QUESTIONS_TABLE}").fetchall()
    return {k: np.asarray(v.to_numpy(), dtype=np.float32) for k, v in rows}


def _span_count(s: Settings) -> int:
    with corpus_store.connect(s.corpus_dsn, autocommit=True) as conn:
        return int(conn.execute("SELECT count(*) FROM span_vectors").fetchone()[0])


def test_a_first_build_takes_the_file_and_a_rebuild_embeds_only_the_changed_passage(
        corpus: tuple[Settings, Path], capsys: pytest.CaptureFixture[str]) -> None:
    s, root = corpus
    first = build_index(s, load_manifest(root / "m.toml"))
    assert first.embedded == 4 and first.questions_embedded == 8 and first.spans_embedded > 0
    before, spans = _served(s), _span_count(s)
    out = root / "t.vectors.npz"
    assert main(["corpus", "vectors", "--export", str(out), "--dsn", s.corpus_dsn]) == 0
    assert f"exported {4 + 8 + spans} vectors" in capsys.readouterr().out
    shipped = load_vector_file(out)
    assert shipped.model == f"{s.embeddings.model}|{s.embedding_prefix_mode}"
    assert shipped.count() == 4 + 8 + spans

    # A new machine: an empty database, the manifest naming the file, and an embeddings role
    # nobody answers, so a build that asked it for any vector would fail.
    _fresh_database()
    with (root / "m.toml").open("a") as f:
        f.write('vectors = "t.vectors.npz"\n')
    nobody = dataclasses.replace(s.embeddings, base_url="http://127.0.0.1:9/v1")
    second = build_index(dataclasses.replace(s, embeddings=nobody), load_manifest(root / "m.toml"))
    assert (second.embedded, second.questions_embedded, second.spans_embedded) == (0, 0, 0)
    assert second.vectors_from_file == 4 + 8 + spans and _span_count(s) == spans
    after = _served(s)
    assert after.keys() == before.keys()
    assert all(float(before[k] @ after[k]) > 0.9999 for k in before), "float16 keeps the vectors"

    # One passage edited: the real embeddings role embeds that passage and its spans alone.
    (root / "docs" / "c.md").write_text(DOCS["c.md"].replace("maximum error", "largest error"))
    third = build_index(s, load_manifest(root / "m.toml"))
    assert (third.embedded, third.questions_embedded, third.vectors_from_file) == (1, 0, 0)
    assert third.spans_embedded == 1, "Gamma's one sentence"


def test_a_file_of_another_model_gives_nothing_and_a_malformed_one_is_refused(
        tmp_path: Path) -> None:
    path = tmp_path / "v.npz"
    dump_vector_file(path, "e5|input_type", "2026-12-04", "by a test", "t",
                     {"embedding_cache": {"a" * 64: [0.6, 0.8]}})
    assert load_vector_file(path).count() == 1
    shipped = ShippedVectors(path)
    assert shipped.take("embedding_cache", "other|input_type", ["a" * 64]) == {}
    got = shipped.take("embedding_cache", "e5|input_type", ["a" * 64, "b" * 64])
    assert list(got) == ["a" * 64] and shipped.used == 1
    assert np.allclose(got["a" * 64], [0.6, 0.8], atol=1e-3)
    (tmp_path / "bad.npz").write_bytes(b"not a vectors file")
    with pytest.raises(ConfigError, match="cannot read the vectors file .*bad.npz"):
        load_vector_file(tmp_path / "bad.npz")


def test_the_shipped_become_vectors_cover_the_shipped_corpus(
        services: stack.Supervisor, settings: Settings) -> None:
    """A first build of the BeCoMe corpus asks the embedder nothing: after a change to the
    corpus, its captions or its questions, `corpus vectors --export` writes the file again."""
    from corpus_jobs.build import served_vectors
    from shared import keys
    from shared.redis_client import redis_client

    redis_client(settings).delete(keys.CORPUS_REBUILD_LOCK)
    _fresh_database()
    repo = Path(__file__).resolve().parent.parent
    s = dataclasses.replace(
        settings, corpus_dsn=f"postgresql://corpus_owner@127.0.0.1:{PG_PORT}/{DB}",
        corpus_read_dsn=f"postgresql://corpus_reader@127.0.0.1:{PG_PORT}/{DB}",
        embeddings=dataclasses.replace(settings.embeddings, base_url="http://127.0.0.1:9/v1"))
    report = build_index(s, load_manifest(repo / "corpus_jobs/manifests/become.toml"))
    assert (report.embedded, report.questions_embedded) == (0, 0)
    with corpus_store.connect(s.corpus_dsn, autocommit=True) as conn:
        rows, lacking = served_vectors(conn, s)
    assert lacking == 0, f"{lacking} vectors of the BeCoMe index are not in the vectors file"
    assert report.vectors_from_file == sum(len(r) for r in rows.values())
