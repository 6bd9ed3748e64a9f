"""The structured answer form (docs/spec/behaviour.md B-21, B-26): output held by a JSON schema,
the `answer` field streamed as it is generated, quotes and source paths verified in code
afterwards."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from shared.config import ModelRole
from worker.pipeline.types import Retrieval

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "outcome": {"type": "string", "enum": ["answer", "dont_know"]},
        "clarifying_question": {"type": "string"},
        "sources": {"type": "array", "items": {"type": "string"}},
        "quotes": {"type": "array", "items": {
            "type": "object",
            "properties": {"n": {"type": "integer"}, "text": {"type": "string"}},
            "required": ["n", "text"]}},
    },
    "required": ["answer", "outcome", "sources", "quotes"],
    # No other keys: llama.cpp's grammar otherwise lets a model write a second "answer" after
    # the first, and the parsed answer would differ from the one the user saw streamed.
    "additionalProperties": False,
}
ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
           "t": "\t"}


def response_format(role: ModelRole) -> dict[str, Any]:
    """How to ask this role's server for schema-held output.

    Hosted OpenAI-compatible APIs take `json_schema`; llama.cpp's server takes a schema on
    `json_object` and turns it into a grammar.
    """
    if role.provider == "api":
        return {"type": "json_schema",
                "json_schema": {"name": "answer", "schema": SCHEMA, "strict": False}}
    return {"type": "json_object", "schema": SCHEMA}


class AnswerFieldStream:
    """Pulls the text of the top-level "answer" string out of streamed JSON, as it arrives."""

    def __init__(self) -> None:
        self._buf = ""
        self._pos = 0
        self._state = "seek"  # seek -> string -> done
        self._escape = ""

    def feed(self, chunk: str) -> str:
        """The answer characters decoded from this chunk (may be empty)."""
        self._buf += chunk
        out: list[str] = []
        while self._pos < len(self._buf) and self._state != "done":
            if self._state == "seek":
                m = re.compile(r'"answer"\s*:\s*"').search(self._buf, self._pos)
                if not m:
                    # Keep scanning from near the end next time (the key may be split).
                    self._pos = max(self._pos, len(self._buf) - 16)
                    return ""
                self._pos, self._state = m.end(), "string"
                continue
            ch = self._buf[self._pos]
            if self._escape:
                self._escape += ch
                if self._escape[1] == "u":
                    if len(self._escape) == 6:
                        out.append(chr(int(self._escape[2:], 16)))
                        self._escape = ""
                else:
                    out.append(ESCAPES.get(self._escape[1], self._escape[1]))
                    self._escape = ""
            elif ch == "\\":
                self._escape = ch
            elif ch == '"':
                self._state = "done"
            else:
                out.append(ch)
            self._pos += 1
        return "".join(out)


def fold(text: str) -> str:
    """Whitespace collapsed and case folded, for verbatim quote matching."""
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class StructuredResult:
    """The parsed answer and the verdicts on its quotes and source paths."""

    valid_json: bool
    answer: str
    outcome: str
    clarifying_question: str | None
    quotes: tuple[dict[str, Any], ...]
    sources: tuple[dict[str, Any], ...]


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("repeated key")
    return dict(pairs)


def verify(raw: str, streamed_answer: str, retrieval: Retrieval) -> StructuredResult:
    """Parse the model's JSON; each quote must be in its own passage, each path a real one."""
    try:
        # strict=False: models put raw newlines inside strings. A repeated key is refused: the
        # user saw the first "answer" streamed, and json.loads would keep the last one.
        data = json.loads(raw, strict=False, object_pairs_hook=_unique_keys)
        if not isinstance(data, dict):
            raise ValueError
    except ValueError:
        return StructuredResult(False, streamed_answer, "answer", None, (), ())
    passages = retrieval.passages
    real_paths = {p.source for p in passages}
    quotes = []
    for q in data.get("quotes") or []:
        if not isinstance(q, dict):
            continue
        n, text = q.get("n"), str(q.get("text", ""))
        found = isinstance(n, int) and 1 <= n <= len(passages) and bool(text.strip()) and \
            fold(text) in fold(passages[n - 1].text)
        quotes.append({"n": n, "text": text, "found": found})
    sources = [{"path": str(p), "valid": str(p) in real_paths}
               for p in data.get("sources") or []]
    outcome = "dont_know" if data.get("outcome") == "dont_know" else "answer"
    clarifying = data.get("clarifying_question") if outcome == "dont_know" else None
    return StructuredResult(True, str(data.get("answer", streamed_answer)), outcome,
                            str(clarifying) if clarifying else None, tuple(quotes),
                            tuple(sources))
