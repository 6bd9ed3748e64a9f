"""What a turn decides, in process (tests/harness.py): the prompt the model is sent, the checks
and the done frame. Moved here from the full-stack tests (test_turn_ws, test_turn_streaming and
the former test_echo_turns), which keep the relay, resume, limits and faults between processes."""

from __future__ import annotations

import json
import re

from tests import harness

FIRST = ("The assistant searches the documentation by meaning and by words, and the answer "
         "cites the passages it used [1].")


def test_the_harness_turn_is_a_whole_turn_in_gapless_frames() -> None:
    chunks = ["BM25 ranks ", "passages by words [1]", ". Vectors rank meaning [2]."]
    r = harness.turn("How does the search work?", chunks=chunks)
    assert [f["seq"] for f in r.frames] == list(range(len(r.frames)))
    assert r.frames[0]["type"] == "accepted" and all(f["turn"] == harness.TURN for f in r.frames)
    assert [f["text"] for f in r.log.of("token")] == chunks
    done = r.done
    assert done["answer"] == "".join(chunks) == r.tokens
    assert done["checks"]["citations"] == {"valid": True, "cited": [1, 2], "invalid": []}
    assert [s["n"] for s in done["sources"]] == [1, 2, 3]
    assert {"title", "section", "excerpt", "score", "weak"} <= set(done["sources"][0])
    assert done["index"] == harness.INDEX and done["usage"]["completion_tokens"] == 3
    assert done["answer_form"] == "prose" and done["mode"] == "workflow"
    assert r.steps[:3] == ["language", "retrieve", "prompt"] and "first_token" in r.steps
    assert done["timing"]["first_token_ms"] is not None
    assert r.trace.outcome == "done" and r.trace.models["answer"] == "scripted"
    # The list log refuses a frame after the terminal one, as the Redis log does.
    try:
        r.log.append({"type": "token", "turn": harness.TURN, "text": "late"})
    except harness.TurnClosed:
        pass
    else:
        raise AssertionError("a frame after done was taken")


def test_model_sees_numbered_passages_and_the_question() -> None:
    """From test_turn_ws."""
    r = harness.turn("How does the search work?", chunks=["ok [1]"],
                     history=[("user", "Hi"), ("assistant", "Hello [1].")])
    body = r.model.streamed[-1]
    assert body["temperature"] == 0 and body["stream"] is True
    msgs = body["messages"]
    assert msgs[0]["role"] == "system" and "[1] " in msgs[0]["content"]
    assert "How does the search work?" in msgs[-1]["content"]
    assert {"role": "assistant", "content": "Hello."} in msgs, "earlier answers lose [n]"
    answer_call = [q for q in r.model.requests if q["body"].get("stream")][-1]
    assert answer_call["authorization"] == "Bearer local-no-key", "no hosted key to a local role"


def test_invalid_citation_is_flagged_not_blocked() -> None:
    """From test_turn_ws."""
    r = harness.turn("How does the search work?", chunks=["A claim [1] and ", "a bad one [7]."])
    assert r.done["answer"] == "A claim [1] and a bad one [7]."
    assert r.done["checks"]["citations"] == {"valid": False, "cited": [1, 7], "invalid": [7]}


def test_followup_is_rewritten_before_the_search() -> None:
    """From test_turn_streaming."""
    model = harness.ScriptedModel(rules=[{"match": "Rewrite the follow-up",
                                          "chunks": ["Why does the search use BM25?"]}],
                                  chunks=["Because of BM25 [1]."])
    r = harness.turn("and why is that?", model=model,
                     history=[("user", "How does the search work?"),
                              ("assistant", "It is hybrid [1].")])
    assert r.done["answer"] == "Because of BM25 [1]."
    assert "rewrite" in r.steps
    rewrite = [b for b in model.bodies("/chat/completions") if not b.get("stream")]
    assert rewrite and "and why is that?" in rewrite[0]["messages"][0]["content"]
    assert rewrite[0]["temperature"] == 0
    assert r.searches == ["Why does the search use BM25?"], "the search got the rewrite"


def test_sources_off_strips_markers_while_streaming() -> None:
    """From test_turn_streaming."""
    chunks = ["BM25 ranks words [", "1]. Vectors [2", "][3] rank meaning", " [9]."]
    r = harness.turn("How does search work?", chunks=chunks, show_sources=False)
    assert not re.search(r"\[\d+\]", r.tokens)
    assert r.tokens == r.done["answer"] == "BM25 ranks words . Vectors  rank meaning ."
    assert r.done["sources"] == []
    assert r.done["checks"]["citations"]["valid"] is True
    assert len(r.trace.source_ids) == 3, "the trace still records the sources"
    assert r.trace.checks["citations"]["recorded"]["invalid"] == [9]


def test_czech_question_is_translated_for_the_search_when_enabled() -> None:
    """From test_turn_streaming."""
    model = harness.ScriptedModel(rules=[{"match": "Translate the following question",
                                          "chunks": ["How does the search work?"]}],
                                  chunks=["Hledání je hybridní [1]."])
    r = harness.turn("Jak funguje vyhledávání v dokumentaci?", language="cs", model=model,
                     translate_queries="on")
    assert r.done["language"] == "cs"
    assert "translate" in r.steps
    translate = [b for b in model.bodies("/chat/completions") if not b.get("stream")]
    assert translate and "Jak funguje" in translate[0]["messages"][0]["content"]
    assert "Answer in Czech." in r.prompt[0]["content"]
    assert r.searches == ["How does the search work?"]


def test_a_markup_echo_is_flagged_in_the_done_frame_and_the_trace() -> None:
    """From the former test_echo_turns (test_turn_streaming sees the checks in the database)."""
    r = harness.turn("How does the search work?",
                     chunks=["<passage>\nThe search ", "ranks passages.\n</passage> Cite only ",
                             "numbers of passages given below."])
    echo = r.done["checks"]["prompt_echo"]
    assert echo["valid"] is False
    assert echo["markup"] == ["<passage>", "</passage>"]
    assert echo["instructions"] == ["cite only numbers of passages given below"]
    assert r.done["checks"]["repeat"]["valid"] is True
    step = next(s for s in r.done["timing"]["steps"] if s["step"] == "checks")
    assert step["prompt_echo_valid"] is False and step["repeat_valid"] is True
    assert r.trace.checks["prompt_echo"]["valid"] is False
    # What the model was sent: the rules, no sample sentence to copy.
    sent = "\n".join(m["content"] for m in r.prompt)
    assert "Ground rules:" in sent and "for example" not in sent.lower()
    assert "The search uses BM25" not in sent


def test_an_answer_copied_from_the_last_one_is_flagged_as_a_repeat() -> None:
    """From the former test_echo_turns."""
    history = [("user", "How does the search work?"), ("assistant", FIRST)]
    r = harness.turn("What is the capital of France?", chunks=[FIRST], history=history)
    assert r.done["checks"]["repeat"] == {"valid": False, "earlier": 1, "similarity": 1.0}
    assert r.done["checks"]["prompt_echo"]["valid"] is True
    assert r.trace.checks["repeat"]["valid"] is False
    # The same question again may rightly get the same answer.
    again = harness.turn("How does the search work?", chunks=[FIRST], history=history)
    assert again.done["checks"]["repeat"]["valid"] is True
    # Every source carries its weak-match label.
    assert all(isinstance(s["weak"], bool) for s in r.done["sources"])


def test_an_ungrounded_number_is_flagged_and_a_grounded_one_is_not() -> None:
    r = harness.turn("What is the maximum error?",
                     chunks=["The maximum error is 2.2 for 13 experts [3], ", "or 9.7 [3]."])
    numbers = r.done["checks"]["numbers"]
    assert numbers["valid"] is False and numbers["unconfirmed"] == ["9.7"]
    assert numbers["checked"] == 3


def test_the_structured_form_streams_the_answer_field_and_verifies_its_quotes() -> None:
    answer = ('{"outcome": "answer", "answer": "It is hybrid [1].", "quotes": '
              '[{"n": 1, "text": "BM25 ranks the words"}, {"n": 2, "text": '
              '"never written"}], "sources": [], "clarifying_question": null}')
    r = harness.turn("How does the search work?", chunks=[answer[:40], answer[40:]],
                     answer_form="structured")
    assert r.tokens == "It is hybrid [1]." == r.done["answer"]
    form = r.done["structured"]
    assert form["valid_json"] is True and form["outcome"] == "answer"
    assert r.done["checks"]["quotes"]["valid"] is False
    assert r.done["checks"]["quotes"]["not_found"] == ["never written"]
    assert "response_format" in r.model.streamed[-1]


def test_a_model_error_before_the_first_token_is_one_plain_error_frame() -> None:
    r = harness.turn("How does the search work?", model=harness.ScriptedModel(status=500))
    assert r.last["type"] == "error" and r.last["code"] == 503
    assert not r.log.of("token") and "scripted failure" not in r.last["message"]
    assert r.trace.outcome == "error" and r.trace.error_code == 503


def test_a_stream_that_ends_without_a_finish_is_no_answer() -> None:
    r = harness.turn("How does the search work?",
                     model=harness.ScriptedModel(chunks=["half ", "an answer"], die_after=1))
    assert r.last["type"] == "error" and r.log.of("token")[0]["text"] == "half "


def test_sources_off_sends_no_source_in_the_structured_block() -> None:
    """docs/spec/behaviour.md B-30: with sources off the done frame names no source anywhere: the
    structured block's source list is empty and its quotes carry their text and verdict, no
    number or path."""
    answer = ('{"outcome": "answer", "answer": "It is hybrid [1].", "quotes": '
              '[{"n": 1, "text": "BM25 ranks the words"}], '
              '"sources": ["docs/how-it-works.md"], "clarifying_question": null}')
    r = harness.turn("How does the search work?", chunks=[answer], answer_form="structured",
                     show_sources=False)
    form = r.done["structured"]
    assert r.done["sources"] == [] and form["sources"] == []
    assert form["quotes"] == [{"text": "BM25 ranks the words", "found": True}]
    assert "how-it-works" not in json.dumps(r.done)
    on = harness.turn("How does the search work?", chunks=[answer], answer_form="structured")
    assert on.done["structured"]["quotes"][0]["n"] == 1 and on.done["structured"]["sources"]


def test_sources_off_drops_a_quotes_group_with_its_section() -> None:
    """docs/spec/behaviour.md B-30: an interface text's group title names where it stands, as
    its section does: with sources off the quote keeps its text alone."""
    from worker.pipeline.turn import _sourceless

    quote = {"n": 1, "text": "A quality metric.", "found": True, "source": "about.json",
             "section": "results", "group": "Maximum Error of Estimate", "language": "en"}
    form = _sourceless({"structured": {"quotes": [quote], "sources": [{"n": 1}]}})
    assert form["structured"]["quotes"] == [{"text": "A quality metric.", "found": True,
                                             "language": "en"}]


def test_a_stream_cut_after_the_first_token_keeps_its_partial_answer_in_the_trace() -> None:
    """docs/spec/behaviour.md B-5: after the first token a failure ends the stream with one error,
    and the partial answer is not lost from the trace (its text with text traces on, its length
    always)."""
    model = harness.ScriptedModel(chunks=["half ", "an answer"], die_after=1)
    r = harness.turn("How does the search work?", model=model, trace_text=True)
    assert r.last["type"] == "error"
    assert r.trace.answer == "half " and r.trace.message == "How does the search work?"
    assert r.trace.partial_answer_chars == 5
    quiet = harness.turn("How does the search work?",
                         model=harness.ScriptedModel(chunks=["half ", "an answer"], die_after=1))
    assert quiet.trace.answer is None and quiet.trace.partial_answer_chars == 5
