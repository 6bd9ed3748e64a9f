"""The quotes answer form in pure code: spans, ranking, "I don't know", the written answer, and
every check passing by construction."""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Sequence

from shared.config import settings_from_env
from shared.passage import Passage
from shared.spans import (
    MAX_SPAN_CHARS,
    Span,
    continued,
    overlap_prefix,
    passage_spans,
    split_spans,
    tree_path,
)
from shared.turn_request import TurnRequest
from worker.pipeline.markers import strip_markers
from worker.pipeline.quote_answer import compose
from worker.pipeline.quotes import (
    Candidate,
    Weights,
    choose,
    coverage,
    covered,
    decision,
    rank_spans,
    retrieval_confidence,
)
from worker.pipeline.structured import fold
from worker.pipeline.turn import run_checks
from worker.pipeline.types import Retrieval

METHOD = """The **maximum error Δmax** is a precision indicator that measures the distance \
between the arithmetic mean and median.

**Formula:**
```
Δmax = |centroid(Γ) - centroid(Ω)| / 2
```

**Interpretation:**
- **Lower Δmax** → Higher agreement among experts
- **Higher Δmax** → Greater disagreement or presence of outliers"""

AUTHORS = ("The method was developed by I. Vrana, J. Tyrychtr, and M. Pelikan at the Czech "
           "University of Life Sciences Prague. It is used e.g. for budgets.")

FAQ = """question: How do I invite experts?
answer: Open your project, click 'Invite Experts', and enter the email of a registered user."""


def _p(pid: str, text: str, section: str = "# Doc > ## Part", lang: str = "en",
       source: str = "docs/method-description.md") -> Passage:
    return Passage(pid, source, "Doc", section, lang, text, text, False)


def _texts(text: str, skip: int = 0) -> list[str]:
    return [s.text_of(text) for s in split_spans(text, skip)]


def test_sentences_items_and_formula_lines_are_spans_headings_and_labels_are_not() -> None:
    spans = _texts(METHOD)
    assert spans[0].startswith("The **maximum error Δmax** is a precision indicator")
    assert "Δmax = |centroid(Γ) - centroid(Ω)| / 2" in spans
    assert "**Lower Δmax** → Higher agreement among experts" in spans
    assert "**Formula:**" not in spans and "```" not in spans
    assert not any(s.startswith("- ") for s in spans)


def test_initials_and_abbreviations_do_not_end_a_sentence() -> None:
    assert _texts(AUTHORS) == [
        "The method was developed by I. Vrana, J. Tyrychtr, and M. Pelikan at the Czech "
        "University of Life Sciences Prague.", "It is used e.g. for budgets."]


def test_a_legal_reference_does_not_end_a_sentence() -> None:
    """„... podle čl. 6 odst. 1 písm. b) GDPR.“ was quoted as „... podle čl.“ and „1 písm. b)
    GDPR.“: a quote cut inside its sentence."""
    body = ("basis.body: Údaje účtu se zpracovávají na smluvním základě podle čl. 6 odst. 1 "
            "písm. b) GDPR. Omezení přihlášení stojí na oprávněném zájmu.")
    assert _texts(body) == ["Údaje účtu se zpracovávají na smluvním základě podle čl. 6 odst. "
                            "1 písm. b) GDPR.", "Omezení přihlášení stojí na oprávněném zájmu."]
    assert _texts("Export your data (GDPR Art. 20) at any time. It is JSON.") == [
        "Export your data (GDPR Art. 20) at any time.", "It is JSON."]


def test_a_wrapped_page_line_that_starts_with_a_word_and_colon_is_prose() -> None:
    """A page's paragraph wrapped before "renewal: each use ..." was cut there as if the line
    were an app's text with the key "renewal": two fragments of one sentence were quoted."""
    page = ("The longer-lived one renews it, and it rotates on every\nrenewal: each use mints a "
            "new token and retires the old.\n\nNext: [running a decision](running.md), which "
            "covers the three ways an expert can\nexpress an opinion.")
    passage = _p("a", page, "# Your data > ## Signing in", source="docs/user/security.md")
    assert [s.text_of(page) for s in passage_spans([passage], [passage])[0]] == [
        "The longer-lived one renews it, and it rotates on every\nrenewal: each use mints a new "
        "token and retires the old.", "Next: [running a decision](running.md), which covers the "
        "three ways an expert can\nexpress an opinion."]
    # An app's texts are still read by their keys.
    faq = _p("b", FAQ, "application", source="frontend/src/i18n/locales/en/faq.json")
    assert [s.key for s in passage_spans([faq], [faq])[0]] == [
        "question", "answer"]


def test_interface_lines_quote_the_text_not_the_key() -> None:
    assert _texts(FAQ) == ["How do I invite experts?", "Open your project, click 'Invite "
                           "Experts', and enter the email of a registered user."]


def test_a_long_sentence_is_cut_at_a_boundary_never_inside_a_word() -> None:
    words = " ".join(f"word{i}, and more" for i in range(60)) + "."
    spans = _texts(words)
    assert len(spans) > 1
    for s in spans:
        assert len(s) <= MAX_SPAN_CHARS
        assert re.search(r"\b" + re.escape(s.split()[-1].rstrip(",.")) + r"\b", words)
        assert words.find(s) >= 0 and (words.find(s) + len(s) == len(words)
                                       or not words[words.find(s) + len(s)].isalnum())


def test_the_chunkers_overlap_fragment_is_not_quoted() -> None:
    first = "Median is robust. The final result is the best compromise of both measures."
    second = "compromise of both measures. It averages the mean and the median."
    skip = overlap_prefix(second, [first, second])
    assert second[:skip] == "compromise of both measures."
    assert _texts(second, skip) == ["It averages the mean and the median."]
    assert overlap_prefix(first, [first, second]) == 0


def test_a_title_or_a_label_alone_is_no_quote() -> None:
    assert _texts("title: Best compromise\nsubtitle: The result of the whole panel in one "
                  "triangle") == ["The result of the whole panel in one triangle"]


def test_a_button_label_in_title_case_is_no_quote() -> None:
    text = ("confirm: Delete My Account\n"
            "warning: Once you delete your account, there is no going back.\n"
            "open: Transfer Ownership of a Project")
    assert _texts(text) == ["Once you delete your account, there is no going back."]


def test_a_sentence_the_chunker_cut_at_the_end_of_a_piece_is_not_quoted() -> None:
    # The piece ends inside a sentence that the next piece of the section finishes.
    text = ("Nothing, until the experts answer. The result updates as opinions arrive.\n\n"
            "Next: [running a decision](running-a-decision.md), which covers the three ways "
            "an expert can")
    following = "the three ways an expert can\nexpress an opinion."
    assert continued(text, [text, following]) and not continued(following, [text, following])
    assert [s.text_of(text) for s in split_spans(text, 0, True)] == [
        "Nothing, until the experts answer.", "The result updates as opinions arrive."]
    # The last piece of a section, or a sentence that ends or introduces what follows, stays.
    assert _texts(text)[-1].endswith("an expert can")
    assert [s.text_of(t) for t in ["It has three steps:"] for s in split_spans(t, 0, True)] \
        == ["It has three steps:"]


def test_an_interface_heading_or_button_is_no_quote() -> None:
    text = ("controller.heading: Who is responsible for the data\n"
            "controller.body: Ekaterina Kuzmina runs this service as an independent project.\n"
            "invite.successTitle: The invitation was sent to them\n"
            "hero.subtitle: The result of the whole panel in one triangle")
    assert _texts(text) == ["Ekaterina Kuzmina runs this service as an independent project.",
                            "The result of the whole panel in one triangle"]


def test_drawings_images_and_bare_links_are_not_spans() -> None:
    text = ("┌────────┐    ┌─────────┐\n│ Web UI │───▶│ the API │\n└────────┘    └─────────┘\n\n"
            "![The chart](img/chart.png)\n\n"
            "- [Overview](#overview)\n\nThe chart shows every opinion as a grey triangle.")
    assert _texts(text) == ["The chart shows every opinion as a grey triangle."]


def test_a_file_trees_entry_is_quoted_as_its_name_and_comment() -> None:
    """Where a thing lives is said by a file tree: its entry and comment, without the
    branches, is a span; an entry without a comment says nothing. A piece of a long tree cut
    off from its fence (the chunker) has the same spans."""
    tree = ("```text\ntests/\n├── unit/\n│   ├── test_data_loading.py      # text file parsing\n"
            "│   └── conftest.py\n└── shared/              # test helpers and utilities\n```")
    assert _texts(tree) == ["test_data_loading.py      # text file parsing",
                            "shared/              # test helpers and utilities"]
    piece = ("│   ├── client_ip.py        # Real client IP behind trusted proxies\n"
             "└── main.py             # FastAPI application (+ setup_logging)")
    assert _texts(piece) == ["client_ip.py        # Real client IP behind trusted proxies",
                             "main.py             # FastAPI application (+ setup_logging)"]


def _vectors_by_words(texts: Sequence[str], kind: str) -> list[list[float]]:
    """A stand-in for the embeddings role: a bag of a few words (pure code)."""
    vocab = ["error", "formula", "invite", "experts", "developed", "median", "mean", "email"]
    return [[float(w in t.lower()) for w in vocab] + [0.1] for t in texts]


def _rank(question: str, passages: list[Passage], weights: Weights | None = None
          ) -> tuple[list[Candidate], list[list[Span]]]:
    spans = [split_spans(p.text, interface=p.source.endswith(".json")) for p in passages]
    ranked = rank_spans([question], passages, spans, _vectors_by_words, lambda t: 1.0,
                        weights or Weights())
    return ranked, spans


def test_the_best_span_answers_and_an_faq_question_gives_way_to_its_answer() -> None:
    passages = [_p("a", METHOD), _p("b", FAQ, "invite", source="faq.json")]
    ranked, spans = _rank("how do I invite experts by email", passages)
    chosen = choose(ranked, passages, spans, 1.0, Weights(threshold=0.0))
    assert chosen[0].n == 1 and chosen[0].text.startswith("Open your project")


def test_a_span_that_repeats_the_question_is_no_answer() -> None:
    """A code example that asks the very question (a test calling the turn with it) matches
    every word of it and says nothing: the span that answers is quoted instead."""
    example = ('```python\nr = harness.turn("How do I invite experts by email?", '
               'chunks=["a"])\n```\n')
    passages = [_p("a", example, "# Dev > ## Harness", source="docs/developing.md"),
                _p("b", FAQ, "invite", source="faq.json")]
    ranked, spans = _rank("How do I invite experts by email?", passages)
    chosen = choose(ranked, passages, spans, 1.0, Weights(threshold=0.0))
    assert chosen and all("harness.turn" not in c.text for c in chosen)
    assert chosen[0].text.startswith("Open your project")


def test_a_follow_up_is_not_given_the_quotes_it_was_given_before() -> None:
    """A follow-up searched with its earlier question finds the same spans: an answer that
    would repeat the last one word for word gives way to the next best spans, unless nothing
    else is left; an answer that repeats only part of it stays."""
    passages = [_p("a", METHOD), _p("b", FAQ, "invite", source="faq.json")]
    ranked, spans = _rank("how do I invite experts by email", passages)
    first = choose(ranked, passages, spans, 1.0, Weights(threshold=0.0))
    said = "Here is what the documentation says: " + " ".join(
        f"“{c.text}” [1]" for c in first)
    again = choose(ranked, passages, spans, 1.0, Weights(threshold=0.0), said=said)
    assert again and all(c.text not in said for c in again)
    # Everything said already: the best is given again rather than nothing.
    everything = " ".join(c.text for c in ranked)
    assert choose(ranked, passages, spans, 1.0, Weights(threshold=0.0), said=everything)
    # Passages that are no weak matches, so that more than one span may be quoted.
    passages = [dataclasses.replace(p, score=1.0) for p in passages]
    wide = Weights(threshold=0.0, margin=10.0)
    three = choose(ranked, passages, spans, 1.0, wide)
    assert len(three) == 3
    assert choose(ranked, passages, spans, 1.0, wide, said=f"“{three[0].text}” [1]") == three


def test_nothing_clears_the_threshold_so_the_outcome_is_i_dont_know() -> None:
    passages = [_p("a", METHOD, "# Doc > ## Step 4: the maximum error")]
    ranked, spans = _rank("what is the capital of France", passages)
    assert choose(ranked, passages, spans, 0.0) == []
    answer = compose([], passages, "en")
    assert answer.outcome == "dont_know" and answer.quotes == ()
    assert answer.clarifying_question == "Did you mean “Doc › Step 4: the maximum error”?"
    assert answer.nearest[0]["ask"] == \
        "What does the documentation say about “Step 4: the maximum error”?"
    assert compose([], passages, "cs").text.startswith("To nevím")


def test_i_dont_know_names_the_app_texts_in_the_readers_language() -> None:
    """"Who was the first person to walk on the Moon?" was offered the Czech FAQ's „Co je fuzzy
    trojúhelníkové číslo?“ among its nearest sections: an app's text of the other language
    is named by its twin (the same key in the reader's locale) where the index has one."""
    cs_faq = _p("c", "question: Co je fuzzy trojúhelníkové číslo?\nanswer: Tři hodnoty.",
                "method.whatIsFuzzy", "cs", "frontend/src/i18n/locales/cs/faq.json")
    en_faq = _p("e", "question: What is a fuzzy triangular number?\nanswer: Three values.",
                "method.whatIsFuzzy", "en", "frontend/src/i18n/locales/en/faq.json")
    page = _p("m", METHOD, "# Doc > ## Step 4: the maximum error")
    english = compose([], [cs_faq, page], "en", pool=[cs_faq, en_faq, page])
    assert [n["source"] for n in english.nearest] == [en_faq.source, page.source]
    # A Czech reader keeps the Czech text; a text without a twin stays as it is.
    czech = compose([], [cs_faq, page], "cs", pool=[cs_faq, en_faq, page])
    assert [n["source"] for n in czech.nearest] == [cs_faq.source, page.source]
    assert [n["source"] for n in compose([], [cs_faq], "en", pool=[cs_faq]).nearest] == \
        [cs_faq.source]


def test_a_czech_decision_reads_retrievals_confidence_and_coverage_can_mix() -> None:
    """Same spans, same coverage: a Czech question whose passages retrieval found with a low
    fused score gets "I don't know", with a high one an answer (Weights.confidence_other)."""
    passages = [_p("a", METHOD, "# Doc > ## Step 4: the maximum error")]
    ranked, spans = _rank("what is the maximum error formula", passages)
    w = Weights(threshold_other=0.0, confidence_other=0.5)
    best = decision(ranked, 0.2, 0.0, w, english=False)
    w = dataclasses.replace(w, threshold_other=best + 0.25)
    sure = [dataclasses.replace(passages[0], score=0.9)]
    unsure = [dataclasses.replace(passages[0], score=0.1)]
    assert choose(ranked, sure, spans, 0.2, w, english=False)
    assert choose(ranked, unsure, spans, 0.2, w, english=False) == []
    # English questions do not read it (confidence 0): the fused score changes nothing.
    en = dataclasses.replace(w, threshold=decision(ranked, 0.2, 0.0, w) - 0.01)
    assert choose(ranked, sure, spans, 0.2, en) and choose(ranked, unsure, spans, 0.2, en)
    idf = {"maximum": 2.0, "error": 2.0, "chyba": 2.0}
    questions = ["Jaká je maximální chyba?", "What is the maximum error?"]
    mixes = {m: coverage(questions, passages, lambda t: idf.get(t, 0.0), 3.0, m)
             for m in ("max", "mean", "last")}
    assert mixes["max"] == mixes["last"] > mixes["mean"]


def test_coverage_is_low_for_words_the_passages_never_use() -> None:
    passages = [_p("a", METHOD)]
    idf = {"capital": 0.0, "france": 0.0, "maximum": 2.0, "error": 2.0, "what": 0.1,
           "the": 0.1}
    low = coverage(["What is the capital of France?"], passages, lambda t: idf.get(t, 0.0), 3.0)
    high = coverage(["What is the maximum error?"], passages, lambda t: idf.get(t, 0.0), 3.0)
    assert low < 0.1 < 0.9 < high


def test_a_czech_question_gets_czech_wording_and_a_note_for_an_english_page() -> None:
    passages = [_p("a", METHOD)]
    ranked, spans = _rank("vzorec pro maximum error formula", passages)
    chosen = choose(ranked, passages, spans, 1.0, Weights(threshold=0.0))
    answer = compose(chosen, passages, "cs")
    assert answer.text.startswith("Dokumentace o tom doslova říká:")
    assert "„" in answer.text and "(Dokumentace to uvádí anglicky.)" in answer.text
    assert all(q["note"] == "Dokumentace to uvádí anglicky." for q in answer.quotes)


def test_an_english_question_quoted_from_a_czech_text_says_so() -> None:
    """A Czech interface text without an English twin can be the best answer: the English
    reader is told the documentation says it in Czech."""
    text = "outro: Nepoužívá se žádná analytická ani reklamní služba."
    passages = [_p("a", text, "processors", lang="cs",
                   source="frontend/src/i18n/locales/cs/privacy.json")]
    ranked, spans = _rank("analytická reklamní služba", passages)
    answer = compose(choose(ranked, passages, spans, 1.0, Weights(threshold=0.0)), passages, "en")
    assert "(The documentation says this in Czech.)" in answer.text
    assert [q["note"] for q in answer.quotes] == ["The documentation says this in Czech."]


def test_a_quote_from_a_code_block_says_so() -> None:
    """A file tree's entry (or a formula or command line) is code: the panel shows it as such,
    never as Markdown (`__init__.py` would turn bold)."""
    text = ("Layout:\n\n```text\nsrc/\n├── __init__.py    # Package marker with version\n```\n\n"
            "The version is read at import.")
    passages = [_p("a", text)]
    quoted = []
    for question in ("which file marks the package and its version",
                     "when is the version read at import"):
        ranked, spans = _rank(question, passages)
        answer = compose(choose(ranked, passages, spans, 1.0, Weights(threshold=0.0)),
                         passages, "en")
        quoted.append((answer.quotes[0]["text"], answer.quotes[0]["code"]))
    assert quoted == [("__init__.py # Package marker with version", True),
                      ("The version is read at import.", False)]


def test_a_file_trees_entry_says_where_it_lives_in_the_tree() -> None:
    """The entries above it name its place ("tests/integration/test_data_loading.py"), as far
    up as the passage holds the tree (a later piece of a long tree starts below its root)."""
    tree = ("```text\ntests/\n├── unit/             # fast\n│   └── models/   # models\n"
            "├── integration/\n│   ├── test_data_loading.py      # text file parsing\n"
            "│   └── api/\n│       └── db/     # cascades\n└── shared/  # helpers\n```\n\n"
            "Unit tests check components.")
    paths = {s.text_of(tree).split()[0]: tree_path(tree, s) for s in split_spans(tree)}
    assert paths == {"unit/": "tests/unit/", "models/": "tests/unit/models/",
                     "test_data_loading.py": "tests/integration/test_data_loading.py",
                     "db/": "tests/integration/api/db/", "shared/": "tests/shared/",
                     "Unit": ""}
    piece = "│   └── api/\n│       └── db/     # cascades, relationships"
    assert [tree_path(piece, s) for s in split_spans(piece)] == ["api/db/"]
    # The chunker's pieces of one section, chained by their overlap: the whole tree.
    first = "```text\ntests/\n├── integration/\n│   ├── a.py  # parsing of text"
    later = "parsing of text\n│   └── api/\n│       └── db/     # cascades, relationships"
    assert overlap_prefix(later, [first]) == len("parsing of text")
    spans = split_spans(later, overlap_prefix(later, [first]))
    assert [tree_path(later, s, [first, later]) for s in spans] == [
        "tests/integration/api/db/"]
    # The overlap may end just after an entry's branches: the entry is still code.
    first = "```text\ntests/\n├── integration/  # slow ones\n│   └──"
    later = "integration/  # slow ones\n│   └── test_db.py    # cascades, relationships"
    skip = overlap_prefix(later, [first])
    assert later[:skip] == "integration/  # slow ones\n│   └──"
    assert [(s.kind, s.text_of(later), tree_path(later, s, [first, later]))
            for s in split_spans(later, skip)] == [
        ("code", "test_db.py    # cascades, relationships", "tests/integration/test_db.py")]
    passages = [_p("a", tree)]
    ranked, spans = _rank("which tests check the cascades of the db", passages)
    answer = compose(choose(ranked, passages, spans, 1.0, Weights(threshold=0.0)), passages,
                     "en")
    assert (answer.quotes[0]["text"], answer.quotes[0]["path"]) == (
        "db/ # cascades", "tests/integration/api/db/")


def test_an_english_question_prefers_the_english_text_of_a_twin() -> None:
    """The same words in a Czech and an English text: the English reader gets the English."""
    text = "The analytics service is not used."
    passages = [_p("cs", text, "processors", lang="cs",
                   source="frontend/src/i18n/locales/cs/privacy.json"),
                _p("en", text, "collected", source="frontend/src/i18n/locales/en/privacy.json")]
    ranked, _ = _rank("is an analytics service used", passages, Weights(rank=0.0))
    assert passages[ranked[0].n].lang == "en"
    czech, _ = _rank("is an analytics service used", passages, Weights(rank=0.0, czech_span=0.0))
    assert czech[0].n == 0 and czech[0].score == czech[1].score, "without it, a tie"


def test_a_weak_match_is_not_quoted_beside_the_answer() -> None:
    """A further quote from a passage the search found only weakly (labelled "weak match" in
    the sources) would dress it as support: an ads question was quoted an API table row."""
    passages = [dataclasses.replace(_p("a", METHOD), score=0.9),
                dataclasses.replace(_p("b", AUTHORS, "# Doc > ## Authors"), score=0.3)]
    ranked, spans = _rank("maximum error formula method developed", passages)
    loose = Weights(threshold=0.0, margin=10.0)
    chosen = choose(ranked, passages, spans, 1.0, loose)
    assert chosen and {c.n for c in chosen} == {0}
    strong = [dataclasses.replace(p, score=0.9) for p in passages]
    assert {c.n for c in choose(ranked, strong, spans, 1.0, loose)} == {0, 1}


def _request(message: str) -> TurnRequest:
    return TurnRequest(turn="t", user="u", message=message, language="en", mode="workflow")


def test_every_check_passes_by_construction() -> None:
    """Random questions over fixture passages: whatever is chosen, the citations point at the
    quoted passages, every number is grounded and every quote is in its passage."""
    rng = random.Random(24)
    pool = [_p("a", METHOD), _p("b", AUTHORS, "# About > ## Authors"),
            _p("c", FAQ, "invite", source="faq.json"),
            _p("d", "The duration example is FTN(5, 8, 12): 5 days, 8 days and 12 days.\n\n"
                    "Gx = (5 + 8 + 12) / 3 = 25 / 3 ≈ 8.33", "# Doc > ## Example")]
    words = "error formula invite experts developed median mean email days".split()
    settings = settings_from_env({})
    for _ in range(200):
        passages = rng.sample(pool, rng.randint(1, 4))
        question = " ".join(rng.sample(words, 3))
        ranked, spans = _rank(question, passages)
        chosen = choose(ranked, passages, spans, 1.0, Weights(threshold=0.0))
        answer = compose(chosen, passages, rng.choice(["en", "cs"]))
        quoted = Retrieval(answer.passages, "v", question)
        checks = run_checks(answer.text, quoted, _request(question), None,
                            settings.show_sources)
        assert checks["citations"]["valid"] and checks["numbers"]["valid"], answer.text
        for q in answer.quotes:
            assert fold(q["text"]) in fold(answer.passages[q["n"] - 1].text)
        assert strip_markers(answer.text)  # never empty


def test_the_same_quotes_for_another_question_are_no_copy() -> None:
    """The repeat check looks for a model copying its last answer; quotes chosen in code from
    this question's passages are not flagged when an earlier question got the same ones."""
    from shared.turn_request import Message

    passages = [_p("a", METHOD)]
    ranked, spans = _rank("formula of the maximum error", passages)
    answer = compose(choose(ranked, passages, spans, 1.0, Weights(threshold=0.0)),
                     passages, "en")
    req = TurnRequest(turn="t", user="u", message="what is the error formula", language="en",
                      mode="workflow", history=(Message("user", "formula of the max error"),
                                                Message("assistant", answer.text)))
    quoted = Retrieval(answer.passages, "v", "q")
    assert run_checks(answer.text, quoted, req, None, True)["repeat"]["valid"] is False
    assert run_checks(answer.text, quoted, req, None, True,
                      written_in_code=True)["repeat"]["valid"] is True


def test_an_i_dont_know_naming_sections_with_numbers_passes_the_number_check() -> None:
    """The nearest sections an "I don't know" names are the index's own headings and texts
    (a locale group named by its first texts: "Platí 15 minut"); their numbers are grounded."""
    passages = [_p("a", METHOD, "# Doc > ## Step 4: the maximum error"),
                _p("b", "“__Host-access_token vás udržuje přihlášené. Platí 15 minut.”",
                   "cookies.items", lang="cs",
                   source="frontend/src/i18n/locales/cs/privacy.json")]
    for lang in ("en", "cs"):
        answer = compose([], passages, lang)
        assert answer.outcome == "dont_know" and answer.named
        checks = run_checks(answer.text, Retrieval(answer.passages, "v", "q"),
                            _request("Jak dlouho se vaří vajíčko natvrdo?"), None, True,
                            written_in_code=True, named=answer.named)
        assert checks["numbers"]["valid"], (answer.text, checks["numbers"])


MEDIAN_FAQ = """question: Proč se medián počítá jinak pro lichý a sudý počet expertů?
answer: Pro lichý počet expertů je medián prostřední prvek po seřazení podle centroidu. \
Pro sudý počet je to průměr dvou středních prvků."""


def test_an_faq_question_gives_way_to_its_whole_short_answer() -> None:
    """Asked about an even count, the FAQ's question matches best: its answer is quoted whole
    (both sentences), not only the first one, which speaks of an odd count."""
    passages = [_p("a", MEDIAN_FAQ, "results.whyDifferentMedian", lang="cs",
                   source="frontend/src/i18n/locales/cs/faq.json")]
    ranked, spans = _rank("Proč se medián počítá jinak pro sudý počet expertů?", passages)
    chosen = choose(ranked, passages, spans, 1.0, Weights(threshold=0.0))
    assert chosen[0].text == ("Pro lichý počet expertů je medián prostřední prvek po seřazení "
                              "podle centroidu. Pro sudý počet je to průměr dvou středních "
                              "prvků.")
    assert len(chosen) == 1  # its sentences are not quoted again on their own


def test_a_section_name_in_quotation_marks_is_quoted_with_the_inner_marks() -> None:
    """A locale group is named by its first texts, in quotation marks: offered in "I don't
    know", they take the language's inner marks instead of nesting the outer ones, and every
    check still passes."""
    passages = [_p("a", "label: “Stop”", "panel", source="frontend/src/i18n/locales/en/x.json"),
                _p("b", METHOD, "# Doc > ## Step 4: the maximum error")]
    names = {"en": ("Did you mean “Doc › ‘Stop’” or “Doc › Step 4: the maximum error”?"),
             "cs": ("Myslíte „Doc › ‚Stop‘“ nebo „Doc › Step 4: the maximum error“?")}
    for lang, expected in names.items():
        answer = compose([], passages, lang)
        assert answer.clarifying_question == expected
        checks = run_checks(answer.text, Retrieval(answer.passages, "v", "q"),
                            _request("Is there a keyboard shortcut?"), None, True,
                            written_in_code=True, named=answer.named)
        assert all(c["valid"] for c in checks.values() if isinstance(c, dict) and "valid" in c), \
            checks


def test_quotes_of_one_section_are_given_in_its_reading_order() -> None:
    """Steps quoted from one section read as the section has them, whichever fits best; the
    sections themselves stay in the order of their best quote."""
    steps = ("Open the project and click Invite Experts. Enter the email address of a "
             "registered user. They will find the invitation in their Invitations tab.")
    passages = [dataclasses.replace(_p("a", steps, "# Getting started > ## Invite"), score=1.0)]
    ranked, spans = _rank("where will they find the invitation tab", passages)
    assert ranked[0].text.startswith("They will find")
    chosen = choose(ranked, passages, spans, 1.0, Weights(threshold=0.0, margin=10.0))
    assert chosen[0].n == ranked[0].n
    mine = [c.span.start for c in chosen if c.n == chosen[0].n]
    assert len(mine) >= 2 and mine == sorted(mine)


def test_a_czech_question_leans_on_the_passage_the_query_adapter_brings_it_to() -> None:
    import numpy as np

    passages = [_p("a", "The median is the middle value."),
                _p("b", "Experts are invited by email.")]
    spans = [split_spans(p.text) for p in passages]
    # The passages' index vectors, and an adapter that carries a question with none of the
    # vocabulary's words (a Czech one, to this stand-in) to the invitation passage.
    index = [[float(i == 5) for i in range(9)], [float(i == 3) for i in range(9)]]
    adapter = np.eye(9, dtype=np.float32)
    adapter[8] = [float(i == 3) for i in range(9)]

    def first(english: bool, with_adapter: bool) -> int:
        ranked = rank_spans(["Jak pozvu experty?"], passages, spans, _vectors_by_words,
                            lambda t: 1.0, Weights(), english=english, passage_vectors=index,
                            adapter=adapter if with_adapter else None)
        return ranked[0].n

    assert first(english=False, with_adapter=False) == 0, "the spans alone lean to the median"
    assert first(english=False, with_adapter=True) == 1, "the adapter's passage comes first"
    assert first(english=True, with_adapter=True) == 0, "English does not read it (weight 0)"


def test_an_faq_answer_is_quoted_whole_where_one_sentence_of_it_is_best() -> None:
    """"How does the median handle an even count?" found the answer's odd-count sentence
    first, and the even-count one, just after it, fell outside the margin: half an answer."""
    faq = ("question: Why is the median calculated differently for odd and even counts?\n"
           "answer: For an odd number of experts, the median is the middle element. For an "
           "even number, it's the mean of the two central elements.")
    passages = [_p("a", faq, "results", source="faq.json")]
    spans = [split_spans(p.text) for p in passages]
    assert [s.key for s in spans[0]][-2:] == ["answer", "answer"], "two sentences of one answer"
    first = rank_spans(["median odd experts"], passages, spans, _vectors_by_words,
                       lambda t: 1.0, Weights())
    chosen = choose([c for c in first if c.text.startswith("For an odd")], passages, spans,
                    1.0, Weights(threshold=0.0))
    assert len(chosen) == 1 and chosen[0].text.endswith("the two central elements."), \
        chosen[0].text


def test_a_command_continued_with_a_backslash_is_quoted_whole() -> None:
    """"uv run python scripts/assistant/eval_answers.py --questions questions.jsonl \\" was a
    quote: the first line of a command continued on two more, which does not run as quoted."""
    text = ("Ask the questions:\n\n```bash\nuv run python eval.py --questions q.jsonl \\\n"
            "    --mode workflow \\\n    --output answers.jsonl\n```\n\n```bash\n"
            "# Run the benchmark\nuv run locust -f locustfile.py \\\n    --headless\n```\n")
    p = dataclasses.replace(_p("a", text, source="README.md"), score=1.0)
    spans = [split_spans(text)]
    ranked = rank_spans(["eval questions benchmark"], [p], spans, _vectors_by_words,
                        lambda t: 1.0, Weights())
    first = [c for c in ranked if c.text.startswith(("uv run python", "# Run"))]
    chosen = choose(first, [p], spans, 1.0, Weights(threshold=0.0, margin=9))
    assert sorted(c.text for c in chosen) == [
        "# Run the benchmark\nuv run locust -f locustfile.py \\\n    --headless",
        "uv run python eval.py --questions q.jsonl \\\n    --mode workflow \\\n"
        "    --output answers.jsonl"]


def test_an_outcome_message_that_shares_nothing_with_the_question_is_not_its_answer() -> None:
    """"I got married and my last name changed. Can I update it?" was answered "Welcome to
    BeCoMe.", the sign-up's success message, which the embeddings put near any account
    question. A message that shares next to nothing with the question is not its answer; asked
    about the message itself, it still is."""
    signup = _p("a", "successMessage: Welcome to BeCoMe.\nerrorMessage: Failed to create the "
                "account", "register", source="frontend/src/i18n/locales/en/auth.json")
    profile = _p("b", "Open your profile and change your last name under Edit Profile.")
    passages = [dataclasses.replace(signup, score=1.0), dataclasses.replace(profile, score=1.0)]
    spans = [split_spans(signup.text, interface=True), split_spans(profile.text)]

    def confused(texts: Sequence[str], kind: str) -> list[list[float]]:
        """The embeddings role's confusion: the message reads like any account question."""
        return [[1.0, 0.0] if kind == "query" or "Welcome" in t else [0.8, 0.6] for t in texts]

    def first(question: str, weights: Weights) -> str:
        return rank_spans([question], passages, spans, confused, lambda t: 1.0, weights)[0].text

    married = "I got married and my last name changed. Can I update it?"
    assert first(married, Weights(outcome=0.0)) == "Welcome to BeCoMe.", "the case, as it was"
    assert first(married, Weights()).startswith("Open your profile")
    assert first("The app said Welcome to BeCoMe after I registered. What now?",
                 Weights()) == "Welcome to BeCoMe."


def test_an_introduction_does_not_take_a_code_comment_as_what_it_introduces() -> None:
    """"This project uses uv for dependency management:" was quoted with the first line of
    the shell block after it, "bash # Clone the repository"."""
    text = ("This project uses `uv` for dependency management:\n\n```bash\n"
            "# Clone the repository\ngit clone <repository-url>\n```\n")
    passages = [_p("a", text, "# BeCoMe > ## Installation", source="README.md")]
    spans = [split_spans(p.text) for p in passages]
    ranked = rank_spans(["dependency management"], passages, spans, _vectors_by_words,
                        lambda t: 1.0, Weights())
    intro = [c for c in ranked if c.text.startswith("This project uses")]
    chosen = choose(intro, passages, spans, 1.0, Weights(threshold=0.0))
    assert chosen and "Clone" not in chosen[0].text, chosen[0].text


def test_an_answer_that_barely_clears_the_threshold_says_it_may_not_answer_exactly() -> None:
    """A decision score within Weights.hedge of the threshold: the quotes are given with a
    lead-in that says the documentation may not answer this exactly (the structured block
    says `hedged`); well above it, the usual lead-in."""
    from worker.pipeline.quote_answer import wording
    from worker.pipeline.quotes import WEIGHTS, hedged

    passages = [_p("a", METHOD, "# Doc > ## Step 4: the maximum error")]
    ranked, spans = _rank("what is the maximum error formula", passages)
    score = decision(ranked, 1.0, 0.0, Weights())
    near = Weights(threshold=score - 0.1, hedge=0.3)
    far = Weights(threshold=score - 0.5, hedge=0.3)
    assert choose(ranked, passages, spans, 1.0, near) and choose(ranked, passages, spans, 1.0, far)
    assert hedged(ranked, passages, 1.0, near)
    assert not hedged(ranked, passages, 1.0, far)
    assert not hedged(ranked, passages, 1.0, Weights(threshold=score + 0.1, hedge=0.3)), \
        "an answer not given is not hedged"
    chosen = choose(ranked, passages, spans, 1.0, near)
    for lang in ("en", "cs"):
        answer = compose(chosen, passages, lang, hedged=True)
        lead = wording(lang)["lead_in_hedged"]
        assert answer.text.startswith(lead + "\n\n") and lead != wording(lang)["lead_in"]
        block = answer.structured()
        assert block["hedged"] is True and block["lead_in"] == lead
        plain = compose(chosen, passages, lang)
        assert plain.structured()["hedged"] is False
        assert plain.structured()["lead_in"] == wording(lang)["lead_in"]
        assert plain.text.startswith(wording(lang)["lead_in"])
    # Shipped: a band in each language where the question views decide; none without them.
    assert WEIGHTS.hedge > 0 and WEIGHTS.hedge_other > 0
    plain_weights = WEIGHTS.deciding(False)
    assert plain_weights.hedge == 0 and plain_weights.hedge_other == 0


LABELS_GROUP = """title: Change Password
currentPassword: Current Password
newPassword: New Password
confirmPassword: Confirm New Password
update: Update Password"""


def test_an_interface_group_of_labels_alone_is_quoted_as_its_labels() -> None:
    """A group whose texts are all labels (no sentence to quote) is one span, shown as its
    texts without their keys, each found verbatim; a group with a sentence quotes that."""
    from shared.spans import label_text

    spans = split_spans(LABELS_GROUP, interface=True)
    assert [s.kind for s in spans] == ["labels"]
    shown = label_text(LABELS_GROUP, spans[0])
    assert shown == ("Change Password · Current Password · New Password · Confirm New Password"
                     " · Update Password")
    mixed = LABELS_GROUP + "\nhint: Use at least twelve characters for a new password."
    assert [s.kind for s in split_spans(mixed, interface=True)] == ["line"]
    # A sentence the chunker cut off is no label; nor is a page's "Key: value" line a group.
    cut = LABELS_GROUP + "\nhint: Use at least twelve characters for a"
    assert split_spans(cut, continued=True, interface=True) == []
    assert split_spans(LABELS_GROUP) == []
    assert split_spans("Version: 2.1\nLicense: MIT", interface=False) == []
    passages = [_p("a", LABELS_GROUP, "changePassword", source="locales/en/profile.json")]
    ranked, spans_of = _rank("how do I change my password", passages)
    assert ranked and ranked[0].text == shown
    answer = compose(ranked[:1], passages, "en")
    assert answer.quotes[0]["text"] == shown
    assert answer.quotes[0]["labels"] == ["Change Password", "Current Password", "New Password",
                                          "Confirm New Password", "Update Password"]
    assert f"“{shown}” [1]" in answer.text
    # Found as the quotes check reads it: each label in the passage's own text.
    from worker.pipeline.quote_answer import found

    assert found(answer.quotes[0], LABELS_GROUP)
    assert not found({**answer.quotes[0], "labels": [*answer.quotes[0]["labels"],
                                                     "Delete Account"]}, LABELS_GROUP)
    assert not found({"text": shown, "labels": []}, LABELS_GROUP), "the joined text is not"
    # A label that holds the joining mark is still found as itself.
    dotted = "a: Foo ·\nb: Bar"
    assert found({"text": "Foo · · Bar", "labels": ["Foo ·", "Bar"]}, dotted)


def test_a_czech_group_of_labels_is_quoted_as_its_labels_too() -> None:
    """Czech labels are not in Title Case: "Potvrdit nové heslo" is a label all the same, so
    the Czech twin of a group of labels is quoted as its labels, not as one of them."""
    from shared.spans import label_text

    group = ("title: Změnit heslo\ncurrentPassword: Současné heslo\nnewPassword: Nové heslo\n"
             "confirmPassword: Potvrdit nové heslo\nupdate: Aktualizovat heslo")
    spans = split_spans(group, interface=True)
    assert [s.kind for s in spans] == ["labels"]
    assert label_text(group, spans[0]).endswith("Potvrdit nové heslo · Aktualizovat heslo")


def test_a_card_whose_word_follows_a_number_is_no_group_but_a_vocabulary_is() -> None:
    """A lone lower-case word among titled labels is a fragment the app puts after a number
    ("5 experts"): the card's "No description · Scale · experts" answered "How many experts
    can a project have?". Labels that are all such words name one kind of thing (the
    assistant's tools) and stay a group."""
    for card in ("noDescription: No description\nscale: Scale\nexperts: experts",
                 "noDescription: Bez popisu\nscale: Škála\nexperts: expertů",
                 "experts: experts\nopinions: Expert Opinions\nresults: Results"):
        assert [s.kind for s in split_spans(card, interface=True)] == [], card
    tools = ("search_docs: documentation\nlist_my_projects: projects\nget_project: project\n"
             "get_project_result: result")
    assert [s.kind for s in split_spans(tools, interface=True)] == ["labels"]
    # A lower-case text of more words, or one that is no plain word, is no fragment.
    hint = "title: Unit\nunit: billion CZK\nmu: μ(x)"
    assert [s.kind for s in split_spans(hint, interface=True)] == ["labels"]


def test_a_group_of_toasts_is_no_group_of_labels() -> None:
    """The texts of a toast or error section say what happened after an action ("Member
    removed", "Failed to remove member"): "How do I remove a member from my project?" was
    answered with the whole list of them. They are no group of labels to quote."""
    from shared.passage import Passage
    from shared.spans import passage_spans

    toasts = ("memberRemoved: Member removed\nremoveMemberFailed: Failed to remove member\n"
              "ownershipTransferred: Ownership transferred")
    assert [s.kind for s in split_spans(toasts, interface=True)] == ["labels"]

    def piece(section: str) -> Passage:
        return Passage(f"p-{section}", "frontend/src/i18n/locales/en/projects.json", "Texts",
                       section, "en", toasts, toasts, False)

    for section in ("toast", "detail.toast", "message.errors", "error"):
        kinds = [s.kind for s in passage_spans([piece(section)], [piece(section)])[0]]
        # A toast that is quotable on its own still is (a question may ask what it means).
        assert "labels" not in kinds and kinds == ["line"], section
    assert [s.kind for s in passage_spans([piece("team")], [piece("team")])[0]] == ["labels"]


def test_an_interface_text_that_asks_back_is_no_first_quote() -> None:
    """"Can I delete my account?" was quoted the confirmation dialog's "Are you sure you want
    to delete your account?": a question asked back matches the asker's words best and answers
    nothing. The dialog's statement is quoted first; a page's own question stays as it was."""
    dialog = ("description: Are you sure you want to delete the median of your account?\n"
              "warning: Once you delete the median of your account, it is gone for good.")
    passages = [_p("a", dialog, "deleteModal", source="frontend/src/i18n/locales/en/profile.json")]
    ranked, _ = _rank("Can I delete the median of my account?", passages)
    assert ranked[0].text.startswith("Once you delete")
    plain, _ = _rank("Can I delete the median of my account?", passages,
                     dataclasses.replace(Weights(), asks=0.0))
    assert plain[0].text.startswith("Are you sure"), "without the penalty, the dialog"
    page = "Why the median of your account? The median of your account and all experts stay."
    md = [_p("b", page, "# Doc > ## Median", source="docs/a.md")]
    asked, _ = _rank("Can I delete the median of my account?", md)
    unasked, _ = _rank("Can I delete the median of my account?", md,
                       dataclasses.replace(Weights(), asks=0.0))
    assert asked[0].text.endswith("?") and [c.score for c in asked] == [
        c.score for c in unasked], "a page's question is not penalised"


def test_a_dialog_question_that_echoes_every_word_asked_is_no_first_quote_either() -> None:
    """"Můžu smazat svůj účet?" was quoted the dialog's "Opravdu chcete smazat svůj účet?":
    it repeats every word asked, so its match led the dialog's statements by more than the
    penalty took away. The statement is quoted first."""
    dialog = ("description: Can I really delete my account now?\n"
              "warning: Once deleted, the account is gone for good.")
    passages = [_p("a", dialog, "deleteModal", source="frontend/src/i18n/locales/en/profile.json")]
    ranked, _ = _rank("Can I delete my account?", passages)
    assert ranked[0].text.startswith("Once deleted")


def _results_group() -> tuple[Passage, dict[str, Span]]:
    """The About page's Results texts, two groups under the passage's own title."""
    text = ("title: Results\nbestCompromise.title: Best Compromise\n"
            "bestCompromise.description: The optimal value that represents the best agreement "
            "among all expert opinions.\nmaxError.title: Maximum Error of Estimate\n"
            "maxError.description: A quality metric that indicates the uncertainty level of "
            "the compromise.\nnote: Results are shown once every expert has answered.")
    p = Passage("x", "frontend/src/i18n/locales/en/about.json", "about.json", "results", "en",
                text, text, False)
    return p, {s.key: s for s in split_spans(text, interface=True)}


def test_an_interface_text_is_read_with_its_groups_title() -> None:
    """An interface text means something only beside its group's title: "A quality metric
    that indicates the uncertainty level of the compromise" is the maximum error's
    description, but was read under the passage's heading alone ("results") and quoted for
    "What is the best compromise?". Each text now carries its group's title as its label,
    which its embedded text and its heading match read."""
    from shared.spans import embed_text, span_context

    p, spans = _results_group()
    assert spans["maxError.description"].label == "Maximum Error of Estimate"
    assert spans["bestCompromise.description"].label == "Best Compromise"
    # A text at the passage's top level is read with the passage's own title.
    assert spans["note"].label == "Results"
    assert span_context(p, spans["maxError.description"]) == \
        "results, Maximum Error of Estimate"
    assert embed_text(p, spans["maxError.description"]).startswith(
        "results, Maximum Error of Estimate: A quality metric")


def test_a_quoted_interface_text_names_its_group_where_the_section_does_not() -> None:
    """The done frame's quote carries its group's title (`group`) for an interface text of
    another group than the section's own; none for the section's own texts or a page's."""
    p, spans = _results_group()
    chosen = [Candidate(0, spans[k], spans[k].text_of(p.text), 1.0, 1.0, 1.0, 1.0)
              for k in ("maxError.description", "note")]
    quotes = compose(chosen, [p], "en").quotes
    assert [q["group"] for q in quotes] == ["Maximum Error of Estimate", ""]
    page = _p("y", "A sentence of a page that says enough to be quoted here.")
    span = split_spans(page.text)[0]
    assert compose([Candidate(0, span, span.text_of(page.text), 1.0, 1.0, 1.0, 1.0)], [page],
                   "en").quotes[0]["group"] == ""


def test_the_decision_reads_the_passages_best_by_their_share_not_retrievals_order() -> None:
    """Retrieval may put first a passage one ranking alone put first (fusion's order_k); the
    decision reads the three best by their fused share, as calibrated, and keeps
    retrieval's order among equal shares."""
    ps = [dataclasses.replace(_p(f"p{n}", "Text.", f"# Doc > ## S{n}"), score=s)
          for n, s in enumerate((0.49, 0.64, 0.60, 0.33, 0.61))]
    assert covered(ps) == [1, 4, 2]
    assert retrieval_confidence(ps) == 0.64
    same = [dataclasses.replace(p, score=0.5) for p in ps]
    assert covered(same) == [0, 1, 2]


def test_a_code_comment_is_quoted_with_the_commands_under_it() -> None:
    """"Jak si celou aplikaci rozjedu lokálně?" was quoted "# Backend (http://localhost:8000)"
    alone, then "# Frontend ...": comments that say what follows, without what follows. A
    comment takes the commands under it (to the next comment or the block's end), line by
    line, and a command it took is not quoted again."""
    text = ("Run both parts:\n\n```bash\n# Backend (http://localhost:8000)\n"
            "uv sync --extra api\nuv run uvicorn api.main:app --reload\n\n"
            "# Frontend (http://localhost:8080)\ncd frontend && npm install && npm run dev\n```\n")
    passages = [dataclasses.replace(
        _p("a", text, "# BeCoMe > ## Local Development", source="README.md"), score=1.0)]
    spans = [split_spans(p.text) for p in passages]
    ranked = rank_spans(["backend frontend"], passages, spans, _vectors_by_words,
                        lambda t: 1.0, Weights())
    comments = [c for c in ranked if c.text.startswith("#")]
    commands = [c for c in ranked if c.text.startswith("cd frontend")]
    chosen = choose(comments + commands, passages, spans, 1.0, Weights(threshold=0.0, margin=9))
    assert [c.text for c in chosen] == [
        "# Backend (http://localhost:8000)\nuv sync --extra api\n"
        "uv run uvicorn api.main:app --reload",
        "# Frontend (http://localhost:8080)\ncd frontend && npm install && npm run dev"]
    from worker.pipeline.quote_answer import compose, found
    answer = compose(chosen, passages, "en")
    assert all(q["code"] and found(q, text) for q in answer.quotes), answer.quotes
    # Lines of code keep their indentation under the comment's.
    python = "```python\n    # Create a user\n    user = User(\n        email='a@b.c',\n    )\n```\n"
    p = dataclasses.replace(_p("b", python), score=1.0)
    ranked = rank_spans(["user"], [p], [split_spans(python)], _vectors_by_words,
                        lambda t: 1.0, Weights())
    chosen = choose([c for c in ranked if c.text.startswith("#")], [p], [split_spans(python)],
                    1.0, Weights(threshold=0.0))
    assert chosen[0].text == "# Create a user\nuser = User(\n    email='a@b.c',\n)"
    # A comment of two lines is one comment: the code under its second line is what it says.
    env = ("```bash\n# Local development: the PostgreSQL from docker-compose.yml\n"
           "#   docker compose up -d db\nDATABASE_URL=postgresql://localhost/become\n\n"
           "# Deployed environments\nDATABASE_URL=postgresql://host/become\n```\n")
    p = dataclasses.replace(_p("c", env), score=1.0)
    ranked = rank_spans(["local development"], [p], [split_spans(env)], _vectors_by_words,
                        lambda t: 1.0, Weights())
    chosen = choose([c for c in ranked if c.text.startswith("# Local")], [p],
                    [split_spans(env)], 1.0, Weights(threshold=0.0))
    assert chosen[0].text.endswith("up -d db\nDATABASE_URL=postgresql://localhost/become"), \
        chosen[0].text
