"""What `run` and `corpus build` check before any build: the CPU, pgvector, the database, the corpus."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from assistant_cli import run, stack
from corpus_jobs.manifest import load_manifest
from tests.conftest import PG_PORT, REPO, TEST_ENV

ADMIN = f"postgresql://postgres@127.0.0.1:{PG_PORT}/postgres"


def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    full.update(TEST_ENV, **env)
    return subprocess.run([sys.executable, "-m", "assistant_cli.cli", *args], cwd=REPO, env=full,
                          capture_output=True, text=True, timeout=300)


def test_corpus_build_creates_a_missing_database_with_its_roles(
        services: stack.Supervisor, tmp_path: Path) -> None:
    db = "corpus_created_by_build"
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Alpha\n\n## One\n\nThe best compromise mean.\n")
    (tmp_path / "m.toml").write_text('name = "t"\nroot = "."\ninclude = ["docs/*.md"]\n')
    proc = cli("corpus", "build", "--manifest", str(tmp_path / "m.toml"),
               "--dsn", f"postgresql://corpus_owner@127.0.0.1:{PG_PORT}/{db}")
    assert proc.returncode == 0, proc.stderr
    assert "built" in proc.stdout and "1 passages" in proc.stdout, proc.stdout
    reader = f"postgresql://corpus_reader@127.0.0.1:{PG_PORT}/{db}"
    with psycopg.connect(reader) as conn:
        assert conn.execute("SELECT count(*) FROM passages").fetchone()[0] == 1
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE nope (x int)")


def test_a_missing_database_without_admin_access_says_what_to_create(
        services: stack.Supervisor) -> None:
    # The test PostgreSQL has no role "nobody_admin": as if no admin connection were allowed.
    # The message names the database, the roles and the statements to run.
    with pytest.raises(stack.StackError) as err:
        stack.ensure_corpus_database(
            f"postgresql://corpus_owner@127.0.0.1:{PG_PORT}/corpus_nowhere",
            f"postgresql://corpus_reader@127.0.0.1:{PG_PORT}/corpus_nowhere",
            admin_user="nobody_admin")
    text = str(err.value)
    assert 'database "corpus_nowhere" does not exist' in text
    assert "CREATE DATABASE corpus_nowhere OWNER corpus_owner" in text
    assert "CREATE EXTENSION vector" in text


def test_an_unreachable_server_is_not_called_a_missing_database() -> None:
    with pytest.raises(stack.StackError, match="does not answer"):
        stack.ensure_corpus_database("postgresql://corpus_owner@127.0.0.1:9/corpus",
                                     "postgresql://corpus_reader@127.0.0.1:9/corpus")


def test_vector_probe_passes_on_the_bundled_postgres(services: stack.Supervisor) -> None:
    stack.probe_vector(TEST_ENV["ASSISTANT_CORPUS_DSN"])


def test_vector_probe_names_a_missing_extension(services: stack.Supervisor) -> None:
    # The machine's PostgreSQL 15 on 5432 has no pgvector installed.
    try:
        psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", connect_timeout=3).close()
    except psycopg.OperationalError:
        pytest.fail("the machine's PostgreSQL on 5432 should answer (the kind starts it)")
    with pytest.raises(stack.StackError) as err:
        stack.probe_vector("postgresql://postgres@127.0.0.1:5432/postgres")
    assert "pgvector" in str(err.value) and "Fix:" in str(err.value)
    assert "Traceback" not in str(err.value)


@pytest.mark.parametrize("log, expected", [
    ("LOG:  server process (PID 812) was terminated by signal 4: Illegal instruction",
     "illegal instruction (signal 4)"),
    ("", "PostgreSQL died while running a vector operation"),
])
def test_a_dead_backend_is_explained_in_one_sentence(log: str, expected: str) -> None:
    error = ("server closed the connection unexpectedly\n\tThis probably means the server "
             "terminated abnormally\n\tbefore or while processing the request.")
    text = stack.explain_vector_failure(error, log)
    assert expected in text and "Fix:" in text and "\n" not in text


def test_missing_cpu_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 avx fma\n")
    assert stack.missing_cpu_flags(info) == ["avx2", "f16c"]
    info.write_text("processor\t: 0\nflags\t\t: fpu avx avx2 fma f16c avx512f\n")
    assert stack.missing_cpu_flags(info) == []
    assert stack.missing_cpu_flags() == []  # this machine runs the bundled binaries


def test_run_serves_the_become_docs_when_at_hand_and_says_so(tmp_path: Path) -> None:
    docs = tmp_path / "become"
    (docs / "docs").mkdir(parents=True)
    (docs / "README.md").write_text("# BeCoMe\n\nBest Compromise Mean.\n")
    at_hand = {"ASSISTANT_BECOME_DOCS": str(docs)}
    old = dict(os.environ)
    try:
        os.environ.update(at_hand)
        assert run.choose_manifest(None, {}) == run.BECOME_MANIFEST
        assert load_manifest(run.BECOME_MANIFEST).root == docs.resolve()
        assert "the BeCoMe documentation" in run.describe_corpus(run.BECOME_MANIFEST)
        assert run.choose_manifest("x.toml", {}) == "x.toml"
        assert run.choose_manifest(None, {"ASSISTANT_CORPUS_MANIFEST": "y.toml"}) == "y.toml"
        os.environ["ASSISTANT_BECOME_DOCS"] = str(tmp_path / "nowhere")
        assert run.choose_manifest(None, {}) == run.DEFAULT_MANIFEST
        line = run.describe_corpus(run.DEFAULT_MANIFEST)
        assert "the assistant's own documentation" in line and "was not found" in line
    finally:
        os.environ.clear()
        os.environ.update(old)
