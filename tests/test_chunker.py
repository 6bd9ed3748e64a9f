"""The chunker cuts at #, ## and ### and keeps heading paths; long sections overlap."""

from __future__ import annotations

from corpus_jobs.chunker import chunk_markdown, split_long, split_sections, title_of

DOC = """# Title

Intro text.

## Part A

Text of A.

### Detail

Detail text.

#### Deeper heading stays inside

Still detail.

```python
# not a heading inside a fence
```

## Part B

Text of B.
"""


def test_sections_follow_heading_levels() -> None:
    sections = split_sections(DOC)
    paths = [" > ".join(s.path) for s in sections]
    assert paths == ["# Title", "# Title > ## Part A", "# Title > ## Part A > ### Detail",
                     "# Title > ## Part B"]
    detail = sections[2].text
    assert "#### Deeper heading stays inside" in detail
    assert "# not a heading inside a fence" in detail


def test_title_is_first_h1_or_fallback() -> None:
    assert title_of(DOC, "file") == "Title"
    assert title_of("no heading", "file") == "file"


def test_long_section_is_cut_with_overlap_at_sentence_boundaries() -> None:
    sentences = [f"Sentence number {i} says something useful about the method." for i in range(40)]
    text = " ".join(sentences)
    pieces = split_long(text, 500)
    assert len(pieces) > 3
    assert all(len(p) <= 650 for p in pieces)
    for a, b in zip(pieces, pieces[1:], strict=False):
        assert a[-20:].split()[-1] in b, "consecutive pieces overlap"
    # Every sentence survives somewhere.
    assert all(any(s in p for p in pieces) for s in sentences)


def test_short_section_is_one_piece_with_its_path() -> None:
    pieces = chunk_markdown("# T\n\n## S\n\nShort.")
    assert [(p.section, p.text) for p in pieces] == [("# T > ## S", "Short.")]


def test_giant_sentence_without_boundaries_is_still_cut() -> None:
    text = "word " * 400
    pieces = split_long(text.strip(), 500)
    assert len(pieces) >= 3
    assert all(len(p) <= 800 for p in pieces)


def test_long_section_is_cut_at_level_four_headings_first() -> None:
    body = "Intro of step two. " * 10
    sub = "Text of the sub step that is long enough. " * 8
    doc = f"# M\n\n### Step 2\n\n{body}\n\n#### Step 2.1\n\n{sub}\n\n#### Step 2.3\n\n{sub}\n"
    pieces = chunk_markdown(doc)
    paths = [p.section for p in pieces]
    assert paths[0] == "# M > ### Step 2"
    assert "# M > ### Step 2 > #### Step 2.1" in paths
    assert paths[-1] == "# M > ### Step 2 > #### Step 2.3"
    assert pieces[-1].text.startswith("#### Step 2.3")
