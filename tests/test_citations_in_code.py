"""Comments and docstrings cite only what a newcomer can open in the repo: a behaviour item as
`docs/spec/behaviour.md B-n` (an item the spec has), a spec's section with the spec's path, a
docs/benchmarks.md section by its title, a file by its path; never an issue number, which only
the tracker knows (CHANGES.md and docs/benchmarks.md keep them: they are history). Pure: reads
the source files, runs nothing."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SPEC = REPO / "docs" / "spec"
BEHAVIOUR = "docs/spec/behaviour.md"
CODE_DIRS = ("web", "worker", "shared", "corpus_jobs", "assistant_cli", "demo_app", "bench",
             "tests")
SUFFIXES = {".py", ".js", ".css", ".html"}

ISSUE = re.compile(r"\bissues?[-_ ]?#?\d+", re.IGNORECASE)
B_ITEM = re.compile(r"\bB-(\d+)\b")
# A spec named without the folder it lives in (or with the shared folder's): not openable here.
SPEC_NAME = re.compile(r"(?<![\w/.-])(?:\.\./)*(?:shared/)?specs?/[\w.-]+\.md|"
                       r"(?<![\w/.-])(?:behaviour|become-app-api|platform-notes|retrieval-notes)"
                       r"\.md")
SPEC_PATH = re.compile(r"docs/spec/([\w.-]+\.md)")
# "section 9" as a citation: with a spec path beside it, else it points nowhere.
SECTION = re.compile(r"(?<![\"'\w])(?:spec(?:'s)? )?section (\d+)\b", re.IGNORECASE)


def code_files() -> list[Path]:
    files = []
    for top in CODE_DIRS:
        for path in sorted((REPO / top).rglob("*")):
            if path.suffix in SUFFIXES and "node_modules" not in path.parts and path.is_file() \
                    and path != Path(__file__).resolve():  # this file's own examples
                files.append(path)
    return files


def spec_items() -> set[int]:
    text = (SPEC / "behaviour.md").read_text(encoding="utf-8")
    return {int(n) for n in re.findall(r"^- B-(\d+) ", text, re.MULTILINE)}


def bad_citations(path: Path, text: str, items: set[int]) -> list[str]:
    """Each citation of `text` (a file's contents) a newcomer could not open, as `path:line: why`."""
    rel = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        near = (lines[i - 1] if i else "") + "\n" + line
        where = f"{rel}:{i + 1}"
        if m := ISSUE.search(line):
            out.append(f"{where}: cites {m[0]!r}: say what the reason is instead")
        for m in B_ITEM.finditer(line):
            if int(m[1]) not in items:
                out.append(f"{where}: B-{m[1]} is no item of {BEHAVIOUR}")
            elif BEHAVIOUR not in near:
                out.append(f"{where}: B-{m[1]} without {BEHAVIOUR} beside it")
        for m in SPEC_NAME.finditer(line):
            out.append(f"{where}: {m[0]!r}: name the spec by its path in the repo, docs/spec/")
        for m in SPEC_PATH.finditer(line):
            if not (SPEC / m[1]).is_file():
                out.append(f"{where}: {m[0]} does not exist")
        for m in SECTION.finditer(line):
            if line[:m.start()].replace('"""', "").count('"') % 2:
                continue  # inside a string on this line: words, not a citation
            if not SPEC_PATH.search(near) and "docs/benchmarks.md" not in near:
                out.append(f"{where}: {m[0]!r} of which document? Name its path beside it")
    return out


def test_every_citation_in_the_code_can_be_opened_in_the_repo() -> None:
    items = spec_items()
    assert items == set(range(1, 36)), "docs/spec/behaviour.md lost items the code cites"
    bad = []
    for path in code_files():
        bad += bad_citations(path, path.read_text(encoding="utf-8"), items)
    assert not bad, "\n".join(bad)


def test_the_scan_catches_what_it_is_for() -> None:
    """Each rule fails on the kind of comment it exists for, and passes its repaired form."""
    items = spec_items()
    here = REPO / "web" / "x.py"
    wrong = [
        "# Kept for the reconnect (issue 27).",
        "# See issue-12's first prompt.",
        "// The only elements an answer may contain (B-31).",
        f"# Limits ({BEHAVIOUR} B-99).",
        '"""The BeCoMe method (become-app-api.md section 6)."""',
        "# Read ../shared/specs/behaviour.md first.",
        "# Limits (section 9): moving windows.",
        "# (docs/spec/nowhere.md 4.2)",
    ]
    for line in wrong:
        assert bad_citations(here, line, items), line
    right = [
        f"# Kept for the reconnect ({BEHAVIOUR} B-29).",
        f"// The only elements an answer may contain ({BEHAVIOUR}\n// B-31).",
        '"""The BeCoMe method (docs/spec/become-app-api.md section 6)."""',
        f"# Limits ({BEHAVIOUR} section 9): moving windows.",
        'Extract("section-ref", "section 6 and § 3", [])',
        '    "See section 6 for the details.",',
        "B64 = 'ABC'  # not an item",
        '# Measured in docs/benchmarks.md, "Captions shipped with the corpus".',
    ]
    for text in right:
        assert not bad_citations(here, text, items), text
