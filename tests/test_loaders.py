"""Corpus loaders: the suffix table and the HTML loader (pure: files in a temporary folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus_jobs import loaders
from corpus_jobs.build import load_pieces
from corpus_jobs.loaders import LOADERS, html_markdown, load_html, loader_for
from corpus_jobs.manifest import load_manifest

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>The guide &mdash; BeCoMe</title>
<style>h1 { color: red }</style>
<script>document.write("<h1>Not a heading</h1>");</script></head>
<body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/about">About us</a></li></ul></nav>
<h1>User guide</h1>
<p>BeCoMe &amp; its   experts compute
the <b>best compromise</b> &#8211; in one step.</p>
<h2 id="experts">Experts <a class="headerlink" href="#experts">&para;</a></h2>
<p>Each expert gives three values:</p>
<ul><li>the minimum</li><li>the <em>most likely</em> value<ul><li>a nested item</li></ul></li>
<li>the maximum</li></ul>
<h3>Results</h3>
<table><tr><th>Name</th><th>Value</th></tr><tr><td>lower</td><td>1 &lt; 2</td></tr></table>
<ol><li>first step</li><li>second step</li></ol>
<p># not a heading, a sentence</p>
<pre><code>def mean(x):
    # inside code
    return x</code></pre>
<h2>Limits</h2><p>Line one.<br>Line two.</p>
</body></html>
"""


def test_html_headings_become_the_section_path() -> None:
    pieces = load_html("site/guide.html", PAGE, "en", 500)
    assert {p.title for p in pieces} == {"User guide"}
    assert [p.section for p in pieces] == [
        "# User guide", "# User guide > ## Experts", "# User guide > ## Experts > ### Results",
        "# User guide > ## Limits"]
    assert all(p.source == "site/guide.html" and p.lang == "en" and not p.local for p in pieces)


def test_html_text_paragraphs_lists_tables_and_entities() -> None:
    text, title = html_markdown(PAGE)
    assert title == "The guide \u2014 BeCoMe"
    assert "BeCoMe & its experts compute the best compromise \u2013 in one step." in text
    assert "- the minimum\n- the most likely value\n  - a nested item\n- the maximum" in text
    assert "| Name | Value |\n| lower | 1 < 2 |" in text
    assert "1. first step\n2. second step" in text
    assert "Line one.\nLine two." in text
    # Code keeps its lines (and its # is no heading); a paragraph's # is escaped.
    assert "```\ndef mean(x):\n    # inside code\n    return x\n```" in text
    assert "\\# not a heading, a sentence" in text
    assert "## Experts\n" in text and "\u00b6" not in text


def test_html_script_style_nav_and_head_are_dropped() -> None:
    text, _ = html_markdown(PAGE)
    for gone in ("Not a heading", "color: red", "Home", "About us", "charset"):
        assert gone not in text


def test_html_title_falls_back_to_the_page_title_then_the_file_name() -> None:
    no_h1 = "<html><head><title>Release notes</title></head><body><p>Text.</p></body></html>"
    assert load_html("a/notes.html", no_h1, "en", 500)[0].title == "Release notes"
    assert load_html("a/notes.htm", "<p>Text only.</p>", "en", 500)[0].title == "notes"
    # An unclosed head (</head> is optional) still ends where the body starts.
    open_head = "<html><head><title>T</title><body><h1>Kept</h1><p>Body text.</p>"
    assert [p.section for p in load_html("x.html", open_head, "en", 500)] == ["# Kept"]


def test_a_long_html_section_is_cut_like_markdown() -> None:
    para = "<p>" + " ".join(f"Sentence number {i} about the method." for i in range(40)) + "</p>"
    pieces = load_html("long.html", f"<h1>Long</h1><h2>Part</h2>{para}", "en", 500)
    assert len(pieces) > 2
    assert all(p.section == "# Long > ## Part" and len(p.text) <= 750 for p in pieces)


def test_the_loader_table_names_each_suffix_once() -> None:
    assert loader_for("a/b.HTML") is LOADERS[".html"]
    assert loader_for("a/b.htm") is LOADERS[".htm"]
    assert loader_for("a/b.rst") is LOADERS[".txt"]  # any other file is plain text
    assert all(s == s.lower() and s.startswith(".") for s in LOADERS)
    assert ".json" not in loaders.LOCAL_SUFFIXES and ".html" in loaders.LOCAL_SUFFIXES


def _corpus(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.html").write_text(PAGE, encoding="utf-8")
    (tmp_path / "docs" / "intro.md").write_text("# Intro\n\nHello.\n", encoding="utf-8")
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "paper.htm").write_text("<h1>Paper</h1><p>A published work.</p>",
                                                   encoding="utf-8")
    (tmp_path / "m.toml").write_text(
        'name = "t"\nroot = "."\ninclude = ["docs/*.md", "docs/*.html"]\nlocal_dir = "local"\n',
        encoding="utf-8")
    return tmp_path / "m.toml"


def test_a_manifest_includes_html_files_and_the_local_layer_reads_them(tmp_path: Path) -> None:
    pieces, _, documents = load_pieces(load_manifest(_corpus(tmp_path)))
    assert documents == 3
    by_source = {p.source: p for p in pieces}
    assert by_source["docs/guide.html"].title == "User guide"
    assert by_source["docs/intro.md"].section == "# Intro"
    local = by_source["local/paper.htm"]
    assert local.local and local.section == "# Paper" and local.text == "A published work."


def test_a_new_loader_changes_the_content_hash(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = load_manifest(_corpus(tmp_path))
    _, before, _ = load_pieces(manifest)
    assert load_pieces(manifest)[1] == before
    monkeypatch.setattr(loaders, "LOADERS", {**LOADERS, ".rst": LOADERS[".txt"]})
    assert load_pieces(manifest)[1] != before


def test_pictures_and_unknown_files_of_the_local_layer_are_skipped_with_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """docs/spec/behaviour.md B-6: files without a usable text layer and pictures are skipped with a
    warning."""
    manifest = _corpus(tmp_path)
    (tmp_path / "local" / "figure.PNG").write_bytes(b"\x89PNG\r\n")
    (tmp_path / "local" / "notes.docx").write_bytes(b"PK")
    with caplog.at_level("WARNING"):
        files = load_manifest(manifest).local_files()
    assert [p.name for p in files] == ["paper.htm"]
    assert "skipped local/figure.PNG: a picture, no text to index" in caplog.text
    assert "skipped local/notes.docx: no loader for .docx" in caplog.text
