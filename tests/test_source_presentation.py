"""Sources as a person reads them: one entry per section, a locale key named
by its text (the FAQ's question, a subtree's title, else its first texts), and a link at the
passage's lines where the host has line anchors (GitHub's JSON pages: `#L3-L9`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from corpus_jobs.loaders import load_json, load_markdown
from shared.passage import Passage
from shared.spans import Span
from worker.pipeline import source_links
from worker.pipeline.quote_answer import compose
from worker.pipeline.quotes import Candidate
from worker.pipeline.turn import sources_of
from worker.pipeline.types import Retrieval

FAQ = {"title": "Frequently Asked Questions",
       "categories": {"title": "Categories", "method": "About BeCoMe Method"},
       "method": {"intro": "Learn about the method.",
                  "whatIsBecome": {"question": "What is BeCoMe?",
                                   "answer": "BeCoMe (Best Compromise Mean) aggregates "
                                             "expert opinions."}}}
PROFILE = {"editProfile": {"title": "Edit Profile", "save": "Save Changes"},
           "toast": {"error": "Error", "profileUpdated": "Profile updated",
                     "updateFailed": "Failed to update profile"}}
GUIDE = "# Guide\n\nIntro line.\n\n## Long part\n\n" + "\n".join(
    f"Sentence number {i} of the long part says something useful about the method."
    for i in range(1, 16)) + "\n\n## Short part\n\nShort and sweet.\n"


@pytest.fixture()
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A small corpus on disk with a GitHub link pattern; its manifest's path."""
    root = tmp_path / "docs"
    (root / "locales" / "en").mkdir(parents=True)
    (root / "locales" / "en" / "faq.json").write_text(json.dumps(FAQ, indent=2))
    (root / "locales" / "en" / "profile.json").write_text(json.dumps(PROFILE, indent=2))
    (root / "guide.md").write_text(GUIDE)
    manifest = tmp_path / "m.toml"
    manifest.write_text('name = "t"\nroot = "docs"\ninclude = ["**/*.md", "**/*.json"]\n'
                        'source_url = "https://github.com/o/r/blob/{ref}/{path}{anchor}"\n')
    for name in ("_pattern", "_root"):  # read once per manifest path: a fresh one each test
        cached = getattr(source_links, name, None)
        if cached is not None:
            cached.cache_clear()
    return str(manifest)


def passages(manifest: str, rel: str) -> list[Passage]:
    root = Path(manifest).parent / "docs"
    raw = (root / rel).read_text()
    pieces = (load_json(rel, raw, "en", 90) if rel.endswith(".json")
              else load_markdown(rel, raw, root, "en", 200))
    return [Passage(f"{rel}:{i}", x.source, x.title, x.section, "en", x.text, x.text, False,
                    1.0 - i / 100) for i, x in enumerate(pieces)]


def test_a_section_is_listed_once_its_pieces_joined_in_reading_order(corpus: str) -> None:
    guide = passages(corpus, "guide.md")
    long = [p for p in guide if p.section.endswith("## Long part")]
    assert len(long) >= 3, "the fixture cuts the long part into pieces"
    short = next(p for p in guide if p.section.endswith("## Short part"))
    # Retrieval ranked the second piece first, then another section, then the first piece.
    ranked = source_links.one_per_section([long[1], short, long[0]])
    assert [p.section for p in ranked] == [long[1].section, short.section]
    joined = ranked[0].text
    numbers = sorted({int(x) for piece in long[:2]
                      for x in re.findall(r"Sentence number (\d+) ", piece.text)})
    # Reading order, and the chunker's overlap is not repeated.
    assert [int(x) for x in re.findall(r"Sentence number (\d+) ", joined)] == numbers, joined
    assert joined.startswith(long[0].text[:40])
    sources = sources_of(Retrieval(tuple([long[1], short, long[0]]), "v", "q"), corpus)
    assert [s["n"] for s in sources] == [1, 2, 3]  # sources_of lists what it is given ...
    turn_like = sources_of(Retrieval(ranked, "v", "q"), corpus)  # ... and the turn gives one
    assert len({(s["source"], s["section"]) for s in turn_like}) == len(turn_like) == 2


def test_quotes_from_two_pieces_of_one_section_cite_one_source(corpus: str) -> None:
    guide = passages(corpus, "guide.md")
    long = [p for p in guide if p.section.endswith("## Long part")]

    def quote(n: int, last: bool) -> Candidate:
        found = list(re.finditer(r"Sentence number \d+ [^.]*\.", guide[n].text))
        m = found[-1 if last else 0]
        return Candidate(n, Span(m.start(), m.end(), "sentence", 0), m.group(0), 1, 1, 1, 1)

    first, second = guide.index(long[0]), guide.index(long[-1])
    said = compose([quote(first, False), quote(second, True)], guide, "en")
    assert [q["n"] for q in said.quotes] == [1, 1]
    assert len(said.passages) == 1 and "[2]" not in said.text
    assert all(q["text"][:-1] in said.passages[0].text for q in said.quotes)


def test_a_locale_key_is_named_by_its_text_never_its_key_path(corpus: str) -> None:
    # As a turn presents them: the pieces of one key joined.
    faq = {p.section: p for p in source_links.one_per_section(
        passages(corpus, "locales/en/faq.json"))}
    profile = {p.section: p for p in source_links.one_per_section(
        passages(corpus, "locales/en/profile.json"))}
    chosen = (faq["method.whatIsBecome"], profile["toast"], profile["editProfile"])
    sources = sources_of(Retrieval(chosen, "v", "q"), corpus)
    assert [(s["title"], s["section"]) for s in sources] == [
        ("Frequently Asked Questions (faq.json)", "What is BeCoMe?"),
        ("The app's texts (profile.json)", "“Error”, “Profile updated”, “Failed to update profile”"),
        ("The app's texts (profile.json)", "Edit Profile")]
    assert [s["key"] for s in sources] == ["method.whatIsBecome", "toast", "editProfile"]
    # Without the file at hand (a worker elsewhere), the passage's own lines name it.
    assert source_links.locale_heading("method.whatIsBecome", faq["method.whatIsBecome"].text,
                                       None) == "What is BeCoMe?"


def test_czech_interface_texts_are_named_in_czech_quotation_marks(corpus: str) -> None:
    # A Czech answer's source read `› “Žádné čekající pozvánky”, …` in English marks.
    import dataclasses

    czech = {"toast": {"error": "Chyba", "profileUpdated": "Profil upraven",
                       "updateFailed": "Profil se nepodařilo upravit"}}
    (Path(corpus).parent / "docs" / "locales" / "cs").mkdir()
    (Path(corpus).parent / "docs" / "locales" / "cs" / "profile.json").write_text(
        json.dumps(czech, indent=2))
    profile = {p.section: dataclasses.replace(p, lang="cs") for p in
               source_links.one_per_section(passages(corpus, "locales/cs/profile.json"))}
    sources = sources_of(Retrieval((profile["toast"],), "v", "q"), corpus)
    assert sources[0]["section"].startswith("„") and "“, „" in sources[0]["section"]
    assert "”" not in sources[0]["section"]
    toast = profile["toast"]
    assert source_links.locale_heading("toast", toast.text, None, toast.lang).startswith("„")


def test_a_locale_files_own_name_is_in_the_readers_language() -> None:
    # A Czech reader read "The app's Czech texts (about.json)" under a Czech answer.
    name = source_links.locale_title
    assert name("about.json", "locales/cs/about.json", "cs", "cs") == "Texty aplikace (about.json)"
    assert name("about.json", "locales/en/about.json", "en", "cs") == \
        "Anglické texty aplikace (about.json)"
    assert name("about.json", "locales/cs/about.json", "cs", "en") == \
        "The app's Czech texts (about.json)"
    assert name("about.json", "locales/en/about.json", "en", "en") == "The app's texts (about.json)"
    # A file's own title is its own.
    assert name("Časté dotazy (faq.json)", "locales/cs/faq.json", "cs", "en") == \
        "Časté dotazy (faq.json)"


def test_links_open_the_original_at_its_lines(corpus: str) -> None:
    faq = {p.section: p for p in passages(corpus, "locales/en/faq.json")}
    raw = (Path(corpus).parent / "docs/locales/en/faq.json").read_text().splitlines()
    guide = passages(corpus, "guide.md")
    short = next(p for p in guide if p.section.endswith("## Short part"))
    sources = sources_of(Retrieval((faq["method.whatIsBecome"], short), "v", "q"), corpus)
    base = "https://github.com/o/r/blob/main/"
    url = sources[0]["url"]
    assert url.startswith(base + "locales/en/faq.json#L"), url
    a, b = (int(x) for x in url.split("#L", 1)[1].split("-L"))
    assert raw[a - 1].strip().startswith('"whatIsBecome": {') and raw[b - 1].strip() == "}"
    # A Markdown page opens rendered, at its heading (GitHub shows lines only as raw text).
    assert sources[1]["url"] == f"{base}guide.md#short-part"
    # A host without line anchors keeps the heading anchor.
    assert source_links.line_anchor("https://docs.example/{path}{anchor}", "guide.md",
                                    short.section, short.text, GUIDE) is None
