"""The structured answer form: the answer field streams out of JSON; quotes and paths verified."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import pytest

from assistant_cli import stack
from assistant_cli.client import ask
from shared.passage import Passage
from tests.conftest import ALLOC, Stack, scripted_roles, set_script, start_stack
from tests.properties import for_each_seed
from tests.wsutil import app_token
from worker.pipeline.structured import SCHEMA, AnswerFieldStream, verify
from worker.pipeline.types import Retrieval

REAL_PORT, REAL_REDIS = ALLOC.port("structured_stack"), ALLOC.redis_url("structured_stack")
SCRIPTED_PORT = ALLOC.port("scripted_structured_stack")
SCRIPTED_REDIS = ALLOC.redis_url("scripted_structured_stack")
RETRIEVAL = Retrieval((
    Passage("p1", "docs/method.md", "Method", "# Method", "en", "The best compromise is the\n"
            "midpoint of the mean and the median.", "", False, 0.1),
    Passage("p2", "docs/user/result.md", "Result", "# Result", "en", "A low maximum error "
            "means the mean and median are close.", "", False, 0.1)), "v1", "q")


def test_answer_field_streams_exactly_whatever_the_splits() -> None:
    """Property over 200 seeded random splits (one test; a failure names its seed)."""
    for_each_seed(200, _answer_field_streams_exactly)


def _answer_field_streams_exactly(seed: int) -> None:
    answer = 'Line one [1]\n"quoted" \\ back\\slash, tab\t and é ü \u2014 done [2].'
    raw = json.dumps({"answer": answer, "outcome": "answer", "sources": [], "quotes": []},
                     ensure_ascii=seed % 2 == 0)
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(raw)), rng.randint(1, 40)))
    stream = AnswerFieldStream()
    out = "".join(stream.feed(raw[a:b]) for a, b in zip([0, *cuts], [*cuts, len(raw)],
                                                          strict=True))
    assert out == answer


def test_quotes_are_verified_verbatim_after_folding_whitespace_and_case() -> None:
    raw = json.dumps({"answer": "It is the midpoint [1].", "outcome": "answer",
                      "sources": ["docs/method.md", "docs/Method.md", "docs/nope.md"],
                      "quotes": [{"n": 1, "text": "the best compromise is the midpoint"},
                                 {"n": 2, "text": "the best compromise is the midpoint"},
                                 {"n": 1, "text": "the best compromise is a midpoint"},
                                 {"n": 7, "text": "anything"}]})
    r = verify(raw, "", RETRIEVAL)
    assert r.valid_json and r.answer == "It is the midpoint [1]."
    assert [q["found"] for q in r.quotes] == [True, False, False, False]
    assert [s["valid"] for s in r.sources] == [True, False, False], "paths match exactly"


def test_dont_know_is_an_outcome_with_one_clarifying_question() -> None:
    raw = json.dumps({"answer": "The passages do not say.", "outcome": "dont_know",
                      "clarifying_question": "Do you mean the app or the method?",
                      "sources": [], "quotes": []})
    r = verify(raw, "", RETRIEVAL)
    assert r.outcome == "dont_know" and r.clarifying_question.endswith("?")


def test_broken_json_keeps_the_streamed_answer() -> None:
    r = verify('{"answer": "cut off', "cut off", RETRIEVAL)
    assert not r.valid_json and r.answer == "cut off"


def test_a_second_answer_key_is_not_taken_over_the_streamed_one() -> None:
    # Seen with SmolLM2 before the schema forbade other keys: a short streamed answer, then a
    # second, rambling "answer" that json.loads would have kept.
    raw = ('{"answer": "The search uses BM25 [1]", "outcome": "answer", "sources": [], '
           '"quotes": [], "answer": "Something else entirely"}')
    r = verify(raw, "The search uses BM25 [1]", RETRIEVAL)
    assert not r.valid_json and r.answer == "The search uses BM25 [1]"
    assert SCHEMA["additionalProperties"] is False


@pytest.fixture(scope="module")
def structured_stack(services: stack.Supervisor) -> Iterator[Stack]:
    s = start_stack(services, "structured", REAL_PORT, {
        "ASSISTANT_REDIS_URL": REAL_REDIS, "ASSISTANT_ANSWER_FORM": "structured",
        # 300, not more: schema-held sampling with the 135M model ran at 2-3 tokens a second
        # on a loaded 2-core machine, and a rambling answer must reach its cap well inside
        # the worker's 180 s answer limit (the cut path is one this test accepts).
        "ASSISTANT_MAX_OUTPUT_TOKENS": "300"})
    try:
        yield s
    finally:
        s.sup.stop_all()


@pytest.mark.realmodel
def test_real_model_answers_in_the_structured_form(structured_stack: Stack) -> None:
    frames, done = ask(structured_stack.base_url, app_token(structured_stack),
                       "How does the search work?", timeout_s=240)
    assert done["type"] == "done", done  # the worker's time limit (180 s) ends it before 240
    form = done["structured"]
    tokens = "".join(f["text"] for f in frames if f["type"] == "token")
    # The 135M model sometimes rambles inside the answer string until the token cap; the
    # JSON is then cut, and the done frame must say so and keep the streamed answer. Otherwise
    # llama.cpp held the output to the schema.
    assert form["valid_json"] is True or form["cut"] is True, done
    assert form["valid_json"] is not form["cut"], done
    assert form["outcome"] in ("answer", "dont_know")
    assert tokens == done["answer"] and not tokens.lstrip().startswith("{")
    assert "quotes" in done["checks"] and "source_paths" in done["checks"]


@pytest.fixture(scope="module")
def scripted_structured_stack(services: stack.Supervisor, scripted_llm: str
                              ) -> Iterator[Stack]:
    s = start_stack(services, "structured-scripted", SCRIPTED_PORT, {
        "ASSISTANT_REDIS_URL": SCRIPTED_REDIS, "ASSISTANT_ANSWER_FORM": "structured",
        **scripted_roles(scripted_llm)})
    try:
        yield s
    finally:
        s.sup.stop_all()


def test_an_answer_cut_at_the_token_cap_says_so_and_keeps_what_was_streamed(
        scripted_structured_stack: Stack, scripted_llm: str) -> None:
    set_script(scripted_llm, ['{"answer": "The search uses', ' BM25 [1] and goes on'],
               finish_reason="length")
    frames, done = ask(scripted_structured_stack.base_url, app_token(scripted_structured_stack),
                       "How does the search work?")
    assert done["structured"]["cut"] is True and done["structured"]["valid_json"] is False
    assert done["answer"] == "The search uses BM25 [1] and goes on"
    assert "".join(f["text"] for f in frames if f["type"] == "token") == done["answer"]
    set_script(scripted_llm, ['{"answer": "Short [1].", "outcome": "answer", ',
                              '"sources": [], "quotes": []}'])
    _, done = ask(scripted_structured_stack.base_url, app_token(scripted_structured_stack),
                  "How does the search work?")
    assert done["structured"] == {**done["structured"], "cut": False, "valid_json": True}

