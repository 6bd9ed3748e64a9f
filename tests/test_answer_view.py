"""How `become-assistant ask` prints an answer (assistant_cli/answer_view.py): the quotes form
from its structured block, "I don't know" with the nearest sections, the project's figures
first; streamed tokens on a terminal, written over once the quotes answer is done."""

from __future__ import annotations

import io

from assistant_cli.answer_view import AnswerPrinter, format_quotes, is_quotes, rows
from tests.quotes_frames import DONT_KNOW, LEAD, NEAREST, QUOTES, SOURCES, quotes_done

LINES = ["In the project Flood (60 experts) the best compromise is 14.17 / 23.33 / 38.33 %.",
         "The maximum error is 1.39, 1.39 % of the scale width: high agreement."]


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_quotes_print_as_indented_quotations_with_their_sources() -> None:
    text = format_quotes(quotes_done("en"), width=200)
    blocks = text.split("\n\n")
    assert blocks[0] == LEAD["en"]
    q1 = blocks[1].splitlines()
    assert q1 == [f"    “{QUOTES['en'][0]['text']}”",
                  "    [1] Reading the result › The four figures",
                  f"    {SOURCES[0]['url']}"]
    q2 = blocks[2].splitlines()
    # Emphasis and backticks dropped, the words as written; no link where the source has none.
    assert q2 == ["    “Lower Δmax → Higher agreement among experts on a scale [1, 2] of "
                  "scale_min and scale_max”",
                  "    [2] Method description › Step 4: calculate the maximum error (Δmax)"]
    assert len(blocks) == 3


def test_a_quote_from_a_code_block_prints_as_written_with_its_place_in_the_tree() -> None:
    """Code is not Markdown: `__init__.py` keeps its underscores; a tree's entry says where it
    lives."""
    done = quotes_done("en")
    done["structured"]["quotes"] = [{**QUOTES["en"][0], "text": "__init__.py # Package marker",
                                     "code": True, "path": "src/__init__.py"}]
    block = format_quotes(done, width=200).split("\n\n")[1].splitlines()
    assert block[:3] == ["    “__init__.py # Package marker”", "    (src/__init__.py)",
                         "    [1] Reading the result › The four figures"]


def test_an_interface_texts_group_is_named_after_its_section() -> None:
    """"A quality metric ..." under "Results" says nothing of what it describes: its group's
    title follows the section."""
    done = quotes_done("en")
    done["structured"]["quotes"] = [{**QUOTES["en"][0], "group": "Maximum Error of Estimate"}]
    block = format_quotes(done, width=200).split("\n\n")[1].splitlines()
    assert block[1] == "    [1] Reading the result › The four figures › Maximum Error of Estimate"


def test_czech_quote_from_an_english_page_carries_its_note_and_long_quotes_wrap() -> None:
    text = format_quotes(quotes_done("cs"), width=50)
    assert text.startswith(LEAD["cs"] + "\n\n")
    lines = text.splitlines()
    assert all(len(line) <= 50 for line in lines if "https://" not in line), lines
    assert all(line.startswith("    ") for line in lines[2:] if line)
    assert "    (Dokumentace to uvádí anglicky.)" in lines
    # The wrapped quote reads back as the verbatim span.
    first = text.split("\n\n")[1].split("\n    [1]")[0]
    # In the Czech marks the worker streams the answer in (a Czech answer read “...” here).
    assert " ".join(first.split()) == f"„{QUOTES['cs'][0]['text']}“"


def test_dont_know_prints_its_question_and_the_nearest_sections_to_ask() -> None:
    text = format_quotes(quotes_done("en", "dont_know"), width=100)
    blocks = text.split("\n\n")
    assert blocks[0] == DONT_KNOW["en"]["said"]
    assert blocks[1] == DONT_KNOW["en"]["clarify"]
    nearest = blocks[2].splitlines()
    assert nearest[0] == "The nearest sections of the documentation (ask about one):"
    assert nearest[1] == "  [1] Reading the result › The four figures"
    assert nearest[2] == f"      become-assistant ask '{NEAREST[0]['ask']}'"
    assert nearest[5] == \
        "  [2] Method description › Step 4: calculate the maximum error (Δmax)"
    assert nearest[3] == "  Worked example › The result", "a nearest section without n"
    assert len(nearest) == 7


def test_project_figures_come_first() -> None:
    for outcome in ("answer", "dont_know"):
        text = format_quotes(quotes_done("en", outcome, project=LINES), width=200)
        assert text.startswith("\n".join(LINES) + "\n\n"), text
        assert text.count(LINES[0]) == 1


def test_project_figures_without_a_quote_have_no_lead_in() -> None:
    done = quotes_done("en", project=LINES)
    done["structured"]["quotes"] = []
    assert format_quotes(done, width=200) == "\n".join(LINES)


def test_sources_off_names_no_source_under_a_quote() -> None:
    done = {**quotes_done("cs"), "sources": []}
    blocks = format_quotes(done, width=200).split("\n\n")
    assert blocks[1] == f"    „{QUOTES['cs'][0]['text']}“"
    assert blocks[2].splitlines()[1] == "    (Dokumentace to uvádí anglicky.)"
    assert "[1]" not in "\n".join(blocks) and "https://" not in "\n".join(blocks)


def test_only_a_valid_quotes_block_is_printed_as_such() -> None:
    done = quotes_done("en")
    assert is_quotes(done)
    assert not is_quotes({**done, "answer_form": "prose"})
    assert not is_quotes({**done, "structured": {**done["structured"], "valid_json": False}})
    assert not is_quotes({"answer": "x", "structured": None})


def test_terminal_sees_the_stream_then_the_quotes_written_over_it() -> None:
    out = Terminal()
    printer = AnswerPrinter(out)
    done = quotes_done("en")
    for i in range(0, len(done["answer"]), 7):
        printer.token(done["answer"][i:i + 7])
    # Tokens are written as they come, `**bold**` as the terminal's bold.
    streamed = done["answer"].replace("**Lower Δmax**", "\033[1mLower Δmax\033[22m")
    assert "**" not in streamed and out.getvalue() == streamed
    printer.done(done)
    written = out.getvalue()[len(streamed):]
    used = rows(done["answer"].replace("**", ""), 100)
    assert written.startswith(f"\r\033[{used - 1}A\033[J"), repr(written[:20])
    assert written.endswith(format_quotes(done, width=99) + "\n")


def test_a_restart_takes_the_streamed_text_back() -> None:
    out = Terminal()
    printer = AnswerPrinter(out)
    printer.token("Old partial")
    printer.restart()
    assert out.getvalue() == "Old partial\r\033[J"
    printer.token("New answer.")
    printer.done({"answer": "New answer.", "sources": []})
    assert out.getvalue().endswith("\033[JNew answer.\n")
    pipe = io.StringIO()
    printer = AnswerPrinter(pipe)
    printer.token("Old partial")
    printer.restart()
    printer.token("New answer.")
    printer.done({"answer": "New answer.", "sources": []})
    assert pipe.getvalue() == "New answer.\n"


def test_a_pipe_gets_the_answer_once_whole() -> None:
    for done in (quotes_done("cs"), {"answer": "Prose [1].", "sources": []}):
        out = io.StringIO()
        printer = AnswerPrinter(out)
        printer.token(done["answer"])
        assert out.getvalue() == ""
        printer.done(done)
        expected = format_quotes(done, 99) if is_quotes(done) else done["answer"]
        assert out.getvalue() == expected + "\n"
    out = io.StringIO()
    printer = AnswerPrinter(out)
    printer.token("Half an ans")
    printer.failed()
    assert out.getvalue() == "Half an ans\n"


def test_rows_count_wrapped_and_wide_lines() -> None:
    assert rows("abc", 80) == 1
    assert rows("a" * 81, 80) == 2
    assert rows("a\n\nb", 80) == 3
    assert rows("漢" * 41, 80) == 2


def test_a_czech_answer_prints_its_labels_in_czech() -> None:
    """What `ask` prints around a Czech answer speaks Czech too: the nearest sections, a quote
    not found, the sources and a weak match (as the panel words them)."""
    from assistant_cli.answer_view import format_sources

    text = format_quotes(quotes_done("cs", "dont_know"), width=100)
    assert "Nejbližší oddíly dokumentace (zeptejte se na některý):" in text.splitlines()
    assert "nearest" not in text
    done = quotes_done("cs")
    done["structured"]["quotes"][0]["found"] = False
    assert "(ve zdroji nenalezeno)" in format_quotes(done, width=200)
    done["sources"][0]["weak"] = True
    lines = format_sources(done)
    assert lines[0] == "Zdroje:" and "(slabá shoda)" in lines[1], lines
    english = quotes_done("en")
    english["sources"][0]["weak"] = True
    lines = format_sources(english)
    assert lines[0] == "Sources:" and "(weak match)" in lines[1], lines
    assert format_sources({**english, "sources": []}) == []
