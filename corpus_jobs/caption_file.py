"""The captions data file shipped next to a manifest: captions by content hash, with provenance."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from shared.errors import ConfigError

LANGUAGES = ("en", "cs")
FORMAT = 1


@dataclass(frozen=True)
class Entry:
    """One passage's captions, and where the passage was when they were written."""

    source: str
    section: str
    captions: dict[str, str]


class Placed:
    """A data file of entries by content hash, each saying where its passage was (`source`,
    `section`): the captions file and the questions file."""

    entries: Mapping[str, Any]

    def at(self, source: str, section: str) -> bool:
        """Whether some entry was written for a passage at this place (any text)."""
        return (source, section) in self._places

    @cached_property
    def _places(self) -> set[tuple[str, str]]:
        return {(e.source, e.section) for e in self.entries.values()}


def file_header(label: str, written: str, how: str, corpus: str, gets: str) -> dict[str, Any]:
    """The fields a shipped data file starts with; `gets` names what a changed passage loses."""
    return {
        "format": FORMAT,
        "label": label,
        "corpus": corpus,
        "written": written,
        "how": how,
        "key": "sha256 of title NUL section NUL text (corpus_jobs.captions.caption_key); a "
               f"passage whose text changed has another key and gets no {gets} from this file",
        "languages": list(LANGUAGES),
    }


@dataclass(frozen=True)
class CaptionFile(Placed):
    """A captions file: `label` names it in the caption cache; `written` and `how` say when
    and how the captions were written."""

    label: str
    written: str
    how: str
    entries: dict[str, Entry] = field(default_factory=dict)


def load_caption_file(path: Path) -> CaptionFile:
    """Read a captions file; a malformed one is refused with its path and the reason."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = {}
        for key, e in data["captions"].items():
            caps = {lang: " ".join(str(e[lang]).split()) for lang in LANGUAGES
                    if str(e.get(lang) or "").strip()}
            entries[str(key)] = Entry(str(e.get("source", "")), str(e.get("section", "")), caps)
        return CaptionFile(str(data["label"]), str(data.get("written", "")),
                           str(data.get("how", "")), entries)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"cannot read the captions file {path}: {exc}") from None


def dump_caption_file(path: Path, cf: CaptionFile, corpus: str = "") -> None:
    """Write a captions file (sorted by source and section, so a diff shows what changed)."""
    order = sorted(cf.entries.items(), key=lambda kv: (kv[1].source, kv[1].section, kv[0]))
    data = {
        **file_header(cf.label, cf.written, cf.how, corpus, "caption"),
        "captions": {k: {"source": e.source, "section": e.section,
                         **{lang: e.captions[lang] for lang in LANGUAGES if lang in e.captions}}
                     for k, e in order},
    }
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
