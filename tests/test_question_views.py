"""Question views, the pure part: the questions file, the stale rule, the
shipped BeCoMe file, the setting and the quotes form's decision. The build and retrieval with
them, against the real PostgreSQL+pgvector: tests/test_captions.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from corpus_jobs.build import load_pieces, passage_id
from corpus_jobs.captions import caption_key
from corpus_jobs.manifest import load_manifest
from corpus_jobs.questions import (
    Entry,
    QuestionFile,
    dump_question_file,
    load_question_file,
    question_digest,
    question_views,
)
from shared.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
DOCS = {
    "a.md": "# Alpha\n\n## One\n\nThe first section explains the opinion form.\n\n## Two\n\n"
            "The second section explains invitations.\n",
    "b.md": "# Beta\n\nBeta explains the best compromise.\n",
}


def corpus(root: Path) -> Path:
    """A tiny corpus and a manifest naming its questions file; the manifest's path."""
    (root / "docs").mkdir()
    for name, text in DOCS.items():
        (root / "docs" / name).write_text(text)
    (root / "m.toml").write_text('name = "t"\nroot = "."\ninclude = ["docs/*.md"]\n'
                                 'questions = "t.questions.json"\n')
    return root / "m.toml"


def write_questions(manifest: Path) -> None:
    """Two English and one Czech question for every piece, with the pieces' places."""
    pieces, _, _ = load_pieces(load_manifest(manifest))
    dump_question_file(manifest.parent / "t.questions.json", QuestionFile(
        "t-questions", "2026-12-02", "by a test", {
            caption_key(p): Entry(p.source, p.section, {
                "en": (f"What does {p.section} say?", f"where is {p.source}"),
                "cs": (f"Co říká {p.section}?",)}) for p in pieces}), "t")


def test_the_manifest_names_its_questions_file_and_the_file_reads_back(tmp_path: Path) -> None:
    manifest = load_manifest(corpus(tmp_path))
    assert manifest.questions == tmp_path / "t.questions.json"
    write_questions(tmp_path / "m.toml")
    qf = load_question_file(tmp_path / "t.questions.json")
    assert qf.label == "t-questions" and qf.written == "2026-12-02" and qf.how == "by a test"
    assert len(qf.entries) == 3
    entry = next(e for e in qf.entries.values() if e.source == "docs/b.md")
    assert entry.questions == {"en": ("What does # Beta say?", "where is docs/b.md"),
                               "cs": ("Co říká # Beta?",)}


def test_a_questions_file_is_cleaned_and_a_malformed_one_refused_with_its_path(
        tmp_path: Path) -> None:
    path = tmp_path / "q.json"
    path.write_text(json.dumps({"label": "x", "questions": {"k": {
        "source": "a.md", "section": "# A", "en": ["  How   do I\nlog in? ", "How do I log in?",
                                                   "", "x" * 301],
        "cs": []}}}))
    qf = load_question_file(path)
    assert qf.entries["k"].questions == {"en": ("How do I log in?",)}, \
        "whitespace collapsed, duplicates, empty and over-long questions dropped"
    path.write_text(json.dumps({"label": "x", "questions": {"k": {"en": "not a list"}}}))
    with pytest.raises(ConfigError, match="q.json"):
        load_question_file(path)
    path.write_text('{"questions": {}}')
    with pytest.raises(ConfigError, match="q.json"):
        load_question_file(path)


def test_a_passage_whose_text_changed_gets_no_questions_and_the_counts_say_so(
        tmp_path: Path) -> None:
    manifest_path = corpus(tmp_path)
    write_questions(manifest_path)
    qf = load_question_file(tmp_path / "t.questions.json")
    pieces, _, _ = load_pieces(load_manifest(manifest_path))
    views = question_views(pieces, qf, ("en", "cs"))
    assert views.counts() == {"passages": 3, "questions": 9, "changed": 0, "stale": 0}
    assert {pid for pid, _lang, _q in views.rows} == {passage_id(p) for p in pieces}
    only_cs = question_views(pieces, qf, ("cs",))
    assert only_cs.counts()["questions"] == 3 and {x[1] for x in only_cs.rows} == {"cs"}
    assert question_views(pieces, None, ("en", "cs")).counts() == \
        {"passages": 0, "questions": 0, "changed": 0, "stale": 0}
    assert question_views(pieces, qf, ()).rows == []

    (tmp_path / "docs" / "a.md").write_text(DOCS["a.md"].replace("invitations",
                                                                  "the invitations"))
    pieces, _, _ = load_pieces(load_manifest(manifest_path))
    after = question_views(pieces, qf, ("en", "cs"))
    assert after.counts() == {"passages": 2, "questions": 6, "changed": 1, "stale": 1}
    changed = next(p for p in pieces if p.section.endswith("## Two"))
    assert passage_id(changed) not in {pid for pid, _lang, _q in after.rows}, \
        "no questions for the changed passage, never the stale ones"
    assert after.digest() != views.digest(), "the index version follows the questions"


def test_the_shipped_become_questions_cover_every_passage_and_are_frozen() -> None:
    manifest = load_manifest(REPO / "corpus_jobs/manifests/become.toml")
    assert manifest.questions == REPO / "corpus_jobs/manifests/become.questions.json"
    shipped = load_question_file(manifest.questions)
    assert shipped.written == "2026-12-03" and "never from an evaluation" in shipped.how
    data = json.loads(manifest.questions.read_text(encoding="utf-8"))
    # Frozen: the questions are the ones assembled once, before any measurement.
    assert f"(question_digest): {question_digest(data['questions'])}." in shipped.how
    pieces, _, _ = load_pieces(manifest)
    assert {caption_key(p) for p in pieces} == set(shipped.entries)
    counts = question_views(pieces, shipped, ("en", "cs")).counts()
    assert counts["changed"] == 0 and counts["stale"] == 0
    # Two rounds (bench/questions_assemble.py): 2,464 questions, then 2,742 more.
    assert counts["questions"] == 5206 and counts["passages"] > 700
    assert all(len(qs) <= 6 for e in shipped.entries.values() for qs in e.questions.values())


def test_question_views_setting() -> None:
    from shared.config import settings_from_env

    assert settings_from_env({}).question_views == ("en", "cs"), "measured: both views"
    assert settings_from_env({"ASSISTANT_QUESTION_VIEWS": "off"}).question_views == ()
    assert settings_from_env({"ASSISTANT_QUESTION_VIEWS": "en,cs"}).question_views == \
        ("en", "cs")
    assert settings_from_env({"ASSISTANT_QUESTION_VIEWS": " CS "}).question_views == ("cs",)
    with pytest.raises(ConfigError, match="ASSISTANT_QUESTION_VIEWS"):
        settings_from_env({"ASSISTANT_QUESTION_VIEWS": "en,de"})


def test_the_quotes_decision_reads_the_question_views_only_with_a_weight() -> None:
    from shared.spans import Span
    from worker.pipeline.quotes import WEIGHTS, Candidate, answers, decision, uses_question_views

    c = Candidate(0, Span(0, 5, "sentence", 0, ""), "Hello", 0.9, 0.9, 0.0, 0.9)
    w = dataclasses.replace(WEIGHTS, match=1.0, question=0.0, question_other=0.0, coverage=0.0,
                            coverage_other=0.0, confidence_other=0.0, fitted=0.0)
    assert decision([c], 0.0, 0.0, w, True, asked=0.95) == pytest.approx(0.9)
    assert not uses_question_views(w, True) and not uses_question_views(w, False)
    on = dataclasses.replace(w, question=1.0, threshold=1.5)
    assert uses_question_views(on, True) and not uses_question_views(on, False)
    assert decision([c], 0.0, 0.0, on, True, asked=0.95) == pytest.approx(1.85)
    assert answers([c], 0.0, on, True, asked=0.95) and not answers([c], 0.0, on, True, asked=0.5)


def test_english_decides_by_the_question_views_and_the_adapter_and_without_them_as_before(
) -> None:
    """With question views (and so the query adapter) to read, an English question like one
    the passages answer and carried near them by the adapter clears the decision; one unlike
    any, or one the adapter carries elsewhere, does not, at the same span match and coverage
    (typical figures of the read sets: docs/benchmarks.md). The span's match and the known
    words do not move it. Where none of the passages has a view (an index built without
    them), the decision is the one calibrated without them, the span's match and coverage, so
    such an index still answers."""
    from shared.spans import Span
    from worker.pipeline.quotes import WEIGHTS, Candidate, answers

    c = Candidate(0, Span(0, 5, "sentence", 0, ""), "Hello", 0.95, 0.9, 0.3, 0.95)
    with_views = WEIGHTS.deciding(True)
    assert with_views == WEIGHTS and with_views.question > 0 and with_views.fitted > 0
    assert answers([c], 0.6, with_views, True, asked=0.92, fit=0.25)
    assert not answers([c], 0.6, with_views, True, asked=0.80, fit=0.25)
    assert not answers([c], 0.6, with_views, True, asked=0.92, fit=0.10)
    strong = dataclasses.replace(c, match=5.0)
    assert not answers([strong], 0.6, with_views, True, asked=0.80, fit=0.25, familiar=1.0)
    plain = WEIGHTS.deciding(False)
    assert plain.question == 0 and plain.fitted == 0 and plain.match == 1
    assert plain.threshold == WEIGHTS.threshold_plain
    assert answers([c], 0.8, plain, True, asked=0.0, familiar=1.0)
    assert not answers([c], 0.0, plain, True, asked=0.0, familiar=1.0)


def test_czech_decides_by_the_question_views_and_the_adapter_and_without_them_as_before() -> None:
    """With question views (and so the query adapter) to read, a Czech question like one the
    passages answer and carried near them by the adapter clears the decision; one unlike any,
    or one the adapter carries elsewhere, does not, at the same span match, coverage and
    confidence (typical figures of the read sets: docs/benchmarks.md). Without them, the
    decision is the one before they joined it: the span's match, coverage, confidence and the
    known words."""
    from shared.spans import Span
    from worker.pipeline.quotes import WEIGHTS, Candidate, answers

    c = Candidate(0, Span(0, 5, "sentence", 0, ""), "Ahoj", 0.9, 0.9, 0.3, 0.9)
    views = WEIGHTS.deciding(True)
    assert views.question_other > 0 and views.fitted_other > 0 and views.match_other == 0
    assert answers([c], 0.45, views, False, top=0.7, asked=0.93, fit=0.24)
    assert not answers([c], 0.45, views, False, top=0.7, asked=0.85, fit=0.24)
    assert not answers([c], 0.45, views, False, top=0.7, asked=0.93, fit=0.0)
    # The span's match and the known words do not move it.
    strong = dataclasses.replace(c, match=5.0)
    assert not answers([strong], 0.45, views, False, top=0.7, asked=0.85, fit=0.24,
                       familiar=1.0)
    plain = WEIGHTS.deciding(False)
    assert plain.question_other == 0 and plain.fitted_other == 0 and plain.match_other == 1
    assert plain.threshold_other == WEIGHTS.threshold_plain_other
    assert answers([c], 0.45, plain, False, top=0.7, familiar=0.65)
    assert not answers([c], 0.0, plain, False, top=0.0, familiar=0.3)
    # English decides as before: none of the Czech fields reaches it.
    from worker.pipeline.quotes import decision

    czech_as_before = dataclasses.replace(
        views, match_other=1.0, confidence_other=0.5, question_other=0.0,
        vocabulary_other=8.0, fitted_other=0.0, threshold_other=4.959)
    assert decision([c], 0.45, 0.7, views, True, 0.93, 0.65, fit=0.24) == \
        decision([c], 0.45, 0.7, czech_as_before, True, 0.93, 0.65, fit=0.24)
