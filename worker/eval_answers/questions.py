"""The answer-evaluation question format: the retrieval fields plus facts, numbers, category."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.errors import BadRequest


@dataclass(frozen=True)
class AnswerQuestion:
    """One question as the answer evaluation reads it (a line of ../shared/eval/*.jsonl)."""

    id: str
    language: str
    question: str
    category: str
    answerable: bool
    expected_facts: tuple[str, ...]
    expected_numbers: tuple[float, ...]
    question_set: str
    # (source, location) of the expected section and its `also_in` ones (retrieval's fields).
    targets: tuple[tuple[str, str], ...] = ()


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _numbers(raw: object) -> tuple[float, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise TypeError("expected_numbers must be a list")
    return tuple(float(x) for x in raw)


def _targets(d: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    first = [(str(d["expected_source"]), str(d.get("expected_location") or ""))] \
        if d.get("expected_source") else []
    also = [(str(a["source"]), str(a.get("location") or "")) for a in d.get("also_in") or ()]
    return tuple(first + also)


def load_answer_questions(path: str | Path) -> list[AnswerQuestion]:
    """Questions from a JSON-lines file; a clear BadRequest names the bad line."""
    p = Path(path)
    if not p.is_file():
        raise BadRequest(f"no question file at {path}")
    out: list[AnswerQuestion] = []
    seen: set[str] = set()
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            q = AnswerQuestion(
                id=str(d["id"]), language=str(d.get("language") or "unknown"),
                question=str(d["question"]), category=str(d.get("category") or "other"),
                answerable=bool(d.get("answerable", True)),
                expected_facts=tuple(str(f) for f in d.get("expected_facts") or ()),
                expected_numbers=_numbers(d.get("expected_numbers")),
                question_set=str(d.get("set") or ""), targets=_targets(d))
        except (ValueError, KeyError, TypeError) as exc:
            raise BadRequest(f"{path}:{n}: not a valid question ({exc})") from None
        if q.id in seen:
            raise BadRequest(f"{path}:{n}: question id {q.id!r} appears twice")
        seen.add(q.id)
        out.append(q)
    if not out:
        raise BadRequest(f"{path}: no questions")
    return out


def is_sealed(path: str | Path, questions: list[AnswerQuestion]) -> bool:
    """A sealed set: its questions say `"set": "sealed"`, or its file name says sealed."""
    return "sealed" in Path(path).name.lower() or any(
        q.question_set == "sealed" for q in questions)
