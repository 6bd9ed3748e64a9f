"""Cut Markdown at #, ## and ### headings; long sections into ~500-character overlapping pieces."""

from __future__ import annotations

import re
from dataclasses import dataclass

HEADING = re.compile(r"^(#{1,3})\s+(.+?)\s*#*\s*$")
SUBHEADING = re.compile(r"^(#{4,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+")


@dataclass(frozen=True)
class Section:
    """A run of text under one heading path."""

    path: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class Piece:
    """A passage-sized piece of a section, with its heading path joined by ' > '."""

    section: str
    text: str
    context: str = ""


def split_sections(markdown: str) -> list[Section]:
    """Split a Markdown document at level 1-3 headings (not inside code fences)."""
    sections: list[Section] = []
    path: list[str] = []
    buf: list[str] = []
    in_fence = False

    def flush() -> None:
        text = "\n".join(buf).strip()
        if text:
            sections.append(Section(tuple(path), text))
        buf.clear()

    for line in markdown.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        m = None if in_fence else HEADING.match(line)
        if m:
            flush()
            level = len(m.group(1))
            del path[level - 1:]
            while len(path) < level - 1:
                path.append("")
            path.append(f"{m.group(1)} {m.group(2)}")
            continue
        buf.append(line)
    flush()
    return sections


def _units(text: str) -> list[str]:
    """Paragraphs, with over-long paragraphs broken into sentences."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        para = para.strip()
        if not para:
            continue
        out.extend(s for s in SENTENCE_END.split(para) if s) if len(para) > 500 else out.append(para)
    return out


def split_long(text: str, size: int = 500, overlap: float = 0.1) -> list[str]:
    """Pieces of about `size` characters, ~10% overlap, cut at paragraph/sentence boundaries."""
    if len(text) <= size * 1.2:
        return [text]
    pieces: list[str] = []
    current = ""
    for unit in _units(text):
        while len(unit) > size * 1.5:  # one giant sentence: hard cut at a space
            cut = unit.rfind(" ", 0, size) if unit.rfind(" ", 0, size) > size // 2 else size
            head, unit = unit[:cut], unit[cut:].lstrip()
            current = _emit(pieces, current, head, size, overlap)
        current = _emit(pieces, current, unit, size, overlap)
    if current.strip():
        pieces.append(current.strip())
    return pieces


def _emit(pieces: list[str], current: str, unit: str, size: int, overlap: float) -> str:
    if current and len(current) + len(unit) + 2 > size:
        pieces.append(current.strip())
        tail = current[-int(size * overlap):]
        space = tail.find(" ")
        tail = tail[space + 1:] if 0 <= space < len(tail) - 1 else tail
        current = tail + " " + unit
    else:
        current = f"{current}\n\n{unit}" if current else unit
    return current


def split_subsections(text: str) -> list[tuple[str | None, str]]:
    """A long section's runs under its #### (or deeper) headings: (heading or None, text)."""
    runs: list[tuple[str | None, list[str]]] = [(None, [])]
    in_fence = False
    for line in text.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        m = None if in_fence else SUBHEADING.match(line)
        if m:
            runs.append((f"{m.group(1)} {m.group(2)}", [line]))
        else:
            runs[-1][1].append(line)
    return [(h, "\n".join(lines).strip()) for h, lines in runs if "\n".join(lines).strip()]


def chunk_markdown(markdown: str, size: int = 500) -> list[Piece]:
    """Sections cut into passage pieces, each keeping its heading path.

    A section that fits stays whole. A longer one is cut at its #### headings first (so a
    piece's path names the sub-heading it sits under), then into ~size-character pieces.
    """
    pieces: list[Piece] = []
    sections = split_sections(markdown)
    leads = section_leads(sections)
    for sec in sections:
        section = " > ".join(p for p in sec.path if p)
        lead = leads.get(sec.path[:2], "")
        runs = [(None, sec.text)] if len(sec.text) <= size * 1.2 else split_subsections(sec.text)
        for heading, run in runs:
            path = f"{section} > {heading}" if heading and section else (heading or section)
            for text in split_long(run, size):
                pieces.append(Piece(path, text, "" if lead and lead in text else lead))
    return pieces


def lead_of(text: str, limit: int = 200) -> str:
    """The first sentence(s) of prose in a text, up to `limit` characters (no code)."""
    prose = []
    in_fence = False
    for line in text.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence and line.strip() and not line.lstrip().startswith(("|", "#", "!")):
            prose.append(line.strip())
    joined = " ".join(prose)
    if len(joined) <= limit:
        return joined
    cut = max(joined.rfind(". ", 0, limit), joined.rfind(" ", 0, limit))
    return joined[: cut + 1 if cut > 0 else limit].strip()


def section_leads(sections: list[Section]) -> dict[tuple[str, ...], str]:
    """For each ## section (path of length 2), the lead of the first text under it.

    Why: a piece deep in a long section ("### Solution", step 4) no longer says what the
    section is about ("Five project managers estimate a budget"); the lead puts that back
    into the indexed text, as a caption would, without a model.
    """
    leads: dict[tuple[str, ...], str] = {}
    for sec in sections:
        key = sec.path[:2]
        if len(key) == 2 and key not in leads:
            lead = lead_of(sec.text)
            if lead:
                leads[key] = lead
    return leads


def title_of(markdown: str, fallback: str) -> str:
    """The first level-1 heading, else the fallback (usually the file name)."""
    for line in markdown.splitlines():
        m = HEADING.match(line)
        if m and len(m.group(1)) == 1:
            return m.group(2).strip()
    return fallback
