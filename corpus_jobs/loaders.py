"""Loaders: Markdown (include stubs resolved), locale JSON (key path as section), text, PDF."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
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


def load_markdown(rel: str, raw: str, root: Path, lang: str, size: int) -> list[LoadedPiece]:
    """Heading-cut pieces of a Markdown document, includes resolved, comments dropped."""
    text = HTML_COMMENT.sub("", resolve_includes(raw, root))
    title = title_of(text, Path(rel).stem)
    return [LoadedPiece(rel, title, p.section or f"# {title}", lang, p.text, context=p.context)
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
