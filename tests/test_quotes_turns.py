"""Quotes-form turns on a real stack with the default settings: the documentation's own words,
"I don't know", Czech, and a project's figures from the demo app."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from assistant_cli.client import ask, http_json
from demo_app.seed import DEMO_USERS, OFFICE_MOVE
from shared import corpus_store
from shared.config import Settings, settings_from_env
from shared.errors import AssistantError
from shared.figures import format_number
from tests.conftest import Stack
from tests.wsutil import app_token
from worker.pipeline.quote_turn import QUOTE_PASSAGES, write_quotes
from worker.pipeline.retrieve import RetrievalConfig, retrieve
from worker.pipeline.structured import fold

ALICE = DEMO_USERS["alice@example.com"]


def _turn(stack: Stack, question: str, **kw: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    frames, done = ask(stack.base_url, app_token(stack, kw.pop("user", "tester")), question,
                       timeout_s=90, **kw)
    assert done["type"] == "done", done
    return [f for f in frames if f["type"] != "ping"], done


def test_the_default_is_quotes_with_the_bundled_model_and_prose_with_any_other() -> None:
    assert settings_from_env({}).effective_answer_form == "quotes"
    assert settings_from_env({"ASSISTANT_ANSWER_LLM_MODEL": "qwen3.5-9b"}
                             ).effective_answer_form == "prose"
    assert settings_from_env({"ASSISTANT_ANSWER_FORM": "prose"}).effective_answer_form == "prose"


def test_a_question_is_answered_in_the_documentations_own_words(quotes_stack: Stack) -> None:
    frames, done = _turn(quotes_stack, "How does the search work?")
    tokens = "".join(f["text"] for f in frames if f["type"] == "token")
    assert tokens == done["answer"]
    assert done["answer_form"] == "quotes" and done["structured"]["outcome"] == "answer"
    assert done["answer"].startswith("Here is what the documentation says, in its own words:")
    quotes = done["structured"]["quotes"]
    assert 1 <= len(quotes) <= 3 and all(q["found"] for q in quotes)
    assert {s["n"] for s in done["sources"]} == {q["n"] for q in quotes}
    for q in quotes:
        source = done["sources"][q["n"] - 1]
        assert source["source"] == q["source"] and source["section"] == q["section"]
        assert f"“{q['text']}” [{q['n']}]" in done["answer"]
    assert any(q["source"] == "docs/how-it-works.md" for q in quotes), quotes
    checks = done["checks"]
    # Every check the turn runs (citations, numbers, quotes, prompt echo, repeat) passes.
    assert {"citations", "numbers", "quotes", "prompt_echo", "repeat"} <= set(checks)
    assert all(c["valid"] is True for c in checks.values()), checks
    steps = [f["step"] for f in frames if f["type"] == "event"]
    assert "quotes" in steps and "generate" not in steps  # no chat-model call


def test_the_quote_is_the_passages_own_text(quotes_stack: Stack) -> None:
    _, done = _turn(quotes_stack, "How are the answers checked?")
    for q in done["structured"]["quotes"]:
        excerpt = done["sources"][q["n"] - 1]["excerpt"].rstrip("…")
        # The excerpt is the passage's start; a short passage is whole in it.
        assert fold(q["text"][:40]) in fold(excerpt) or len(excerpt) >= 399


def test_an_off_topic_question_gets_i_dont_know_with_nearest_sections(
        quotes_stack: Stack) -> None:
    _, done = _turn(quotes_stack, "How long should I boil an egg for a soft yolk?")
    block = done["structured"]
    assert block["outcome"] == "dont_know" and block["quotes"] == []
    assert done["sources"] == []  # no weak match dressed as support
    assert block["clarifying_question"] and block["clarifying_question"] in done["answer"]
    assert done["answer"].startswith("I don't know")
    assert 1 <= len(block["nearest"]) <= 3 and all(n["ask"] for n in block["nearest"])


def test_a_question_naming_what_the_documentation_never_uses_gets_i_dont_know(
        quotes_stack: Stack) -> None:
    """On topic, but about a product the documentation never mentions: said, not quoted."""
    _, done = _turn(quotes_stack, "Can the search run on Apache Solr instead of PostgreSQL?")
    block = done["structured"]
    assert block["outcome"] == "dont_know" and block["quotes"] == [], done["answer"]
    assert done["answer"].startswith("I don't know: the documentation I can search does not "
                                     "answer this. It never uses the words “Apache” and “Solr”.")
    assert all(c["valid"] is True for c in done["checks"].values()), done["checks"]


def test_a_follow_up_is_searched_with_the_question_it_leans_on(quotes_stack: Stack) -> None:
    """"And how long does it last?" names nothing: the earlier question says what "it" is
    (docs/spec/behaviour.md B-14), without a model call."""
    first = "What is a ticket?"
    _, before = _turn(quotes_stack, first)
    history = [{"role": "user", "content": first},
               {"role": "assistant", "content": before["answer"]}]
    frames, done = _turn(quotes_stack, "And how long does it last?", history=history)
    block = done["structured"]
    assert block["outcome"] == "answer", done["answer"]
    assert any("ticket" in q["text"].lower() for q in block["quotes"]), block["quotes"]
    # Not the first answer again, word for word.
    assert not all(q["text"] in before["answer"] for q in block["quotes"]), block["quotes"]
    rewrite = [f for f in frames if f["type"] == "event" and f["step"] == "rewrite"]
    assert rewrite and rewrite[0].get("carried") is True, rewrite
    assert all(c["valid"] is True for c in done["checks"].values()), done["checks"]


def test_a_follow_up_is_not_refused_for_a_name_only_the_earlier_question_used(
        quotes_stack: Stack) -> None:
    """The earlier question named Solr, which the documentation never uses; the follow-up is
    searched with it, but only its own names can make it unanswerable."""
    first = "Can the search run on Apache Solr instead?"
    _, before = _turn(quotes_stack, first)
    assert before["structured"]["outcome"] == "dont_know"
    history = [{"role": "user", "content": first},
               {"role": "assistant", "content": before["answer"]}]
    _, done = _turn(quotes_stack, "And how does it use PostgreSQL?", history=history)
    assert "Solr" not in done["answer"], done["answer"]


def test_a_czech_question_gets_czech_wording(quotes_stack: Stack) -> None:
    _, done = _turn(quotes_stack, "Jak funguje vyhledávání v dokumentaci?")
    assert done["language"] == "cs"
    if done["structured"]["outcome"] == "answer":
        assert done["answer"].startswith("Dokumentace o tom doslova říká:")
        # The test corpus is English only: each quote says so.
        assert all(q["note"] == "Dokumentace to uvádí anglicky."
                   for q in done["structured"]["quotes"])
    else:
        assert done["answer"].startswith("To nevím")


def test_a_project_question_states_the_apps_own_result(quotes_stack: Stack) -> None:
    _, done = _turn(quotes_stack, "What is the best compromise in this project?",
                    user=ALICE, project_id=OFFICE_MOVE)
    project = done["structured"]["project"]
    assert project is not None
    status, result = http_json("GET", f"{quotes_stack.settings.app_api_url}/api/v1/projects/"
                               f"{OFFICE_MOVE}/result", headers={
                                   "Authorization": f"Bearer {app_token(quotes_stack, ALICE)}"})
    assert status == 200
    first = project["lines"][0]
    assert done["answer"].startswith(first)
    bc = result["best_compromise"]
    assert " / ".join(format_number(bc[k]) for k in ("lower", "peak", "upper")) in first
    assert format_number(result["max_error"]) in project["lines"][1]
    assert done["checks"]["numbers"]["valid"], done["checks"]


def test_a_turn_embeds_only_its_question_when_the_build_stored_the_spans(
        services: object, settings: Settings) -> None:
    """The span vectors come from the index (the build embedded them): with the question's
    vector known, the quotes step needs no embeddings role at all. Without stored vectors
    (another model key) the same step asks the role, which here is a dead port."""
    from worker.pipeline import vectors

    question = "How does the search work?"
    dead = dataclasses.replace(settings, embeddings=dataclasses.replace(
        settings.embeddings, base_url="http://127.0.0.1:9/v1"))
    with corpus_store.connect(settings.corpus_read_dsn, autocommit=True) as conn:
        config = dataclasses.replace(RetrievalConfig.from_settings(settings),
                                     top_k=QUOTE_PASSAGES)
        # The search asks for the question's vector; the quotes step reuses it.
        retrieval = retrieve(conn, settings, question, original=question, config=config,
                             language="en")
        for key in [k for k in vectors._cache if k[1] == "passage"]:
            del vectors._cache[key]
        said = write_quotes(conn, dead, [question], retrieval, "en", None, question)
        assert said.answer.outcome == "answer" and said.answer.quotes
        for key in [k for k in vectors._cache if k[1] == "passage"]:
            del vectors._cache[key]
        unstored = dataclasses.replace(dead, embedding_prefix_mode="text")
        with pytest.raises(AssistantError):
            write_quotes(conn, unstored, [question], retrieval, "en", None, question)
