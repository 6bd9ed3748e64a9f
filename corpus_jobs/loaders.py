"""Loaders: Markdown (include stubs resolved), locale JSON (key path as section), text, PDF,
HTML; and `LOADERS`, the table of which loader reads which file suffix.

A new kind of file is one entry in `LOADERS` (its suffixes, its function) plus that function:
the build, the local layer and the index's content hash all read the table.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from corpus_jobs.chunker import chunk_markdown, split_long, title_of

log = logging.getLogger(__name__)

INCLUDE = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$')
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass(frozen=True)
class LoadedPiece:
    """One passage-sized piece of a source, before embedding."""

    source: str
    title: str
    section: str
    lang: str
    text: str
    local: bool = False
    context: str = ""  # indexed with the text (like a caption), never shown to the model


def include_target(raw: str) -> str | None:
    """The included path when a Markdown file is only an include stub, else None."""
    body = HTML_COMMENT.sub("", raw)
    lines = [line for line in body.splitlines() if line.strip()]
    if len(lines) == 1 and (m := INCLUDE.match(lines[0])):
        return m.group(1)
    return None


def resolve_includes(raw: str, root: Path, depth: int = 0) -> str:
    """Inline `--8<-- "path"` lines (paths relative to the corpus root; nested up to 3)."""
    if depth > 3:
        return raw
    out = []
    for line in raw.splitlines():
        m = INCLUDE.match(line)
        target = (root / m.group(1)).resolve() if m else None
        if target is not None and target.is_file() and target.is_relative_to(root):
            out.append(resolve_includes(target.read_text(encoding="utf-8", errors="replace"),
                                        root, depth + 1))
        else:
            out.append(line)
    return "\n".join(out)


def load_markdown(rel: str, raw: str, root: Path, lang: str, size: int, local: bool = False
                  ) -> list[LoadedPiece]:
    """Heading-cut pieces of a Markdown document, includes resolved, comments dropped."""
    text = HTML_COMMENT.sub("", resolve_includes(raw, root))
    title = title_of(text, Path(rel).stem)
    return [LoadedPiece(rel, title, p.section or f"# {title}", lang, p.text, local,
                        context=p.context)
            for p in chunk_markdown(text, size)]


def _render(node: Any, prefix: str = "") -> list[str]:
    """'key: value' lines of a JSON subtree, keys relative to the subtree."""
    if isinstance(node, dict):
        return [line for k, v in node.items()
                for line in _render(v, f"{prefix}.{k}" if prefix else str(k))]
    if isinstance(node, list):
        return [line for i, v in enumerate(node) for line in _render(v, f"{prefix}[{i}]")]
    return [f"{prefix}: {node}" if prefix else str(node)]


LEAD_KEYS = ("title", "heading", "name", "question", "label")


def _json_lead(node: Any, inherited: str) -> str:
    """A subtree's own title-like text (to index its split pieces with), else the parent's."""
    if isinstance(node, dict):
        for key in LEAD_KEYS:
            value = node.get(key)
            if isinstance(value, str) and value.strip():
                return f"{inherited} > {value.strip()}" if inherited else value.strip()
    return inherited


def _json_pieces(node: Any, path: str, size: int, lead: str = ""
                 ) -> list[tuple[str, str, str]]:
    """(key path, text, lead) pieces: a subtree stays whole while it fits; otherwise nested
    objects recurse and runs of plain values are grouped under the parent's key path."""
    text = "\n".join(_render(node))
    if len(text) <= size or not isinstance(node, dict | list) or not node:
        return [(path, t, lead) for t in split_long(text, size)] if text.strip() else []
    lead = _json_lead(node, lead)
    items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
    pieces: list[tuple[str, str, str]] = []
    group: list[str] = []
    group_path = path

    def flush() -> None:
        if group:
            pieces.append((group_path, "\n".join(group), lead))
            group.clear()

    for key, child in items:
        child_path = f"{path}[{key}]" if isinstance(node, list) else (
            f"{path}.{key}" if path else str(key))
        rel = f"[{key}]" if isinstance(node, list) else str(key)
        if isinstance(child, dict | list) and child:
            flush()
            pieces.extend(_json_pieces(child, child_path, size, lead))
            continue
        line = f"{rel}: {child}"
        if len(line) > size:
            flush()
            pieces.extend((child_path, t, lead) for t in split_long(line, size))
            continue
        if group and len("\n".join(group)) + len(line) + 1 > size:
            flush()
        if not group:
            group_path = path or child_path
        group.append(line)
    flush()
    return pieces


def json_title(data: Any, rel: str) -> str:
    """A locale file's title: its own title text when it has one, else the file name."""
    if isinstance(data, dict):
        for candidate in (data.get("title"), (data.get("meta") or {}).get("title")
                          if isinstance(data.get("meta"), dict) else None):
            if isinstance(candidate, str) and candidate.strip():
                return f"{candidate.strip()} ({Path(rel).name})"
    return Path(rel).name


def load_json(rel: str, raw: str, lang: str, size: int) -> list[LoadedPiece]:
    """Locale JSON: subtrees by key path (dots, [i] for list items), split while too long."""
    try:
        data = json.loads(raw)
    except ValueError:
        log.warning("skipped %s: not valid JSON", rel)
        return []
    title = json_title(data, rel)
    return [LoadedPiece(rel, title, path or title, lang, text,
                        context="" if lead and lead in text else lead)
            for path, text, lead in _json_pieces(data, "", size)]


def load_text(rel: str, raw: str, lang: str, size: int, local: bool) -> list[LoadedPiece]:
    """Plain text: paragraphs into pieces under the file's name."""
    title = Path(rel).stem.replace("_", " ").replace("-", " ")
    return [LoadedPiece(rel, title, f"# {title}", lang, t, local)
            for t in split_long(raw.strip(), size) if t.strip()]


def load_pdf(path: Path, rel: str, lang: str, size: int) -> list[LoadedPiece]:
    """The PDF's text layer, page by page; pages without text are skipped with a warning."""
    try:
        from pypdf import PdfReader
    except ImportError:
        log.warning("skipped %s: PDF support needs the pypdf package", rel)
        return []
    try:
        reader = PdfReader(str(path))
    except Exception as exc:  # noqa: BLE001 - any broken PDF is skipped, never fatal
        log.warning("skipped %s: unreadable PDF (%s)", rel, type(exc).__name__)
        return []
    title = (reader.metadata.title if reader.metadata and reader.metadata.title
             else path.stem)
    pieces: list[LoadedPiece] = []
    empty = 0
    for n, page in enumerate(reader.pages, start=1):
        text = (page.extract_text() or "").strip()
        if len(text) < 20:
            empty += 1
            continue
        pieces.extend(LoadedPiece(rel, str(title), f"# {title} > page {n}", lang, t, True)
                      for t in split_long(text, size))
    if empty:
        log.warning("%s: %d page(s) without a text layer skipped", rel, empty)
    if not pieces:
        log.warning("skipped %s: no text layer (a scan?)", rel)
    return pieces


# ---- HTML -------------------------------------------------------------------------------------

# Dropped with everything inside them: code, styling and a page's navigation are no passage.
HTML_DROPPED = frozenset({"script", "style", "nav", "noscript", "template", "svg", "head"})
# Elements that end a paragraph where they start and end.
HTML_BLOCKS = frozenset({"p", "div", "section", "article", "main", "header", "footer", "aside",
                         "blockquote", "figure", "figcaption", "dl", "dt", "dd", "address",
                         "details", "summary", "form", "fieldset", "body", "ul", "ol", "table",
                         "caption", "li", "tr"})
HTML_HEADINGS = {f"h{n}": n for n in range(1, 7)}
# A text line Markdown would read as a heading or a code fence.
MARKDOWN_SYNTAX = re.compile(r"^\s*(#|```|~~~)")


class HtmlText(HTMLParser):
    """An HTML page as the Markdown the chunker cuts: h1-h6 as # headings, paragraphs, list
    items (`- `, `1. `), table rows (`| a | b |`) and <pre> as fenced code; script, style, nav
    and the head dropped (the <title> kept apart); entities decoded."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.title = ""
        self._buf: list[str] = []
        self._prefix = ""
        self._dropped: list[str] = []  # the open dropped elements, innermost last
        self._in_title = False
        self._lists: list[list[int]] = []  # per open list: [next number] (ol) or [] (ul)
        self._cells: list[str] | None = None  # the open table row's cells
        self._pre = 0

    def _line(self, text: str) -> None:
        if self._prefix.startswith("#"):
            text = text.rstrip("\u00b6").rstrip()  # a permalink mark after a heading
        elif not self._prefix and MARKDOWN_SYNTAX.match(text):
            text = "\\" + text.lstrip()  # text, not a heading or a fence
        if text:
            self.lines.append(self._prefix + text)

    def _flush(self, blank: bool = False) -> None:
        """End the current line; an empty one keeps its prefix for the text that follows."""
        text = " ".join("".join(self._buf).split())
        self._buf.clear()
        if text:
            self._line(text)
            self._prefix = ""
        if blank and self.lines and self.lines[-1] != "" and not self._lists \
                and self._cells is None:
            self.lines.append("")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = "svg" not in self._dropped and not self.title
            return
        if tag == "body" and "head" in self._dropped:
            del self._dropped[self._dropped.index("head"):]  # a head left open (</head> is optional)
        if tag in HTML_DROPPED:
            self._dropped.append(tag)
            return
        if self._dropped:
            return
        if self._pre:
            return
        if tag in HTML_HEADINGS:
            self._flush(blank=True)
            self._prefix = "#" * HTML_HEADINGS[tag] + " "
        elif tag == "pre":
            self._flush(blank=True)
            self.lines.append("```")
            self._pre += 1
        elif tag == "br":
            self._flush()
        elif tag == "hr":
            self._flush(blank=True)
        elif tag in ("ul", "ol"):
            self._flush()
            self._lists.append([1] if tag == "ol" else [])
        elif tag == "li":
            self._flush()
            depth = max(0, len(self._lists) - 1)
            numbered = self._lists[-1] if self._lists else []
            mark = f"{numbered[0]}. " if numbered else "- "
            if numbered:
                numbered[0] += 1
            self._prefix = "  " * depth + mark
        elif tag == "tr":
            self._flush()
            self._cells = []
        elif tag in ("td", "th") and self._cells is not None:
            self._buf.clear()
        elif tag in HTML_BLOCKS:
            self._flush(blank=True)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("br", "hr"):
            self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            return
        if self._dropped:
            if tag == self._dropped[-1]:
                self._dropped.pop()
            return
        if tag == "pre" and self._pre:
            self._pre -= 1
            text = "".join(self._buf).strip("\n")
            self._buf.clear()
            self.lines.extend([*text.splitlines(), "```", ""])
            return
        if self._pre:
            return
        if tag in HTML_HEADINGS:
            self._flush(blank=True)
            self._prefix = ""
        elif tag in ("td", "th") and self._cells is not None:
            self._cells.append(" ".join("".join(self._buf).split()))
            self._buf.clear()
        elif tag == "tr" and self._cells is not None:
            cells, self._cells = self._cells, None
            if any(cells):
                self.lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells)
                                  + " |")
        elif tag in ("ul", "ol"):
            self._flush()
            if self._lists:
                self._lists.pop()
            self._flush(blank=True)
        elif tag == "table":
            self._cells = None
            self._flush(blank=True)
        elif tag in HTML_BLOCKS:
            self._flush(blank=tag != "li")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._dropped:
            self._buf.append(data)

    def markdown(self) -> str:
        """The page as Markdown text, once the whole document was fed."""
        self._flush(blank=True)
        return "\n".join(self.lines).strip() + "\n"


def html_markdown(raw: str) -> tuple[str, str]:
    """(the page as Markdown, its <title>)."""
    parser = HtmlText()
    parser.feed(raw)
    parser.close()
    return parser.markdown(), " ".join(parser.title.split())


def load_html(rel: str, raw: str, lang: str, size: int, local: bool = False
              ) -> list[LoadedPiece]:
    """An HTML page cut like Markdown: its h1-h6 headings are the section path; the title is
    the first h1, else the page's <title>, else the file name."""
    text, page_title = html_markdown(raw)
    title = title_of(text, page_title or Path(rel).stem)
    return [LoadedPiece(rel, title, p.section or f"# {title}", lang, p.text, local,
                        context=p.context)
            for p in chunk_markdown(text, size)]


# ---- which loader reads which file --------------------------------------------------------------

@dataclass(frozen=True)
class Source:
    """One file to load: its path on disk, its path as a source, its text and language."""

    path: Path
    rel: str
    raw: str  # the text ("" for a binary file: the loader reads `path`)
    root: Path  # the folder include paths are relative to
    lang: str
    local: bool = False  # a local-layer copy (not in git, no URL)


@dataclass(frozen=True)
class Loader:
    """How one kind of file becomes pieces."""

    load: Callable[[Source, int], list[LoadedPiece]]
    # Read in the local layer too (published works kept out of git), not only by the globs.
    local: bool = True
    # Read by the loader from disk; the build does not decode it as text.
    binary: bool = False


def _html(s: Source, size: int) -> list[LoadedPiece]:
    return load_html(s.rel, s.raw, s.lang, size, s.local)


# Which loader reads which suffix (lower case); any other file a manifest includes is plain
# text. Adding an entry changes the index's content hash (build.load_pieces), so a corpus
# whose files a new loader now reads is rebuilt.
LOADERS: Mapping[str, Loader] = {
    ".md": Loader(lambda s, size: load_markdown(s.rel, s.raw, s.root, s.lang, size, s.local)),
    ".json": Loader(lambda s, size: load_json(s.rel, s.raw, s.lang, size), local=False),
    ".pdf": Loader(lambda s, size: load_pdf(s.path, s.rel, s.lang, size), binary=True),
    ".txt": Loader(lambda s, size: load_text(s.rel, s.raw, s.lang, size, s.local)),
    ".html": Loader(_html),
    ".htm": Loader(_html),
}
TEXT_LOADER = LOADERS[".txt"]
LOCAL_SUFFIXES: tuple[str, ...] = tuple(x for x, loader in LOADERS.items() if loader.local)


def loader_for(path: Path | str) -> Loader:
    """The loader of a file by its suffix; plain text for any other."""
    return LOADERS.get(Path(path).suffix.lower(), TEXT_LOADER)


def loaders_version() -> str:
    """What the index's content hash says of the loaders: bump the number when a loader reads
    the same file differently; the suffixes follow the table."""
    return "3;" + ",".join(sorted(LOADERS))
