"""Names a question uses that the corpus never does: found, and said in "I don't know"."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from rank_bm25 import BM25Okapi

from shared.passage import Passage
from shared.spans import split_spans
from tests.test_quotes import _request
from worker.pipeline.bm25 import LexicalIndex, Postings, tokenize
from worker.pipeline.names import names, unknown
from worker.pipeline.quote_answer import compose
from worker.pipeline.quotes import Weights, choose, decision, rank_spans
from worker.pipeline.turn import run_checks
from worker.pipeline.types import Retrieval

API = ("The REST API runs on FastAPI. Start the backend with Docker Compose; "
       "it listens on port 8000. Install the dependencies with Python and uv.")


def _passage(text: str = API) -> Passage:
    return Passage("a", "api/README.md", "API", "# API > ## Running it", "en", text, text,
                   False)


def _lexical(*texts: str) -> LexicalIndex:
    passages = tuple(_passage(t) for t in texts)
    bm25 = BM25Okapi([tokenize(p.index_text, split=True) for p in passages])
    return LexicalIndex("v", False, False, True, passages, bm25,
                        np.array([p.lang for p in passages]), {p.id: p for p in passages},
                        Postings(bm25))


def test_names_are_capitals_inside_a_sentence_acronyms_and_letters_with_digits() -> None:
    assert names("Does the web app meet WCAG 2.1 AA accessibility requirements?") == \
        ["WCAG", "AA"]
    assert names("Is there a GraphQL endpoint? Or only REST?") == ["GraphQL", "REST"]
    assert names("Can I print the result as an A0 poster?") == ["A0"]
    assert names("Jde BeCoMe propojit se Zoomem?") == ["BeCoMe", "Zoomem"]


def test_a_sentences_first_word_a_quoted_label_numbers_and_identifiers_are_no_names() -> None:
    assert names("How do I invite experts? Where is the button?") == []
    assert names("Kde najdu „Nastavení“ a tlačítko \"Save\"?") == []
    assert names("What does calculate_compromise return for 3 experts in 2024?") == []
    assert names("I sorted ExpertOpinion objects; what decides the order?") == \
        ["ExpertOpinion"]


def test_a_shouted_or_title_case_question_has_no_names_by_its_capitals() -> None:
    assert names("HOW DO I INVITE EXPERTS TO MY PROJECT?") == []
    assert names("How Do I Invite Experts To My Project?") == []
    # Two names in a short question are no Title Case.
    assert names("Jde BeCoMe provozovat na Raspberry Pi?") == ["BeCoMe", "Raspberry", "Pi"]
    # Letters with digits still name something, whatever the case.
    assert names("CAN I PRINT IT AS AN A0 POSTER?") == ["A0"]


def test_unknown_names_are_the_ones_the_corpus_never_uses_in_any_form() -> None:
    lexical = _lexical(API)
    assert lexical.uses("Docker") and lexical.uses("FastAPI")
    # An inflected form shares the first letters (Czech cases): Dockeru, Pythonu.
    assert lexical.uses("Dockeru") and lexical.uses("Pythonu")
    assert not lexical.uses("GraphQL") and not lexical.uses("Zoomem")
    assert unknown("Is there a GraphQL endpoint next to the REST API on FastAPI?",
                   lexical.uses) == ["GraphQL"]
    assert unknown("Můžu backend spustit i bez Dockeru?", lexical.uses) == []
    # A person of the asker's project is no strange name, in any Czech case.
    assert unknown("Can Alice see my estimate, or only Bob?", lexical.uses) == []
    assert unknown("Vidí Petrovi nebo Evě můj odhad?", lexical.uses) == []
    # A version after a known word names that word; a bare letter with digits stays strange.
    assert unknown("Does it run on Python3 and uv?", lexical.uses) == []
    assert unknown("Can I print the result as an A0 poster?", lexical.uses) == ["A0"]



def test_a_name_of_several_words_is_strange_when_the_corpus_never_uses_them_together() -> None:
    """Internet Explorer, App Store: each word the corpus knows, the name it never uses."""
    lexical = _lexical(API + " Results are shared over the internet. You may explore them in "
                       "the app. Nothing is sold in a store.")
    assert lexical.uses("Internet") and lexical.uses("Exploreru") and lexical.uses("Store")
    together = lexical.uses_together
    assert together(["Docker", "Compose"]) and together(["REST", "API"])
    assert not together(["Internet", "Exploreru"])
    assert unknown("Funguje aplikace i ve starém Internet Exploreru 11?", lexical.uses,
                   together) == ["Internet Exploreru"]
    assert unknown("Can I install it from the App Store?", lexical.uses,
                   together) == ["App Store"]
    # Names the corpus uses side by side and a sentence's first word are no such name; a
    # word it never uses is said alone.
    assert unknown("Is the REST API started by Docker Compose?", lexical.uses, together) == []
    assert unknown("Internet Explorer support?", lexical.uses, together) == []
    assert unknown("Does it run on Microsoft Azure Store?", lexical.uses, together) == \
        ["Microsoft", "Azure"]
    # Its own names side by side: the asker may mean what it says of each.
    assert together(["Docker", "API"]) and unknown("Is there a Docker API?", lexical.uses,
                                                  together) == []
    # Without the corpus's pairs to ask (the default), only single words are read.
    assert unknown("Can I install it from the App Store?", lexical.uses) == []

def _vectors(texts: Sequence[str], kind: str) -> list[list[float]]:
    return [[1.0, 0.5] for _ in texts]


def test_a_question_naming_what_the_corpus_never_uses_gets_i_dont_know() -> None:
    passages = [_passage()]
    spans = [split_spans(API)]
    ranked = rank_spans(["Is there a GraphQL endpoint next to the REST API?"], passages, spans,
                        _vectors, lambda t: 1.0)
    open_door = Weights(threshold=0.0)
    assert choose(ranked, passages, spans, 1.0, open_door)
    assert choose(ranked, passages, spans, 1.0, open_door, strange=False)
    veto = Weights(threshold=0.0, strange=math.inf)
    assert choose(ranked, passages, spans, 1.0, veto, strange=True) == []
    # As a penalty: the decision falls by exactly the weight.
    soft = Weights(strange=0.3)
    assert math.isclose(decision(ranked, 1.0, 0.0, soft, strange=True),
                        decision(ranked, 1.0, 0.0, soft) - 0.3)


def test_i_dont_know_says_which_words_the_documentation_never_uses() -> None:
    passages = [_passage()]
    en = compose([], passages, "en", strange=["GraphQL"])
    assert en.outcome == "dont_know"
    assert en.text.startswith("I don't know: the documentation I can search does not answer "
                              "this. It never uses the word “GraphQL”.")
    two = compose([], passages, "en", strange=["WCAG", "AA"])
    assert "It never uses the words “WCAG” and “AA”." in two.text
    cs = compose([], passages, "cs", strange=["Zoomem"])
    assert "Slovo „Zoomem“ v ní nikde není." in cs.text
    assert compose([], passages, "en").text.startswith(
        "I don't know: the documentation I can search does not answer this.\n\n")
    # A name with a digit is the asker's own word: the number check grounds it.
    a0 = compose([], passages, "en", strange=["A0"])
    checks = run_checks(a0.text, Retrieval(a0.passages, "v", "q"),
                        _request("Can I print the result as an A0 poster?"), None, True,
                        written_in_code=True, named=a0.named)
    assert checks["numbers"]["valid"], checks["numbers"]

