"""`eval answers` (docs/spec/behaviour.md B-35): the real path with scripted answer and judge
models, blind judging, known metrics, judge agreement, sealed sets, and a killed run resumed
without repeating."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from assistant_cli.cli import main
from assistant_cli.client import http_json
from assistant_cli.eval_cli import passage_lookup, section_texts
from shared import corpus_store
from shared.auth import mint_access_token
from tests.conftest import ALLOC, REPO, Stack, set_script, stack_env, wait_for
from worker.eval_answers import harness, judge, seal, stats
from worker.eval_answers.grade import grade
from worker.eval_answers.questions import AnswerQuestion, load_answer_questions
from worker.pipeline.structured import fold

# The stacks the harness starts from a setup's [env]: each on a Redis database of its own.
BRAVO_REDIS = ALLOC.redis_url("eval answers: setup bravo")
QUOTES_REDIS = ALLOC.redis_url("eval answers: quotes setup")
QUESTIONS = [
    {"id": "q1", "language": "en", "category": "method", "answerable": True,
     "question": "What does the acronym BeCoMe stand for?",
     "expected_facts": ["it stands for the best compromise mean", "it is a group method"]},
    {"id": "q2", "language": "en", "category": "howto", "answerable": True,
     "question": "How many experts does a project need at least?",
     "expected_facts": ["at least one expert"], "expected_numbers": [4817, 3]},
    {"id": "q3", "language": "cs", "category": "method", "answerable": True,
     "question": "Co je výsledek metody BeCoMe?",
     "expected_facts": ["střed aritmetického průměru a mediánu"]},
    {"id": "q4", "language": "en", "category": "offtopic", "answerable": False,
     "question": "What will the weather be in Prague tomorrow?", "expected_facts": []},
]
ANSWERS = {  # question -> scripted answer of setup A (model "scripted")
    "acronym BeCoMe": "BeCoMe is the Best Compromise Mean [1].",
    "How many experts": "The answer is 4817 experts [9].",
    "Co je výsledek": "Metoda BeCoMe je střed mezi průměrem a mediánem [1].",
    "weather be in Prague": "I do not know the weather. Which city do you mean?",
}
VERDICTS = {  # answer text -> the scripted judge's verdict
    "Best Compromise Mean [1]": {"facts": [{"n": 1, "delivered": True},
                                           {"n": 2, "delivered": False}],
                                 "unsupported_claims": []},
    "4817 experts": {"facts": [{"n": 1, "delivered": False}],
                     "unsupported_claims": ["4817 experts are needed"]},
    "střed mezi": {"facts": [{"n": 1, "delivered": True}], "unsupported_claims": []},
    "do not know the weather": {"facts": [], "unsupported_claims": []},
}
B_ANSWERS = {  # setup B (model "scripted-b"): better on q2, the same elsewhere
    "acronym BeCoMe": "BeCoMe is the Best Compromise Mean, a group method [1].",
    "How many experts": "One expert is enough to start [1].",
    "Co je výsledek": "Metoda BeCoMe je střed mezi průměrem a mediánem [2].",
    "weather be in Prague": "I do not know the weather there. Which city do you mean?",
}
B_VERDICTS = {
    "a group method [1]": {"facts": [{"n": 1, "delivered": True}, {"n": 2, "delivered": True}],
                           "unsupported_claims": []},
    "One expert is enough": {"facts": [{"n": 1, "delivered": True}],
                             "unsupported_claims": []},
    "mediánem [2]": {"facts": [{"n": 1, "delivered": True}], "unsupported_claims": []},
    "weather there": {"facts": [], "unsupported_claims": []},
}


def _rules(model: str, table: dict[str, Any], split: int = 1) -> list[dict[str, Any]]:
    out = []
    for match, value in table.items():
        text = value if isinstance(value, str) else json.dumps(value)
        size = max(1, len(text) // split)
        out.append({"model": model, "match": match,
                    "chunks": [text[i:i + size] for i in range(0, len(text), size)]})
    return out


def script_all(base: str, delay_s: float = 0.0, split: int = 1) -> None:
    """Answers for both setups and verdicts for both judges, chosen by model and content."""
    set_script(base, ["(no rule matched)"], delay_s=delay_s, rules=[  # type: ignore[arg-type]
        *_rules("scripted", ANSWERS, split), *_rules("scripted-b", B_ANSWERS, split),
        *_rules("scripted-judge", VERDICTS), *_rules("scripted-judge", B_VERDICTS),
        *_rules("scripted-judge-2", VERDICTS), *_rules("scripted-judge-2", B_VERDICTS)])


def requests_of(base: str, model: str) -> list[dict[str, Any]]:
    status, body = http_json("GET", f"{base}/_requests")
    assert status == 200
    return [r["body"] for r in body if r["body"].get("model") == model]


def write_questions(path: Path, questions: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions),
                    encoding="utf-8")
    return path


def write_setup(path: Path, name: str, url: str | None = None,
                env: dict[str, str] | None = None) -> Path:
    lines = [f'name = "{name}"'] + ([f'url = "{url}"'] if url else [])
    if env:
        lines.append("[env]")
        lines += [f'{k} = "{v}"' for k, v in env.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- in code, no services ---------------------------------------------------------------

def test_cohen_kappa_on_a_constructed_sample() -> None:
    # 10 labels: both yes 4, both no 3, first-only yes 2, second-only yes 1.
    a = [True] * 4 + [False] * 3 + [True] * 2 + [False]
    b = [True] * 4 + [False] * 3 + [False] * 2 + [True]
    # observed 0.7; chance 0.6*0.5 + 0.4*0.5 = 0.5; kappa (0.7-0.5)/(1-0.5) = 0.4
    assert judge.cohen_kappa(a, b) == 0.4
    assert judge.cohen_kappa([True, False], [True, False]) == 1.0
    assert judge.cohen_kappa([True, True], [True, True]) is None, "undefined, not 1 or 0"
    judgements = [
        {"item": "x", "judge": "first", "delivered": [True, False], "unsupported_claims": []},
        {"item": "x", "judge": "second", "delivered": [True, True], "unsupported_claims": ["c"]},
        {"item": "y", "judge": "first", "delivered": [False], "unsupported_claims": ["d"]},
        {"item": "y", "judge": "second", "delivered": [False], "unsupported_claims": ["e"]},
    ]
    ag = stats.agreement(judgements, {"x": {}, "y": {}})
    assert ag["answers"] == 2 and ag["fact_delivered"]["labels"] == 3
    # facts: (T,T) (F,T) (F,F): observed 2/3, chance 1/3*2/3 + 2/3*1/3 = 4/9 -> kappa 0.4
    assert ag["fact_delivered"]["kappa"] == 0.4
    assert ag["has_unsupported_claim"]["agreement"] == 0.5


def test_verdict_facts_map_back_through_the_order_the_judge_saw() -> None:
    raw = json.dumps({"facts": [{"n": 1, "delivered": True}, {"n": 2, "delivered": False},
                                {"n": 9, "delivered": True}], "unsupported_claims": ["x", " "]})
    v = judge.parse_verdict(raw, 3, fact_order=[2, 0, 1])
    assert v.delivered == (False, False, True) and v.unsupported_claims == ("x",)
    with pytest.raises(ValueError):
        judge.parse_verdict("not json", 1)


def test_grading_in_code_of_known_records() -> None:
    q = AnswerQuestion("u", "en", "What is the weather?", "offtopic", False, (), (), "")
    invented = {"outcome": "done", "answer": "It will be 31 degrees.", "checks": {
        "citations": {"valid": True, "cited": []},
        "numbers": {"valid": False, "unconfirmed": ["31"]}}}
    g = grade(q, invented)
    assert g["dont_know"] == 0.0 and g["invented_figures"] == 1.0 and g["number_flags"] == 1.0
    q2 = AnswerQuestion("n", "cs", "Kolik?", "x", True, ("f",), (0.5, 14.19), "")
    g2 = grade(q2, {"outcome": "done", "answer": "Je to 0,5 a také 14,19 [1].", "checks": {
        "citations": {"valid": True, "cited": [1]}, "numbers": {"valid": True}}})
    assert g2["expected_numbers"] == 1.0 and g2["language_match"] == 1.0
    assert g2["citations_used"] == 1.0 and g2["dont_know"] is None


def test_quotes_form_metrics_first_quote_dont_know_and_verbatim() -> None:
    targets = (("docs/m.md", "# M > ## Step 4"), ("faq.json", "results.maxError"))
    q = AnswerQuestion("a", "en", "What is the max error?", "method", True, (), (), "", targets)
    quote = {"n": 1, "text": "Delta max is half the distance.", "found": True,
             "source": "docs/m.md", "section": "# M > ## Step 4 > #### Example"}
    rec = {"outcome": "done", "answer": "Here: “Delta max is half the distance.” [1]",
           "checks": {"citations": {"valid": True, "cited": [1]}, "numbers": {"valid": True}},
           "structured": {"outcome": "answer", "quotes": [quote]},
           "sources": [{"n": 1, "source": "docs/m.md", "section": quote["section"]}]}
    # The first quote's section lies inside the expected one.
    assert grade(q, rec)["first_quote_expected"] == 1.0
    assert grade(q, rec)["dont_know_answerable"] == 0.0
    # From an `also_in` target (a JSON key path inside it) it counts too.
    other = {**quote, "source": "faq.json", "section": "results.maxError.answer"}
    assert grade(q, {**rec, "structured": {"quotes": [other]}})["first_quote_expected"] == 1.0
    # A quote from an interface group (JSON passages group short keys under their parent):
    # it counts when the group holds the expected key's own line, as retrieval's hit does.
    group = {**quote, "n": 2, "source": "faq.json", "section": "results"}
    grouped = {**rec, "structured": {"quotes": [group]}, "sources": [
        rec["sources"][0], {"n": 2, "source": "faq.json", "section": "results",
                            "text": "maxError.question: What?\nmaxError.answer: Delta."}]}
    assert grade(q, grouped)["first_quote_expected"] == 1.0
    other_group = {**grouped, "sources": [rec["sources"][0], {
        **grouped["sources"][1], "text": "median.answer: The middle one."}]}
    assert grade(q, other_group)["first_quote_expected"] == 0.0
    wrong = {**quote, "source": "docs/m.md", "section": "# M > ## Step 3"}
    assert grade(q, {**rec, "structured": {"quotes": [wrong, quote]}})[
        "first_quote_expected"] == 0.0, "the first quote decides, not any"
    # "I don't know" on an answerable question: counted, and no first quote.
    idk = {**rec, "answer": "I don't know: the documentation I can search does not answer "
                            "this.", "structured": {"outcome": "dont_know", "quotes": []}}
    g = grade(q, idk)
    assert g["dont_know_answerable"] == 1.0 and g["first_quote_expected"] == 0.0
    # Prose: the passage its first citation names.
    prose = {**rec, "structured": None, "answer": "It is half the distance [2], see [1].",
             "sources": [{"n": 1, "source": "docs/m.md", "section": "# M > ## Step 4"},
                         {"n": 2, "source": "x.md", "section": "# X"}]}
    assert grade(q, prose)["first_quote_expected"] == 0.0
    assert grade(q, {**prose, "answer": "Half the distance [1]."})["first_quote_expected"] == 1.0
    # An unanswerable question has no first-quote score; a question without targets neither.
    u = AnswerQuestion("u", "en", "Weather?", "offtopic", False, (), (), "")
    assert grade(u, idk)["first_quote_expected"] is None and grade(u, idk)["dont_know"] == 1.0
    assert grade(u, idk)["dont_know_answerable"] is None
    # Verbatim: checked against every chunk of the quote's section in the index.
    chunks = {("docs/m.md", quote["section"]): ["Step one.", "So  Delta max IS half the\n"
                                                "distance. More."]}
    found = harness.with_quotes_found(rec, lambda s, sec: chunks.get((s, sec), []))
    assert found["quotes_found"] == {"quotes": 1, "found": 1}
    assert grade(q, found)["quotes_verbatim"] == 1.0
    moved = harness.with_quotes_found(rec, lambda s, sec: ["Delta max is a third."])
    assert grade(q, moved)["quotes_verbatim"] == 0.0
    assert grade(q, prose)["quotes_verbatim"] is None, "prose has no quotes to check"
    assert harness.with_quotes_found(prose, lambda s, sec: []) == prose


def test_a_source_gets_the_text_of_its_own_piece_of_a_long_section() -> None:
    """A section cut into pieces: the source's text is the piece its excerpt begins, not the
    section's first piece (the judge and the first-quote grade read it)."""
    record = {"sources": [{"n": 1, "source": "p.json", "section": "cookies",
                           "excerpt": "outro: Until you sign in, no cookies…"}]}
    pieces = {("p.json", "cookies"): ["heading: Cookies\nintro: Three are set.",
                                      "outro: Until you sign in, no cookies at all."]}
    full = harness.with_passage_text(record, lambda src, sec: pieces[(src, sec)][0],
                                     lambda src, sec: pieces[(src, sec)])
    assert full["sources"][0]["text"] == "outro: Until you sign in, no cookies at all."
    q = AnswerQuestion("c", "en", "Why no banner?", "privacy", True, (), (), "",
                       (("p.json", "cookies.outro"),))
    quote = {"n": 1, "text": "Until you sign in, no cookies at all.", "source": "p.json",
             "section": "cookies"}
    rec = {**full, "outcome": "done", "answer": "x", "structured": {"quotes": [quote]}}
    assert grade(q, rec)["first_quote_expected"] == 1.0
    # A locale source names its key path in "key" (its section is a text), and one source
    # joins the pieces of its section: the quote's own piece is found by its text.
    joined = {"sources": [{"n": 1, "source": "p.json", "section": "Cookies", "key": "cookies",
                           "excerpt": "heading: Cookies\nintro: Three are set.…"}]}
    found = harness.with_quotes_found(
        {**harness.with_passage_text(joined, None, lambda src, sec: pieces[(src, sec)]),
         "outcome": "done", "answer": "x", "structured": {"quotes": [quote]}},
        lambda src, sec: pieces[(src, sec)])
    assert found["quotes_found"] == {"quotes": 1, "found": 1}
    assert grade(q, found)["first_quote_expected"] == 1.0


def test_question_targets_are_read_from_the_retrieval_fields(tmp_path: Path) -> None:
    path = write_questions(tmp_path / "t.jsonl", [
        {"id": "a", "language": "cs", "question": "Co?", "expected_source": "a.md",
         "expected_location": "# A", "also_in": [{"source": "b.json", "location": "k.*"}]},
        {"id": "b", "language": "en", "question": "Weather?", "answerable": False,
         "expected_source": None}])
    a, b = load_answer_questions(path)
    assert a.targets == (("a.md", "# A"), ("b.json", "k.*")) and b.targets == ()


def test_usage_is_estimated_from_the_rebuilt_prompt_when_the_server_reports_none() -> None:
    q = AnswerQuestion("e", "en", "How does the search work?", "x", True, ("f",), (), "")
    record = {"outcome": "done", "answer": "x" * 400, "detected_language": "en",
              "usage": {"prompt_tokens": 0, "completion_tokens": 0},
              "sources": [{"n": 1, "source": "a.md", "title": "A", "section": "# A",
                           "excerpt": "short…", "score": 0.1, "local": False}]}
    full = harness.with_passage_text(record, lambda src, sec: "y" * 4000)
    est = harness.estimated_usage(q, full)
    assert est is not None and est["completion_tokens"] == 100
    assert est["prompt_tokens"] > 1000, "the passage's full text, not its excerpt"
    assert harness.estimated_usage(q, {**full, "usage": {"prompt_tokens": 7}}) is None
    text = judge.judge_messages(q, "answer", full["sources"])[1]["content"]
    assert "y" * 4000 in text and "short…" not in text


def test_rules_are_parsed_and_applied() -> None:
    rule = "facts_delivered >= 0.47 and unsupported_claims <= 0.26"
    assert seal.accepted(rule, {"facts_delivered": 0.5, "unsupported_claims": 0.2},
                         stats.KNOWN)["accepted"] is True
    assert seal.accepted(rule, {"facts_delivered": 0.5, "unsupported_claims": 0.3},
                         stats.KNOWN)["accepted"] is False
    with pytest.raises(seal.SealError, match="unknown metric"):
        seal.parse_rule("beauty >= 1", stats.KNOWN)
    with pytest.raises(seal.SealError, match="not a rule clause"):
        seal.parse_rule("facts_delivered is high", stats.KNOWN)


@pytest.mark.parametrize(("argv", "message"), [
    (["--questions", "/nonexistent.jsonl"], "no question file"),
    (["--questions", "{bad}"], "not a valid question"),
    (["--second-share", "2"], "between 0 and 1"),
    (["--judge", "no-url-here"], "MODEL@BASE_URL"),
    (["--setup", "{toml}"], "ASSISTANT_* variables"),
])
def test_bad_input_gets_a_clear_error(argv: list[str], message: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    good = write_questions(tmp_path / "q.jsonl", QUESTIONS[:1])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n', encoding="utf-8")
    toml = tmp_path / "s.toml"
    toml.write_text('[env]\nPATH = "/tmp"\n', encoding="utf-8")
    argv = [a.format(bad=bad, toml=toml) for a in argv]
    base = ["eval", "answers", "--out", str(tmp_path / "run"), "--url", "http://127.0.0.1:9"]
    if "--questions" not in argv:
        base += ["--questions", str(good)]
    if "--judge" not in argv:
        base.append("--no-judge")
    assert main([*base, *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


# --- the real path: web, worker, scripted models ------------------------------------------

@pytest.fixture
def eval_token(scripted_stack: Stack, monkeypatch: pytest.MonkeyPatch) -> str:
    """The app token the harness asks with (ASSISTANT_TOKEN, as for any non-dev stack); stacks
    the harness starts inherit the scripted stack's secret, so the one token serves both."""
    token = mint_access_token("eval-user", scripted_stack.settings.app_jwt_secret)
    monkeypatch.setenv("ASSISTANT_TOKEN", token)
    monkeypatch.setenv("ASSISTANT_APP_JWT_SECRET", scripted_stack.settings.app_jwt_secret)
    return token


def test_known_answers_yield_known_metrics_and_the_judge_is_blind(
        scripted_stack: Stack, scripted_llm: str, tmp_path: Path, eval_token: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    qfile = write_questions(tmp_path / "dev.jsonl", QUESTIONS)
    # A is the running scripted stack, described by its [env]; B is started by the harness.
    described = {k: v for k, v in scripted_stack.env.items()
                 if k.startswith("ASSISTANT_") and "SECRET" not in k}
    a = write_setup(tmp_path / "alpha.toml", "alpha-setup-name", url=scripted_stack.base_url,
                    env=described)
    # B is started by the harness itself, from its [env], on a Redis database of its own.
    b = write_setup(tmp_path / "bravo.toml", "bravo-setup-name", env={
        **described, "ASSISTANT_REDIS_URL": BRAVO_REDIS, "ASSISTANT_ANSWER_LLM_MODEL": "scripted-b"})
    script_all(scripted_llm)
    out = tmp_path / "run"
    code = main(["eval", "answers", "--questions", str(qfile), "--setup", str(a),
                 "--compare", str(b), "--judge", f"scripted-judge@{scripted_llm}/v1",
                 "--second-judge", f"scripted-judge-2@{scripted_llm}/v1",
                 "--out", str(out), "--ledger", str(tmp_path / "seals.jsonl"),
                 "--var", str(tmp_path / "var")])
    assert code == 0, capsys.readouterr().err
    result = json.loads((out / "results.json").read_text(encoding="utf-8"))
    o = result["setups"]["A"]["metrics"]["overall"]
    assert o["facts_delivered"] == 0.5 and o["facts_delivered_n"] == 3  # (1/2 + 0 + 1) / 3
    assert o["unsupported_claims"] == 0.25 and o["unsupported_count"] == 0.25
    assert o["language_match"] == 1.0 and o["citations_used"] == 0.75
    assert o["invalid_citations"] == 0.25 and o["number_flags"] == 0.25
    assert o["expected_numbers"] == 0.5 and o["expected_numbers_n"] == 1
    assert o["dont_know"] == 1.0 and o["invented_figures"] == 0.0 and o["error"] == 0.0
    by_lang = result["setups"]["A"]["metrics"]["by_language"]
    assert by_lang["en"]["facts_delivered"] == 0.25 and by_lang["cs"]["facts_delivered"] == 1.0
    assert set(result["setups"]["A"]["metrics"]["by_category"]) == {"method", "howto",
                                                                    "offtopic"}
    ob = result["setups"]["B"]["metrics"]["overall"]
    assert ob["facts_delivered"] == 1.0 and ob["invalid_citations"] == 0.0
    assert result["setups"]["B"]["observed_answer_models"] == ["scripted-b"]
    prov = result["setups"]["A"]["provenance"]
    assert prov["mode"] == "workflow" and prov["answer_form"] == "prose"
    assert prov["models"]["answer"]["model"] == "scripted"
    assert "answer_system.txt" in prov["prompts"] and result["setups"]["A"]["index_versions"]
    assert "warnings" not in result["setups"]["A"]
    c = result["comparison"]["facts_delivered"]
    assert c["questions"] == 3 and c["mean_diff"] == 0.5
    assert result["comparison"]["invalid_citations"]["mean_diff"] == -0.25
    # Blind: the judge never reads a setup's name, model or address, and sees both setups
    # interleaved rather than one block after the other.
    seen = requests_of(scripted_llm, "scripted-judge")
    assert len(seen) == 8
    for body in seen:
        text = json.dumps(body, ensure_ascii=False)
        for secret in ("alpha-setup-name", "bravo-setup-name", "scripted-b",
                       scripted_stack.base_url):
            assert secret not in text
    order = ["B" if "scripted-b" in json.dumps(body) or any(
        k in json.dumps(body, ensure_ascii=False) for k in B_VERDICTS) else "A" for body in seen]
    assert order not in (["A"] * 4 + ["B"] * 4, ["B"] * 4 + ["A"] * 4), order
    # The judge reads the passages the answer model read, not their 400-character excerpts.
    cut = [src for line in (out / "answers-A.jsonl").read_text(encoding="utf-8").splitlines()
           for src in json.loads(line)["sources"] if src["excerpt"].endswith("…")]
    assert cut, "some passage is longer than its excerpt"
    # Of a section cut into pieces, the piece the excerpt begins (else the section's first).
    dsn = scripted_stack.settings.corpus_read_dsn
    where = (cut[0]["source"], cut[0].get("key") or cut[0]["section"])
    head = cut[0]["excerpt"].removesuffix("…")
    full = next((t for t in section_texts(dsn)(*where) if t.startswith(head)), None) \
        or passage_lookup(dsn)(*where)
    assert full and len(full) > len(head)
    assert any(full in m["content"] for b in seen for m in b["messages"])
    blind = json.loads((out / "blind.json").read_text(encoding="utf-8"))
    assert all(len(i) == 12 for i in blind["items"]), "random tokens, not setup names"
    # The second judge rescored 25% of the 8 answers; kappa is reported per criterion.
    assert len(requests_of(scripted_llm, "scripted-judge-2")) == 2
    assert result["agreement"]["answers"] == 2
    assert set(result["agreement"]) >= {"fact_delivered", "has_unsupported_claim"}
    html = (out / "report.html").read_text(encoding="utf-8")
    for png in ("A_by_language.png", "A_by_category.png", "B_by_language.png",
                "comparison.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png in html
    assert 'href="#A-q2"' in html and 'id="A-q2"' in html, "worst answers link to passages"


def test_sealed_set_refuses_runs_without_a_rule_and_with_a_changed_rule(
        scripted_stack: Stack, scripted_llm: str, tmp_path: Path, eval_token: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    qfile = write_questions(tmp_path / "sealed.jsonl", QUESTIONS[:1])
    setup = write_setup(tmp_path / "a.toml", "a", url=scripted_stack.base_url)
    out, ledger = tmp_path / "run", str(tmp_path / "seals.jsonl")
    args = ["eval", "answers", "--questions", str(qfile), "--setup", str(setup),
            "--no-judge", "--out", str(out), "--ledger", ledger]
    script_all(scripted_llm)
    assert main(args) == 2
    assert "sealed question set" in capsys.readouterr().err
    assert not (out / "answers-A.jsonl").exists(), "refused before any question"
    rule = "language_match >= 0.9 and invalid_citations <= 0.1"
    assert main(["eval", "seal", str(qfile), "--rule", rule, "--out", str(out),
                 "--ledger", ledger]) == 0
    assert main([*args, "--rule", "language_match >= 0.5"]) == 2
    assert "another rule is refused" in capsys.readouterr().err
    assert main(["eval", "seal", str(qfile), "--rule", "language_match >= 0.5", "--out",
                 str(tmp_path / "elsewhere"), "--ledger", ledger]) == 2
    assert "cannot change" in capsys.readouterr().err
    assert main(args) == 0
    result = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert result["rule"] == rule
    assert result["setups"]["A"]["acceptance"]["accepted"] is True
    # This setup names only a URL: the harness cannot know the server's models, and says so.
    assert "answered with scripted" in result["setups"]["A"]["warnings"][0]
    assert len(requests_of(scripted_llm, "scripted")) == 1


def test_a_killed_run_resumes_without_repeating_questions(
        scripted_stack: Stack, scripted_llm: str, tmp_path: Path, eval_token: str) -> None:
    qfile = write_questions(tmp_path / "dev.jsonl", QUESTIONS)
    setup = write_setup(tmp_path / "a.toml", "a", url=scripted_stack.base_url)
    out = tmp_path / "run"
    argv = ["eval", "answers", "--questions", str(qfile), "--setup", str(setup),
            "--judge", f"scripted-judge@{scripted_llm}/v1", "--second-share", "0",
            "--out", str(out), "--ledger", str(tmp_path / "seals.jsonl")]
    script_all(scripted_llm, delay_s=0.3, split=4)  # about a second per answer
    proc = subprocess.Popen([sys.executable, "-m", "assistant_cli.cli", *argv], cwd=REPO,
                            env=stack_env({"ASSISTANT_TOKEN": eval_token}),
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    answers = out / "answers-A.jsonl"
    try:
        assert wait_for(lambda: answers.is_file() and answers.read_text().count("\n") >= 1,
                        60), "the first answer was recorded"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    first = [json.loads(x)["id"] for x in answers.read_text().splitlines()]
    assert 1 <= len(first) < len(QUESTIONS)
    time.sleep(2)  # the turn in flight when the harness died finishes on the server
    script_all(scripted_llm)  # also clears the recorded requests
    assert main(argv) == 0
    ids = [json.loads(x)["id"] for x in answers.read_text().splitlines()]
    assert sorted(ids) == sorted(q["id"] for q in QUESTIONS), "each question exactly once"
    asked = requests_of(scripted_llm, "scripted")
    assert len(asked) == len(QUESTIONS) - len(first), "no question asked twice"
    for body in asked:
        for qid in first:
            question = next(q["question"] for q in QUESTIONS if q["id"] == qid)
            assert question not in json.dumps(body, ensure_ascii=False)
    assert len(requests_of(scripted_llm, "scripted-judge")) == len(QUESTIONS)
    # A finished run resumed again asks nothing and judges nothing.
    script_all(scripted_llm)
    assert main(argv) == 0
    assert requests_of(scripted_llm, "scripted") == []
    assert requests_of(scripted_llm, "scripted-judge") == []


QUOTES_QUESTIONS = [
    {"id": "s-en", "language": "en", "category": "assistant", "answerable": True,
     "question": "How does the search work?", "expected_facts": [],
     "expected_source": "docs/how-it-works.md",
     "expected_location": "# How the BeCoMe assistant works > ## How the search works"},
    {"id": "s-cs", "language": "cs", "category": "assistant", "answerable": True,
     "question": "Jak funguje vyhledávání?", "expected_facts": [],
     "expected_source": "docs/how-it-works.md",
     "expected_location": "# How the BeCoMe assistant works > ## How the search works"},
    {"id": "u-en", "language": "en", "category": "offtopic", "answerable": False,
     "question": "What is the capital of France?", "expected_facts": []},
]


def test_quotes_form_is_evaluated_per_language_through_the_real_path(
        scripted_stack: Stack, tmp_path: Path, eval_token: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A quotes-form stack started by the harness: first quote from the expected section,
    "I don't know" on answerable and unanswerable, prompt echoes and verbatim quotes, per
    language, each equal to what the recorded answers and the index say."""
    qfile = write_questions(tmp_path / "q.jsonl", QUOTES_QUESTIONS)
    described = {k: v for k, v in scripted_stack.env.items()
                 if k.startswith("ASSISTANT_") and "SECRET" not in k}
    setup = write_setup(tmp_path / "quotes.toml", "quotes", env={
        **described, "ASSISTANT_REDIS_URL": QUOTES_REDIS, "ASSISTANT_ANSWER_FORM": "quotes"})
    out = tmp_path / "run"
    code = main(["eval", "answers", "--questions", str(qfile), "--setup", str(setup),
                 "--no-judge", "--out", str(out), "--ledger", str(tmp_path / "seals.jsonl"),
                 "--var", str(tmp_path / "var")])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    result = json.loads((out / "results.json").read_text(encoding="utf-8"))
    by_lang = result["setups"]["A"]["metrics"]["by_language"]
    records = {r["id"]: r for r in map(json.loads, (out / "answers-A.jsonl").read_text(
        encoding="utf-8").splitlines())}
    assert all(r["outcome"] == "done" and r["structured"] for r in records.values())
    def in_index(quote: dict[str, Any]) -> bool:
        with corpus_store.connect(scripted_stack.settings.corpus_read_dsn) as conn:
            rows = conn.execute(f"SELECT text FROM {corpus_store.LIVE_TABLE} WHERE source = %s "
                                "AND section = %s", (quote["source"], quote["section"]))
            return any(fold(quote["text"]) in fold(r[0]) for r in rows.fetchall())

    for lang, qid in (("en", "s-en"), ("cs", "s-cs")):
        quotes = records[qid]["structured"]["quotes"]
        first = quotes[0]["section"] if quotes else None
        assert by_lang[lang]["first_quote_expected"] == (
            1.0 if first and first.startswith(QUOTES_QUESTIONS[0]["expected_location"]) else 0.0)
        assert by_lang[lang]["dont_know_answerable"] == (
            1.0 if records[qid]["structured"]["outcome"] == "dont_know" else 0.0)
        # Every quote is in the index's text of its section (looked up here independently).
        assert all(in_index(quote) for quote in quotes)
        if quotes:
            assert by_lang[lang]["quotes_verbatim"] == 1.0
    assert by_lang["en"]["dont_know"] == (
        1.0 if records["u-en"]["structured"]["outcome"] == "dont_know" else 0.0)
    assert by_lang["en"]["dont_know_n"] == 1 and by_lang["en"]["first_quote_expected_n"] == 1
    assert by_lang["en"]["prompt_echo"] == 0.0 and by_lang["cs"]["prompt_echo"] == 0.0
    assert result["setups"]["A"]["provenance"]["answer_form"] == "quotes"
    assert "en: first quote from the expected section" in printed.out
    assert "cs: first quote from the expected section" in printed.out


def test_provenance_records_every_configured_role() -> None:
    """The setup's models are the role registry's, not a hand-kept list: the offline
    translator (which changes Czech retrieval) and a configured judge are recorded too."""
    from shared.config import ROLE_SPECS
    from worker.eval_answers.setup import Setup, provenance

    env = (("ASSISTANT_JUDGE_BASE_URL", "http://127.0.0.1:9/v1"),
           ("ASSISTANT_JUDGE_MODEL", "judge-model"))
    setup = Setup("t", None, env)
    models = provenance(setup)["models"]
    assert list(models) == [s.name for s in ROLE_SPECS
                            if getattr(setup.settings(), s.name) is not None]
    assert models["translator"]["model"] == "gemma-3-270m"
    assert models["judge"] == {"provider": "local", "model": "judge-model",
                               "base_url": "http://127.0.0.1:9/v1"}
