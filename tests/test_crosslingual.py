"""Cross-lingual retrieval: the interface-text dictionary, English slots for a
Czech question, the few-shot translation step against the scripted server, and the whole
path against the real PostgreSQL+pgvector and embedding server."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from assistant_cli import stack
from assistant_cli.client import ask, http_json
from corpus_jobs.build import build_index, collect
from corpus_jobs.manifest import load_manifest
from shared import corpus_store
from shared.config import ModelRole, Settings
from shared.errors import ModelError
from tests.conftest import (
    ALLOC,
    PG_PORT,
    REPO,
    Stack,
    scripted_roles,
    set_script,
    start_stack,
)
from tests.wsutil import app_token
from worker.evaluation_presets import PRESETS, ResearchConfig
from worker.pipeline.fusion import fuse, interleave, spread_sections, to_czech_twins
from worker.pipeline.lexicon import aligned_pairs, learn
from worker.pipeline.retrieve import RetrievalConfig, rank, retrieve
from worker.pipeline.rewrite import FEWSHOT_PROMPT, FEWSHOT_PROMPT_V1, translate_fewshot

CS = "frontend/src/i18n/locales/cs/auth.json"
EN = "frontend/src/i18n/locales/en/auth.json"
FEWSHOT_PORT, FEWSHOT_REDIS = ALLOC.port("fewshot_stack"), ALLOC.redis_url("fewshot_stack")

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


def test_english_slots_interleave_the_english_side_into_every_run_of_top_k() -> None:
    main = [("c1", .9), ("c2", .8), ("e1", .7), ("c3", .6), ("c4", .5)]
    side = [("e1", .5), ("e2", .4), ("e3", .3)]
    out = [pid for pid, _ in interleave(main, side, top_k=3, slots=1)]
    assert out == ["c1", "c2", "e1", "c3", "c4", "e2", "e3"], "e1 is placed once"
    out = [pid for pid, _ in interleave(main, side, top_k=3, slots=2)]
    assert out == ["c1", "e1", "e2", "c2", "e3", "c3", "c4"]
    assert interleave(main, [], top_k=3, slots=1) == main
    assert [p for p, _ in interleave([], side, top_k=3, slots=1)] == ["e1", "e2", "e3"]


def test_weighted_fusion_and_czech_twins() -> None:
    a, b = [("x", 1.0), ("y", .5)], [("y", 1.0), ("x", .5)]
    assert [p for p, _ in fuse([a, b])] == ["x", "y"], "a tie is broken by id"
    assert [p for p, _ in fuse([a, b], weights=[1.0, 2.0])] == ["y", "x"]
    assert fuse([a, b], weights=[1.0, 0.0]) == fuse([a]), "weight 0 is a ranking left out"
    twins = {"en-login": "cs-login", "en-reset": "cs-reset"}
    ranked = [("en-login", .9), ("page", .8), ("cs-login", .7), ("en-reset", .6)]
    assert to_czech_twins(ranked, twins) == [("cs-login", .9), ("page", .8), ("cs-reset", .6)]


def test_fusion_ordered_at_a_small_k_keeps_the_shares_of_its_own_k() -> None:
    """A passage first in one ranking and absent from the others is outranked at k 60 by one
    eleventh in every ranking; at a small order_k the first place counts. The scores
    stay the shares at k (1.0 = first everywhere), whatever the order."""
    one = [("best", 1.0), *[(f"f{i}", 0.5) for i in range(9)], ("mid", 0.1)]
    others = [[(f"o{n}{i}", 0.5) for i in range(10)] + [("mid", 0.1)] for n in range(2)]
    at_60 = fuse([one, *others])
    assert at_60[0][0] == "mid"
    at_3 = fuse([one, *others], order_k=3)
    assert [p for p, _ in at_3][0] == "best"
    assert dict(at_3) == dict(at_60), "the scores are the shares at k, not at order_k"
    assert fuse([one, *others], order_k=60) == at_60


def test_pieces_of_one_section_wait_until_every_section_has_had_a_place() -> None:
    from shared.passage import Passage

    def piece(pid: str, source: str, section: str) -> Passage:
        return Passage(pid, source, "T", section, "en", pid, pid, False)

    # Five pieces of one long section rank first, then two other sections.
    by_id = {p.id: p for p in (
        *(piece(f"modes-{n}", "api/assistant/README.md", "# A > ## Chat > ### Modes")
          for n in range(5)),
        piece("limits", "api/assistant/README.md", "# A > ## Chat > ### Limits"),
        piece("faq", "faq.json", "assistant.limits"),
        # Same section name in another file: another section.
        piece("other", "other.md", "# A > ## Chat > ### Modes"))}
    ranked = [(f"modes-{n}", 1.0 - n / 10) for n in range(5)] + [
        ("limits", .4), ("other", .35), ("faq", .3), ("unknown-id", .2)]
    out = [pid for pid, _ in spread_sections(ranked, by_id, 2)]
    assert out == ["modes-0", "modes-1", "limits", "other", "faq", "unknown-id",
                   "modes-2", "modes-3", "modes-4"]
    assert [pid for pid, _ in spread_sections(ranked, by_id, 1)][:4] == [
        "modes-0", "limits", "other", "faq"]
    assert spread_sections(ranked, by_id, 9) == ranked, "nothing to move"
    assert dict(spread_sections(ranked, by_id, 2)) == dict(ranked), "scores kept"


def test_fewshot_examples_are_the_apps_own_twin_questions() -> None:
    from worker.pipeline.prompt import prompt_text

    new, old = prompt_text(FEWSHOT_PROMPT), prompt_text(FEWSHOT_PROMPT_V1)
    assert new.endswith(old), "the three hand-written examples stay, last before the question"
    lines = new[: -len(old)].splitlines()
    examples = list(zip(lines[0::2], lines[1::2], strict=True))
    assert len(examples) >= 15
    passages, _, _ = collect(load_manifest(REPO / "corpus_jobs/manifests/become.toml"))
    pairs = set(aligned_pairs((p.source, p.section, p.text) for p in passages))
    for cs, en in examples:
        assert cs.startswith("Czech: ") and en.startswith("English: ")
        pair = (cs.removeprefix("Czech: "), en.removeprefix("English: "))
        assert pair in pairs, f"not a locale twin pair: {pair}"
        assert pair[0].endswith("?") and "{" not in cs + en


def test_fewshot_translation_against_the_scripted_server(scripted_llm: str) -> None:
    from worker.pipeline.prompt import prompt_text

    role = ModelRole("translation", "local", "scripted", f"{scripted_llm}/v1")
    set_script(scripted_llm, [" How do I change my password?\nCzech: extra line"])
    assert translate_fewshot(role, "Jak si  změním\nheslo?") == "How do I change my password?"
    _, seen = http_json("GET", f"{scripted_llm}/_requests")
    body = seen[-1]["body"]
    assert body["temperature"] == 0 and body["stop"] == ["\n"]
    assert body["prompt"].endswith("Czech: Jak si změním heslo?\nEnglish:")
    assert body["prompt"].startswith("Czech: Proč se medián počítá jinak"), "twin examples"
    translate_fewshot(role, "Jak?", prompt_file=FEWSHOT_PROMPT_V1)
    _, seen = http_json("GET", f"{scripted_llm}/_requests")
    assert seen[-1]["body"]["prompt"].startswith("Czech: Jak změním jazyk aplikace?")
    set_script(scripted_llm, ["\n"])
    assert translate_fewshot(role, "Jak?") == "Jak?", "nothing back: search the original"
    # The stack warms a translator it starts: the prompt's head is evaluated before any question.
    set_script(scripted_llm, [" Hello"])
    assert stack.warm_translator(f"{scripted_llm}/v1", "scripted")
    _, seen = http_json("GET", f"{scripted_llm}/_requests")
    assert seen[-1]["body"]["prompt"] == prompt_text(FEWSHOT_PROMPT).rstrip().format(
        text="Dobrý den")
    set_script(scripted_llm, ["x"], status=500)
    with pytest.raises(ModelError):
        translate_fewshot(role, "Jak?")
    assert not stack.warm_translator(f"{scripted_llm}/v1", "scripted"), "a failed warm-up"


def test_a_slow_translator_costs_a_turn_no_more_than_the_deadline(scripted_llm: str) -> None:
    import time

    from worker.pipeline.rewrite import translate_fewshot_by

    role = ModelRole("translator", "local", "scripted", f"{scripted_llm}/v1")
    # Written in time: the whole line, not cut.
    set_script(scripted_llm, [" How do I", " change my", " password?\nCzech: x"])
    line = translate_fewshot_by(role, "Jak si změním heslo?", deadline_s=5)
    assert (line.text, line.cut) == ("How do I change my password?", False)
    _, seen = http_json("GET", f"{scripted_llm}/_requests")
    assert seen[-1]["body"]["stream"] is True and seen[-1]["body"]["stop"] == ["\n"]
    # A word every 0.4 s: at a 1 s deadline the search gets what was written by then.
    set_script(scripted_llm, [" How do I", " change my", " password?", " Now"], delay_s=0.4)
    t0 = time.monotonic()
    line = translate_fewshot_by(role, "Jak si změním heslo?", deadline_s=1.0)
    waited = time.monotonic() - t0
    assert line.cut and line.text == "How do I change my password?", line
    assert waited < 1.5, waited
    # Nothing written by the deadline: "" (the turn searches the question as asked).
    set_script(scripted_llm, [" How"], stall_s=3)
    t0 = time.monotonic()
    line = translate_fewshot_by(role, "Jak?", deadline_s=0.5)
    assert (line.text, line.cut) == ("", True) and time.monotonic() - t0 < 1.0
    set_script(scripted_llm, ["x"], status=500)
    with pytest.raises(ModelError):
        translate_fewshot_by(role, "Jak?", deadline_s=5)
    # A server that dies mid-line before the deadline: a failure, not a short line.
    set_script(scripted_llm, [" How do I", " change my password?"], die_after=1)
    with pytest.raises(ModelError):
        translate_fewshot_by(role, "Jak si změním heslo?", deadline_s=5)


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


def test_czech_question_gets_an_english_slot_from_the_stored_twins(twin_corpus: Settings
                                                                    ) -> None:
    from worker.pipeline.bm25 import lexical_index
    from worker.pipeline.twins import lexicon_for

    question = "Jak se ukládá moje heslo? Je zašifrované?"
    plain = RetrievalConfig(top_k=2)
    cross = ResearchConfig(top_k=2, expand_czech=True, english_slots=1)
    with corpus_store.connect(twin_corpus.corpus_read_dsn, autocommit=True) as conn:
        lexical = lexical_index(conn, corpus_store.current_index(conn).version)
        assert "password" in lexicon_for(lexical).entries["heslo"], "learnt from the index"
        found = retrieve(conn, twin_corpus, question, config=cross, language="cs")
        assert len(found.passages) == 2
        langs = [lexical.by_id[p.id].lang for p in found.passages]
        assert langs[1] == "en", "the second place is the English side's"
        # Every English passage is reachable through the English side, the page included.
        _, ranked, _ = rank(conn, twin_corpus, cross, question, limit=10, language="cs")
        assert "docs/security.md" in {lexical.by_id[pid].source for pid, _ in ranked}
        # The default path for a translated question: the translation finds the English page.
        translated = retrieve(conn, twin_corpus, "How is my password stored?", original=question,
                              config=RetrievalConfig(top_k=3), language="cs")
        assert "docs/security.md" in [p.source for p in translated.passages]
        # The cross-lingual help is for Czech questions only: English ones rank as before.
        english = "How is my password stored?"
        assert retrieve(conn, twin_corpus, english, config=cross, language="en").passages \
            == retrieve(conn, twin_corpus, english, config=plain, language="en").passages


def test_czech_question_reaches_the_english_page_without_its_english_twins(
        twin_corpus: Settings) -> None:
    from worker.pipeline.bm25 import lexical_index
    from worker.pipeline.twins import czech_keywords_for

    question = "Jak se ukládá moje heslo? Je zašifrované?"
    with corpus_store.connect(twin_corpus.corpus_read_dsn, autocommit=True) as conn:
        lexical = lexical_index(conn, corpus_store.current_index(conn).version)
        # The English page, read through the reversed dictionary: password -> heslo.
        keywords = czech_keywords_for(lexical).top(question, 10)
        assert {lexical.by_id[pid].lang for pid, _ in keywords} == {"en"}
        assert "docs/security.md" in {lexical.by_id[pid].source for pid, _ in keywords}
        assert czech_keywords_for(lexical).top("Kolik to stojí?", 10) == []
        default = retrieve(conn, twin_corpus, question, config=RetrievalConfig(top_k=2),
                           language="cs")
        assert "docs/security.md" in [p.source for p in default.passages]
        # No English interface text for a Czech question: its Czech twin stands for it.
        _, ranked, _ = rank(conn, twin_corpus, RetrievalConfig(), question, limit=10,
                            language="cs")
        sources = [lexical.by_id[pid].source for pid, _ in ranked]
        assert EN not in sources and CS in sources
        _, ranked, _ = rank(conn, twin_corpus, PRESETS["hybrid-v1"], question, limit=10,
                            language="cs")
        assert EN in [lexical.by_id[pid].source for pid, _ in ranked], "before: the twins"
        # English questions are untouched by every Czech-only step.
        english = "How is my password stored?"
        v1_spread = dataclasses.replace(PRESETS["hybrid-v1"],
                                        per_section=RetrievalConfig().per_section)
        assert retrieve(conn, twin_corpus, english, config=RetrievalConfig(),
                        language="en").passages == retrieve(
            conn, twin_corpus, english, config=v1_spread, language="en").passages


def test_offline_default_translates_czech_with_the_fewshot_translator() -> None:
    from shared.config import settings_from_env

    s = settings_from_env({})
    assert s.fewshot_translates and not s.translates, "offline default: the few-shot translator"
    assert s.translator.model == "gemma-3-270m" and s.translator.provider == "local"
    assert RetrievalConfig().dense_original, "the original wording is searched by meaning too"
    assert RetrievalConfig().translation_english_only
    c = RetrievalConfig()
    assert c.czech_twins and c.original_english == 1.0 and c.czech_keywords == 1.0
    hosted = settings_from_env({"ASSISTANT_LLM_PROVIDER": "api", "ASSISTANT_API_KEY": "k"})
    assert hosted.translates and not hosted.fewshot_translates, "a hosted role translates"
    off = settings_from_env({"ASSISTANT_TRANSLATE_QUERIES": "off"})
    assert not off.translates and not off.fewshot_translates
    moved = settings_from_env({"ASSISTANT_TRANSLATOR_BASE_URL": "http://127.0.0.1:9/v1/",
                               "ASSISTANT_TRANSLATOR_MODEL": "other"})
    assert moved.translator.base_url == "http://127.0.0.1:9/v1" and moved.translator.model \
        == "other"


@pytest.fixture(scope="module")
def fewshot_stack(services: stack.Supervisor, scripted_llm: str) -> Iterator[Stack]:
    """A stack on the offline defaults (translation `auto`, a local translation role) with
    every model on the scripted server, the few-shot translator included."""
    s = start_stack(services, "fewshot", FEWSHOT_PORT, {
        "ASSISTANT_REDIS_URL": FEWSHOT_REDIS,
        **scripted_roles(scripted_llm),
        "ASSISTANT_TRANSLATOR_BASE_URL": f"{scripted_llm}/v1",
        "ASSISTANT_TRANSLATOR_MODEL": "scripted-translator",
        "ASSISTANT_TRANSLATE_DEADLINE_S": "1",
    })
    try:
        yield s
    finally:
        s.sup.stop_all()


def test_czech_turn_searches_with_the_fewshot_translation(fewshot_stack: Stack,
                                                          scripted_llm: str) -> None:
    set_script(scripted_llm, ["How does the search work?\nCzech: more"])
    frames, done = ask(fewshot_stack.base_url, app_token(fewshot_stack),
                       "Jak funguje vyhledávání v dokumentaci?")
    assert done["type"] == "done" and done["language"] == "cs"
    assert "translate" in [f["step"] for f in frames if f["type"] == "event"]
    _, requests = http_json("GET", f"{scripted_llm}/_requests")
    completions = [r["body"] for r in requests if r.get("path", "").endswith("/v1/completions")]
    assert len(completions) == 1 and completions[0]["model"] == "scripted-translator"
    assert completions[0]["prompt"].endswith(
        "Czech: Jak funguje vyhledávání v dokumentaci?\nEnglish:")
    # A translator slower than the deadline: the turn goes on at the deadline and searches
    # the question as asked (half a line searched worse than none).
    set_script(scripted_llm, ["How does the search", " work?", "\n"], delay_s=2)
    frames, done = ask(fewshot_stack.base_url, app_token(fewshot_stack),
                       "Jak funguje vyhledávání v dokumentaci?")
    assert done["type"] == "done", done
    step = next(f for f in frames if f["type"] == "event" and f["step"] == "translate")
    assert step.get("cut") is True and step.get("fallback") == "original", step
    assert step["ms"] < 1900, step
    # An English question is searched as written: no translation call.
    set_script(scripted_llm, ["Hybrid [1]."])
    frames, done = ask(fewshot_stack.base_url, app_token(fewshot_stack),
                       "How does the search work?")
    assert done["type"] == "done"
    _, requests = http_json("GET", f"{scripted_llm}/_requests")
    assert not [r for r in requests if r.get("path", "").endswith("/v1/completions")]


def test_compare_bootstraps_each_language_on_its_own() -> None:
    from worker.evaluation import compare

    def report(ranks: dict[str, int | None]) -> dict:
        return {"questions": [{"id": i, "language": i[:2], "rank": r} for i, r in ranks.items()]}

    a = report({"en1": 1, "en2": 2, "cs1": None, "cs2": 7, "cs3": 1})
    b = report({"en1": 1, "en2": 2, "cs1": 2, "cs2": 3, "cs3": 1})
    out = compare(a, b)
    assert out["questions"] == 5 and set(out["by_language"]) == {"cs", "en"}
    assert out["by_language"]["en"]["hit@3"]["mean_diff"] == 0
    assert out["by_language"]["cs"]["questions"] == 3
    assert out["by_language"]["cs"]["hit@3"]["mean_diff"] == round(2 / 3, 4)


def test_eval_retrieval_compares_the_old_default_with_the_new(
        twin_corpus: Settings, scripted_llm: str, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from shared.language import detect_language

    rows = [("cs1", "cs", "Jak se ukládá moje heslo? Je zašifrované?"),
            ("en1", "en", "How is my password stored?")]
    assert [detect_language(q) for _, _, q in rows] == ["cs", "en"]
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({
        "id": i, "language": lang, "question": q, "expected_source": "docs/security.md",
        "expected_location": "# Security > ## Password storage"}) + "\n" for i, lang, q in rows))
    set_script(scripted_llm, [" How is my password stored?\nCzech: more"])
    _, before = http_json("GET", f"{scripted_llm}/_requests")
    env = dict(os.environ, ASSISTANT_CORPUS_READ_DSN=twin_corpus.corpus_read_dsn,
               ASSISTANT_EMBEDDING_BASE_URL=twin_corpus.embeddings.base_url,
               ASSISTANT_TRANSLATOR_BASE_URL=f"{scripted_llm}/v1",
               ASSISTANT_TRANSLATOR_MODEL="scripted-translator")
    out = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-c", "from assistant_cli.cli import main; raise SystemExit(main())",
         "eval", "retrieval", "--questions", str(questions), "--settings",
         "hybrid-v1+fewshot-v1", "--compare", "hybrid+fewshot", "--out", str(out)],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["a"]["name"] == "hybrid-v1+fewshot-v1" and report["b"]["name"] == "hybrid+fewshot"
    assert not report["a"]["settings"]["czech_twins"] and report["b"]["settings"]["czech_twins"]
    for side in ("a", "b"):
        cs = [q for q in report[side]["questions"] if q["id"] == "cs1"][0]
        assert cs["translation"] == "How is my password stored?" and cs["rank"] is not None
    assert set(report["comparison"]["by_language"]) == {"cs", "en"}
    # One translation per side, for the Czech question only, each with its own prompt.
    _, seen = http_json("GET", f"{scripted_llm}/_requests")
    prompts = [r["body"]["prompt"] for r in seen[len(before):]
               if r.get("path", "").endswith("/v1/completions")]
    assert len(prompts) == 2
    assert prompts[0].startswith("Czech: Jak změním jazyk aplikace?"), "the first prompt"
    assert prompts[1].startswith("Czech: Proč se medián počítá jinak"), "the twin examples"


def test_eval_retrieval_runs_what_a_chat_turn_runs_unless_told_otherwise(
        twin_corpus: Settings, scripted_llm: str, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({
        "id": i, "language": lang, "question": q, "expected_source": "docs/security.md",
        "expected_location": "# Security > ## Password storage"}) + "\n" for i, lang, q in (
            ("cs1", "cs", "Jak se ukládá moje heslo? Je zašifrované?"),
            ("en1", "en", "How is my password stored?"))))
    set_script(scripted_llm, [" How is my password stored?"])
    # The test profile's roles: a local translation role with ASSISTANT_TRANSLATE_QUERIES
    # auto, so a chat turn translates a Czech question with the few-shot translator.
    env = dict(os.environ, ASSISTANT_CORPUS_READ_DSN=twin_corpus.corpus_read_dsn,
               ASSISTANT_EMBEDDING_BASE_URL=twin_corpus.embeddings.base_url,
               ASSISTANT_TRANSLATOR_BASE_URL=f"{scripted_llm}/v1",
               ASSISTANT_TRANSLATOR_MODEL="scripted-translator")

    def run(*extra: str) -> tuple[str, dict, int]:
        _, before = http_json("GET", f"{scripted_llm}/_requests")
        out = tmp_path / "report.json"
        done = subprocess.run(
            [sys.executable, "-c", "from assistant_cli.cli import main; raise SystemExit(main())",
             "eval", "retrieval", "--questions", str(questions), "--out", str(out), *extra],
            env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        _, seen = http_json("GET", f"{scripted_llm}/_requests")
        calls = sum(1 for r in seen[len(before):] if r.get("path", "").endswith("/completions"))
        return done.stdout, json.loads(out.read_text()), calls

    stdout, report, calls = run()
    a = report["a"]
    assert a["name"] == "chat+fewshot" and a["translation_model"] == "scripted-translator"
    assert calls == 1, "the Czech question is translated, as a turn translates it"
    cs = next(q for q in a["questions"] if q["id"] == "cs1")
    assert cs["translation"] == "How is my password stored?"
    assert "pipeline chat+fewshot: the chat turn's retrieval settings" in stdout
    assert "what a chat turn runs" in stdout and "not a chat turn" not in stdout
    assert "en+cs caption views" in stdout, "the index's views, as its settings record them"

    stdout, report, calls = run("--settings", "chat+none")
    assert report["a"]["name"] == "chat+none" and calls == 0
    assert "Czech questions not translated" in stdout
    assert "not a chat turn's pipeline (a turn: chat settings, translation fewshot)" in stdout


def test_freedict_is_read_from_the_installed_debian_packages(tmp_path: Path) -> None:
    from worker.pipeline import bilingual

    table = bilingual.load()
    assert len(table.entries) > 50_000, "eng-ces read backwards, plus ces-eng"
    # An inflected form reaches its lemma's senses; the senses are the dictionary's own.
    assert ("password",) in table.senses("hesla")
    assert ("database",) in table.senses("databáze")
    # The corpus picks the sense: only senses that can match, a cognate first, then the
    # most used; an unknown word (a name) is kept as written.
    assert table.english("Kolik stojí projekt BeCoMe?", 1,
                         {"project": 3, "plan": 9, "design": 5, "become": 2}) \
        == ["kolik", "stojí", "project", "become"]
    assert table.english("Jak se ukládají hesla?", 1, {"password": 1, "put": 1}) \
        == ["put", "password"]
    assert table.english("Jak se ukládají hesla?", 1, {"password": 1}) \
        == ["ukládají", "password"]
    with pytest.raises(bilingual.DictionaryMissing, match="dict-freedict-eng-ces"):
        list(bilingual.read_dictd(bilingual.ENG_CES, tmp_path))


def test_freedict_ranking_brings_a_czech_question_to_the_english_page(
        twin_corpus: Settings) -> None:
    from worker.pipeline.bm25 import lexical_index

    # Words only: no translation, no twin dictionary, no Czech keywords, no twin swap.
    words = ResearchConfig(mode="bm25", czech_keywords=0.0, czech_twins=False, top_k=10)
    question = "Kde se ukládá heslo?"
    with corpus_store.connect(twin_corpus.corpus_read_dsn, autocommit=True) as conn:
        lexical = lexical_index(conn, corpus_store.current_index(conn).version)

        def sources(config: RetrievalConfig, lang: str = "cs") -> list[str]:
            _, ranked, _ = rank(conn, twin_corpus, config, question, language=lang)
            return [lexical.by_id[pid].source for pid, _ in ranked]

        assert "docs/security.md" not in sources(words), "Czech words miss the English page"
        found = sources(dataclasses.replace(words, bilingual=1.0))
        assert "docs/security.md" in found, "heslo -> password"
        assert CS in found, "the Czech interface texts stay"
        # Czech questions only: an English question ranks as without it.
        assert sources(dataclasses.replace(words, bilingual=1.0), "en") == sources(words, "en")
        # The preset ranks the page too, with the default's other rankings.
        assert "docs/security.md" in [
            p.source for p in retrieve(conn, twin_corpus, question,
                                       config=dataclasses.replace(PRESETS["hybrid-freedict"],
                                                                  top_k=5),
                                       language="cs").passages]
