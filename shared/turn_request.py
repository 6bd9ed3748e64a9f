"""The contract between the web tier and the worker: what one turn asks, built once by the web tier.

The web tier builds a TurnRequest in its handoff (web/handoff.py), stores its JSON in Redis under
keys.turn_request(turn) for the turn's replay TTL, and enqueues only (turn, attempt): no user text
travels in Celery task arguments. The worker reads it once (worker/tasks.py) and trusts its
`language` (the question's language is detected once, by the web tier). Nothing here is a secret:
no token, no ticket, only the hashed user.

Across a rolling upgrade a web tier and workers of two consecutive releases run together, so
the shape only grows within a version: a release may add a field only as an optional one
whose absence means what the release before did (e.g. a ProjectBlock's `figures`). A reader
ignores fields it does not know, at the top and inside `project` and `history` items, and
fills an absent optional field with its default; it refuses only a missing required field,
a wrong type, or a version outside READS. The fields of version 1 as first released are all
always written, because the release before this rule (which refused any unknown or missing
field) reads nothing less; an added optional field is written only when it carries something,
so such a reader still reads every turn that does not use it. A change an older reader cannot
ignore is a new VERSION: its release reads both and writes the old one, the release after it
writes the new one, and CHANGES.md says so (docs/operations.md, "Rolling upgrades").
A refused payload raises ContractError, which names the version or field at fault.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from shared.config import MODES
from shared.errors import Unavailable
from shared.figures import ProjectFigures

VERSION = 1  # what this release writes
READS = frozenset({1})  # the versions this release reads
# A leading minus only where it cannot be a hyphen inside a word such as "COVID-19".
_NUMBER = re.compile(r"(?:(?<![^\s(:;,])-)?\d+(?:\.\d+)?")


class ContractError(Unavailable):
    """A turn request the worker cannot read: another version or a malformed shape."""


def grounding_numbers(text: str) -> tuple[str, ...]:
    """Every number written in the text, once each, in order of first appearance."""
    return tuple(dict.fromkeys(m.group(0) for m in _NUMBER.finditer(text)))


@dataclass(frozen=True)
class Message:
    """One earlier message of the conversation, as the browser sent it."""

    role: str
    content: str


@dataclass(frozen=True)
class ProjectBlock:
    """The user's project as the model sees it: fenced text, the numbers it may ground, and how
    long the web tier took to read it (None when the worker assembled it from tool results)."""

    text: str
    grounding: tuple[str, ...]
    read_ms: float | None = None
    # The key figures as data, for an answer written in code (the quotes form); the web tier
    # reads them from the app with the rest. Optional in the JSON form: a reader of this
    # version takes a block with or without it.
    figures: ProjectFigures | None = None

    @classmethod
    def from_text(cls, text: str, read_ms: float | None = None) -> ProjectBlock:
        """The block of a project text, grounded on its structured values only (never on
        what members typed: shared/project_grounding.py)."""
        from shared.project_grounding import project_grounding

        return cls(text, project_grounding(text), read_ms)


@dataclass(frozen=True)
class TurnRequest:
    """What the web tier hands the worker for one turn (every attempt reads the same one)."""

    turn: str
    user: str  # the hashed user id (shared.auth.user_hash), never the id or the token
    message: str
    language: str  # of `message`, detected once by the web tier (shared.language)
    mode: str  # workflow | agent | hybrid, resolved by the web tier
    history: tuple[Message, ...] = ()
    project_id: str | None = None
    # The panel project's block, read by the web tier with the user's own access.
    project: ProjectBlock | None = None
    # Agent and hybrid turns: what the project tools may read, prefetched the same way
    # (web/project/tools.py); read-only here.
    tool_data: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.tool_data is not None and not isinstance(self.tool_data, MappingProxyType):
            # Read-only at the top: no pipeline step can add to what the user's access read.
            object.__setattr__(self, "tool_data", MappingProxyType(dict(self.tool_data)))

    def to_json(self) -> dict[str, Any]:
        """The versioned JSON form (what Redis holds)."""
        return {
            "version": VERSION, "turn": self.turn, "user": self.user, "message": self.message,
            "language": self.language, "mode": self.mode,
            "history": [{"role": m.role, "content": m.content} for m in self.history],
            "project_id": self.project_id,
            "project": None if self.project is None else {
                "text": self.project.text, "grounding": list(self.project.grounding),
                "read_ms": self.project.read_ms,
                **({"figures": self.project.figures.to_json()}
                   if self.project.figures is not None else {})},
            "tool_data": None if self.tool_data is None else dict(self.tool_data),
        }

    def dumps(self) -> str:
        """The JSON text."""
        return json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: Any) -> TurnRequest:
        """Parse the JSON form; ContractError for another version or an unknown shape."""
        if not isinstance(data, dict):
            raise ContractError("turn request: not a JSON object")
        version = data.get("version")
        if type(version) is not int or version not in READS:
            raise ContractError(f"turn request version {version!r} is not supported "
                                f"(this release reads version {_versions(READS)})")
        missing = _REQUIRED - set(data)
        if missing:
            raise ContractError(f"turn request v{version}: missing fields {sorted(missing)}")
        mode = _str(data, "mode")
        if mode not in MODES:
            raise ContractError(f"turn request: mode {mode!r} is not one of {MODES}")
        history = data.get("history", [])
        if not isinstance(history, list) or not all(
                isinstance(m, dict) and m.get("role") in ("user", "assistant")
                and isinstance(m.get("content"), str) for m in history):
            raise ContractError("turn request: history must be a list of {role, content}")
        project_id = data.get("project_id")
        if project_id is not None and not isinstance(project_id, str):
            raise ContractError("turn request: project_id must be a string or null")
        tool_data = data.get("tool_data")
        if tool_data is not None and not isinstance(tool_data, dict):
            raise ContractError("turn request: tool_data must be an object or null")
        return cls(turn=_str(data, "turn"), user=_str(data, "user"),
                   message=_str(data, "message"), language=_str(data, "language"), mode=mode,
                   history=tuple(Message(m["role"], m["content"]) for m in history),
                   project_id=project_id, project=_project(data.get("project")),
                   tool_data=tool_data)

    @classmethod
    def loads(cls, raw: str | bytes) -> TurnRequest:
        """Parse the JSON text; ContractError when it is not JSON or not a turn request."""
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            raise ContractError("turn request: not valid JSON") from None
        return cls.from_json(data)


# What a reader cannot do without; every other field is optional (absent: its default).
_REQUIRED = frozenset({"version", "turn", "user", "message", "language", "mode"})


def _versions(versions: frozenset[int]) -> str:
    return " or ".join(str(v) for v in sorted(versions))


def _str(data: dict[str, Any], name: str) -> str:
    value = data[name]
    if not isinstance(value, str):
        raise ContractError(f"turn request: {name} must be a string")
    return value


def _project(value: Any) -> ProjectBlock | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not {"text", "grounding"} <= set(value):
        raise ContractError("turn request: project must be {text, grounding, ...} or null")
    text, grounding, read_ms = value["text"], value["grounding"], value.get("read_ms")
    if not isinstance(text, str) or not isinstance(grounding, list) or not all(
            isinstance(n, str) for n in grounding):
        raise ContractError("turn request: project text and grounding must be strings")
    if read_ms is not None and (isinstance(read_ms, bool)
                                or not isinstance(read_ms, int | float)):
        raise ContractError("turn request: project read_ms must be a number or null")
    figures = None
    if value.get("figures") is not None:
        # Optional, and only the quotes form's summary reads it: a shape this release cannot
        # read (another release's) leaves the summary out rather than refusing the turn.
        try:
            figures = ProjectFigures.from_json(value["figures"])
        except ValueError:
            figures = None
    return ProjectBlock(text, tuple(grounding), None if read_ms is None else float(read_ms),
                        figures)
