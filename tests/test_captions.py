"""Captions for indexing: the shipped file, the cache, the caption role, the
`corpus captions` command, and what the answer model and the checks see, against the real
PostgreSQL+pgvector and embedding server."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import psycopg
import pytest

from assistant_cli import stack
from assistant_cli.cli import main
from corpus_jobs.build import build_index, load_pieces
from corpus_jobs.caption_file import CaptionFile, Entry, dump_caption_file, load_caption_file
from corpus_jobs.captions import caption_key
from corpus_jobs.manifest import Manifest, load_manifest
from corpus_jobs.questions import Entry as QEntry
from corpus_jobs.questions import QuestionFile, dump_question_file
from shared import corpus_store
from shared.config import ModelRole, Settings
from tests.conftest import PG_PORT, set_script

DB = "corpus_captiontest"
DOCS = {
    "a.md": "# Alpha\n\n## One\n\nThe first section explains the opinion form.\n\n## Two\n\n"
            "The second section explains invitations.\n",
    "b.md": "# Beta\n\nBeta explains the best compromise.\n",
    "c.md": "# Gamma\n\nGamma explains the maximum error.\n",
}


@pytest.fixture()
def corpus(services: stack.Supervisor, settings: Settings, tmp_path: Path
           ) -> tuple[Settings, Path]:
    """A database of its own, a tiny corpus and a manifest naming its captions file."""
    from shared import keys
    from shared.redis_client import redis_client

    redis_client(settings).delete(keys.CORPUS_REBUILD_LOCK)
    admin = f"postgresql://postgres@127.0.0.1:{PG_PORT}/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    stack.bootstrap_corpus_db(admin, DB, "corpus_owner", "corpus_reader")
    (tmp_path / "docs").mkdir()
    for name, text in DOCS.items():
        (tmp_path / "docs" / name).write_text(text)
    (tmp_path / "m.toml").write_text('name = "t"\nroot = "."\ninclude = ["docs/*.md"]\n'
                                     'captions = "t.captions.json"\n')
    s = dataclasses.replace(
        settings, caption_languages=("en", "cs"),
        corpus_dsn=f"postgresql://corpus_owner@127.0.0.1:{PG_PORT}/{DB}",
        corpus_read_dsn=f"postgresql://corpus_reader@127.0.0.1:{PG_PORT}/{DB}")
    return s, tmp_path


def write_file(root: Path, only: tuple[str, ...] | None = None, label: str = "t-captions",
               name: str = "t.captions.json") -> dict[str, tuple[str, str]]:
    """A captions file for the corpus's pieces (those of `only` sources); (en, cs) by key."""
    pieces, _, _ = load_pieces(load_manifest(root / "m.toml"))
    written = {}
    for p in pieces:
        if only is None or p.source in only:
            tag = f"{p.source}#{p.section.split('> ')[-1]}"
            written[caption_key(p)] = (f"EN caption of {tag}.", f"CS popisek {tag}.")
    dump_caption_file(root / name, CaptionFile(label, "2026-12-02", "by a test", {
        k: Entry("", "", {"en": en, "cs": cs}) for k, (en, cs) in written.items()}), "t")
    # The places too, as the shipped file has them: the build tells a changed passage by them.
    data = json.loads((root / name).read_text())
    for p in pieces:
        if caption_key(p) in data["captions"]:
            data["captions"][caption_key(p)].update(source=p.source, section=p.section)
    (root / name).write_text(json.dumps(data))
    return written


def index_texts(s: Settings) -> dict[str, str]:
    """source | section -> index text of the serving index."""
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        return {f"{p.source} | {p.section}": p.index_text
                for p in corpus_store.all_passages(conn)}


def test_a_rebuild_after_editing_one_document_loses_exactly_its_changed_captions(
        corpus: tuple[Settings, Path]) -> None:
    s, root = corpus
    write_file(root)
    # A caption role nobody answers: a build that asked it anything would fail.
    nobody = ModelRole("captions", "local", "nobody", "http://127.0.0.1:9/v1")
    manifest = load_manifest(root / "m.toml")
    first = build_index(dataclasses.replace(s, captions=nobody), manifest)
    assert first.caption_calls == 0, "every caption came from the file: no model call"
    assert first.captions == {"file": 4, "cache": 0, "role": 0, "none": 0, "changed": 0,
                              "stale": 0}
    before = index_texts(s)
    assert all(t.startswith("EN caption of ") and "\nCS popisek " in t for t in before.values())

    (root / "docs" / "a.md").write_text(DOCS["a.md"].replace("invitations", "the invitations"))
    again = build_index(s, manifest)  # no caption role: the changed passage stays without
    assert again.caption_calls == 0 and again.embedded == 1
    assert again.captions == {"file": 3, "cache": 0, "role": 0, "none": 1, "changed": 1,
                              "stale": 1}
    after = index_texts(s)
    changed = "docs/a.md | # Alpha > ## Two"
    assert after[changed] == "Alpha > # Alpha > ## Two\nThe second section explains the " \
        "invitations.", "no caption, never the stale one"
    assert {k: v for k, v in after.items() if k != changed} == \
        {k: v for k, v in before.items() if k != changed}, "every other caption kept"
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        views = corpus_store.caption_views(conn)
    assert len(views) == 6 and not any("a.md#Two" in c for _pid, _lang, c in views), \
        "the views (English and Czech) lose exactly the changed passage's captions"


def test_the_build_takes_the_file_then_the_cache_then_the_caption_role(
        corpus: tuple[Settings, Path], scripted_llm: str, capsys: pytest.CaptureFixture[str]
        ) -> None:
    from assistant_cli.client import http_json

    s, root = corpus
    write_file(root, only=("docs/a.md",))
    write_file(root, only=("docs/b.md",), label="imported", name="other.json")
    env_dsn = ["--dsn", s.corpus_dsn, "--languages", "en,cs"]
    assert main(["corpus", "captions", "--manifest", str(root / "m.toml"), "--import",
                 str(root / "other.json"), *env_dsn]) == 0
    assert "imported 2 captions of 1 passages" in capsys.readouterr().out
    assert main(["corpus", "captions", "--manifest", str(root / "m.toml"), *env_dsn]) == 0
    listed = capsys.readouterr().out
    assert "docs/c.md | # Gamma  (no en, cs caption)" in listed
    assert "1 of 4 passages lack a caption in en+cs" in listed
    # --write without a caption role says what to set and writes nothing.
    assert main(["corpus", "captions", "--manifest", str(root / "m.toml"), "--write",
                 *env_dsn]) == 2
    assert "no caption role is configured" in capsys.readouterr().err

    role = ModelRole("captions", "local", "scripted-captions", f"{scripted_llm}/v1")
    s = dataclasses.replace(s, captions=role)
    set_script(scripted_llm, ["A written caption."])
    _, seen = http_json("GET", f"{scripted_llm}/_requests")
    report = build_index(s, load_manifest(root / "m.toml"))
    assert report.captions == {"file": 2, "cache": 1, "role": 1, "none": 0, "changed": 0,
                               "stale": 0}
    assert report.caption_calls == 2, "one English and one Czech caption for docs/c.md"
    _, now = http_json("GET", f"{scripted_llm}/_requests")
    prompts = [r["body"]["messages"][0]["content"] for r in now[len(seen):]
               if "messages" in r["body"]]
    assert len(prompts) == 2 and all("Gamma explains the maximum error." in p for p in prompts)
    assert "plain Czech sentences" in prompts[1]
    texts = index_texts(s)
    assert texts["docs/a.md | # Alpha > ## One"].startswith("EN caption of docs/a.md")
    assert texts["docs/b.md | # Beta"].startswith("EN caption of docs/b.md")
    assert texts["docs/c.md | # Gamma"].startswith("A written caption.\nA written caption.")
    # Nothing changed: a no-op, and the role's captions are cached (no new call).
    again = build_index(s, load_manifest(root / "m.toml"))
    assert again.no_op and again.caption_calls == 0
    assert again.captions["cache"] == 2 and again.captions["role"] == 0

    out = root / "exported.json"
    assert main(["corpus", "captions", "--manifest", str(root / "m.toml"), "--export",
                 str(out), *env_dsn]) == 0
    exported = load_caption_file(out)
    assert len(exported.entries) == 4
    assert {e.source for e in exported.entries.values()} == {"docs/a.md", "docs/b.md",
                                                              "docs/c.md"}
    assert all(set(e.captions) == {"en", "cs"} for e in exported.entries.values())


def test_captions_off_and_english_only(corpus: tuple[Settings, Path]) -> None:
    s, root = corpus
    write_file(root)
    manifest = load_manifest(root / "m.toml")
    off = build_index(dataclasses.replace(s, caption_languages=(), caption_views=()), manifest)
    assert off.captions["none"] == 4
    assert not any("caption" in t for t in index_texts(s).values())
    en = build_index(dataclasses.replace(s, caption_languages=("en",), caption_views=()),
                     manifest)
    assert en.version != off.version and en.captions["file"] == 4
    texts = index_texts(s)
    assert all(t.startswith("EN caption") and "CS popisek" not in t for t in texts.values())


def test_the_answer_model_sees_only_the_passage_text_and_the_checks_ground_on_it(
        corpus: tuple[Settings, Path]) -> None:
    from shared.turn_request import TurnRequest
    from worker.evaluation_presets import ResearchConfig
    from worker.pipeline.prompt import build_messages
    from worker.pipeline.retrieve import retrieve
    from worker.pipeline.structured import verify
    from worker.pipeline.turn import run_checks

    s, root = corpus
    with (root / "m.toml").open("a") as f:
        f.write('questions = "t.questions.json"\n')
    pieces, _, _ = load_pieces(load_manifest(root / "m.toml"))
    gamma = next(p for p in pieces if p.source == "docs/c.md")
    caption = "Delta-max is capped at 4711 experts, said only in this caption."
    dump_caption_file(root / "t.captions.json", CaptionFile("t", "2026-12-02", "by a test", {
        caption_key(gamma): Entry(gamma.source, gamma.section, {"en": caption})}), "t")
    # A question view that names a number no passage says: searched, never seen, never proof.
    view = "Is Delta-max capped at 9413 experts?"
    dump_question_file(root / "t.questions.json", QuestionFile("t", "2026-12-02", "by a test", {
        caption_key(gamma): QEntry(gamma.source, gamma.section, {"en": (view,)})}), "t")
    s = dataclasses.replace(s, question_views=("en",))
    build_index(s, load_manifest(root / "m.toml"))
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        assert [q for _pid, _lang, q in corpus_store.question_views(conn)] == [view]
        retrieval = retrieve(conn, s, "How many experts is Delta-max capped at?",
                             config=ResearchConfig(question_en=1.0))
    found = [p for p in retrieval.passages if p.source == "docs/c.md"]
    assert found and caption in found[0].index_text, "the caption is searched"
    assert view not in found[0].index_text and "9413" not in found[0].index_text
    n = retrieval.passages.index(found[0]) + 1
    question = "How many experts is Delta-max capped at?"
    messages = build_messages(question, (), retrieval, "en")
    sent = "\n".join(m["content"] for m in messages)
    assert "Gamma explains the maximum error." in sent
    assert "4711" not in sent and "only in this caption" not in sent
    assert "9413" not in sent and view not in sent, "the answer model never sees a question view"
    req = TurnRequest(turn="t" * 32, user="u", message=question, language="en",
                      mode="workflow")
    checks = run_checks(f"It is capped at 4711 or 9413 experts [{n}].", retrieval, req, None,
                        True)
    assert checks["numbers"]["unconfirmed"] == ["4711", "9413"], \
        "neither a caption nor a question view grounds a number"
    raw = json.dumps({"answer": "x", "outcome": "answer", "sources": [], "quotes": [
        {"n": n, "text": "capped at 4711 experts"},
        {"n": n, "text": "capped at 9413 experts"},
        {"n": n, "text": "explains the maximum error"}]})
    quotes = verify(raw, "x", retrieval).quotes
    assert [q["found"] for q in quotes] == [False, False, True], \
        "neither a caption nor a question view grounds a quote"


def test_caption_languages_setting() -> None:
    from shared.config import settings_from_env
    from shared.errors import ConfigError

    assert settings_from_env({}).caption_languages == ("en",), "measured: English only"
    assert settings_from_env({"ASSISTANT_CAPTION_LANGUAGES": "en,cs"}).caption_languages == \
        ("en", "cs")
    assert settings_from_env({"ASSISTANT_CAPTION_LANGUAGES": "off"}).caption_languages == ()
    assert settings_from_env({"ASSISTANT_CAPTION_LANGUAGES": " EN "}).caption_languages == ("en",)
    with pytest.raises(ConfigError, match="ASSISTANT_CAPTION_LANGUAGES"):
        settings_from_env({"ASSISTANT_CAPTION_LANGUAGES": "en,de"})
    assert settings_from_env({}).caption_views == ("en", "cs"), "measured: both views"
    assert settings_from_env({"ASSISTANT_CAPTION_VIEWS": "off"}).caption_views == ()
    with pytest.raises(ConfigError, match="ASSISTANT_CAPTION_VIEWS"):
        settings_from_env({"ASSISTANT_CAPTION_VIEWS": "de"})


def test_a_malformed_captions_file_is_refused_with_its_path(tmp_path: Path) -> None:
    from shared.errors import ConfigError

    bad = tmp_path / "bad.captions.json"
    bad.write_text('{"captions": {}}')
    with pytest.raises(ConfigError, match="bad.captions.json"):
        load_caption_file(bad)


def test_the_shipped_become_captions_cover_every_passage_in_both_languages() -> None:
    repo = Path(__file__).resolve().parent.parent
    manifest = load_manifest(repo / "corpus_jobs/manifests/become.toml")
    assert manifest.captions == repo / "corpus_jobs/manifests/become.captions.json"
    shipped = load_caption_file(manifest.captions)
    assert shipped.written == "2026-12-02" and "never from an evaluation question" in shipped.how
    assert all(set(e.captions) == {"en", "cs"} for e in shipped.entries.values())
    assert all(0 < len(c) <= 400 for e in shipped.entries.values() for c in e.captions.values())
    pieces, _, _ = load_pieces(manifest)
    assert {caption_key(p) for p in pieces} == set(shipped.entries)


def test_czech_captions_kept_as_a_view_of_their_own_and_an_index_without_them_serves(
        corpus: tuple[Settings, Path]) -> None:
    from worker.evaluation_presets import ResearchConfig
    from worker.pipeline.retrieve import rank
    from worker.pipeline.vectors import cached_vectors

    s, root = corpus
    s = dataclasses.replace(s, caption_languages=("en",))
    write_file(root)
    pieces, _, _ = load_pieces(load_manifest(root / "m.toml"))
    gamma = next(p for p in pieces if p.source == "docs/c.md")
    data = json.loads((root / "t.captions.json").read_text())
    data["captions"][caption_key(gamma)]["cs"] = "Největší odchylka kompromisu od průměru."
    (root / "t.captions.json").write_text(json.dumps(data, ensure_ascii=False))
    manifest = load_manifest(root / "m.toml")
    question = "Jak velká je největší odchylka kompromisu od průměru?"
    heavy = ResearchConfig(caption_cs=5.0)

    plain = build_index(dataclasses.replace(s, caption_views=()), manifest)
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        assert corpus_store.caption_views(conn) == []
        vector = cached_vectors(s, [question], "query")[0]
        assert corpus_store.caption_search(conn, vector, 5, "cs") == []
        _, ranked, _ = rank(conn, s, heavy, question, limit=5, language="cs")
        assert len(ranked) == 4, "an index without the view still serves"

    both = build_index(dataclasses.replace(s, caption_views=("cs",)), manifest)
    assert both.version != plain.version, "the view is part of what the index holds"
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        stored = corpus_store.caption_views(conn)
        assert {lang for _pid, lang, _c in stored} == {"cs"} and len(stored) == 4
        settings_row = conn.execute("SELECT settings FROM indexes WHERE current").fetchone()
        assert settings_row[0]["caption_views"] == ["cs"]
        gamma_id = next(p.id for p in corpus_store.all_passages(conn) if p.source == "docs/c.md")
        found = corpus_store.caption_search(conn, vector, 5, "cs")
        assert len(found) == 4 and found[0][0] == gamma_id, "nearest by its Czech caption"
        _, ranked, _ = rank(conn, s, heavy, question, limit=1, language="cs")
        assert ranked[0][0] == gamma_id
        # English questions never use the Czech view (and this index has no English one).
        english = "Where is the largest deviation of the compromise?"
        assert rank(conn, s, heavy, english, limit=4, language="en")[1] == \
            rank(conn, s, ResearchConfig(caption_cs=0), english, limit=4, language="en")[1]
    assert not any("odchylka" in t for t in index_texts(s).values()), \
        "a view is searched apart: the Czech caption is not in the passage's index text"
    again = build_index(dataclasses.replace(s, caption_views=("cs",)), manifest, force=True)
    assert again.embedded == 0, "a forced rebuild embeds nothing new"


ASKED = {"docs/a.md": ("Kde vyplním svůj odhad?",), "docs/b.md": ("Jak se počítá výsledek?",),
         "docs/c.md": ("Jak moc se experti shodnou?", "Jak přesný je kompromis?")}


def _with_questions(s: Settings, root: Path, english: bool) -> tuple[Settings, Manifest]:
    """The corpus's manifest naming a questions file of ASKED in Czech (and one English
    question a passage); settings without captions or views, and a caption role nobody
    answers (the question views ask no model but the embeddings)."""
    nobody = ModelRole("captions", "local", "nobody", "http://127.0.0.1:9/v1")
    s = dataclasses.replace(s, caption_languages=(), caption_views=(), question_views=(),
                            captions=nobody)
    with (root / "m.toml").open("a") as f:
        f.write('questions = "t.questions.json"\n')
    manifest = load_manifest(root / "m.toml")
    pieces, _, _ = load_pieces(manifest)
    dump_question_file(root / "t.questions.json", QuestionFile("t", "2026-12-02", "by a test", {
        caption_key(p): QEntry(p.source, p.section, {
            "cs": ASKED[p.source],
            **({"en": (f"What does {p.section} explain?",)} if english else {})})
        for p in pieces}), "t")
    return s, manifest


def test_a_build_with_the_questions_file_keeps_question_views_and_retrieval_searches_them(
        corpus: tuple[Settings, Path]) -> None:
    from worker.evaluation_presets import ResearchConfig
    from worker.pipeline.retrieve import rank
    from worker.pipeline.vectors import cached_vectors

    s, manifest = _with_questions(*corpus, english=True)
    root = corpus[1]
    plain = build_index(s, manifest)
    assert plain.questions == {"passages": 0, "questions": 0, "changed": 0, "stale": 0}
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        assert corpus_store.question_views(conn) == [], "off: no question views"

    on = dataclasses.replace(s, question_views=("en", "cs"))
    built = build_index(on, manifest)
    assert built.version != plain.version and built.caption_calls == 0
    assert built.questions == {"passages": 4, "questions": 9, "changed": 0, "stale": 0}
    assert built.questions_embedded == 8, "a question asked of two passages is embedded once"
    question = "Jak moc se experti shodnou na výsledku?"
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        rows = corpus_store.question_views(conn)
        assert len(rows) == 9 and {lang for _pid, lang, _q in rows} == {"en", "cs"}
        built_with = conn.execute("SELECT settings FROM indexes WHERE current").fetchone()[0]
        assert built_with["question_views"] == ["en", "cs"]
        gamma = next(p.id for p in corpus_store.all_passages(conn) if p.source == "docs/c.md")
        vector = cached_vectors(s, [question], "query")[0]
        found = corpus_store.view_search(conn, vector, 5, "cs")
        assert len(found) == 4 and found[0][0] == gamma, "a passage by its nearest question"
        assert corpus_store.question_similarity(conn, [vector], [gamma]) == \
            pytest.approx(found[0][1], abs=1e-5)
        _, ranked, _ = rank(conn, on, ResearchConfig(question_cs=5.0), question, limit=1,
                            language="cs")
        assert ranked[0][0] == gamma
    assert not any("shodnou" in t for t in index_texts(s).values()), \
        "a question view is searched apart: not in the passage's index text"

    (root / "docs" / "c.md").write_text(DOCS["c.md"].replace("maximum", "largest"))
    again = build_index(on, manifest)
    assert again.questions == {"passages": 3, "questions": 6, "changed": 1, "stale": 1}
    assert again.questions_embedded == 0, "every kept question's vector from the cache"
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        kept = corpus_store.question_views(conn)
    assert len(kept) == 6 and not {q for _pid, _lang, q in kept} & set(ASKED["docs/c.md"]), \
        "the changed passage loses exactly its questions"


def test_a_build_with_question_views_fits_a_query_adapter_and_retrieval_ranks_with_it(
        corpus: tuple[Settings, Path]) -> None:
    import numpy as np

    from worker.evaluation_presets import ResearchConfig
    from worker.pipeline.retrieve import rank
    from worker.pipeline.vectors import adapted, cached_vectors, query_adapter

    s, manifest = _with_questions(*corpus, english=False)
    root = corpus[1]
    plain = build_index(s, manifest)
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        assert corpus_store.query_adapter(conn, plain.version) is None, "no views, no adapter"

    on = dataclasses.replace(s, question_views=("cs",))
    built = build_index(on, manifest)
    question = "Jak moc se experti shodnou na výsledku?"
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        matrix = query_adapter(conn, built.version)
        assert matrix is not None and matrix.shape == (s.embedding_dim, s.embedding_dim)
        built_with = conn.execute("SELECT settings FROM indexes WHERE current").fetchone()[0]
        assert built_with["query_adapter"]["questions"] == 5
        passages = corpus_store.all_passages(conn)
        gamma = next(p.id for p in passages if p.source == "docs/c.md")
        vector = cached_vectors(s, [question], "query")[0]
        rows = dict(conn.execute("SELECT id, embedding FROM passages").fetchall())

        def margin(v: list[float]) -> float:
            sims = {pid: float(np.dot(v, e.to_numpy()) / np.linalg.norm(e.to_numpy()))
                    for pid, e in rows.items()}
            return sims[gamma] - max(x for pid, x in sims.items() if pid != gamma)

        assert margin(adapted(vector, matrix)) > margin(vector) + 0.05, \
            "through the adapter the question leans towards the passage its like answers"
        only = ResearchConfig(mode="dense", original_english=0.0, caption_cs=0.0,
                              question_cs=0.0, question_translation=0.0, adapted=1.0)
        _, ranked, _ = rank(conn, on, only, question, limit=4, language="cs")
        assert ranked[0][0] == gamma

    (root / "docs" / "c.md").write_text(DOCS["c.md"].replace("maximum", "largest"))
    again = build_index(on, manifest)
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        assert corpus_store.query_adapter(conn, built.version) is None
        assert corpus_store.query_adapter(conn, again.version) is not None, \
            "fitted again with the new index, swapped in with it"
