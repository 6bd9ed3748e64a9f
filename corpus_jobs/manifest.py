"""Corpus manifests: public globs, exclusions, the local-layer folder and per-source language."""

from __future__ import annotations

import fnmatch
import logging
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from corpus_jobs.loaders import LOCAL_SUFFIXES
from shared.errors import ConfigError

log = logging.getLogger(__name__)
# Pictures a local folder may hold beside the published works: no text layer to index.
PICTURES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".bmp", ".tif",
                      ".tiff", ".heic", ".ico"})


@dataclass(frozen=True)
class Manifest:
    """A parsed manifest; `root` and `local_dir` are absolute."""

    name: str
    path: Path
    root: Path
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    language: str
    languages: tuple[tuple[str, str], ...] = ()
    local_dir: Path | None = None
    # The captions data file shipped with the corpus (captions by content hash), if any.
    captions: Path | None = None
    # The questions data file shipped with the corpus (question views by content hash), if any.
    questions: Path | None = None
    # The vectors data file shipped with the corpus (the embeddings model's vectors by content
    # hash, corpus_jobs/vector_file.py), if any: a first build embeds only what it lacks.
    vectors: Path | None = None

    def files(self) -> list[Path]:
        """Every included, non-excluded public file, sorted by relative path."""
        found: set[Path] = set()
        for pattern in self.include:
            found.update(p for p in self.root.glob(pattern) if p.is_file())
        kept = [p for p in found if not self.excluded(self.rel(p))]
        return sorted(kept, key=self.rel)

    def local_files(self) -> list[Path]:
        """Files of the local layer (published works not in git), if configured; a picture
        or a file no loader reads is skipped with a warning (docs/spec/behaviour.md B-6)."""
        if self.local_dir is None or not self.local_dir.is_dir():
            return []
        kept = []
        for p in sorted(self.local_dir.rglob("*")):
            if not p.is_file():
                continue
            suffix = p.suffix.lower()
            if suffix in LOCAL_SUFFIXES:
                kept.append(p)
                continue
            why = "a picture, no text to index" if suffix in PICTURES \
                else f"no loader for {suffix or 'a file without a suffix'}"
            log.warning("skipped %s: %s", self.local_rel(p), why)
        return kept

    def local_rel(self, path: Path) -> str:
        """A local-layer file's source name: `local/` and its path in the local folder."""
        assert self.local_dir is not None
        return "local/" + path.relative_to(self.local_dir).as_posix()

    def rel(self, path: Path) -> str:
        """A public file's path relative to the corpus root, with forward slashes."""
        return path.relative_to(self.root).as_posix()

    def excluded(self, rel: str) -> bool:
        """True when a relative path matches an exclude glob."""
        return any(fnmatch.fnmatch(rel, pattern) for pattern in self.exclude)

    def language_of(self, rel: str) -> str:
        """The language of a source: the first matching per-glob rule, else the default."""
        for pattern, lang in self.languages:
            if fnmatch.fnmatch(rel, pattern):
                return lang
        return self.language


def manifest_root(path: Path, data: dict) -> Path:
    """The corpus root: the folder named by the manifest's `root_env` variable when that is set
    (for documents kept elsewhere), else `root` relative to the manifest's folder."""
    override = os.environ.get(str(data.get("root_env", "")), "") if data.get("root_env") else ""
    if override:
        return Path(override).expanduser().resolve()
    return (path.parent / data.get("root", ".")).resolve()


def root_available(path: str | Path) -> bool:
    """True when a manifest file reads and its corpus root exists (the documents are at hand)."""
    p = _manifest_path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return manifest_root(p, data).is_dir()


def _manifest_path(path: str | Path, base: Path | None = None) -> Path:
    p = Path(path)
    if not p.is_absolute():
        p = (base or Path(__file__).resolve().parent.parent) / p
    return p


def load_manifest(path: str | Path, base: Path | None = None) -> Manifest:
    """Read a manifest file; a relative path is taken from the repository root."""
    p = _manifest_path(path, base)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read corpus manifest {p}: {exc}") from exc
    root = manifest_root(p, data)
    if not root.is_dir():
        hint = (f" (set {data['root_env']} to the folder that holds it)"
                if data.get("root_env") else "")
        raise ConfigError(f"corpus root {root} does not exist{hint}")
    local = data.get("local_dir")
    captions = data.get("captions")
    questions = data.get("questions")
    vectors = data.get("vectors")
    return Manifest(
        name=str(data.get("name", p.stem)),
        path=p,
        root=root,
        include=tuple(data.get("include", ["**/*.md"])),
        exclude=tuple(data.get("exclude", [])),
        language=str(data.get("language", "en")),
        languages=tuple((str(r["glob"]), str(r["lang"])) for r in data.get("languages", [])),
        local_dir=(p.parent / local).resolve() if local else None,
        captions=(p.parent / str(captions)).resolve() if captions else None,
        questions=(p.parent / str(questions)).resolve() if questions else None,
        vectors=(p.parent / str(vectors)).resolve() if vectors else None,
    )


def source_link_pattern(path: str | Path) -> tuple[str, str]:
    """The manifest's public URL pattern and ref (`source_url`, `source_ref`); ('', '') if none.

    Read without needing the corpus root, so a worker without the documents can link them."""
    try:
        data = tomllib.loads(_manifest_path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return "", ""
    pattern = str(data.get("source_url", ""))
    return (pattern, str(data.get("source_ref", "main"))) if pattern.startswith("https://") \
        else ("", "")


def heading_anchor(heading: str) -> str:
    """A heading's anchor as GitHub and MkDocs make it: lower case, marks dropped, '-' for spaces."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lstrip("#"))
    text = re.sub(r"[^\w\- ]", "", text.strip().lower(), flags=re.UNICODE)
    return text.replace(" ", "-")


def source_url(pattern: str, ref: str, rel: str, section: str) -> str | None:
    """The public URL of a source at its section: `pattern` with {ref}, {path} and {anchor}
    ('#slug' of the last heading for Markdown files, else '')."""
    if not pattern or not rel:
        return None
    last = section.split(" > ")[-1] if section else ""
    anchor = f"#{heading_anchor(last)}" if rel.endswith(".md") and last and " > " in section \
        else ""
    return pattern.format(ref=quote(ref, safe=""), path=quote(rel), anchor=anchor)
