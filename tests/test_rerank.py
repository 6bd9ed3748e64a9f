"""The optional rerank (docs/spec/behaviour.md B-15): the translation role scores the search's
candidates 0/1/2, those scored 1 or more are kept best first, at most five; off by default; a
failed rerank leaves the search's order."""

from __future__ import annotations

import dataclasses
from contextlib import nullcontext

import pytest

from assistant_cli.answer_view import format_sources
from shared import corpus_store
from shared.config import Settings
from shared.errors import ModelError
from shared.traces import Trace
from tests import harness
from tests.conftest import set_script
from tests.scripted_llm import DEFAULT_SCRIPT
from worker.emit import TurnEmitter
from worker.pipeline.rerank import CANDIDATES, KEEP, parse_scores, rerank_prompt, reranked
from worker.pipeline.retrieve import RetrievalConfig, retrieve
from worker.pipeline.turn import TurnDeps, run_turn

SIX = tuple(harness.passage(n, f"Passage number {n} says something about topic {n}.")
            for n in range(1, 7))
ASKS = "Rate how well each numbered passage"


def _model(reply: str) -> harness.ScriptedModel:
    return harness.ScriptedModel(rules=[{"match": ASKS, "chunks": [reply]}],
                                 chunks=["An answer [1]."])


def _rerank_calls(model: harness.ScriptedModel) -> list[dict]:
    return [b for b in model.bodies("/chat/completions")
            if not b.get("stream") and ASKS in b["messages"][0]["content"]]


def test_a_reply_is_read_line_by_line_in_the_forms_models_write() -> None:
    reply = "1: 2\n[2] 0\nPassage 3 - 1\n4=2\n  5. 0\n9: 2\n1: 0\nnothing here"
    assert parse_scores(reply, 6) == {1: 2, 2: 0, 3: 1, 4: 2, 5: 0}
    with pytest.raises(ModelError):
        parse_scores("I cannot rate these passages.", 6)


def test_kept_are_the_related_best_first_in_search_order_at_most_five() -> None:
    seven = SIX + (harness.passage(7, "Seventh."),)
    out = reranked(seven, {1: 1, 2: 2, 3: 0, 4: 2, 5: 1, 6: 1, 7: 1})
    assert [p.id for p in out] == ["p2", "p4", "p1", "p5", "p6"]
    assert len(out) == KEEP
    assert [p.rerank for p in out] == [2, 2, 1, 1, 1]
    assert reranked(seven, {3: 0}) == (), "nothing related: nothing kept"


def test_the_prompt_numbers_the_passages_and_holds_no_example_content() -> None:
    text = rerank_prompt("How is the median computed?", SIX[:2])
    assert "[1] Title 1 > # Section 1\nPassage number 1" in text
    assert "[2] Title 2" in text and "How is the median computed?" in text
    long = harness.passage(9, "word " * 400)
    assert len(rerank_prompt("q", [long])) < 1200, "a long passage is cut"


def test_rerank_is_off_by_default() -> None:
    model = _model("1: 0\n2: 2")
    r = harness.turn("How does the search work?", model=model, passages=SIX)
    assert "rerank" not in r.steps and not _rerank_calls(model)
    assert all("rerank" not in s for s in r.done["sources"])


def test_the_answer_reads_the_reranked_passages_in_their_new_order() -> None:
    model = _model("1: 0\n2: 1\n3: 0\n4: 2\n5: 0\n6: 0")
    r = harness.turn("How does the search work?", model=model, passages=SIX, rerank=True)
    assert "rerank" in r.steps
    step = next(f for f in r.log.of("event") if f["step"] == "rerank")
    assert step["candidates"] == 6 and step["kept"] == 2
    call = _rerank_calls(model)[0]
    assert call["temperature"] == 0 and call["model"] == "scripted"
    assert "Passage number 6" in call["messages"][0]["content"], "all candidates were scored"
    sources = r.done["sources"]
    assert [(s["excerpt"][:16], s["rerank"]) for s in sources] == [
        ("Passage number 4", 2), ("Passage number 2", 1)]
    prompt = "\n".join(m["content"] for m in r.prompt)
    assert "topic 4" in prompt and "topic 1" not in prompt
    assert r.trace.models["rerank"] == "scripted"


def test_a_failed_rerank_keeps_the_search_order() -> None:
    model = _model("Sorry, I cannot do that.")
    r = harness.turn("How does the search work?", model=model, passages=SIX, rerank=True)
    step = next(f for f in r.log.of("event") if f["step"] == "rerank")
    assert step["fallback"] == "search order"
    assert [s["excerpt"][:16] for s in r.done["sources"]] == [
        f"Passage number {n}" for n in (1, 2, 3)], "the search's own top_k"
    assert r.done["answer"] == "An answer [1]."


def test_nothing_related_leaves_no_source_dressed_as_support() -> None:
    model = _model("\n".join(f"{n}: 0" for n in range(1, 7)))
    r = harness.turn("What is the capital of France?", model=model, passages=SIX, rerank=True)
    assert r.last["type"] == "done"
    assert r.done["sources"] == []



def test_ask_prints_the_reranks_verdict_in_the_answers_language() -> None:
    done = {"language": "cs", "sources": [
        {"n": 1, "title": "Stránka", "section": "Stránka > Část", "source": "a.md", "rerank": 2},
        {"n": 2, "title": "Jiná", "section": "Jiná > Část", "source": "b.md", "rerank": 1},
        {"n": 3, "title": "Třetí", "section": "Třetí", "source": "c.md"}]}
    lines = format_sources(done)
    assert "(odpovídá na otázku)" in lines[1] and "(souvisí)" in lines[2]
    assert "(" not in lines[3].split("\n")[0]


def test_a_turn_over_the_real_index_reads_what_the_rerank_kept(
        services: object, settings: Settings, scripted_llm: str) -> None:
    """The real search and quotes step, the translation role on the scripted server (exact
    scores): the search's first passage scored 0 is gone, the one scored 2 comes first, and
    the quotes and sources come only from the kept passages."""
    s = dataclasses.replace(
        settings, rerank=True, answer_form="quotes",
        translation=dataclasses.replace(settings.translation, base_url=f"{scripted_llm}/v1",
                                        model="scripted"))
    question = "How does the search work?"

    def connect():
        return corpus_store.connect(s.corpus_read_dsn, autocommit=True)

    with connect() as conn:
        config = dataclasses.replace(RetrievalConfig.from_settings(s), top_k=CANDIDATES)
        found = retrieve(conn, s, question, original=question, config=config,
                         language="en").passages
    assert len(found) >= 4
    # The best-placed passage of another section than the first gets the 2.
    target = next(n for n, p in enumerate(found, 1) if p.section != found[0].section)
    scores = {n: 2 if n == target else (0 if n == 1 else 1) for n in range(1, len(found) + 1)}
    set_script(scripted_llm, ["\n".join(f"{n}: {v}" for n, v in scores.items())])
    req = harness.request(question)
    log = harness.ListLog(req.turn)
    trace = Trace(turn=req.turn, user_hash=req.user)
    try:
        run_turn(req, TurnDeps(s, connect), TurnEmitter(log), trace)
    finally:
        set_script(scripted_llm, list(DEFAULT_SCRIPT["chunks"]))  # the next test's default
    done = log.frames[-1]
    assert done["type"] == "done", done
    assert trace.source_ids[0] == found[target - 1].id
    assert found[0].id not in trace.source_ids and len(trace.source_ids) <= KEEP
    kept = {(p.source, p.section) for p in found if p.id in trace.source_ids}
    assert all((q["source"], q["section"]) in kept for q in done["structured"]["quotes"])
    assert all(src.get("rerank") in (1, 2) for src in done["sources"])
    assert all(c["valid"] is True for c in done["checks"].values()), done["checks"]


def test_hybrid_modes_search_up_front_is_reranked_too() -> None:
    """Hybrid runs the workflow's retrieval before the tools: the rerank is one of its steps."""
    model = _model("1: 0\n2: 0\n3: 2\n4: 0\n5: 0\n6: 0")
    req = dataclasses.replace(harness.request("How does the search work?"), mode="hybrid")
    log = harness.ListLog(req.turn)
    trace = Trace(turn=req.turn, user_hash=req.user)

    def search(conn: object, s: Settings, query: str, **kw: object) -> harness.Retrieval:
        config = kw.get("config")
        top_k = config.top_k if isinstance(config, RetrievalConfig) else s.top_k
        return harness.Retrieval(SIX[:top_k], harness.INDEX, query)

    deps = TurnDeps(harness.settings(rerank=True, answer_tools="on", assistant_mode="hybrid"),
                    lambda: nullcontext(), search=search)  # type: ignore[arg-type,return-value]
    with harness.routed(model):
        run_turn(req, deps, TurnEmitter(log), trace)
    assert log.frames[-1]["type"] == "done", log.frames[-1]
    steps = [f["step"] for f in log.of("event")]
    assert steps.index("retrieve") < steps.index("rerank")
    assert trace.models.get("rerank") == "scripted" and _rerank_calls(model)
