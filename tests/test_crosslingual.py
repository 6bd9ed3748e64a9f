"""Cross-lingual retrieval (issue 12): the interface-text dictionary, English slots for a
Czech question, the few-shot translation step against the scripted server, and the whole
path against the real PostgreSQL+pgvector and embedding server."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import psycopg
import pytest

from corpus_jobs import stack
from corpus_jobs.build import build_index, collect
from corpus_jobs.manifest import load_manifest
from shared import corpus_store
from shared.config import ModelRole, Settings
from shared.errors import ModelError
from tests.conftest import PG_PORT, REPO, set_script
from worker.pipeline.lexicon import aligned_pairs, learn
from worker.pipeline.retrieve import RetrievalConfig, reserve_slots, retrieve
from worker.pipeline.rewrite import translate_fewshot

CS = "frontend/src/i18n/locales/cs/auth.json"
EN = "frontend/src/i18n/locales/en/auth.json"

# Twin interface strings: "heslo" keeps meeting "password", "účet" keeps meeting "account".
TWINS = {
    "login": ({"password": "Heslo", "forgot": "Zapomněli jste heslo?",
               "account": "Nemáte účet?", "create": "Vytvořit účet"},
              {"password": "Password", "forgot": "Forgot your password?",
               "account": "No account yet?", "create": "Create account"}),
    "reset": ({"title": "Obnovit heslo", "done": "Heslo bylo změněno",
               "delete": "Smazat účet", "deleted": "Účet byl smazán"},
              {"title": "Reset password", "done": "Password was changed",
               "delete": "Delete account", "deleted": "Account was deleted"}),
}


def test_twins_pair_by_file_and_key_path() -> None:
    passages = [(CS, "login", "password: Heslo\ncreate: Vytvořit účet"),
                (EN, "login", "password: Password\ncreate: Create account"),
                ("frontend/src/i18n/locales/en/other.json", "login", "password: Nope"),
                ("docs/a.md", "# A", "password: not a locale file")]
    assert sorted(aligned_pairs(passages)) == [("Heslo", "Password"),
                                               ("Vytvořit účet", "Create account")]


def test_dictionary_learns_word_pairs_and_expands_a_czech_question() -> None:
    pairs = [(cs[k], en[k]) for cs, en in TWINS.values() for k in cs]
    lexicon = learn(pairs)
    assert lexicon.entries["heslo"][0] == "password"
    assert lexicon.entries["účet"][0] == "account"
    terms = lexicon.expand("Jak si změním heslo ke svému účtu na Railway?").split()
    assert "password" in terms and "account" in terms
    assert "railway" in terms, "an unknown word (a name) is kept as written"
    assert "jak" not in terms, "function words are dropped"


def test_dictionary_from_the_become_interface_texts() -> None:
    passages, _, _ = collect(load_manifest(REPO / "corpus_jobs/manifests/become.toml"))
    lexicon = learn(aligned_pairs((p.source, p.section, p.text) for p in passages))
    assert lexicon.pairs > 500
    for cs, en in (("heslo", "password"), ("projekt", "project"), ("pozvánka", "invitation"),
                   ("medián", "median"), ("škála", "scale")):
        assert en in lexicon.entries[cs], (cs, lexicon.entries.get(cs))


def test_english_slots_move_the_best_english_passage_into_the_top_k() -> None:
    langs = {"c1": "cs", "c2": "cs", "c3": "cs", "e1": "en", "e2": "en"}
    ranked = [("c1", .9), ("c2", .8), ("c3", .7), ("e1", .6), ("e2", .5)]
    out = [pid for pid, _ in reserve_slots(ranked, langs, top_k=3, slots=1)]
    assert out == ["c1", "c2", "e1", "c3", "e2"]
    out = [pid for pid, _ in reserve_slots(ranked, langs, top_k=3, slots=2)]
    assert out == ["c1", "e1", "e2", "c2", "c3"]
    # Enough English already in the top k, or none to bring: unchanged.
    mixed = [("e1", .9), ("c1", .8), ("c2", .7), ("e2", .6)]
    assert reserve_slots(mixed, langs, top_k=3, slots=1) == mixed
    only_cs = [("c1", .9), ("c2", .8), ("c3", .7)]
    assert reserve_slots(only_cs, langs, top_k=2, slots=1) == only_cs


def test_fewshot_translation_against_the_scripted_server(scripted_llm: str) -> None:
    role = ModelRole("translation", "local", "scripted", f"{scripted_llm}/v1")
    set_script(scripted_llm, [" How do I change my password?\nCzech: extra line"])
    assert translate_fewshot(role, "Jak si  změním\nheslo?") == "How do I change my password?"
    from corpus_jobs.client import http_json

    _, seen = http_json("GET", f"{scripted_llm}/_requests")
    body = seen[-1]["body"]
    assert body["temperature"] == 0 and body["stop"] == ["\n"]
    assert body["prompt"].endswith("Czech: Jak si změním heslo?\nEnglish:")
    set_script(scripted_llm, ["\n"])
    assert translate_fewshot(role, "Jak?") == "Jak?", "nothing back: search the original"
    set_script(scripted_llm, ["x"], status=500)
    with pytest.raises(ModelError):
        translate_fewshot(role, "Jak?")


DB = "corpus_crosslingual"


@pytest.fixture()
def twin_corpus(services: stack.Supervisor, settings: Settings, tmp_path: Path) -> Settings:
    """A database of its own with a tiny corpus: locale twins and one English page."""
    from shared import keys
    from shared.redis_client import redis_client

    redis_client(settings).delete(keys.CORPUS_REBUILD_LOCK)
    admin = f"postgresql://postgres@127.0.0.1:{PG_PORT}/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    stack.bootstrap_corpus_db(admin, DB, "corpus_owner", "corpus_reader")
    for lang, index in (("cs", 0), ("en", 1)):
        folder = tmp_path / "frontend/src/i18n/locales" / lang
        folder.mkdir(parents=True)
        data = {group: texts[index] for group, texts in TWINS.items()}
        (folder / "auth.json").write_text(json.dumps(data, ensure_ascii=False))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/security.md").write_text(
        "# Security\n\n## Password storage\n\nYour password is stored as a bcrypt hash, never "
        "as the password itself; a changed password replaces the hash.\n\n## Cookies\n\n"
        "The session cookie is httpOnly.\n")
    (tmp_path / "m.toml").write_text(
        'name = "t"\nroot = "."\ninclude = ["docs/*.md", "frontend/src/i18n/locales/*/*.json"]'
        '\nlanguage = "en"\nlanguages = [{ glob = "frontend/src/i18n/locales/cs/*", '
        'lang = "cs" }]\n')
    s = dataclasses.replace(
        settings,
        corpus_dsn=f"postgresql://corpus_owner@127.0.0.1:{PG_PORT}/{DB}",
        corpus_read_dsn=f"postgresql://corpus_reader@127.0.0.1:{PG_PORT}/{DB}")
    build_index(s, load_manifest(tmp_path / "m.toml"))
    return s


def test_czech_question_reaches_the_english_page(twin_corpus: Settings) -> None:
    question = "Jak se ukládá moje heslo? Je zašifrované?"
    plain = RetrievalConfig(top_k=2)
    cross = RetrievalConfig(top_k=2, expand_czech=True, english_slots=1)
    with corpus_store.connect(twin_corpus.corpus_read_dsn, autocommit=True) as conn:
        found = retrieve(conn, twin_corpus, question, config=cross, language="cs")
        assert any(p.source == "docs/security.md" for p in found.passages), found.passages
        assert len(found.passages) == 2
        # The cross-lingual help is for Czech questions only: English ones rank as before.
        english = "How is my password stored?"
        assert retrieve(conn, twin_corpus, english, config=cross, language="en").passages \
            == retrieve(conn, twin_corpus, english, config=plain, language="en").passages
