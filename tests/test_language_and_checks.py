"""Language detection, citation check, fusion and prompt history (pure functions)."""

from __future__ import annotations

import pytest

from shared.language import detect_language
from shared.passage import Passage
from shared.turn_request import Message
from worker.pipeline.bm25 import tokenize
from worker.pipeline.checks import check_citations
from worker.pipeline.fusion import fuse
from worker.pipeline.prompt import build_messages, language_line, trim_history
from worker.pipeline.types import Retrieval


@pytest.mark.parametrize("text, lang", [
    ("How does the search work?", "en"),
    ("What is the maximum error of our project?", "en"),
    ("Jak funguje vyhledávání?", "cs"),
    ("Proč je naše maximální chyba tak malá?", "cs"),
    ("Čo je to maximálna chyba a prečo je taká malá?", "unknown"),  # Slovak is not Czech
    ("BeCoMe", "unknown"),  # too short to be sure
    # Czech typed without diacritics, and English with "a" and "to" (Czech words too).
    ("Kdo vyvinul metodu BeCoMe?", "cs"),
    ("jakymi zpusoby muzu zadat svuj odhad?", "cs"),
    ("kdy jede posledni metro v praze", "cs"),
    ("Can I get the project results as a PDF to attach to a report?", "en"),
    ("How do I invite a colleague to my project?", "en"),
    ("Once I've made a project, can I just change its scale afterwards?", "en"),  # 've: not ve
    ("Ako vytvorim projekt?", "unknown"),  # Slovak without its own letters is still not Czech
    ("", "unknown"),
    # Where the word lists are unsure, the letters decide for a question with a Czech word of
    # theirs, when they are clear about it.
    ("Mohu pozvat experty e-mailem?", "cs"),
    ("smazat ucet", "cs"),
    ("zapomnel jsem heslo", "cs"),
    ("pozvanka expirovala", "unknown"),  # no word of the lists: letters alone never decide
    ("dark mode", "unknown"),
    # Not Czech by its letters is not English: German, French, Polish stay unknown.
    ("Wie berechnet man den Kompromiss?", "unknown"),
    ("Comment calculer le compromis?", "unknown"),
    ("Jak obliczyć kompromis?", "unknown"),
    # Slovak, Croatian, Slovenian and Polish typed without diacritics lean Czech by their
    # letters; a Slovak word or ending, or no Czech word at all, keeps them unknown.
    ("Ako sa počíta kompromis?", "unknown"),
    ("Nemozem sa prihlasit", "unknown"),
    ("Potrebujem zmazat ucet", "unknown"),
    ("Prihlasenie nefunguje", "unknown"),
    ("Kako promijeniti lozinku?", "unknown"),
    ("Kako spremenim geslo?", "unknown"),
    ("Zmiana hasla", "unknown"),
    ("Czy moge zmienic haslo?", "unknown"),
])
def test_detect_language(text: str, lang: str) -> None:
    assert detect_language(text) == lang


@pytest.mark.parametrize("answer, count, cited, invalid", [
    ("BM25 ranks words [1]. Vectors rank meaning [2].", 3, (1, 2), ()),
    ("Repeated [1] and [1].", 3, (1,), ()),
    ("Out of range [4].", 3, (4,), (4,)),
    ("Zero is never a passage [0].", 3, (0,), (0,)),
    ("No markers at all.", 3, (), ()),
    ("Anything cited with no passages [1].", 0, (1,), (1,)),
])
def test_citation_check(answer: str, count: int, cited: tuple[int, ...],
                        invalid: tuple[int, ...]) -> None:
    result = check_citations(answer, count)
    assert result.cited == cited
    assert result.invalid == invalid
    assert result.valid == (not invalid)


def test_rrf_fuses_two_rankings() -> None:
    dense = [("a", 0.9), ("b", 0.8), ("c", 0.7)]
    lexical = [("c", 9.0), ("a", 5.0), ("d", 1.0)]
    fused = [pid for pid, _ in fuse([dense, lexical])]
    assert fused[0] == "a"  # ranks 1 and 2 beat ranks 3 and 1
    assert set(fused) == {"a", "b", "c", "d"}


def test_tokenize_keeps_czech_letters() -> None:
    assert tokenize("Maximální chyba, BM25!") == ["maximální", "chyba", "bm25"]


def test_history_is_trimmed_and_answers_lose_markers() -> None:
    history = tuple(Message("user" if i % 2 == 0 else "assistant", f"m{i} [1] " + "x" * 400)
                    for i in range(30))
    kept = trim_history(history)
    assert len(kept) <= 20
    assert sum(len(m.content) for m in kept) <= 6000
    assert kept[-1].content.startswith("m29")  # newest kept, oldest dropped
    assert all("[1]" not in m.content for m in kept if m.role == "assistant")
    assert all("[1]" in m.content for m in kept if m.role == "user")


def test_earlier_answers_lose_every_form_of_marker_the_citation_check_reads() -> None:
    """docs/spec/behaviour.md B-19: "[1, 2]", "[Source 1]", "[Zdroj 2]" are markers as much as
    "[1]"; an interval [0, 1] of the text stays."""
    said = "Hybrid [1, 2]. See [Source 1] and [Zdroj 2]; the scale is [0, 1] wide [3]."
    kept = trim_history((Message("user", "q [1]"), Message("assistant", said)))
    assert kept[1].content == "Hybrid. See and; the scale is [0, 1] wide."
    assert kept[0].content == "q [1]"


def test_prompt_numbers_passages_and_adds_language_line_only_when_sure() -> None:
    r = Retrieval((Passage("p1", "docs/a.md", "A", "# A", "en", "alpha text", "", False, 0.1),
                   Passage("p2", "docs/b.md", "B", "# B", "en", "beta text", "", False, 0.1)),
                  "v1", "q")
    msgs = build_messages("Jak funguje vyhledávání?", (), r, "cs")
    system = msgs[0]["content"]
    assert "[1] A — # A" in system and "[2] B — # B" in system
    assert language_line("cs") in system
    unsure = build_messages("Hm?", (), r, "unknown")[0]["content"]
    assert language_line("cs") not in unsure and language_line("en") not in unsure
    assert msgs[-1]["role"] == "user" and msgs[-1]["content"].startswith("Jak funguje")


def test_the_letter_table_is_the_one_its_script_makes() -> None:
    """shared/language_trigrams.json is what bench/language_table.py makes from simplemma's
    dictionaries (a change to either shows here). Run as a command: tests do not import
    bench, which imports tests."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "bench.language_table", "--check"], cwd=repo,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_answer_rules_ask_for_the_questions_language_whatever_it_is() -> None:
    """docs/spec/behaviour.md B-22: the instructions ask for the question's language even where the
    server adds no line naming it (docs/spec/behaviour.md B-23: a German or Slovak question)."""
    r = Retrieval((Passage("p1", "docs/a.md", "A", "# A", "en", "alpha text", "", False, 0.1),),
                  "v1", "Wie funktioniert die Suche?")
    messages = build_messages("Wie funktioniert die Suche?", (), r, "unknown")
    assert "Answer in the language the question is written in." in messages[0]["content"]
    assert "Answer in Czech." not in str(messages) and "Answer in English." not in str(messages)
