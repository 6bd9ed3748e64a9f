"""How sources are presented: one entry per section, a human title for a
locale key, and a link to the public original at the passage's lines where the host has line
anchors. Presentation only: the index and what it embeds are untouched."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from corpus_jobs.manifest import load_manifest, source_link_pattern, source_url
from shared.errors import ConfigError
from shared.language import quote_marks
from shared.passage import Passage
from shared.spans import overlap_prefix

LEAD_KEYS = ("question", "title", "heading", "name", "label")  # a subtree's own name
TITLE_CHARS = 80
GITHUB_BLOB = re.compile(r"^https://github\.com/[^/]+/[^/]+/blob/")


@lru_cache(maxsize=8)
def _pattern(manifest: str) -> tuple[str, str]:
    return source_link_pattern(manifest)


@lru_cache(maxsize=8)
def _root(manifest: str) -> Path | None:
    """The corpus root when the documents are at hand on this worker, else None."""
    try:
        return load_manifest(manifest).root if manifest else None
    except (ConfigError, OSError, ValueError):
        return None


@lru_cache(maxsize=64)
def _read(path: str, mtime_ns: int) -> str:
    return Path(path).read_text(encoding="utf-8", errors="replace")


def source_text(manifest: str, rel: str) -> str | None:
    """A public source file's text (cached until it changes), or None when it is not here."""
    root = _root(manifest)
    if root is None or not rel:
        return None
    path = (root / rel).resolve()
    try:
        if not path.is_relative_to(root.resolve()):
            return None
        return _read(str(path), os.stat(path).st_mtime_ns)
    except OSError:
        return None


# ---- one entry per section -------------------------------------------------------------------

def one_per_section(passages: Sequence[Passage]) -> tuple[Passage, ...]:
    """The passages with the pieces of one section joined into one, at the place of its best
    piece: a section is listed (and numbered) once. Pieces that continue one another are joined
    in reading order without the chunker's overlap; others in rank order."""
    groups: dict[tuple[str, str], list[Passage]] = {}
    for p in passages:
        groups.setdefault((p.source, p.section), []).append(p)
    return tuple(_joined(group) for group in groups.values())


def _joined(pieces: list[Passage]) -> Passage:
    if len(pieces) == 1:
        return pieces[0]
    texts = [p.text for p in pieces]
    ordered = _reading_order(texts)
    parts = []
    for i, text in enumerate(ordered):
        skip = overlap_prefix(text, [ordered[i - 1]]) if i else 0
        parts.append(text[skip:].strip())
    best = pieces[0]
    return dataclasses.replace(best, text="\n\n".join(parts),
                               score=max(p.score for p in pieces))


def _reading_order(texts: list[str]) -> list[str]:
    """Texts that continue one another (a piece starting with the tail of another) in that
    order; the first piece of each chain in the order given."""
    follows: dict[int, int] = {}
    for i, text in enumerate(texts):
        for j, other in enumerate(texts):
            if i != j and j not in follows.values() and overlap_prefix(text, [other]):
                follows[i] = j
                break
    out: list[str] = []
    for i in range(len(texts)):
        if i in follows:
            continue
        k: int | None = i
        while k is not None and texts[k] not in out:
            out.append(texts[k])
            k = next((a for a, b in follows.items() if b == k), None)
    out.extend(t for t in texts if t not in out)  # a cycle: keep everything
    return out


# ---- a human title for a locale key ----------------------------------------------------------

def is_locale(source: str) -> bool:
    """A locale JSON file (its sections are key paths, not headings)."""
    return source.endswith(".json")


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    if len(text) <= TITLE_CHARS:
        return text
    cut = text[:TITLE_CHARS].rsplit(" ", 1)[0]
    return cut.rstrip(",;:.") + "…"


def _path_parts(key_path: str) -> list[str | int]:
    """'a.b[2].c' -> ['a', 'b', 2, 'c']."""
    parts: list[str | int] = []
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", key_path):
        parts.append(int(index) if index else name)
    return parts


def _strings(node: Any) -> list[str]:
    """Every string value of a subtree, in file order."""
    if isinstance(node, str):
        return [node] if node.strip() else []
    items = node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
    return [s for child in items for s in _strings(child)]


def _named(node: Any) -> str | None:
    if isinstance(node, dict):
        for key in LEAD_KEYS:
            value = node.get(key)
            if isinstance(value, str) and value.strip():
                return value
    return None


def _texts_title(values: list[str], lang: str = "en") -> str:
    """A group of interface texts named by its first ones: “Error”, “Profile updated”, …"""
    opening, closing = quote_marks(lang)  # the texts' own language: “Error”, „Chyba“
    shown: list[str] = []
    for value in values:
        quoted = f"{opening}{_short(value)}{closing}"
        if shown and len(", ".join(shown + [quoted])) > TITLE_CHARS:
            break
        shown.append(quoted)
    return ", ".join(shown) + (", …" if len(shown) < len(values) else "")


def locale_heading(key_path: str, text: str, raw: str | None, lang: str = "en") -> str:
    """A locale key's human title: the FAQ's question or the subtree's own title, else its own
    text, else its first texts (in the quotation marks of `lang`, the texts' language); read
    from the file when it is here, else from the passage."""
    if raw is not None:
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        chain: list[Any] = [data]
        for part in _path_parts(key_path):
            node = chain[-1]
            if isinstance(part, int) and isinstance(node, list) and part < len(node):
                chain.append(node[part])
            elif isinstance(part, str) and isinstance(node, dict) and part in node:
                chain.append(node[part])
            else:
                chain = []
                break
        if len(chain) > 1:
            # The key's own subtree and its parents below the file (the file's title is the
            # source's title already).
            for node in reversed(chain[1:]):
                if (named := _named(node)) is not None:
                    return _short(named)
            if isinstance(chain[-1], str):
                return _short(chain[-1])
            return _texts_title(_strings(chain[-1]), lang) or key_path
    pairs = [line.split(": ", 1) for line in text.splitlines() if ": " in line]
    for key in LEAD_KEYS:
        for k, v in pairs:
            if re.split(r"[.\]]", k)[-1] == key and v.strip():
                return _short(v)
    return _texts_title([v for _k, v in pairs if v.strip()], lang) or key_path


# What a locale file without a title of its own holds, by (reader's language, file's).
LOCALE_NAMES = {("en", "en"): "The app's texts ({name})",
                ("en", "cs"): "The app's Czech texts ({name})",
                ("cs", "cs"): "Texty aplikace ({name})",
                ("cs", "en"): "Anglické texty aplikace ({name})"}


def locale_title(title: str, source: str, lang: str, reader: str = "en") -> str:
    """A locale file's title: its own when it has one, else what the file holds, said in the
    reader's language (English unless Czech)."""
    name = Path(source).name
    if title != name:
        return title
    key = ("cs" if reader == "cs" else "en", "cs" if lang == "cs" else "en")
    return LOCALE_NAMES[key].format(name=name)


# ---- the link, at the passage's lines --------------------------------------------------------

def _depths(lines: list[str]) -> list[int]:
    """The nesting depth at the start of each line (brackets inside strings skipped)."""
    depths: list[int] = []
    depth = 0
    in_string = escaped = False
    for line in lines:
        depths.append(depth)
        for ch in line:
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch in "{[":
                depth += 1
            elif ch in "}]":
                depth -= 1
    return depths + [depth]


def json_lines(raw: str, key_path: str) -> tuple[int, int] | None:
    """The lines (1-based) of a key path's value in a locale file written one key a line: its
    key's line to the line its object closes; None when a key is not found."""
    lines = raw.splitlines()
    depths = _depths(lines)
    start, end = 0, len(lines) - 1
    found = False
    for k, part in enumerate(_path_parts(key_path)):
        if isinstance(part, int):
            break  # list items have no key of their own: the list's lines
        key = re.compile(r"^\s*" + re.escape(json.dumps(part, ensure_ascii=False)) + r"\s*:")
        hit = next((n for n in range(start, end + 1)
                    if depths[n] == k + 1 and key.match(lines[n])), None)
        if hit is None:
            return None
        # The value runs until the depth falls back to the key's own.
        close = next((n for n in range(hit + 1, len(lines)) if depths[n + 1] <= k + 1), hit)
        start, end, found = hit, close, True
    return (start + 1, end + 1) if found else None


def line_anchor(pattern: str, rel: str, section: str, text: str, raw: str | None) -> str | None:
    """A line anchor where the host has them (GitHub's blob pages of JSON files: `#L3-L9`),
    else None. A Markdown page keeps its heading anchor: GitHub shows its lines only as raw
    text (`?plain=1`), and a person wants the rendered page."""
    if raw is None or not GITHUB_BLOB.match(pattern) or not rel.endswith(".json"):
        return None
    span = json_lines(raw, section)
    if span is None:
        return None
    a, b = span
    return f"#L{a}" + (f"-L{b}" if b > a else "")


def link_for(manifest: str, p: Passage) -> str | None:
    """The public URL of a (non-local) source: at its lines where the host has line anchors and
    the file is here, else at its section's heading; None when the manifest has no pattern."""
    if p.local:
        return None
    pattern, ref = _pattern(manifest)
    url = source_url(pattern, ref, p.source, p.section)
    if url is None:
        return None
    anchor = line_anchor(pattern, p.source, p.section, p.text, source_text(manifest, p.source))
    if anchor is None:
        return url
    return url.split("#", 1)[0] + anchor


def presented(manifest: str, p: Passage, reader: str = "en") -> dict[str, str]:
    """The title and section a person reads for a passage (a locale key gets its text), and
    the key path itself for a locale file (what tools look passages up by)."""
    if not is_locale(p.source):
        return {"title": p.title, "section": p.section}
    raw = source_text(manifest, p.source)
    return {"title": locale_title(p.title, p.source, p.lang, reader),
            "section": locale_heading(p.section, p.text, raw, p.lang), "key": p.section}
