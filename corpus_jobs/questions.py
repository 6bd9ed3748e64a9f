"""Question views (doc2query): for each passage, the questions a person would
ask that it answers, written once for a corpus and shipped as data next to its manifest (like
the captions file), each embedded as one more view of its passage. Keyed by the captions'
content hash (caption_key): a passage whose text changed since gets none (never a stale one).
The answer model never sees them; the build makes no model call for them but the embeddings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from corpus_jobs.caption_file import LANGUAGES, Placed, file_header
from corpus_jobs.loaders import LoadedPiece
from shared.errors import ConfigError

MAX_CHARS = 300  # a question longer than this is no question a person types into a help box


@dataclass(frozen=True)
class Entry:
    """One passage's questions by language, and where the passage was when they were written."""

    source: str
    section: str
    questions: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class QuestionFile(Placed):
    """A questions file: `label` names it; `written` and `how` say when and how the questions
    were written."""

    label: str
    written: str
    how: str
    entries: dict[str, Entry] = field(default_factory=dict)


def _clean(raw: object) -> tuple[str, ...]:
    if not isinstance(raw, list):
        raise TypeError("a language's questions must be a list")
    out: list[str] = []
    for q in raw:
        text = " ".join(str(q).split())
        if text and len(text) <= MAX_CHARS and text not in out:
            out.append(text)
    return tuple(out)


def load_question_file(path: Path) -> QuestionFile:
    """Read a questions file; a malformed one is refused with its path and the reason."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = {}
        for key, e in data["questions"].items():
            qs = {lang: _clean(e.get(lang) or []) for lang in LANGUAGES}
            entries[str(key)] = Entry(str(e.get("source", "")), str(e.get("section", "")),
                                      {lang: q for lang, q in qs.items() if q})
        return QuestionFile(str(data["label"]), str(data.get("written", "")),
                            str(data.get("how", "")), entries)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"cannot read the questions file {path}: {exc}") from None


def question_digest(questions: dict[str, dict]) -> str:
    """sha256 of a questions file's `questions` object in a canonical form (keys sorted, no
    spaces): the shipped file records it in its `how` when it is frozen."""
    canonical = json.dumps(questions, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def dump_question_file(path: Path, qf: QuestionFile, corpus: str = "") -> None:
    """Write a questions file (sorted by source and section, so a diff shows what changed)."""
    order = sorted(qf.entries.items(), key=lambda kv: (kv[1].source, kv[1].section, kv[0]))
    data = {
        **file_header(qf.label, qf.written, qf.how, corpus, "questions"),
        "questions": {k: {"source": e.source, "section": e.section,
                          **{lang: list(e.questions.get(lang, ())) for lang in LANGUAGES}}
                      for k, e in order},
    }
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


@dataclass
class QuestionViews:
    """The build's question views: (passage id, language, question) rows, and counts of where
    they came from: passages with questions (`passages`), questions (`questions`), passages the
    file has an older text of (`changed`), file entries no passage matches (`stale`)."""

    rows: list[tuple[str, str, str]] = field(default_factory=list)
    passages: int = 0
    changed: int = 0
    stale: int = 0

    def counts(self) -> dict[str, int]:
        """The build report's figures."""
        return {"passages": self.passages, "questions": len(self.rows),
                "changed": self.changed, "stale": self.stale}

    def digest(self) -> str:
        """A hash of every question view the index will hold (part of the index version)."""
        h = hashlib.sha256(b"questions")
        for pid, lang, q in sorted(self.rows):
            h.update(f"\0{pid}\0{lang}\0{q}".encode())
        return h.hexdigest()


def question_views(pieces: Sequence[LoadedPiece], file: QuestionFile | None,
                   languages: Sequence[str]) -> QuestionViews:
    """Every piece's questions in `languages` from the file, by the piece's current content
    hash: a piece whose text changed since the file was written gets none."""
    from corpus_jobs.build import passage_id
    from corpus_jobs.captions import caption_key

    out = QuestionViews()
    if file is None or not languages:
        return out
    keys = {caption_key(piece): piece for piece in pieces}
    out.stale = sum(1 for k in file.entries if k not in keys)
    seen: set[tuple[str, str, str]] = set()
    with_questions: set[str] = set()
    for key, piece in keys.items():
        entry = file.entries.get(key)
        if entry is None:
            if file.at(piece.source, piece.section):
                out.changed += 1
            continue
        pid = passage_id(piece)
        for lang in languages:
            for q in entry.questions.get(lang, ()):
                if (pid, lang, q) not in seen:
                    seen.add((pid, lang, q))
                    out.rows.append((pid, lang, q))
                    with_questions.add(pid)
    out.passages = len(with_questions)
    return out
